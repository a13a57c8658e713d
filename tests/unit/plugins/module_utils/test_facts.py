"""The facts schema (plugins/module_utils/_facts.py): every fact the probe returns is declared, with its type; the
real captures and a node on which every probe answers conform to it, and a fact that is not declared is a problem.
(The fault corpus is checked where it is replayed, tests/unit/test_fault_corpus.py; the probe table against the schema in
test_probe_table.py.)"""
import copy
import glob
import importlib.util
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _facts, _probe
from ansible_collections.xuanwu.cluster.tests.unit.generated_docs import assert_current
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import amd_node, node_answer

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
_spec = importlib.util.spec_from_file_location('make_bundles', os.path.join(ROOT, 'scripts', 'make_bundles.py'))
make_bundles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_bundles)

# Every capture bundle the tests replay: the real ones of tests/fixtures/hardware/ and the demo bundles.
BUNDLES = sorted(os.path.dirname(path) for path in glob.glob(os.path.join(ROOT, 'tests', 'fixtures', 'hardware', '*', 'manifest.json'))
                 + glob.glob(os.path.join(ROOT, 'inventories', 'demo-bundles', '*', 'manifest.json')))


def conforms(facts, stage='start'):
    problems = _facts.validate(facts, stage)
    assert problems == [], problems
    return facts


@pytest.mark.parametrize('bundle', BUNDLES, ids=[os.path.relpath(path, ROOT) for path in BUNDLES])
def test_every_replayed_capture_conforms(bundle):
    conforms(_probe.probe(_probe.ReplayRunner(bundle)))
    conforms(_probe.probe(_probe.ReplayRunner(bundle), stage='end'), 'end')


def test_the_bundles_are_found():
    assert len(BUNDLES) >= 6
    assert any(path.endswith('h200x1-bundle') for path in BUNDLES)


@pytest.mark.parametrize('tools', [('amd-smi', 'rocm-smi'), ('rocm-smi',), ()], ids=['amd-smi', 'rocm-smi', 'none'])
def test_an_amd_node_conforms(tools):
    facts = conforms(amd_node.facts(tools=tools))
    assert facts['gpu']['vendor'] == ('amd' if tools else 'nvidia')


# A node on which every probe answers, each alternative once: the healthy corpus base with one RDMA interface
# (ethtool, RoCE ECN and PFC) and the end-of-run counters, read through the first alternatives ...
_IF = 'ens1np0'
_NET = {
    'ip_link': {'file': 'derived/net/ip_-j_-d_link_show_gpu_node.json'},
    'ethtool:' + _IF: {'file': 'derived/net/ethtool_ens1np0_mlx5_400g.txt'},
    'ethtool_driver:' + _IF: {'file': 'derived/net/ethtool_-i_ens1np0_mlx5_core.txt'},
    'roce_ecn:' + _IF: {'file': 'derived/net/roce_ecn_ens1np0_prio3.txt'},
    'roce_pfc:' + _IF: {'file': 'derived/net/dcb_-j_pfc_show_dev_ens1np0_pfc3.json'},
    'ib_counters_end': {'file': 'derived/ib/ib_counters_8x_after_load_healthy.txt',
                        'command': _probe.end_probes()[0].alternatives[0].command},
    # the bounded read of a host.storage path (run when the profile sets read_mb_s_min): the real one of /usr/lib
    'storage_read:/usr/lib': {'file': 'hardware/debian12-vm-noaccel/storage_read_usr_lib.txt',
                              'command': _probe.storage_probes(['/usr/lib'])[0].alternatives[0].command},
}
# ... and through the others: mlnx_qos for PFC, /proc/net without ss, dmesg; on AMD, amd-smi and rocm-smi.
_OTHERS = {
    'kernel_log': {'file': 'derived/nvidia/kernel-log_xid48-xid79.txt', 'command': 'dmesg'},
    'roce_pfc:' + _IF: {'file': 'derived/net/mlnx_qos_-i_ens1np0_pfc3_dscp.txt', 'command': 'mlnx_qos -i ' + _IF},
    'listening': {'file': 'derived/host/proc_net_listening_gpu_node.txt', 'command': 'internal:proc_net_listening'},
}
_ROCM = {
    'amd_static': {'file': 'amd/rocm-smi_--showallinfo_--json_mi300x8-derived.json',
                   'command': 'rocm-smi --showallinfo --json'},
    'amd_topology': {'file': 'amd/rocm-smi_--showtopo_--json_mi300x8-derived.json', 'command': 'rocm-smi --showtopo --json'},
}
EVERY_PROBE = [('h200x4-healthy', _NET), ('h200x4-healthy', dict(_NET, **_OTHERS)), ('mi300x8-healthy', {}),
               ('mi300x8-healthy', _ROCM)]


def test_a_node_where_every_probe_answers_conforms(tmp_path):
    corpus = make_bundles.load_corpus()
    answered = set()
    for number, (base, extra) in enumerate(EVERY_PROBE):
        probes = make_bundles.resolve(corpus, base=base)
        probes.update(copy.deepcopy(extra))
        bundle = str(tmp_path / str(number))
        make_bundles.write_bundle(probes, bundle, {'host': 'every-probe'})
        for stage in ('start', 'end'):
            facts = conforms(_probe.probe(_probe.ReplayRunner(bundle), stage=stage, read_paths=['/usr/lib']), stage)
            assert node_answer.facts(_probe.ReplayRunner(bundle), stage=stage, read_paths=['/usr/lib']) == facts
            answered.update((key.split(':', 1)[0], record['command'].split(' ', 1)[0])
                            for key, record in facts['probes'].items() if record['status'] == 'ok')
        if base == 'h200x4-healthy':
            assert facts['infiniband']['counters'] and 'roce' in _probe.probe(_probe.ReplayRunner(bundle))['network']['interfaces'][_IF]
    every = set()
    for probe in _probe.all_probes():
        every.update((probe.name, alt.command.replace('/opt/rocm/bin/', '').split(' ', 1)[0]) for alt in probe.alternatives)
    # the same tool at another path (nvcc of /usr/local/cuda/bin, amd-smi of /opt/rocm/bin) is one parser, and so is an
    # internal probe for another path (internal:storage_read:<path>)

    def tool_of(command):
        return ':'.join(command.split(':')[:2]) if command.startswith('internal:') else command.rsplit('/', 1)[-1]

    every = set((name, tool_of(tool)) for name, tool in every)
    missing = every - set((name, tool_of(tool)) for name, tool in answered)
    assert not missing, 'probe alternatives no facts were built from: %s' % sorted(missing)


# ------------------------------------------------------------------------------------------------ what is a problem

def _healthy_bundle(tmp_path):
    bundle = str(tmp_path / 'healthy')
    make_bundles.write_bundle(make_bundles.resolve(make_bundles.load_corpus(), base='h200x4-healthy'), bundle, {'host': 'n'})
    return bundle


def _healthy(tmp_path):
    return conforms(_probe.probe(_probe.ReplayRunner(_healthy_bundle(tmp_path))))


@pytest.mark.parametrize('where, key', [
    ((), 'uptime_seconds'),
    (('gpu',), 'fan_speed'),
    (('gpu', 'devices', 0), 'power_draw_w'),
    (('host', 'time'), 'poll_seconds'),
    (('probes', 'uname'), 'seconds'),
    (('infiniband', 'cas', 'mlx5_0', 'ports', '1'), 'speed'),
])
def test_an_undeclared_fact_is_a_problem(tmp_path, where, key):
    facts = _healthy(tmp_path)
    target = facts
    for step in where:
        target = target[step]
    target[key] = 1
    path = '.'.join(str(step) for step in where + (key,)).replace('.0.', '[0].')
    [problem] = _facts.validate(facts)
    assert problem.startswith('%s: unknown key %r' % (path, key)), problem


def test_a_probe_that_sets_an_undeclared_fact_is_caught(tmp_path, monkeypatch):
    """What the replays above report when the probe's assembly adds a fact that the schema does not declare."""
    assemble = _probe.assemble

    def more(*args, **kwargs):
        facts = assemble(*args, **kwargs)
        facts['host']['boot_id'] = 'x'
        return facts

    monkeypatch.setattr(_probe, 'assemble', more)
    facts = _probe.probe(_probe.ReplayRunner(_healthy_bundle(tmp_path)))
    [problem] = _facts.validate(facts)
    assert problem.startswith("host.boot_id: unknown key 'boot_id' (valid keys: disks, kernel, "), problem


@pytest.mark.parametrize('change, problem', [
    (lambda f: f['gpu'].update(count='4'), "gpu.count: expected an integer, got str ('4')"),
    (lambda f: f['gpu'].update(count=True), 'gpu.count: expected an integer, got bool (true)'),
    (lambda f: f['gpu'].update(vendor=None), 'gpu.vendor: expected a string, got null'),
    (lambda f: f['gpu'].update(vendor='intel'), "gpu.vendor: 'intel' is not one of 'nvidia', 'amd'"),
    (lambda f: f['gpu']['devices'][1].update(memory_total_mib=1.5),
     'gpu.devices[1].memory_total_mib: expected an integer, got float (1.5)'),
    (lambda f: f['host']['time'].update(offset_seconds=float('nan')),
     'host.time.offset_seconds: must be a finite number, got float (nan)'),
    (lambda f: f['host'].update(kernel_modules='nvidia'), "host.kernel_modules: expected a list, got str ('nvidia')"),
    (lambda f: f['probes'].update({'Bad Key': f['probes']['uname']}),
     "probes.Bad Key: key 'Bad Key' does not match ^[a-z][a-z0-9_]*(:\\S+)?$"),
    (lambda f: f['network']['interfaces'].update({7: {}}), 'network.interfaces.7: keys must be strings, got int (7)'),
])
def test_a_value_of_another_type_is_a_problem(tmp_path, change, problem):
    facts = _healthy(tmp_path)
    change(facts)
    assert _facts.validate(facts) == [problem]


def test_end_facts_have_their_own_schema(tmp_path):
    undeclared = sorted(_facts.validate(_healthy(tmp_path), 'end'))
    assert [problem.split(': unknown key ')[0] for problem in undeclared] == [
        'gpu', 'host', 'infiniband.cas', 'infiniband.installed', 'network', 'software'], undeclared
    assert _facts.validate({'schema_version': 1, 'source': 'live', 'probes': {}, 'infiniband': {'counters': None}}, 'end') == []


def test_docs_facts_md_is_generated():
    assert_current('docs/facts.md')
