# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render docs/fault-corpus.md from tests/fixtures/corpus/corpus.yml (``render``; ``make docs`` writes the page,
scripts/docs.py, and tests/unit/test_fault_corpus.py checks that the committed page is current).

    python3 scripts/fault_table.py     # the page on standard output
"""
from __future__ import print_function

import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, 'tests', 'fixtures', 'corpus', 'corpus.yml')

HEADER = """# The fault corpus

Every fault below is a capture bundle derived from the real captures in `tests/fixtures/hardware/`
(`tests/fixtures/corpus/corpus.yml` says which outputs each fault replaces, edits or removes; the derived
files are listed in `tests/fixtures/derived/*/README.md`, the AMD ones, built from published amd-smi
outputs, in `tests/fixtures/amd/README.md`). `tests/unit/test_fault_corpus.py`
replays each one through the probe engine and the checks and requires **exactly** the findings
listed (every `fail` and `warn`); each healthy base (`h200x4-healthy`, `mi300x8-healthy` with profile
`mi300x-8`) must produce none. Build any of them as a
bundle with `python3 scripts/make_bundles.py fault ID DIR` and replay it with
`xuanwu_replay_dir: DIR`.

This page is generated from `tests/fixtures/corpus/corpus.yml`: run `make docs` after changing it.

| # | fault | what was changed | expected findings (check → component, severity) |
|---|---|---|---|
"""


def render(corpus):
    rows = []
    for i, fault in enumerate(corpus['faults'], 1):
        changed = sorted(set(list((fault.get('replace') or {}).keys()) + list((fault.get('edit') or {}).keys())))
        changed += ['%s removed' % key for key in fault.get('remove') or []]
        if fault.get('overrides'):
            changed.append('profile override')
        expect = '<br>'.join('`%s` → %s, %s' % (e['check'], e['component'], e['severity']) for e in fault['expect'])
        what = fault['description'].replace('|', '\\|')
        cells = (i, fault['id'], what, ', '.join('`%s`' % c for c in changed), expect.replace('|', '\\|'))
        rows.append('| %d | `%s` — %s | %s | %s |' % cells)
    return HEADER + '\n'.join(rows) + '\n'


def main():
    with open(CORPUS) as handle:
        sys.stdout.write(render(yaml.safe_load(handle)))


if __name__ == '__main__':
    main()
