# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build capture bundles from the fixture corpus (tests/fixtures/corpus/corpus.yml).

    python3 scripts/make_bundles.py demo            # (re)write inventories/demo-bundles/
    python3 scripts/make_bundles.py fault ID DIR    # write the bundle of one fault of the corpus into DIR
    python3 scripts/make_bundles.py list            # list the faults

The corpus names, for a healthy base node, the file that holds each probe's output (real captures
under tests/fixtures/hardware/, derived or constructed files under tests/fixtures/derived/), and for
each fault which probe outputs it replaces. Bundles are written in the format of
docs/capture-format.md, so the very same files replay through validate.yml.
"""
from __future__ import print_function

import json
import os
import re
import shutil
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
CORPUS = os.path.join(FIXTURES, 'corpus', 'corpus.yml')
DEMO_DIR = os.path.join(ROOT, 'inventories', 'demo-bundles')
TRAILER = re.compile(r'\n?exit=(\d+)\n?\Z')


def import_probe():
    """Import the collection's probe engine from this checkout, wherever it lies, through a link of its own: one
    per checkout, so that two checkouts used at once never swap each other's link."""
    import hashlib
    import tempfile
    base = os.path.join(tempfile.gettempdir(), 'xuanwu-cluster-bundles-%d-%s' % (
        os.getuid(), hashlib.sha256(ROOT.encode('utf-8')).hexdigest()[:12]))
    link = os.path.join(base, 'ansible_collections', 'xuanwu', 'cluster')
    if not os.path.isdir(os.path.dirname(link)):
        os.makedirs(os.path.dirname(link), exist_ok=True)
    if not os.path.lexists(link):
        try:
            os.symlink(ROOT, link)
        except FileExistsError:     # another run of this checkout made it
            pass
    if base not in sys.path:
        sys.path.insert(0, base)
    from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe
    return _probe


def default_command(key):
    """The command line the live probe runs for ``key`` (what a real capture would record)."""
    probe_mod = import_probe()
    probes = probe_mod.base_probes() + probe_mod.amd_probes()
    if ':' in key:
        probes = probe_mod.interface_probes(key.split(':', 1)[1])
    for probe in probes:
        if probe.key == key:
            return probe.alternatives[0].command
    raise SystemExit('unknown probe key %r' % key)


def load_corpus(path=CORPUS):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _read(relpath):
    with open(os.path.join(FIXTURES, relpath)) as handle:
        text = handle.read()
    rc = None
    match = TRAILER.search(text)
    if match:  # the capture script appended the exit code after the tool's output
        rc = int(match.group(1))
        text = text[:match.start()] + ('\n' if match.start() and not text[:match.start()].endswith('\n') else '')
    return text, rc


def resolve(corpus, base=None, fault=None):
    """Return ``{probe_key: {command, file (fixture path) or text, rc}}`` for a base node or a fault."""
    spec = None
    if fault is not None:
        matches = [f for f in corpus['faults'] if f['id'] == fault]
        if not matches:
            raise SystemExit('unknown fault %r' % fault)
        spec = matches[0]
        base = spec['base']
    probes = dict((k, dict(v)) for k, v in corpus['bases'][base]['probes'].items())
    if spec is not None:
        for key, value in (spec.get('replace') or {}).items():
            value = value if isinstance(value, dict) else {'file': value}
            entry = dict(probes.get(key, {}))
            for exclusive in ('file', 'text'):
                if exclusive in value:
                    entry.pop('text' if exclusive == 'file' else 'file', None)
            entry.update(value)
            probes[key] = entry
        for key, edits in (spec.get('edit') or {}).items():
            probes[key] = dict(probes[key], edits=list(probes[key].get('edits', [])) + list(edits))
        for key in spec.get('remove') or []:
            probes.pop(key, None)
    return probes


def write_bundle(probes, directory, meta):
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    entries = []
    for key in sorted(probes):
        entry = probes[key]
        if 'text' in entry:
            text, rc = entry['text'], None
        else:
            text, rc = _read(entry['file'])
        for old, new in entry.get('edits', []):
            if old not in text:
                raise SystemExit('edit of %s: %r not found in its output' % (key, old))
            text = text.replace(old, new)
        if entry.get('truncate') is not None:
            text = text[:entry['truncate']]
        if entry.get('rc') is not None:
            rc = entry['rc']
        rc = 0 if rc is None else rc
        name = re.sub(r'[^A-Za-z0-9_.-]+', '_', key.replace(':', '__')) + '.txt'
        with open(os.path.join(directory, name), 'w') as handle:
            handle.write(text)
        record = {'probe': key, 'command': entry.get('command') or default_command(key), 'rc': rc, 'file': name}
        if 'file' in entry:
            record['source'] = entry['file']
        if entry.get('stderr'):
            record['stderr'] = entry['stderr']
        entries.append(record)
    manifest = {'format_version': 1, 'probes': entries}
    manifest.update(meta)
    with open(os.path.join(directory, 'manifest.json'), 'w') as handle:
        json.dump(manifest, handle, indent=2, sort_keys=True)
        handle.write('\n')


def build_demo(corpus, out=DEMO_DIR):
    if os.path.isdir(out):
        shutil.rmtree(out)
    for host, spec in sorted(corpus['demo'].items()):
        probes = resolve(corpus, base=spec.get('base'), fault=spec.get('fault'))
        write_bundle(probes, os.path.join(out, host), {
            'host': host, 'source': 'derived from real captures (tests/fixtures/corpus/corpus.yml)',
            'description': spec['description']})
    return sorted(corpus['demo'])


def main(argv):
    corpus = load_corpus()
    if argv[:1] == ['demo']:
        print('\n'.join(build_demo(corpus)))
    elif argv[:1] == ['fault'] and len(argv) == 3:
        write_bundle(resolve(corpus, fault=argv[1]), argv[2], {'host': argv[1], 'source': 'fault corpus'})
    elif argv[:1] == ['list']:
        for fault in corpus['faults']:
            print('%-32s %s' % (fault['id'], fault['description']))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
