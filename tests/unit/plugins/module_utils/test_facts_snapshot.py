"""The facts of a representative set of replays, held to a snapshot (tests/fixtures/facts/replayed.json): the real
capture bundles, a node on which every probe answers (each alternative once, both vendors; test_facts.EVERY_PROBE) at
the start and at the end of a run, and a replay of the host group only. Taken when the facts of the probes that declare
where they land (_collect.Probe ``lands``) moved from hand-written branches to _probe.place, with every bundle of the
checkout giving the same facts before and after; a change to the assembly that changes a value, a type or a key fails
here. The order of the keys is not compared: the facts are mappings, and report.json and Ansible's output sort them.

After a change that is meant to change the facts: ``XUANWU_FACTS_SNAPSHOT=write`` and run this file, then read the
diff of the snapshot."""
import copy
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.test_facts import EVERY_PROBE, ROOT, make_bundles

SNAPSHOT = os.path.join(ROOT, 'tests', 'fixtures', 'facts', 'replayed.json')
HARDWARE = os.path.join(ROOT, 'tests', 'fixtures', 'hardware')

# replay id -> (the committed bundle under tests/fixtures/hardware/, or the number of an EVERY_PROBE node; probe()'s
# arguments)
REPLAYS = {
    'h100x1-bundle': ('h100x1-bundle', {}),
    'h100x1-health/healthy-bundle': ('h100x1-health/healthy-bundle', {}),
    'h200x1-bundle': ('h200x1-bundle', {}),
    'h200x1-bundle host only': ('h200x1-bundle', {'groups': ('host',)}),
    'h200x2-nvlink-bundle': ('h200x2-nvlink-bundle', {}),
}
# every probe N: EVERY_PROBE[N], the NVIDIA base through the first alternatives (0) and the others (1), the AMD base
# through amd-smi (2) and rocm-smi (3)
for _number in range(len(EVERY_PROBE)):
    for _stage in ('start', 'end'):
        REPLAYS['every probe %d %s' % (_number, _stage)] = (_number, {'stage': _stage, 'read_paths': ['/usr/lib']})


def canonical(facts):
    """Facts as text: every key and value and its type (1 is not 1.0), keys sorted."""
    return json.dumps(facts, indent=1, sort_keys=True)


@pytest.fixture(scope='module')
def every_probe(tmp_path_factory):
    """The bundle of each EVERY_PROBE node."""
    corpus = make_bundles.load_corpus()
    out = []
    for number, (base, extra) in enumerate(EVERY_PROBE):
        probes = make_bundles.resolve(corpus, base=base)
        probes.update(copy.deepcopy(extra))
        bundle = str(tmp_path_factory.mktemp('every-probe-%d' % number))
        make_bundles.write_bundle(probes, bundle, {'host': 'every-probe'})
        out.append(bundle)
    return out


def replay(name, every_probe):
    where, kwargs = REPLAYS[name]
    bundle = every_probe[where] if isinstance(where, int) else os.path.join(HARDWARE, where)
    return _probe.probe(_probe.ReplayRunner(bundle), **kwargs)


def test_the_snapshot_holds_every_replay(every_probe):
    if os.environ.get('XUANWU_FACTS_SNAPSHOT') == 'write':
        os.makedirs(os.path.dirname(SNAPSHOT), exist_ok=True)
        with open(SNAPSHOT, 'w') as handle:
            handle.write(canonical(dict((name, replay(name, every_probe)) for name in REPLAYS)) + '\n')
    with open(SNAPSHOT) as handle:
        assert sorted(json.load(handle)) == sorted(REPLAYS)


@pytest.mark.parametrize('name', sorted(REPLAYS))
def test_a_replay_gives_the_facts_of_the_snapshot(name, every_probe):
    with open(SNAPSHOT) as handle:
        before = json.load(handle)[name]
    assert canonical(replay(name, every_probe)) == canonical(before), (
        'the facts of %s differ from tests/fixtures/facts/replayed.json' % name)
