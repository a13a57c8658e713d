"""A real 1x H100 host (tests/fixtures/hardware/h100x1-bundle/, captured by playbooks/capture.yml on the host itself)
and the live verdicts of validate.yml there (tests/fixtures/hardware/h100x1-validate/, bench/gpu-host-validate.md):
- against the wrong profile, profiles/h200x1.yml: the node checks only (report.json), then every stage (run1/, with
  xuanwu_workloads_on_failed_hosts and a 30 s soak);
- against profiles/h100x1.yml, which these runs measured: two healthy runs with every stage and a 60 s soak (run2/,
  run3/: pass, no finding) and one with another process's bf16 matmuls on the GPU from the first collective on
  (run4/: workload.soak_throughput only).
Every run keeps the raw outputs of the single-GPU stage, five nccl-tests, the five PyTorch workloads, dmon and the
clock event reasons, and its report.json. tests/fixtures/hardware/h100x1-gpu-single/ holds five runs of the
single-GPU script alone.

Judged again here, with no playbook: the capture gives the facts of the live run, and the judge gives exactly the
findings the live run gave. The node's answer (raw outputs parsed by the controller) is the path validate.yml took
there; the bundle replays through node_probe's path as well (tests/unit/plugins/module_utils/test_node_answer.py
compares the two on every bundle, this one included)."""
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _judge, _probe, _workloads
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import merge_profile
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
from ansible_collections.xuanwu.cluster.tests.unit import real_runs
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import node_answer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware')
BUNDLE = os.path.join(HW, 'h100x1-bundle')
RUNS = os.path.join(HW, 'h100x1-validate')
SINGLE = os.path.join(HW, 'h100x1-gpu-single')
COLLECTIVES = ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall', 'sendrecv']
TORCH = [('gpu_single', 'gpu_single'), ('allreduce_bench', 'torch_allreduce'), ('ddp_smoke', 'ddp_smoke'),
         ('fault_isolation', 'fault_isolation'), ('elastic_restart', 'elastic_restart'), ('soak', 'soak')]


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


def test_its_own_profile_passes_the_capture_but_for_what_the_capture_could_not_show():
    """Against profiles/h100x1.yml the capture fails only what that host lacks or the capture did not read: chronyd is
    not installed there (the runs below switch host.time off), and the capture was given no NCCL library glob, so it
    read the system NCCL 2.28.3, not the wheel's 2.28.9 that PyTorch uses (the runs below read that one)."""
    facts = _probe.probe(_probe.ReplayRunner(BUNDLE))
    findings = [f for f in _judge.evaluate(facts, _collection.resolve_profile('h100x1')[0], 'h100x1') if f['severity'] != 'info']
    assert sorted((f['check'], f['measured']) for f in findings) == [
        ('host.chrony_missing', 'not installed'), ('software.nccl_version', '2.28.3')]
    # with host.time off and the NCCL that the capture read, nothing else speaks
    system_nccl = merge_profile(_profile('h100x1'), {'software': {'nccl_version': '2.28.3'}})
    assert [f for f in _judge.evaluate(facts, system_nccl, 'h100x1') if f['severity'] != 'info'] == []


# ---------------------------------------------------------------------------------------- every stage

def _read(run, name):
    return real_runs.read(RUNS, run, name)


def _dmon(run, component):
    return real_runs.dmon(RUNS, run, component)


def _profile(name):
    # as bench/gpu-host-validate.sh ran it: no chronyd on that host, host.time off
    return merge_profile(_collection.resolve_profile(name)[0], {'host': {'time': None}})


def _judged(run, profile):
    """{component: [(check, severity)]} of every stage of a run and of its GPU samples, judged again."""
    judge = _judge.Judge(_profile(profile))
    out = {}
    for coll in COLLECTIVES:
        component = '%s_perf' % coll
        found = judge.workload('nccl_tests', {'collective': coll, 'stdout': _read(run, 'nccl-tests_%s.txt' % component)},
                               'h100')
        out[component] = found + judge.dmon(_dmon(run, component), 'h100', component)[0]
    for name, kind in TORCH:
        # the elastic restart's result is its launcher's (the job's own output is kept beside it)
        output = 'torch_%s_launch.txt' % name if kind == 'elastic_restart' else 'torch_%s.txt' % name
        found = judge.workload(kind, {'stdout': _read(run, output), 'exit_code': 0}, 'h100')
        unjudged = _workloads.DMON_UNJUDGED.get(kind)
        out[name] = found + judge.dmon(_dmon(run, name), 'h100', name, unjudged=unjudged)[0]
    return dict((k, sorted((f['check'], f['severity']) for f in v)) for k, v in out.items())


def _report(run):
    return json.loads(_read(run, 'report.json'))['hosts']['gpu-host']


NOT_APPLICABLE = sorted(['%s_perf' % c for c in COLLECTIVES] + ['allreduce_bench', 'fault_isolation'])
KINDS = ['gpu_single'] + ['nccl_tests'] * 5 + ['torch_allreduce', 'ddp_smoke', 'fault_isolation', 'elastic_restart', 'soak']


def test_every_stage_ran_live_and_only_the_memory_bandwidth_fails_the_h200_floor():
    """Run 1, against the H200 profile: every stage ran and was judged. The H100's HBM3 (3,028.6 GB/s, against the H200
    floor of 3,800) is the one workload finding; its bf16 matmuls (691.7 TFLOP/s), the DDP smoke, the elastic restart
    and a 30 s soak pass; the collectives and the two-rank workloads are not applicable on one GPU; the clocks, power
    and temperatures under load raise nothing. Against its own profile the same run has no finding at all."""
    judged = _judged(1, 'h200x1')
    assert judged.pop('gpu_single') == [('workload.gpu_membw_low', 'fail')]
    assert judged == dict((k, []) for k in judged)
    found = _judge.Judge(_profile('h200x1')).workload('gpu_single', {'stdout': _read(1, 'torch_gpu_single.txt'),
                                                                     'exit_code': 0}, 'h100')
    assert [(f['measured'], f['expected']) for f in found] == [('3028.6 GB/s', '>= 3800.0 GB/s')]
    report = _report(1)
    assert report['status'] == 'fail' and sorted((f['check'], f['severity']) for f in report['findings']) == [
        ('gpu.memory', 'fail'), ('gpu.model', 'fail'), ('workload.gpu_membw_low', 'fail')]
    assert sorted(report['not_applicable']) == NOT_APPLICABLE
    assert [w['kind'] for w in report['workloads']] == KINDS
    assert _judged(1, 'h100x1') == dict((k, []) for k in judged.keys() | {'gpu_single'})


@pytest.mark.parametrize('run', [2, 3])
def test_a_healthy_run_passes_its_profile_with_no_finding(run):
    """Runs 2 and 3, live against profiles/h100x1.yml: pass, no finding; judged again, nothing either. The soak ran at
    the power cap (SW power cap and no other reason), which is no finding."""
    assert _judged(run, 'h100x1') == dict([('%s_perf' % c, []) for c in COLLECTIVES] + [(n, []) for n, _k in TORCH])
    report = _report(run)
    assert report['status'] == 'pass' and report['findings'] == [] and report['counts'] == {'fail': 0, 'warn': 0, 'info': 0}
    assert report['profile'] == 'h100x1' and sorted(report['not_applicable']) == NOT_APPLICABLE
    assert [w['kind'] for w in report['workloads']] == KINDS
    (soak,) = [w['result'] for w in report['workloads'] if w['kind'] == 'soak']
    assert soak['ok'] and soak['duration_s'] >= 60 and soak['iterations'] / soak['duration_s'] > 540
    _found, entry = _judge.Judge(_profile('h100x1')).dmon(_dmon(run, 'soak'), 'h100', 'soak')
    gpu0 = entry['clock_events']['gpus']['gpu0']
    assert set(gpu0['reasons']) <= {'gpu_idle', 'sw_power_cap'} and gpu0['reasons']['sw_power_cap'] >= 55


def test_a_competing_process_fails_the_soak_throughput_and_nothing_else():
    """Run 4: another process's bf16 matmuls on the GPU from the first collective on (its own log: 525 TFLOP/s while
    sharing). The soak ran 239 iterations/s against 541-546 healthy: workload.soak_throughput, live and judged again;
    nothing else saw it."""
    judged = _judged(4, 'h100x1')
    assert judged.pop('soak') == [('workload.soak_throughput', 'fail')]
    assert judged == dict((k, []) for k in judged)
    report = _report(4)
    assert report['status'] == 'fail' and report['counts'] == {'fail': 1, 'warn': 0, 'info': 0}
    assert [(f['check'], f['measured'], f['expected']) for f in report['findings']] == [
        ('workload.soak_throughput', '239.0 iterations/s (rank 0)', '>= 431.0 iterations/s')]
    assert 'gpu_load matmul' in _read(4, 'fault.log')


@pytest.mark.parametrize('name, kind', [('ddp_smoke', 'ddp_smoke'), ('elastic_restart', 'elastic_restart'), ('soak', 'soak')])
@pytest.mark.parametrize('run', [1, 2, 3])
def test_the_workloads_that_apply_to_one_gpu_ran_on_the_h100(run, name, kind):
    (result,) = [w['result'] for w in _report(run)['workloads'] if w['kind'] == kind]
    assert result['ok'] and result['error'] is None
    assert result.get('device', 'NVIDIA H100 80GB HBM3') == 'NVIDIA H100 80GB HBM3'


def test_the_single_gpu_floors_hold_for_every_healthy_run_and_the_h200_floor_does_not():
    """The floors of policy/h100-gpu-single.yml come from these runs (0.85 x the slowest matmul, 0.9 x the slowest
    copy): every healthy run passes them; the H200's membw floor fails every one."""
    outputs = [os.path.join(SINGLE, 'gpu_single_healthy%d.txt' % i) for i in range(1, 6)]
    outputs += [os.path.join(RUNS, 'run%d' % run, 'torch_gpu_single.txt') for run in (1, 2, 3, 4)]
    h100, h200 = _judge.Judge(_profile('h100x1')), _judge.Judge(_profile('h200x1'))
    floors = h100.profile['workloads']['gpu_single']
    tflops, membw = [], []
    for path in outputs:
        with open(path) as handle:
            run = {'stdout': handle.read(), 'exit_code': 0}
        assert h100.workload('gpu_single', run, 'h100') == [], path
        assert [f['check'] for f in h200.workload('gpu_single', run, 'h100')] == ['workload.gpu_membw_low'], path
        (gpu,) = json.loads(run['stdout'].split('XUANWU_RESULT ', 1)[1].splitlines()[0])['gpus']
        tflops.append(gpu['bf16_tflops'])
        membw.append(gpu['membw_gbps'])
    assert floors['min_bf16_tflops'] == round(0.85 * min(tflops), 1) == 568.0
    assert floors['min_membw_gbps'] == int(0.9 * min(membw)) == 2725
