"""AMD checks (profile gpu.vendor amd, profiles/mi300x-8.yml): the healthy fake 8x MI300X node passes the GPU
checks, each derived fault of tests/fixtures/amd/ fails on its own component, what the tools do not report is
never a pass, and the vendor switch leaves NVIDIA profiles as they were."""
import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.module_utils._judge import evaluate
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import merge_profile, validate_profile
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import amd_node


def profile(name='mi300x-8', override=None):
    data = _collection.resolve_profile(name)[0]
    return merge_profile(data, override, 'test') if override else data


def gpu_findings(facts, prof=None):
    """(check, component, severity) of the fail/warn findings of the gpu section."""
    findings = evaluate(facts, prof or profile(), 'mi300x')
    return sorted(set((f['check'], f['component'], f['severity']) for f in findings
                      if f['severity'] != 'info' and (f['check'].startswith('gpu.') or f['component'].startswith('gpu'))))


def test_healthy_node_passes_every_gpu_check():
    assert gpu_findings(amd_node.facts(groups=('gpu',))) == []


FAULTS = [
    ('gpu missing', {'amd-smi static --json': 'amd-smi_static_--json_mi300x8-derived-gpu3-missing.json'},
     [('gpu.count', 'gpu', 'fail')]),
    ('xgmi down', {'amd-smi topology --json': 'amd-smi_topology_--json_mi300x8-derived-xgmi-down-gpu1-gpu2.json'},
     [('gpu.xgmi_link_down', 'gpu1<->gpu2', 'fail')]),
    ('ecc uncorrectable', {'amd-smi metric --json': 'amd-smi_metric_--json_mi300x8-derived-gpu3-ecc-uncorrectable.json'},
     [('gpu.ecc_uncorrectable', 'gpu3', 'fail')]),
    ('bad pages', {'amd-smi bad-pages --json': 'amd-smi_bad-pages_--json_mi300x8-derived-gpu3-retired-pending.json'},
     [('gpu.bad_pages_pending', 'gpu3', 'fail')]),
    ('pcie', {'amd-smi metric --json': 'amd-smi_metric_--json_mi300x8-derived-gpu5-pcie-gen4-x8.json'},
     [('gpu.pcie_link', 'gpu5', 'fail')]),
]


@pytest.mark.parametrize('name, replace, expected', FAULTS, ids=[f[0] for f in FAULTS])
def test_derived_fault_fails_on_its_component(name, replace, expected):
    assert gpu_findings(amd_node.facts(replace=replace, groups=('gpu',))) == expected


def test_shared_checks_carry_amd_remediation():
    facts = amd_node.facts(replace=FAULTS[2][1], groups=('gpu',))
    facts['gpu']['devices'][1]['memory_total_mib'] = 98304
    facts['gpu']['devices'][5].update(pcie_gen_current=4, pcie_width_current=8)
    found = dict((f['check'], f) for f in evaluate(facts, profile(), 'mi300x') if f['check'].startswith('gpu.'))
    assert sorted(found) == ['gpu.ecc_uncorrectable', 'gpu.memory', 'gpu.pcie_link']
    for finding in found.values():
        assert 'amd-smi' in finding['remediation'] and 'nvidia-smi' not in finding['remediation'], finding
    assert '-g 3' in found['gpu.ecc_uncorrectable']['remediation']
    assert found['gpu.pcie_link']['measured'] == 'Gen4 x8 (max Gen5 x16)'


def test_retired_pages_above_the_limit_fail():
    facts = amd_node.facts(replace=FAULTS[3][1], groups=('gpu',))
    found = gpu_findings(facts, profile(override={'gpu': {'bad_pages': {'retired_max': 2}}}))
    assert found == [('gpu.bad_pages', 'gpu3', 'fail'), ('gpu.bad_pages_pending', 'gpu3', 'fail')]


def test_rocm_smi_only_node_never_passes_what_it_cannot_read():
    findings = evaluate(amd_node.facts(tools=('rocm-smi',), groups=('gpu',)), profile(), 'mi300x')
    unmeasured = set((f['component'], f['message'].split(': ', 1)[1].split(' was not')[0]) for f in findings
                     if f['check'] == 'facts.not_measured')
    for what in ('ECC mode', 'ECC error counters', 'bad pages', 'PCIe width'):
        assert ('gpu0', what) in unmeasured
    assert ('gpu1<->gpu2', 'xGMI link state') in unmeasured
    assert not [f for f in findings if f['severity'] == 'fail']


def test_node_without_rocm_fails_the_tools_check():
    found = gpu_findings(amd_node.facts(tools=(), groups=('gpu',)))
    assert found == [('gpu.amd_tools_missing', 'amd-smi', 'fail')]


def test_amd_node_judged_by_an_nvidia_profile_has_no_nvidia_driver():
    found = gpu_findings(amd_node.facts(groups=('gpu',)), profile('h200x4-nvlink'))
    assert ('gpu.driver_missing', 'nvidia-smi', 'fail') in found
    assert not [f for f in found if f[0] in ('gpu.count', 'gpu.model', 'gpu.memory')]


def test_topology_not_read_is_not_a_pass():
    facts = amd_node.facts(groups=('gpu',))
    facts['probes']['amd_topology']['status'] = 'failed'
    del facts['gpu']['links']
    findings = evaluate(facts, profile(), 'mi300x')
    assert ('probe.failed', 'probe amd_topology', 'fail') in set((f['check'], f['component'], f['severity']) for f in findings)


@pytest.mark.parametrize('vendor, key, value', [
    ('nvidia', 'xgmi', {'max_hops': 1}),
    ('nvidia', 'bad_pages', {'retired_max': 1}),
    ('amd', 'nvlink', {'links_per_gpu': 7}),
    ('amd', 'topology', {'gpu_pair_link': 'NV18'}),
])
def test_a_key_of_the_other_vendor_is_a_profile_error(vendor, key, value):
    data = {'schema_version': 1, 'name': 'x', 'gpu': {'vendor': vendor, 'count': 8, key: value}}
    with pytest.raises(ProfileError) as err:
        validate_profile(data, 'x')
    assert 'gpu.%s' % key in str(err.value) and 'gpu.vendor %s' % vendor in str(err.value)


def test_mi300x_profile_values():
    gpu = profile()['gpu']
    assert (gpu['vendor'], gpu['count'], gpu['memory_mib_min']) == ('amd', 8, 196592)
    assert gpu['xgmi'] == {'pair_link_type': 'XGMI', 'max_hops': 1, 'links_up_required': True, 'bit_rate_gbps_min': 32.0}
