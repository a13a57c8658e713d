# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Regenerate every generated page of docs/ (``make docs``).

    python3 scripts/docs.py            # rewrite the pages that are stale, name each
    python3 scripts/docs.py --check    # only name the stale pages; exit 1 if there is one

One function per page, each calling the generator the page comes from; the unit tests compare every committed
page with what these same functions return (tests/unit/generated_docs.py), so a test that fails says: run
``make docs``. docs/metrics.md is written by hand (test_prom.py checks that it lists every metric).
"""
from __future__ import print_function

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The scripts of this folder and the xuanwu package of this checkout (the collection's code, imported by its name
# ansible_collections.xuanwu.cluster: xuanwu.collection), by their names.
if os.path.join(ROOT, 'src') not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, 'src'))
if HERE not in sys.path:
    sys.path.append(HERE)

import fault_table  # noqa: E402  pylint: disable=wrong-import-position
import make_bundles  # noqa: E402  pylint: disable=wrong-import-position
from xuanwu.collection import import_module  # noqa: E402  pylint: disable=wrong-import-position


def _module_utils(name):
    return import_module('plugins.module_utils.' + name)


PROBE_TABLE = re.compile(r'(probes_markdown\); do not edit by hand\. -->\n)(.*?)(<!-- end of the generated probe table -->)', re.S)


def checks_md(_current):
    """docs/checks.md: every check id (_catalogue.checks_markdown)."""
    return _module_utils('_catalogue').checks_markdown()


def profiles_md(_current):
    """docs/profiles.md: the profile schema and the shipped profiles resolved (_profile_docs.schema_markdown)."""
    return _module_utils('_profile_docs').schema_markdown(import_module('plugins.plugin_utils._collection').shipped_profiles())


def capture_format_md(current):
    """docs/capture-format.md: the page as written, with its probe table (_probe.probes_markdown) between the markers."""
    if not PROBE_TABLE.search(current):
        raise ValueError('docs/capture-format.md lost the markers of its generated probe table')
    return PROBE_TABLE.sub(lambda match: match.group(1) + _module_utils('_probe').probes_markdown() + match.group(3), current, count=1)


def fault_corpus_md(_current):
    """docs/fault-corpus.md: the faults of tests/fixtures/corpus/corpus.yml (scripts/fault_table.py)."""
    return fault_table.render(make_bundles.load_corpus())


def facts_md(_current):
    """docs/facts.md: the facts schema (_facts.facts_markdown)."""
    return _module_utils('_facts').facts_markdown()


PARSER_CHOICES = re.compile(r'(\n    parser:\n(?:      .*\n)*?      choices:\n)((?:        - .*\n)+)')


def parse_filter_yml(current):
    """plugins/filter/parse.yml: the filter's documentation as written, its ``parser`` choices the parsers it finds."""
    if not PARSER_CHOICES.search(current):
        raise ValueError('plugins/filter/parse.yml lost the choices of its parser option')
    names = sorted(import_module('plugins.filter.parse').PARSERS)
    return PARSER_CHOICES.sub(lambda match: match.group(1) + ''.join('        - %s\n' % name for name in names), current, count=1)


# page (relative to the repository root) -> function(the page as it is) -> the page as it must be
PAGES = (
    ('docs/checks.md', checks_md),
    ('docs/profiles.md', profiles_md),
    ('docs/capture-format.md', capture_format_md),
    ('docs/fault-corpus.md', fault_corpus_md),
    ('docs/facts.md', facts_md),
    ('plugins/filter/parse.yml', parse_filter_yml),
)


def read(page, root=ROOT):
    with open(os.path.join(root, page)) as handle:
        return handle.read()


def generate(page, root=ROOT):
    """``(committed, generated)``: the page as it is under ``root`` and as ``make docs`` writes it."""
    current = read(page, root)
    return current, dict(PAGES)[page](current)


def main(argv, root=ROOT):
    """Rewrite (or, with ``--check``, only name) every stale page; 1 when ``--check`` found one, else 0."""
    check = '--check' in argv
    stale = []
    for page, _function in PAGES:
        current, generated = generate(page, root)
        if generated == current:
            continue
        stale.append(page)
        if not check:
            with open(os.path.join(root, page), 'w') as handle:
                handle.write(generated)
        print('%s: %s' % (page, 'stale' if check else 'regenerated'))
    if not stale:
        print('docs: every generated page is current (%s)' % ', '.join(page for page, _function in PAGES))
    return 1 if check and stale else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
