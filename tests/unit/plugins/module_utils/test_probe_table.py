"""The probe table is data: each probe declares the profile sections it feeds and where its facts land, and
docs/capture-format.md's probe table is generated from it."""
import copy

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


def test_a_probe_lands_where_it_says_or_is_assembled_for_a_reason():
    """A probe's place in the facts is written once: in its ``lands`` (the facts schema's ``probe`` of that fact is
    derived from it, and _probe.place puts it there), or, for a probe whose output is merged or transformed, in the
    assembly of _probe, whose ASSEMBLED names every such probe and why."""
    assert _facts.LANDING_PROBLEMS == []
    names = set(probe.name for probe in _probe.all_probes())
    lands = set(probe.name for probe in _probe.all_probes() if probe.lands)
    assert set(_probe.ASSEMBLED) == names - lands, 'a probe with no lands is assembled by hand: say why in _probe.ASSEMBLED'
    assert all(probe.lands is None for probe in _probe.interface_probes('IF') + _probe.storage_probes(['PATH']))
    for stage in ('start', 'end'):
        for _key, name, path in _probe.landings(stage):
            assert _facts.spec_at(path, stage)['probe'] == name, path


def test_a_landing_the_schema_does_not_declare_or_names_by_hand_is_a_problem():
    schemas = copy.deepcopy(_facts.SCHEMAS)
    assert _facts.mark_landings(schemas, {'start': [('uname', 'uname', 'host.kernell'), ('ibstat', 'ibstat', 'infiniband.cas'),
                                                    ('meminfo', 'meminfo', 'host.memory.total_bytes.x')]}) == [
        'host.kernell (lands of probe uname): not declared in the facts schema',
        'infiniband.cas: its probe ibstat is written by hand; it comes from the lands of probe ibstat',
        'host.memory.total_bytes.x (lands of probe meminfo): not declared in the facts schema']


def _sections(vendor):
    return {'gpu': {'vendor': vendor}, 'infiniband': {}, 'network': {}, 'host': {}, 'software': {}}


def test_place_puts_each_output_where_it_lands_on_the_nodes_of_its_vendor():
    xid = [{'xid': 79, 'pci': '0000:18:00', 'pid': None, 'name': None, 'message': 'GPU has fallen off the bus.', 'line': 'x'}]
    links = {'eth0': {'down': 1, 'up': 1, 'last': 'up', 'lines': []}}
    parsed = {'kernel_log': xid, 'link_events': links, 'uname': {'kernel_name': 'Linux'}, 'amd_xgmi': {}}
    nvidia = _sections('nvidia')
    _probe.place(nvidia, parsed)
    # what was parsed lands as it is; a fact of the other vendor's nodes does not
    assert (nvidia['gpu']['xid_events'], nvidia['network']['link_events'], nvidia['host']) == (xid, links, {'kernel': {'kernel_name': 'Linux'}})
    assert 'xgmi' not in nvidia['gpu']
    # a fact that may be null is null when its output was not parsed; any other is left out
    assert nvidia['software'] == {'cuda_toolkit_version': None, 'nccl_version': None, 'nccl_library': None}
    amd = _sections('amd')
    _probe.place(amd, parsed)
    assert amd['gpu'] == {'vendor': 'amd', 'xgmi': {}} and amd['network']['link_events'] == links
    end = {'infiniband': {}}
    _probe.place(end, {}, 'end')
    assert end == {'infiniband': {'counters': None}}


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
