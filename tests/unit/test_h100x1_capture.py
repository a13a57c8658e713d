"""A real 1x H100 host (tests/fixtures/hardware/h100x1-bundle/, captured by playbooks/capture.yml on the host itself)
and the live verdicts of validate.yml there against the wrong profile, profiles/h200x1.yml: the node checks only
(tests/fixtures/hardware/h100x1-validate/report.json), then every stage (h100x1-validate/run1/: the single-GPU stage,
five nccl-tests, the five PyTorch workloads with a 30 s soak, dmon and the clock event reasons, their raw outputs and
report.json, by bench/gpu-host-validate.sh with xuanwu_workloads_on_failed_hosts).

Judged again here, with no playbook: the capture gives the facts of the live run, and the judge gives exactly the
findings the live run gave. The node's answer (raw outputs parsed by the controller) is the path validate.yml took
there; the bundle replays through node_probe's path as well (tests/unit/plugins/module_utils/test_node_answer.py
compares the two on every bundle, this one included)."""
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _judge, _probe, _workloads
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_clock_events import QUERY_FIELDS
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import merge_profile
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import node_answer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware')
BUNDLE = os.path.join(HW, 'h100x1-bundle')
RUN1 = os.path.join(HW, 'h100x1-validate', 'run1')
COLLECTIVES = ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall', 'sendrecv']
TORCH = [('gpu_single', 'gpu_single'), ('allreduce_bench', 'torch_allreduce'), ('ddp_smoke', 'ddp_smoke'),
         ('fault_isolation', 'fault_isolation'), ('elastic_restart', 'elastic_restart'), ('soak', 'soak')]
EVENTS = ('nvidia-smi --query-gpu=index,clocks_event_reasons.active,clocks.sm,power.draw,power.limit,temperature.gpu '
          '--format=csv,noheader,nounits -lms 1000')


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


# ---------------------------------------------------------------------------------------- every stage, run 1

def _read(name):
    with open(os.path.join(RUN1, name)) as handle:
        return handle.read()


def _dmon(component):
    return {'command': 'nvidia-smi dmon -s pucvmet -d 1', 'interval_s': 1, 'stdout': _read('dmon_%s.txt' % component),
            'clock_events': {'command': EVENTS, 'interval_s': 1, 'exit_code': -15, 'fields': list(QUERY_FIELDS),
                             'stdout': _read('clock-events_%s.csv' % component)}}


def _run1_profile():
    # as bench/gpu-host-validate.sh ran it: no chronyd on that host, host.time off
    return merge_profile(_collection.resolve_profile('h200x1')[0], {'host': {'time': None}})


def _judged():
    """{component: [(check, severity)]} of every stage of run 1 and of its GPU samples, judged again."""
    judge = _judge.Judge(_run1_profile())
    out = {}
    for coll in COLLECTIVES:
        component = '%s_perf' % coll
        found = judge.workload('nccl_tests', {'collective': coll, 'stdout': _read('nccl-tests_%s.txt' % component)}, 'h100')
        out[component] = found + judge.dmon(_dmon(component), 'h100', component)[0]
    for name, kind in TORCH:
        # the elastic restart's result is its launcher's (the job's own output is kept beside it)
        output = 'torch_%s_launch.txt' % name if kind == 'elastic_restart' else 'torch_%s.txt' % name
        found = judge.workload(kind, {'stdout': _read(output), 'exit_code': 0}, 'h100')
        unjudged = _workloads.DMON_UNJUDGED.get(kind)
        out[name] = found + judge.dmon(_dmon(name), 'h100', name, unjudged=unjudged)[0]
    return dict((k, sorted((f['check'], f['severity']) for f in v)) for k, v in out.items())


def test_every_stage_ran_live_on_the_h100_and_only_the_memory_bandwidth_fails_the_h200_floor():
    """The live chain after the node began answering with raw outputs: every stage ran and was judged. Against the H200
    profile the H100's HBM3 (3,028.6 GB/s, against the H200 floor of 3,800) is the one workload finding; its bf16
    matmuls (691.7 TFLOP/s), the DDP smoke, the elastic restart and a 30 s soak pass; the collectives and the
    two-rank workloads are not applicable on one GPU; the clocks, power and temperatures under load raise nothing."""
    judged = _judged()
    assert judged.pop('gpu_single') == [('workload.gpu_membw_low', 'fail')]
    assert judged == dict((k, []) for k in judged)
    found = _judge.Judge(_run1_profile()).workload('gpu_single', {'stdout': _read('torch_gpu_single.txt'), 'exit_code': 0},
                                                   'h100')
    assert [(f['measured'], f['expected']) for f in found] == [('3028.6 GB/s', '>= 3800.0 GB/s')]
    report = json.loads(_read('report.json'))['hosts']['gpu-host']
    assert report['status'] == 'fail' and sorted((f['check'], f['severity']) for f in report['findings']) == [
        ('gpu.memory', 'fail'), ('gpu.model', 'fail'), ('workload.gpu_membw_low', 'fail')]
    assert sorted(report['not_applicable']) == sorted(['%s_perf' % c for c in COLLECTIVES] + ['allreduce_bench', 'fault_isolation'])
    kinds = [w['kind'] for w in report['workloads']]
    assert kinds == ['gpu_single'] + ['nccl_tests'] * 5 + ['torch_allreduce', 'ddp_smoke', 'fault_isolation',
                                                           'elastic_restart', 'soak']


@pytest.mark.parametrize('name, kind', [('ddp_smoke', 'ddp_smoke'), ('elastic_restart', 'elastic_restart'), ('soak', 'soak')])
def test_the_workloads_that_apply_to_one_gpu_ran_on_the_h100(name, kind):
    report = json.loads(_read('report.json'))['hosts']['gpu-host']
    (run,) = [w for w in report['workloads'] if w['kind'] == kind]
    result = run['result']
    assert result['ok'] and result['error'] is None and result.get('device', 'NVIDIA H100 80GB HBM3') == 'NVIDIA H100 80GB HBM3'
    if kind == 'soak':
        assert result['duration_s'] >= 30 and result['iterations'] > 10000 and result['gpu_mem_growth_pct'] == 0.0
