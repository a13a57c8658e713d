"""The real 1x H200 runs of bench/gpu-host-validate.md replayed through the judge (no playbook, milliseconds).

tests/fixtures/hardware/h200x1-validate/run<N>/ holds what validate.yml ran on the host (nccl-tests, the four PyTorch
workloads, the dmon and clock event samplings of each) and its report.json; h200x1-bundle/ is the host's capture. A
healthy run gives no finding against profiles/h200x1.yml; the injected faults give their named findings: another
process's bf16 matmuls during the run (runs 5 and 14) workload.soak_throughput, a leftover torchrun job holding 20 GiB
(run 7) gpu.process and host.leftover_process. Runs 13-15 were made after workload.soak_throughput and the ports read
from /proc/net where ss is missing had shipped: their reports are the live verdicts of those checks."""
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _judge, _probe, _workloads
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import merge_profile
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
from ansible_collections.xuanwu.cluster.tests.unit import real_runs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware')
RUNS = os.path.join(HW, 'h200x1-validate')
HEALTHY = [4, 6, 8, 13, 15]
# runs 4, 6 and 8 warned facts.not_measured for the ports (no ss on that host); from run 13 on the probe reads /proc/net
WARNED_PORTS = (4, 6, 8)
COLLECTIVES = ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall', 'sendrecv']
TORCH = [('allreduce_bench', 'torch_allreduce'), ('ddp_smoke', 'ddp_smoke'), ('fault_isolation', 'fault_isolation'),
         ('soak', 'soak')]


def _profile():
    # the host has no chronyd: the runs were made with host.time off (bench/gpu-host-validate.sh)
    return merge_profile(_collection.resolve_profile('h200x1')[0], {'host': {'time': None}})


PROFILE = _profile()


def _read(run, name):
    return real_runs.read(RUNS, run, name)


def _dmon(run, component):
    return real_runs.dmon(RUNS, run, component)


def _judged(run):
    """{component: [(check, severity)]} of every workload of the run and of its dmon samples."""
    judge = _judge.Judge(PROFILE)
    out = {}
    for coll in COLLECTIVES:
        component = '%s_perf' % coll
        if not os.path.exists(os.path.join(RUNS, 'run%d' % run, 'nccl-tests_%s.txt' % component)):
            continue
        found = judge.workload('nccl_tests', {'collective': coll, 'component': component, 'exit_code': 0,
                                              'stdout': _read(run, 'nccl-tests_%s.txt' % component)}, 'h200x1')
        out[component] = found + judge.dmon(_dmon(run, component), 'h200x1', component)[0]
    for name, kind in TORCH:
        if not os.path.exists(os.path.join(RUNS, 'run%d' % run, 'torch_%s.txt' % name)):
            continue
        found = judge.workload(kind, {'stdout': _read(run, 'torch_%s.txt' % name), 'exit_code': 0}, 'h200x1')
        out[name] = found + judge.dmon(_dmon(run, name), 'h200x1', name)[0]
    return dict((k, sorted((f['check'], f['severity']) for f in v)) for k, v in out.items())


def test_the_capture_passes_its_profile():
    facts = _probe.probe(_probe.ReplayRunner(os.path.join(HW, 'h200x1-bundle')))
    assert facts['gpu']['count'] == 1
    findings = _judge.evaluate(facts, PROFILE, 'h200x1')
    # the one warning is true: ss is not installed on that host, so the ports were not looked at
    assert [(f['check'], f['severity'], f['component']) for f in findings if f['severity'] != 'info'] == [
        ('facts.not_measured', 'warn', 'ports')]


@pytest.mark.parametrize('run', HEALTHY)
def test_a_healthy_run_has_no_finding(run):
    judged = _judged(run)
    assert sorted(judged) == sorted(['%s_perf' % c for c in COLLECTIVES] + [n for n, _k in TORCH])
    assert judged == dict((k, []) for k in judged)
    report = json.loads(_read(run, 'report.json'))['hosts']['gpu-host']
    if run in WARNED_PORTS:
        assert report['counts'] == {'fail': 0, 'warn': 1, 'info': 0}     # facts.not_measured: ss is not installed
    else:
        # live: the same host without ss had its listening ports read from /proc/net and judged, nothing to say
        assert report['counts'] == {'fail': 0, 'warn': 0, 'info': 0} and report['findings'] == [] and report['status'] == 'pass'
        assert sorted(report['not_applicable']) == sorted(['%s_perf' % c for c in COLLECTIVES] + ['allreduce_bench', 'fault_isolation'])


@pytest.mark.parametrize('run', HEALTHY)
def test_one_rank_is_not_applicable_and_the_soak_runs_at_the_power_cap(run):
    for coll in COLLECTIVES:
        stdout = _read(run, 'nccl-tests_%s_perf.txt' % coll)
        assert 'ran on 1 rank(s)' in _workloads.not_applicable('nccl_tests', {'collective': coll, 'stdout': stdout})
    _found, entry = _judge.Judge(PROFILE).dmon(_dmon(run, 'soak'), 'h200x1', 'soak')
    gpu0 = entry['clock_events']['gpus']['gpu0']
    assert set(gpu0['reasons']) == {'gpu_idle', 'sw_power_cap'} and gpu0['reasons']['sw_power_cap'] >= 55
    assert 1500 <= gpu0['sm_clock_mhz']['median'] <= 1600 and gpu0['power_w']['median'] > 680


def test_the_sendrecv_that_failed_a_healthy_node_before_is_not_applicable():
    # run 1 failed collectives.implausible on sendrecv_perf within the one GPU (1933 GB/s): now nothing, for every collective
    assert json.loads(_read(1, 'report.json'))['hosts']['gpu-host']['findings'][0]['check'] == 'collectives.implausible'
    assert _judged(1) == dict(('%s_perf' % c, []) for c in COLLECTIVES)


@pytest.mark.parametrize('run, rate', [(5, '242.4'), (14, '242.8')])
def test_a_competing_process_is_the_soak_throughput(run, rate):
    # another process's bf16 matmuls from the first collective on: the soak ran 242 iterations/s instead of 555-571
    judged = _judged(run)
    assert judged.pop('soak') == [('workload.soak_throughput', 'fail')]
    assert judged == dict((k, []) for k in judged)          # nothing else saw it: the clocks stay power-capped
    found = _judge.Judge(PROFILE).workload('soak', {'stdout': _read(run, 'torch_soak.txt'), 'exit_code': 0}, 'h200x1')
    assert found[0]['measured'] == '%s iterations/s (rank 0)' % rate and found[0]['expected'] == '>= 443.0 iterations/s'
    # the bound is what catches it: without it the run is not judged on its throughput
    loose = merge_profile(PROFILE, {'workloads': {'soak': {'min_iterations_per_s': None}}})
    assert _judge.Judge(loose).workload('soak', {'stdout': _read(run, 'torch_soak.txt'), 'exit_code': 0}, 'h200x1') == []


def test_the_soak_throughput_failed_the_competing_run_live_and_nothing_else():
    # run 14 ran after the check shipped: its own report failed the node on it, and on nothing else
    report = json.loads(_read(14, 'report.json'))['hosts']['gpu-host']
    assert report['status'] == 'fail' and report['counts'] == {'fail': 1, 'warn': 0, 'info': 0}
    assert [(f['check'], f['measured']) for f in report['findings']] == [('workload.soak_throughput', '242.8 iterations/s (rank 0)')]
    assert 'gpu_load matmul' in _read(14, 'fault.log')


def test_a_leftover_job_holding_the_gpu_fails_the_node_before_any_load():
    report = json.loads(_read(7, 'report.json'))['hosts']['gpu-host']
    fails = sorted((f['check'], f['component']) for f in report['findings'] if f['severity'] == 'fail')
    assert fails == [('gpu.process', 'gpu0'), ('host.leftover_process', 'pid 3036')]
    assert report['status'] == 'fail' and not report.get('workloads')
    held = [f for f in report['findings'] if f['check'] == 'gpu.process'][0]
    assert 'bench/gpu_load.py hold --gib 20' in held['measured'] and '21090 MiB' in held['measured']
