"""The AMD probes in the probe engine: run in the same probe call when the node has amd-smi (or only
rocm-smi), assembled into the NVIDIA-shaped ``gpu`` facts, captured and replayed through a bundle; a node
without ROCm reads exactly as before."""
import json
import os

import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._judge import evaluate
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import validate_profile
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import amd_node

AMD_KEYS = ['amd_bad_pages', 'amd_metric', 'amd_static', 'amd_topology', 'amd_version', 'amd_xgmi']


def test_amd_smi_node_gives_nvidia_shaped_gpu_facts():
    ran = []
    facts = _probe.probe(amd_node.runner(ran=ran))
    gpu = facts['gpu']
    assert (gpu['vendor'], gpu['installed'], gpu['tool'], gpu['count']) == ('amd', True, 'amd-smi', 8)
    assert (gpu['driver_version'], gpu['rocm_version'], facts['software']['rocm_version']) == ('6.8.5', '6.1.0', '6.1.0')
    assert sorted(k for k in facts['probes'] if k.startswith('amd_')) == AMD_KEYS
    assert all(facts['probes'][k]['status'] == 'ok' for k in AMD_KEYS)
    assert facts['probes']['nvidia_query_gpu']['status'] == 'missing'
    dev = gpu['devices'][3]
    assert dev['index'] == 3 and dev['bus_id'] == '0000:5c:00.0' and dev['memory_total_mib'] == 196592
    assert (dev['pcie_gen_current'], dev['pcie_gen_max'], dev['pcie_width_current'], dev['pcie_width_max']) == (5, 5, 16, 16)
    assert dev['ecc_mode'] is True
    assert dev['ecc_errors'] == {'volatile': {'correctable': 0, 'uncorrectable': 0, 'deferred': 0}}
    assert dev['bad_pages'] == {'retired': 0, 'pending': 0, 'unreservable': 0}
    assert len(gpu['links']) == 28
    assert gpu['links']['1-2']['link_type'] == 'XGMI' and gpu['links']['1-2']['up'] is True
    assert gpu['links']['1-2']['hops'] == 1 and gpu['links']['1-2']['bit_rate_gbps'] == 32.0
    assert ['amd-smi', 'static', '--json'] in [[a.split('/')[-1] for a in argv] for argv in ran]


def test_a_down_link_is_down_in_the_pair_facts():
    facts = amd_node.facts(replace={'amd-smi topology --json': 'amd-smi_topology_--json_mi300x8-derived-xgmi-down-gpu1-gpu2.json'})
    links = facts['gpu']['links']
    assert links['1-2']['up'] is False and links['1-2']['status'] == 'DISABLED'
    assert [pair for pair, link in sorted(links.items()) if link['up'] is not True] == ['1-2']


def test_rocm_smi_only_node_uses_the_fallback():
    facts = amd_node.facts(tools=('rocm-smi',))
    gpu = facts['gpu']
    assert (gpu['vendor'], gpu['tool'], gpu['count']) == ('amd', 'rocm-smi', 8)
    assert facts['probes']['amd_static']['command'] == 'rocm-smi --showallinfo --json'
    assert facts['probes']['amd_topology']['command'] == 'rocm-smi --showtopo --json'
    assert facts['probes']['amd_metric']['status'] == 'missing'
    assert gpu['devices'][0]['memory_total_mib'] == 196592 and 'ecc_errors' not in gpu['devices'][0]
    assert gpu['links']['0-1']['link_type'] == 'XGMI' and gpu['links']['0-1']['up'] is None


def test_node_without_rocm_reads_as_before():
    facts = amd_node.facts(tools=())
    assert not [k for k in facts['probes'] if k.startswith('amd_')]
    assert facts['gpu'] == {'vendor': 'nvidia', 'installed': False, 'count': 0, 'driver_version': None,
                            'cuda_driver_version': None, 'devices': []}
    assert 'rocm_version' not in facts['software']


def test_gpu_group_off_runs_no_amd_probe():
    facts = amd_node.facts(groups=('host',))
    assert not [k for k in facts['probes'] if k.startswith('amd_')]


def test_capture_and_replay_give_the_same_facts(tmp_path):
    writer = _probe.BundleWriter(str(tmp_path / 'bundle'))
    live = _probe.probe(amd_node.runner(), capture=writer)
    writer.write({'host': 'mi300x'})
    manifest = json.loads((tmp_path / 'bundle' / 'manifest.json').read_text())
    assert sorted(e['probe'] for e in manifest['probes'] if e['probe'].startswith('amd_')) == AMD_KEYS
    replayed = _probe.probe(_probe.ReplayRunner(str(tmp_path / 'bundle')))
    assert replayed['gpu'] == live['gpu']


def test_probe_table_lists_the_amd_probes():
    table = _probe.probes_markdown()
    for key in AMD_KEYS:
        assert '| `%s` | gpu |' % key in table
    assert '`amd-smi static --json`, else `/opt/rocm/bin/amd-smi static --json`, else `rocm-smi --showallinfo --json`' in table


def test_one_gpu_not_understood_spoils_only_its_section():
    facts = amd_node.facts(replace={'amd-smi static --json': 'amd-smi_static_--json_mi300x8-derived-gpu2-negative-vram.json'},
                           groups=('gpu',))
    record = facts['probes']['amd_static']
    assert record['status'] == 'ok' and [e['section'] for e in record['section_errors']] == ['gpu2']
    assert facts['gpu']['count'] == 8 and facts['gpu']['devices'][3]['memory_total_mib'] == 196592
    with open(os.path.join(amd_node.AMD, '..', '..', '..', 'profiles', 'mi300x-8.yml')) as handle:
        profile = validate_profile(yaml.safe_load(handle), 'mi300x-8')
    found = sorted((f['check'], f['component']) for f in evaluate(facts, profile, 'n') if f['severity'] == 'fail')
    assert found == [('probe.section_parse_error', 'probe amd_static: gpu2')]
