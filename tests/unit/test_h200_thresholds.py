"""The H200 profiles' bandwidth curves against real runs.

h200x4-nvlink: its curves were derived from the nccl-tests captures of that host, so those captures
passing would prove nothing; what is tested is what could fail: the same captures 15 % slower fail,
the torch all-reduce captures of that host (not used for the curve) pass, and the derived faulty
outputs fail with the right check.

h200x2-nvlink: its curves come from tests/fixtures/hardware/h200x2-nvlink-nccl-tests/; the ten
validate.yml runs of tests/fixtures/hardware/h200x2-nvlink-gate/ (another day, 3 cycles each) were
not used for them. Each of those runs passes (no false alarm), and the same run with every busbw
from 1 GiB up 5 % lower fails (bench/h200x2-nccl-tests-gate.md)."""
import copy
import glob
import os
import re

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _workloads
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nccl import parse_nccl_tests
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
from nccl_text import scaled

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x4-nvlink')
DERIVED = os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'nccl')
CAPTURES = sorted(glob.glob(os.path.join(HW, 'nccl-tests_*_perf_-b*.txt')))
GATE = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x2-nvlink-gate')
GATE_RUNS = sorted(glob.glob(os.path.join(GATE, 'run*', '*_perf.txt')))
GIB = 1 << 30


def profile(name='h200x4-nvlink'):
    return _collection.resolve_profile(name)[0]


def collective_of(path):
    return re.search(r'(?:nccl-tests_)?([a-z_]+?)_perf', os.path.basename(path)).group(1)


def run_of(path, rc=0, timed_out=False):
    with open(path) as handle:
        text = handle.read()
    return {'collective': collective_of(path), 'rc': rc, 'stdout': text, 'output_tail': text[-4000:],
            'timed_out': timed_out, 'timeout_s': 900}


@pytest.mark.parametrize('path', CAPTURES, ids=[os.path.basename(p) for p in CAPTURES])
def test_a_uniform_15_percent_drop_fails(path):
    run = run_of(path)
    run['stdout'] = scaled(run['stdout'], 0.85)
    assert parse_nccl_tests(run['stdout'])['complete']
    findings = _workloads.evaluate_nccl_tests(run, profile(), 'h200')
    low = [f for f in findings if f['check'] == 'collectives.busbw_low' and f['severity'] == 'fail']
    assert low, findings
    assert all(f['measured'] < f['expected'] for f in low)
    assert set(f['check'] for f in findings) == {'collectives.busbw_low'}


def torch_rows(path):
    sizes = []
    with open(path) as handle:
        for line in handle:
            m = re.match(r'\s*(\d+)\s+([\d.]+)us algbw\s+([\d.]+) busbw\s+([\d.]+)', line)
            if m:
                sizes.append({'size_bytes': int(m.group(1)), 'time_us': float(m.group(2)),
                              'algbw_gbps': float(m.group(3)), 'busbw_gbps': float(m.group(4)), 'wrong': 0})
    return sizes


@pytest.mark.parametrize('run', [1, 2])
def test_the_torch_path_on_the_same_host_passes_the_same_curve(run):
    sizes = torch_rows(os.path.join(HW, 'torch-distributed_all_reduce_busbw_run%d.txt' % run))
    assert len(sizes) == 14
    result = {'ok': True, 'sizes': sizes, 'world_size': 4}
    stdout = '%s %s\n' % (_workloads.RESULT_TAG, __import__('json').dumps(result))
    assert _workloads.evaluate_torch_allreduce({'rc': 0, 'stdout': stdout}, profile(), 'h200') == []
    slow = copy.deepcopy(result)
    for s in slow['sizes']:
        s['busbw_gbps'] *= 0.85
    stdout = '%s %s\n' % (_workloads.RESULT_TAG, __import__('json').dumps(slow))
    checks = set(f['check'] for f in _workloads.evaluate_torch_allreduce({'rc': 0, 'stdout': stdout}, profile(), 'h200'))
    assert checks == {'collectives.busbw_low'}


@pytest.mark.parametrize('name, rc, timed_out, checks', [
    ('nccl-tests_all_reduce_perf_slow-30pct.txt', 0, False, {'collectives.busbw_low'}),
    ('nccl-tests_all_reduce_perf_slow-15pct-ge1GiB.txt', 0, False, {'collectives.busbw_low'}),
    ('nccl-tests_all_reduce_perf_wrong-results.txt', 0, False, {'collectives.wrong_results', 'collectives.out_of_bounds'}),
    ('nccl-tests_all_reduce_perf_truncated.txt', 1, False, {'collectives.incomplete'}),
    ('nccl-tests_all_reduce_perf_nccl-warn-oom.txt', 1, False, {'collectives.nccl_error', 'collectives.incomplete'}),
    ('nccl-tests_all_reduce_perf_timeout.txt', 124, True, {'collectives.incomplete', 'collectives.run_failed'}),
])
def test_derived_faulty_outputs_fail_with_the_right_check(name, rc, timed_out, checks):
    run = run_of(os.path.join(DERIVED, name), rc=rc, timed_out=timed_out)
    run['collective'] = 'all_reduce'
    findings = _workloads.evaluate_nccl_tests(run, profile(), 'h200')
    assert set(f['check'] for f in findings if f['severity'] == 'fail') == checks, findings
    for f in findings:
        assert f['host'] == 'h200' and f['component'] == 'all_reduce_perf' and f['remediation']


def test_a_run_that_printed_nothing_is_a_finding_quoting_what_was_read():
    run = {'collective': 'all_reduce', 'exit_code': 127, 'stdout': '', 'output_tail': 'all_reduce_perf: command not found'}
    findings = _workloads.evaluate_nccl_tests(run, profile(), 'h200')
    assert [f['check'] for f in findings] == ['collectives.run_failed']
    assert 'command not found' in findings[0]['message']


def gate_id(path):
    return '%s-%s' % (os.path.basename(os.path.dirname(path)), collective_of(path))


def test_the_ten_gate_runs_are_all_there():
    assert len(GATE_RUNS) == 50
    for path in GATE_RUNS:
        parsed = parse_nccl_tests(open(path).read())
        assert parsed['complete'] and parsed['nranks'] == 2 and parsed['cycles'] == 3, path


@pytest.mark.parametrize('path', GATE_RUNS, ids=[gate_id(p) for p in GATE_RUNS])
def test_h200x2_healthy_runs_the_curves_were_not_derived_from_pass(path):
    assert _workloads.evaluate_nccl_tests(run_of(path), profile('h200x2-nvlink'), 'h200x2') == []


@pytest.mark.parametrize('path', GATE_RUNS, ids=[gate_id(p) for p in GATE_RUNS])
def test_h200x2_the_same_runs_5_percent_slower_from_1_GiB_fail(path):
    run = run_of(path)
    run['stdout'] = scaled(run['stdout'], 0.95, min_bytes=GIB)
    findings = _workloads.evaluate_nccl_tests(run, profile('h200x2-nvlink'), 'h200x2')
    assert findings and set(f['check'] for f in findings) == {'collectives.busbw_low'}, findings
    for f in findings:
        assert f['severity'] == 'fail' and f['measured'] < f['expected'] and f['host'] == 'h200x2'
        assert 'GiB' in f['message'] and 'median of its 3 cycles' in f['message']
