"""A real 1x H100 host (tests/fixtures/hardware/h100x1-bundle/, captured by playbooks/capture.yml on the host itself)
and the live verdict of validate.yml there against the wrong profile, profiles/h200x1.yml
(tests/fixtures/hardware/h100x1-validate/report.json).

Judged again here, with no playbook: the capture gives the facts of the live run, and the judge gives exactly the
findings the live run gave. The node's answer (raw outputs parsed by the controller) is the path validate.yml took
there; the bundle replays through node_probe's path as well (tests/unit/plugins/module_utils/test_node_answer.py
compares the two on every bundle, this one included)."""
import json
import os

from ansible_collections.xuanwu.cluster.plugins.module_utils import _judge, _probe
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import node_answer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware')
BUNDLE = os.path.join(HW, 'h100x1-bundle')


def _live_report():
    with open(os.path.join(HW, 'h100x1-validate', 'report.json')) as handle:
        return json.load(handle)['hosts']['gpu-host']


def _key(findings):
    return sorted((f['check'], f['severity'], f['component'], f.get('measured'), f.get('expected')) for f in findings)


def test_the_capture_reads_one_h100_and_its_software():
    facts = node_answer.facts(_probe.ReplayRunner(BUNDLE))
    assert facts == _probe.probe(_probe.ReplayRunner(BUNDLE))
    assert facts['gpu']['count'] == 1
    (gpu,) = facts['gpu']['devices']
    assert gpu['name'] == 'NVIDIA H100 80GB HBM3' and gpu['memory_total_mib'] == 81559
    assert facts['software']['driver_version'] == '580.159.04' and facts['software']['nccl_version'] == '2.28.3'
    # the kernel log was read, and its FBHUB interrupt line of the H100 is no Xid
    assert facts['probes']['kernel_log']['status'] == 'ok' and facts['gpu']['xid_events'] == []
    summary = _live_report()['facts_summary']
    assert (summary['gpu_model'], summary['gpu_count'], summary['driver_version'], summary['source']) == (
        'NVIDIA H100 80GB HBM3', 1, '580.159.04', 'live')


def test_the_wrong_profile_fails_the_h100_on_model_and_memory_as_the_live_run_did():
    """Judged against the H200 profile, the H100 fails exactly where the live run failed it: the model and the memory
    (81,559 MiB against 143,771), the missing chronyd and the system NCCL 2.28.3 against the profile's 2.28.9. Nothing
    else: no check that cannot apply to a 1-GPU PCIe host without InfiniBand speaks."""
    facts = _probe.probe(_probe.ReplayRunner(BUNDLE))
    profile = _collection.resolve_profile('h200x1')[0]
    findings = [f for f in _judge.evaluate(facts, profile, 'h200x1') if f['severity'] != 'info']
    live = _live_report()
    assert _key(findings) == _key(live['findings'])
    assert [(f['check'], f['measured'], f['expected']) for f in sorted(findings, key=lambda f: f['check'])] == [
        ('gpu.memory', 81559, 143771), ('gpu.model', 'NVIDIA H100 80GB HBM3', 'H200'),
        ('host.chrony_missing', 'not installed', 'chrony synchronised'), ('software.nccl_version', '2.28.3', '2.28.9')]
    assert live['status'] == 'fail' and live['counts'] == {'fail': 4, 'warn': 0, 'info': 0}
