"""The probe table is data: each probe declares the profile sections it feeds, and docs/capture-format.md's
probe table is generated from it."""
from ansible_collections.xuanwu.cluster.plugins.module_utils import _facts, _judge, _probe, _profile
from ansible_collections.xuanwu.cluster.tests.unit.generated_docs import assert_current, docs


def test_docs_probe_table_is_generated():
    assert '| `nvidia_query_gpu` | gpu |' in docs.read('docs/capture-format.md'), 'docs/capture-format.md lost its probe table'
    assert_current('docs/capture-format.md')


def test_every_probe_feeds_known_profile_sections():
    sections = set(_profile.SCHEMA['keys'])
    for probe in _probe.all_probes():
        assert probe.feeds, probe.key
        assert set(probe.feeds) <= sections, (probe.key, probe.feeds)
    assert set(_probe.FEEDS) == set(p.name for p in _probe.all_probes())


def test_every_fact_a_probe_sets_is_declared():
    """The probe table and the facts schema name the same probes: each probe's output lands in facts the schema
    declares (``probe`` of their spec), so a probe added to the table without its facts declared fails here, and the
    replays of tests/unit/plugins/module_utils/test_facts.py check every key each of them sets."""
    probes = set(probe.name for probe in _probe.all_probes())
    assert set(_probe.DERIVED_PARSERS) <= probes
    assert _facts.probe_sources() == probes, 'declare the facts of each probe in plugins/module_utils/_facts.py'


def _failed(key):
    return {'probes': {key: {'status': 'failed', 'command': key, 'rc': 1, 'error': 'exit code 1'}}}


def test_a_failed_probe_fails_the_sections_it_feeds_and_warns_elsewhere():
    gpu_profile = {'schema_version': 1, 'name': 'g', 'gpu': {'count': 1}}
    [ib] = [f for f in _judge.evaluate(_failed('ib_counters_end'), gpu_profile, 'n1') if f['check'] == 'probe.failed']
    assert ib['severity'] == 'warn'
    ib_profile = {'schema_version': 1, 'name': 'i', 'infiniband': {'ports_min': 1}}
    [ib] = [f for f in _judge.evaluate(_failed('ib_counters_end'), ib_profile, 'n1') if f['check'] == 'probe.failed']
    assert ib['severity'] == 'fail'
    [eth] = [f for f in _judge.evaluate(_failed('ethtool:ens1'), gpu_profile, 'n1') if f['check'] == 'probe.failed']
    assert eth['severity'] == 'warn'
