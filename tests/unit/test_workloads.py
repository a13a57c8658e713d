"""The workload judges: each check passes on a healthy result and fails on the faulty one."""
import json
import os

import pytest
import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils import _workloads
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(result, exit_code=0, timed_out=False, tail=''):
    stdout = 'noise\n%s %s\n' % (_workloads.RESULT_TAG, json.dumps(result)) if result is not None else ''
    return {'exit_code': exit_code, 'stdout': stdout, 'output_tail': tail or stdout, 'timed_out': timed_out, 'timeout_s': 60}


def checks(findings):
    return sorted((f['check'], f['severity']) for f in findings)


DDP_OK = {'ok': True, 'first_loss': 9.2, 'last_loss': 5.3, 'losses': [9.2, 5.3], 'step_time_ms_median': 24.0, 'params_in_sync': True}


def test_ddp_smoke():
    assert _workloads.evaluate_ddp_smoke(run(DDP_OK), {}, 'h') == []
    flat = dict(DDP_OK, last_loss=9.0)
    assert checks(_workloads.evaluate_ddp_smoke(run(flat), {'min_loss_drop_pct': 10}, 'h')) == [('workload.ddp_smoke', 'fail')]
    split = dict(DDP_OK, params_in_sync=False)
    assert checks(_workloads.evaluate_ddp_smoke(run(split), {}, 'h')) == [('workload.ddp_smoke', 'fail')]
    slow = _workloads.evaluate_ddp_smoke(run(DDP_OK), {'max_step_time_ms': 20}, 'h')
    assert checks(slow) == [('workload.ddp_step_time', 'fail')] and slow[0]['measured'] == 24.0
    died = _workloads.evaluate_ddp_smoke(run(None, exit_code=1, tail='RuntimeError: NCCL error'), {}, 'h')
    assert checks(died) == [('workload.failed', 'fail')] and 'NCCL error' in died[0]['message']


FI_OK = {'ok': True, 'ended_with_error': True, 'hung': False, 'seconds': 11.3, 'attributed': True, 'victim_rank': 1, 'bound_s': 120}


def test_fault_isolation():
    assert _workloads.evaluate_fault_isolation(run(FI_OK), {'bound_s': 120}, 'h') == []
    hung = dict(FI_OK, hung=True, ended_with_error=False, seconds=121.0)
    found = _workloads.evaluate_fault_isolation(run(hung), {'bound_s': 120}, 'node7')
    assert checks(found) == [('workload.fault_isolation', 'fail')] and found[0]['host'] == 'node7'
    late = dict(FI_OK, seconds=130.0)
    assert checks(_workloads.evaluate_fault_isolation(run(late), {'bound_s': 120}, 'h')) == [('workload.fault_isolation', 'fail')]
    blind = dict(FI_OK, attributed=False)
    assert checks(_workloads.evaluate_fault_isolation(run(blind), {'bound_s': 120}, 'h')) == [('workload.fault_isolation', 'warn')]
    stuck = _workloads.evaluate_fault_isolation(run(None, exit_code=124, timed_out=True), {'bound_s': 120}, 'h')
    assert checks(stuck) == [('workload.failed', 'fail')]


SOAK_OK = {'ok': True, 'rss_growth_pct': 0.2, 'gpu_mem_growth_pct': 0.0, 'new_errors': [], 'error': None}


def test_soak():
    assert _workloads.evaluate_soak(run(SOAK_OK), {}, 'h') == []
    leak = dict(SOAK_OK, rss_growth_pct=25.0)
    assert checks(_workloads.evaluate_soak(run(leak), {'max_rss_growth_pct': 10}, 'h')) == [('workload.soak', 'fail')]
    gpu = dict(SOAK_OK, gpu_mem_growth_pct=12.5)
    assert checks(_workloads.evaluate_soak(run(gpu), {}, 'h')) == [('workload.soak', 'fail')]
    ecc = dict(SOAK_OK, new_errors=[{'host': 'h', 'gpu': 3, 'field': 'ecc.errors.uncorrected.volatile.total', 'before': 0, 'after': 2}])
    found = _workloads.evaluate_soak(run(ecc), {}, 'h')
    assert checks(found) == [('workload.soak', 'fail')] and found[0]['component'] == 'soak gpu3'


def test_torch_allreduce_against_a_curve():
    profile = {'collectives': {'all_reduce': {'curve': [{'min_bytes': 1 << 20, 'busbw_gbps_min': 100.0}]}}}
    good = {'ok': True, 'world_size': 2, 'sizes': [{'size_bytes': 1 << 20, 'time_us': 10, 'algbw_gbps': 120, 'busbw_gbps': 120, 'wrong': 0}]}
    assert _workloads.evaluate_torch_allreduce(run(good), profile, 'h') == []
    low = json.loads(json.dumps(good))
    low['sizes'][0]['busbw_gbps'] = 80
    assert checks(_workloads.evaluate_torch_allreduce(run(low), profile, 'h')) == [('collectives.busbw_low', 'fail')]
    wrong = json.loads(json.dumps(good))
    wrong['sizes'][0]['wrong'] = 3
    assert ('collectives.wrong_results', 'fail') in checks(_workloads.evaluate_torch_allreduce(run(wrong), profile, 'h'))


@pytest.mark.parametrize('key,value,check', [
    ('busbw_gbps', float('nan'), 'collectives.invalid_measurement'),
    ('busbw_gbps', float('inf'), 'collectives.invalid_measurement'),
    ('time_us', 0, 'collectives.invalid_measurement'),
    ('wrong', float('nan'), 'collectives.wrong_results'),
    ('wrong', -1, 'collectives.wrong_results'),
])
def test_torch_allreduce_non_finite_is_a_finding(key, value, check):
    """json.dumps writes NaN/Infinity, json.loads reads them back: a nan busbw used to pass the curve."""
    profile = {'collectives': {'all_reduce': {'curve': [{'min_bytes': 1 << 20, 'busbw_gbps_min': 100.0}]}}}
    size = {'size_bytes': 1 << 20, 'time_us': 10, 'algbw_gbps': 120, 'busbw_gbps': 120, 'wrong': 0}
    size[key] = value
    findings = _workloads.evaluate_torch_allreduce(run({'ok': True, 'world_size': 2, 'sizes': [size]}), profile, 'h')
    assert checks(findings) == [(check, 'fail')]
    assert findings[0]['component'] == 'torch all_reduce'


def test_result_lines_and_task_errors():
    with pytest.raises(ParseError):
        _workloads.parse_result_lines('XUANWU_RESULT {not json')
    assert _workloads.parse_result_lines('a\nXUANWU_RESULT {"x": 1}\nXUANWU_RESULT {"x": 2}\n') == [{'x': 1}, {'x': 2}]
    found = _workloads.evaluate('task_error', {'task': 'Copy the workload scripts', 'message': 'disk full'}, {}, 'h')
    assert checks(found) == [('workload.failed', 'fail')] and 'disk full' in found[0]['message']
    with pytest.raises(ValueError):
        _workloads.evaluate('nope', {}, {}, 'h')


def documented_severities():
    """{check: default severity} as docs/checks.md states it (its table, read as a user reads it)."""
    severities = {}
    with open(os.path.join(ROOT, 'docs', 'checks.md')) as handle:
        for line in handle:
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) >= 2 and cells[0].startswith('`') and cells[0].endswith('`'):
                severities[cells[0].strip('`')] = cells[1]
    return severities


NCCL_DERIVED = os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'nccl')
NCCL_HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x4-nvlink')
SEVERITY_CASES = [(os.path.join(NCCL_DERIVED, name), rc, timed_out) for name, rc, timed_out in (
    ('nccl-tests_all_reduce_perf_truncated-nccl-warn.txt', 1, False),
    ('nccl-tests_all_reduce_perf_truncated-nccl-warn.txt', 0, False),
    ('nccl-tests_all_reduce_perf_nccl-warn-oom.txt', 1, False),
    ('nccl-tests_all_reduce_perf_truncated.txt', 1, False),
    ('nccl-tests_all_reduce_perf_timeout.txt', 124, True),
    ('nccl-tests_all_reduce_perf_wrong-results.txt', 0, False),
    ('nccl-tests_all_reduce_perf_slow-30pct.txt', 0, False),
)] + [(os.path.join(NCCL_HW, 'nccl-tests_all_reduce_perf_NCCL_DEBUG=INFO.txt'), 0, False)]


@pytest.mark.parametrize('path, rc, timed_out', SEVERITY_CASES,
                         ids=['%s-rc%s' % (os.path.basename(p)[len('nccl-tests_all_reduce_perf_'):-4], rc) for p, rc, _t in SEVERITY_CASES])
def test_produced_severities_are_the_documented_ones(path, rc, timed_out):
    documented = documented_severities()
    with open(path) as handle:
        text = handle.read()
    with open(os.path.join(ROOT, 'profiles', 'h200x4-nvlink.yml')) as handle:
        profile = yaml.safe_load(handle)
    for stdout in (text, text + 'vm:2196:2234 [0] init.cc:1 NCCL WARN something odd\n'):
        run = {'collective': 'all_reduce', 'rc': rc, 'stdout': stdout, 'output_tail': stdout[-2000:],
               'timed_out': timed_out, 'timeout_s': 900}
        findings = _workloads.evaluate_nccl_tests(run, profile, 'h')
        assert findings or path.endswith('INFO.txt')
        for f in findings:
            assert f['check'] in documented, f['check']
            assert f['severity'] == documented[f['check']], (f['check'], f['severity'], f['message'])


@pytest.mark.parametrize('name, expected, fails', [
    ('nccl-tests_all_reduce_perf_16-ranks.txt', 16, False),
    ('nccl-tests_all_reduce_perf_16-ranks.txt', 32, True),
    ('../../hardware/h200x4-nvlink/nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt', 16, True),   # single node, 4 ranks
    ('../../hardware/h200x4-nvlink/nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt', 4, False),
    ('../../hardware/h200x4-nvlink/nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt', '4', False),   # 2.16 templates strings
])
def test_the_rank_count_of_the_output_must_be_the_jobs(name, expected, fails):
    with open(os.path.join(NCCL_DERIVED, name)) as handle:
        text = handle.read()
    run = {'collective': 'all_reduce', 'rc': 0, 'stdout': text, 'expected_ranks': expected, 'ranks_from': '2 node(s) x 8'}
    findings = _workloads.evaluate_nccl_tests(run, {}, 'h')
    assert [f['check'] for f in findings] == (['collectives.rank_count'] if fails else [])
    if fails:
        assert findings[0]['severity'] == 'fail' and findings[0]['expected'] == '%s rank(s)' % expected
        assert '2 node(s) x 8' in findings[0]['message'] and findings[0]['remediation']


def test_an_output_without_rank_lines_cannot_prove_the_rank_count():
    with open(os.path.join(NCCL_HW, 'nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt')) as handle:
        text = ''.join(line for line in handle if '#  Rank' not in line)
    findings = _workloads.evaluate_nccl_tests({'collective': 'all_reduce', 'rc': 0, 'stdout': text, 'expected_ranks': 4}, {}, 'h')
    assert [(f['check'], f['measured']) for f in findings] == [('collectives.rank_count', 'no "# Rank" lines')]


def test_a_requested_stage_that_measured_nothing_is_a_failure():
    found = _workloads.evaluate('not_measured', {'stage': 'collectives', 'reason': 'no nccl-tests binaries'}, {}, 'h')
    assert [(f['check'], f['component'], f['severity']) for f in found] == [('workload.not_measured', 'collectives', 'fail')]
    assert found[0]['message'] == 'collectives was requested but not measured: no nccl-tests binaries'


def test_an_nccl_tests_run_with_no_result_row_is_not_measured():
    with open(os.path.join(NCCL_HW, 'nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt')) as handle:
        text = ''.join(line for line in handle if not line.strip()[:1].isdigit())   # header and trailer only
    findings = _workloads.evaluate_nccl_tests({'collective': 'all_reduce', 'rc': 0, 'stdout': text}, {}, 'h')
    assert [(f['check'], f['severity']) for f in findings] == [('workload.not_measured', 'fail')]
    assert 'printed no result row' in findings[0]['message']


@pytest.mark.parametrize('kind, run, curves, judged', [
    ('nccl_tests', {'collective': 'sendrecv'}, {'all_reduce': {'curve': [{'min_bytes': 1, 'busbw_gbps_min': 1}]}}, False),
    ('nccl_tests', {'collective': 'all_reduce'}, {'all_reduce': {'curve': [{'min_bytes': 1, 'busbw_gbps_min': 1}]}}, True),
    ('torch_allreduce', {}, {}, False),
    ('ddp_smoke', {}, {}, True),
])
def test_bandwidth_without_a_curve_is_not_judged(kind, run, curves, judged):
    why = _workloads.not_judged(kind, run, {'name': 'p', 'collectives': curves})
    assert (why is None) == judged
    if not judged:
        assert 'curve in profile p' in why


def test_each_output_is_parsed_once_per_judgement(monkeypatch):
    """workload_check judges a run and keeps its figures from one parse of its output."""
    calls = []
    real = _workloads.parse_nccl_tests

    def counting(text):
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(_workloads, 'parse_nccl_tests', counting)
    with open(os.path.join(NCCL_DERIVED, 'nccl-tests_all_reduce_perf_slow-30pct.txt')) as handle:
        run = {'stdout': handle.read(), 'exit_code': 0, 'collective': 'all_reduce'}
    run = _workloads.with_parsed('nccl_tests', run)
    findings = _workloads.evaluate('nccl_tests', run, {}, 'h')
    summary = _workloads.summarise_run('nccl_tests', run)
    assert len(calls) == 1
    assert summary['busbw_gbps'] and not [f for f in findings if f['check'] == 'collectives.run_failed']
    broken = _workloads.with_parsed('ddp_smoke', {'stdout': 'XUANWU_RESULT {not json', 'exit_code': 0})
    assert [f['check'] for f in _workloads.evaluate('ddp_smoke', broken, {}, 'h')] == ['workload.failed']


@pytest.mark.parametrize('nodes, fails', [(2, False), (3, True), ('2', False)])
def test_a_job_across_nodes_must_run_on_that_many_nodes(nodes, fails):
    """16 ranks on gpu-a and gpu-b: right for a 2-node job, wrong for 3 nodes even when the rank count matches."""
    with open(os.path.join(NCCL_DERIVED, 'nccl-tests_all_reduce_perf_16-ranks.txt')) as handle:
        text = handle.read()
    run = {'collective': 'all_reduce', 'rc': 0, 'stdout': text, 'expected_ranks': 16, 'expected_nodes': nodes}
    findings = _workloads.evaluate_nccl_tests(run, {}, 'h')
    assert [(f['check'], f['measured']) for f in findings] == ([('collectives.rank_count', '2 node(s): gpu-a, gpu-b')] if fails else [])


def test_all_ranks_on_one_node_fail_a_job_across_nodes_even_with_the_right_rank_count():
    """A real single-node capture (4 ranks on one H200 host) judged as a 2-node job of 4 ranks (2 x 2 slots)."""
    with open(os.path.join(NCCL_HW, 'nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt')) as handle:
        text = handle.read()
    run = {'collective': 'all_reduce', 'rc': 0, 'stdout': text, 'expected_ranks': 4, 'expected_nodes': 2}
    findings = _workloads.evaluate_nccl_tests(run, {}, 'h')
    assert [f['check'] for f in findings] == ['collectives.rank_count']
    assert findings[0]['measured'].startswith('1 node(s)') and findings[0]['expected'] == '2 node(s)'


# An elastic restart that recovered: the result line of roles/torch_workloads/files/elastic_restart_launch.py
ELASTIC_OK = {'ok': True, 'killed': True, 'victim_rank': 1, 'kill_step': 7, 'restarts': 1, 'max_restarts': 3,
              'resumed_from': 5, 'steps_redone': 2, 'checkpoint_every': 5, 'steps': 20, 'steps_done': 20,
              'recover_s': 14.2, 'total_s': 41.0, 'final_loss': 3.1, 'first_loss': 4.3, 'exit_code': 0, 'hung': False,
              'bound_s': 600, 'world_size': 2, 'backend': 'nccl', 'error': None}
ELASTIC_SPEC = {'recover_s_max': 60.0, 'checkpoint_every': 5}


def elastic(result, spec=None, **kwargs):
    return _workloads.evaluate('elastic_restart', dict(run(result, **kwargs), component='elastic_restart'),
                               {'workloads': {'elastic_restart': spec or ELASTIC_SPEC}}, 'h')


@pytest.mark.parametrize('change, found, words', [
    ({}, [], None),
    # the job did not come back: torchrun gave up (restarts spent) or the job hung past the bound
    ({'exit_code': 1, 'steps_done': 7, 'ok': False, 'error': 'torchrun exited 1'}, ['workload.elastic_not_recovered'],
     'did not finish: torchrun exited 1'),
    ({'hung': True, 'exit_code': -15, 'ok': False, 'steps_done': None}, ['workload.elastic_not_recovered'], 'still running'),
    # exit 0 after fewer steps than planned is not a finished job
    ({'steps_done': 15}, ['workload.elastic_not_recovered'], 'exit code 0, 15 of 20 steps'),
    ({'steps_done': None}, ['workload.elastic_not_recovered'], 'exit code 0, not reported of 20 steps'),
    # no kill, or a kill that caused no restart: the test failed, not the node, and the finding says so
    ({'killed': False, 'kill_step': None, 'restarts': 0, 'ok': False,
      'error': 'no rank was killed: the victim never reported holding after step 7'},
     ['workload.elastic_not_recovered'], 'test error, not a verdict on the node'),
    ({'restarts': 0, 'ok': False}, ['workload.elastic_not_recovered'], 'finished without a restart'),
    ({'recover_s': 75.5}, ['workload.elastic_recovery_slow'], '75.5 s'),
    ({'recover_s': None}, ['workload.elastic_recovery_slow'], 'time to recover is unknown'),
    # a resume from step 0 redoes all 7 steps; from the last checkpoint at most 5
    ({'resumed_from': 0, 'steps_redone': 7}, ['workload.elastic_steps_lost'], 'resumed from step 0'),
    ({'resumed_from': None, 'steps_redone': None}, ['workload.elastic_steps_lost'], 'did not report the step'),
    ({'ok': False, 'error': 'loss did not fall: first 4.3, final 4.4'}, ['workload.failed'], 'loss did not fall'),
])
def test_elastic_restart(change, found, words):
    findings = elastic(dict(ELASTIC_OK, **change))
    assert [f['check'] for f in findings] == found, findings
    assert all(f['severity'] == 'fail' for f in findings)
    if words:
        assert words in findings[0]['message'] + ' ' + str(findings[0]['measured']), findings[0]


def test_elastic_restart_bounds_come_from_the_profile():
    assert elastic(dict(ELASTIC_OK, recover_s=75.5), dict(ELASTIC_SPEC, recover_s_max=90.0)) == []
    # the interval the job ran with wins over the profile's (they are the same when the role ran it)
    assert elastic(dict(ELASTIC_OK, checkpoint_every=10, steps_redone=7)) == []
    assert [f['check'] for f in elastic(dict(ELASTIC_OK, checkpoint_every=2, steps_redone=3))] == ['workload.elastic_steps_lost']


def test_elastic_restart_that_printed_nothing_or_timed_out_is_a_failed_run():
    assert checks(elastic(None, exit_code=1, tail='ModuleNotFoundError: torch')) == [('workload.failed', 'fail')]
    assert checks(elastic(None, exit_code=124, timed_out=True)) == [('workload.failed', 'fail')]


def test_elastic_restart_on_the_cpu_of_a_gpu_node_is_a_placement_finding():
    profile = {'gpu': {'vendor': 'nvidia', 'count': 1}, 'workloads': {'elastic_restart': ELASTIC_SPEC}}
    found = _workloads.evaluate('elastic_restart', run(dict(ELASTIC_OK, backend='gloo', device='cpu')), profile, 'h')
    assert checks(found) == [('workload.placement', 'fail')]
    summary = _workloads.summarise_run('elastic_restart', run(ELASTIC_OK))
    assert summary['result']['recover_s'] == 14.2 and summary['result']['steps_redone'] == 2
