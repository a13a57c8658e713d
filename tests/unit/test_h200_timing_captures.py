"""Real validate.yml runs on one H200 (tests/fixtures/hardware/h200x1-validate/, README.md there): the host CPU samples
and DDP step times of runs 23-25 (the healthy runs pass the default bounds with a wide margin, and a competing process
on the GPU, run 25, fails the soak, not the new checks: it loads the GPU evenly, not in spikes), and the elastic
restarts of runs 26-27 (killed, restarted once, resumed from the checkpoint, recovered in 8-11 s against 60)."""
import json
import os
import re

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _workloads

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = os.path.join(HERE, '..', 'fixtures', 'hardware', 'h200x1-validate')
NEW = ('workload.host_cpu_iowait', 'workload.host_cpu_steal', 'workload.host_cpu_bound', 'workload.ddp_step_jitter',
       'workload.ddp_step_periodic', 'workload.ddp_straggler')


def _report(run):
    with open(os.path.join(RUNS, run, 'report.json')) as handle:
        return json.load(handle)['hosts']['gpu-host']


def _ddp_result(run):
    with open(os.path.join(RUNS, run, 'torch_ddp_smoke.txt')) as handle:
        line = [raw for raw in handle.read().splitlines() if raw.startswith('XUANWU_RESULT ')][-1]
    return json.loads(line[len('XUANWU_RESULT '):])


@pytest.mark.parametrize('run, status, failing', [
    ('run23', 'pass', []), ('run24', 'pass', []), ('run25', 'fail', ['workload.soak_throughput'])])
def test_real_runs_judged_as_they_were(run, status, failing):
    host = _report(run)
    assert host['status'] == status
    assert sorted(f['check'] for f in host['findings'] if f['severity'] == 'fail') == failing
    assert not [f for f in host['findings'] if f['check'] in NEW]
    sampled = [w for w in host['workloads'] if w.get('host_cpu')]
    assert {w['kind'] for w in sampled} == {'gpu_single', 'torch_allreduce', 'ddp_smoke', 'fault_isolation', 'soak'}
    for workload in sampled:
        values = workload['host_cpu']['values']
        assert max(values['iowait']) < 5 and max(values['steal']) < 2, (workload['kind'], values)


@pytest.mark.parametrize('run', ['run23', 'run24', 'run25'])
def test_real_step_times_pass_the_default_bounds(run):
    result = _ddp_result(run)
    assert result['ok'] and len(result['per_rank']) == 1
    timing = _workloads.step_timing(result, {})
    assert timing['judged_steps'] == 17 and timing['spikes'] == []
    assert 16 < timing['median_ms'] < 25 and timing['p99_ratio'] < 1.3   # bound 3 (max_p99_ratio)
    assert _workloads.evaluate_step_times(result, {}, 'gpu-host') == []
    assert re.match(r'^\d+(\.\d+)?$', str(timing['median_ms']))


@pytest.mark.parametrize('run, recover_s', [('run26', 8.445), ('run27', 10.499)])
def test_real_elastic_restarts_recover_well_within_the_bound(run, recover_s):
    host = _report(run)
    assert host['status'] == 'pass' and host['findings'] == []
    with open(os.path.join(RUNS, run, 'torch_elastic_restart_launch.txt')) as handle:
        line = [raw for raw in handle.read().splitlines() if raw.startswith('XUANWU_RESULT ')][-1]
    result = json.loads(line[len('XUANWU_RESULT '):])
    assert (result['killed'], result['restarts'], result['resumed_from'], result['steps_redone'], result['steps_done']) == (True, 1, 5, 2, 20)
    assert result['recover_s'] == recover_s and result['backend'] == 'nccl' and result['checkpoint_dir_removed']
    run_entry = {'exit_code': 0, 'stdout': line + '\n', 'output_tail': line, 'timed_out': False, 'timeout_s': 600,
                 'component': 'elastic_restart'}
    assert _workloads.evaluate('elastic_restart', run_entry, {'workloads': {'elastic_restart': {'recover_s_max': 60.0}}}, 'gpu-host') == []
    # the bound holds with a margin of almost 6x; a third of it would still pass
    assert _workloads.evaluate('elastic_restart', run_entry, {'workloads': {'elastic_restart': {'recover_s_max': 20.0}}}, 'gpu-host') == []
