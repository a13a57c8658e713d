"""Collective checks (_collectives) against the real nccl-tests captures and the derived faulty runs,
and an exact row-by-row comparison of the parser with the captures' raw columns."""
import glob
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collectives as col
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nccl import parse_nccl_tests

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures'))
HW = os.path.join(FIXTURES, 'hardware', 'h200x4-nvlink')
DERIVED = os.path.join(FIXTURES, 'derived', 'nccl')
FINDING_KEYS = {'host', 'check', 'component', 'severity', 'measured', 'expected', 'message', 'remediation'}
GIB = 1 << 30


def _read(path):
    with open(path) as handle:
        return handle.read()


def _parse(path):
    return parse_nccl_tests(_read(path))


def _all_reduce_runs():
    paths = sorted(glob.glob(os.path.join(HW, 'nccl-tests_all_reduce_perf_-b*.txt')))
    assert len(paths) == 3
    return [_parse(p) for p in paths]


def _checks(findings):
    return sorted(f['check'] for f in findings)


REAL = sorted(glob.glob(os.path.join(HW, 'nccl-tests_*.txt')))


@pytest.mark.parametrize('path', REAL, ids=os.path.basename)
def test_every_row_of_the_captures(path):
    """Each data row of the file, split independently, equals the parsed row."""
    raw = [line.split() for line in _read(path).split('\n')
           if line.strip() and line.split()[0].isdigit() and len(line.split()) == 13]
    rows = _parse(path)['rows']
    assert len(rows) == len(raw) and raw
    for tokens, row in zip(raw, rows):
        assert row['size_bytes'] == int(tokens[0])
        assert row['count'] == int(tokens[1])
        assert (row['type'], row['redop'], row['root']) == (tokens[2], tokens[3], int(tokens[4]))
        for half, offset in (('out_of_place', 5), ('in_place', 9)):
            block = row[half]
            assert block['time_us'] == float(tokens[offset])
            assert block['algbw_gbps'] == float(tokens[offset + 1])
            assert block['busbw_gbps'] == float(tokens[offset + 2])
            assert block['wrong'] == (None if tokens[offset + 3] == 'N/A' else int(tokens[offset + 3]))


def test_row_counts():
    counts = dict((os.path.basename(p), len(_parse(p)['rows'])) for p in REAL)
    for name, count in counts.items():
        if '-b8_' in name:
            assert count == 31, name      # 8 B .. 8 GiB, factor 2
        elif '-b1M_' in name:
            assert count == 14, name      # 1 MiB .. 8 GiB
        else:
            assert count == 1, name       # the NCCL_DEBUG=INFO run at 1 GiB


@pytest.mark.parametrize('name,collective', [
    ('nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt', 'all_reduce'),
    ('nccl-tests_all_gather_perf_-b8_-e8G_-f2_-g4.txt', 'all_gather'),
    ('nccl-tests_reduce_scatter_perf_-b8_-e8G_-f2_-g4.txt', 'reduce_scatter'),
    ('nccl-tests_alltoall_perf_-b8_-e8G_-f2_-g4.txt', 'alltoall'),
    ('nccl-tests_sendrecv_perf_-b8_-e8G_-f2_-g4.txt', 'sendrecv'),
])
def test_busbw_formula_reproduces_nccl_tests(name, collective):
    parsed = _parse(os.path.join(HW, name))
    assert parsed['collective'] == collective
    for row in parsed['rows']:
        for half in ('out_of_place', 'in_place'):
            block = row[half]
            if row['size_bytes'] < (1 << 20):
                continue          # tiny sizes: 2-decimal rounding dominates
            algbw = col.algbw_from_time(row['size_bytes'], block['time_us'])
            busbw = col.busbw_from_time(row['size_bytes'], block['time_us'], collective, parsed['nranks'])
            assert algbw == pytest.approx(block['algbw_gbps'], rel=0.005, abs=0.011)
            assert busbw == pytest.approx(block['busbw_gbps'], rel=0.005, abs=0.011)


def test_busbw_factors():
    assert col.busbw_factor('all_reduce', 4) == 1.5
    assert col.busbw_factor('all_reduce_perf', 8) == 1.75
    assert col.busbw_factor('allreduce', 2) == 1.0
    assert col.busbw_factor('all_gather', 4) == 0.75
    assert col.busbw_factor('reduce_scatter', 8) == 0.875
    assert col.busbw_factor('alltoall', 4) == 0.75
    for name in ('broadcast', 'reduce', 'sendrecv'):
        assert col.busbw_factor(name, 16) == 1.0
    assert col.busbw_factor('all_reduce', 1) == 0.0
    assert col.busbw_from_time(GIB, 0, 'all_reduce', 4) is None
    # 1 GiB in 4546.93 us on 4 ranks: algbw 236.15, busbw 354.22 (the capture's row)
    assert col.busbw_from_time(GIB, 4546.93, 'all_reduce', 4) == pytest.approx(354.22, abs=0.01)
    with pytest.raises(ValueError):
        col.busbw_factor('allreduce_magic', 4)
    with pytest.raises(ValueError):
        col.busbw_factor('all_reduce', 0)


def test_derived_curve_from_real_captures():
    curve = col.derive_curve(_all_reduce_runs())
    assert [p['min_bytes'] for p in curve] == [16 << 20, 128 << 20, GIB]
    # median over the three runs of the weakest out-of-place busbw in each band, x 0.85, rounded down
    # 16 MiB band: 247.54 / 247.68 / 249.64; 128 MiB band: 328.37 / 328.82 / 326.19; >= 1 GiB: 354.93 / 353.47 / 354.22
    assert [p['busbw_gbps_min'] for p in curve] == [210.5, 279.1, 301.0]


def test_thirty_percent_slower_fails_every_point():
    curve = col.derive_curve(_all_reduce_runs())
    findings = col.evaluate_curve(_parse(os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_slow-30pct.txt')), curve, 'node1', 'all_reduce')
    assert _checks(findings) == ['collectives.busbw_low'] * 3
    worst = dict((f['expected'], f['measured']) for f in findings)
    assert worst == {301.0: 247.95, 279.1: 228.33, 210.5: 174.75}
    for finding in findings:
        assert set(finding) == FINDING_KEYS
        assert finding['host'] == 'node1' and finding['severity'] == 'fail'
        assert finding['component'] == 'all_reduce_perf'
        assert 'NCCL_DEBUG=INFO' in finding['remediation'] and 'NCCL_IB_HCA' in finding['remediation']
    assert '1 GiB, 2 GiB, 4 GiB, 8 GiB' in findings[0]['message']


def test_fifteen_percent_slower_at_large_sizes():
    """busbw x 0.85 at >= 1 GiB lands on a 0.85 curve (301.09 vs 301.0): the default fraction tolerates
    a 15 % loss by definition; a 0.9 curve catches it at the 1 GiB point only."""
    runs = _all_reduce_runs()
    slow = _parse(os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_slow-15pct-ge1GiB.txt'))
    assert col.evaluate_curve(slow, col.derive_curve(runs), 'node1', 'all_reduce') == []
    curve = col.derive_curve(runs, fraction=0.9)
    assert curve == [{'min_bytes': 16 << 20, 'busbw_gbps_min': 222.9}, {'min_bytes': 128 << 20, 'busbw_gbps_min': 295.5},
                     {'min_bytes': GIB, 'busbw_gbps_min': 318.7}]
    findings = col.evaluate_curve(slow, curve, 'node1', 'all_reduce')
    assert _checks(findings) == ['collectives.busbw_low']
    assert findings[0]['measured'] == 301.09 and findings[0]['expected'] == 318.7


def test_wrong_results():
    findings = col.evaluate_curve(_parse(os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_wrong-results.txt')), [], 'n', 'all_reduce')
    assert _checks(findings) == ['collectives.out_of_bounds', 'collectives.wrong_results']
    wrong = [f for f in findings if f['check'] == 'collectives.wrong_results'][0]
    assert wrong['measured'] == 2051 and wrong['expected'] == 0 and wrong['severity'] == 'fail'
    assert '256 MiB out-of-place: 1024' in wrong['message'] and '512 MiB out-of-place: 3' in wrong['message']
    assert 'per GPU' in wrong['remediation'] or 'per single GPU' in wrong['remediation']


NON_FINITE_HEADER = """# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809
# Collective test starting: all_reduce_perf
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
"""
NON_FINITE_TRAILER = """# Out of bounds values : 0 OK
# Avg bus bandwidth    : 300.1
"""
GOOD_ROW = '  1073741824     268435456     float     sum      -1   4546.93  236.15  354.22      0   4546.68  236.16  354.24      0'


@pytest.mark.parametrize('row,check,said', [
    ('  1073741824     268435456     float     sum      -1   4546.93  236.15     nan      0   4546.68  236.16  354.24      0',
     'collectives.invalid_measurement', '1 GiB out-of-place busbw nan'),
    ('  1073741824     268435456     float     sum      -1   4546.93     inf     inf      0   4546.68  236.16  354.24      0',
     'collectives.invalid_measurement', '1 GiB out-of-place busbw inf'),
    ('  1073741824     268435456     float     sum      -1      0.00  236.15  354.22      0   4546.68  236.16  354.24      0',
     'collectives.invalid_measurement', '1 GiB out-of-place time 0.0'),
    ('  1073741824     268435456     float     sum      -1   4546.93  236.15  354.22      0       nan  236.16  354.24      0',
     'collectives.invalid_measurement', '1 GiB in-place time nan'),
    ('  1073741824     268435456     float     sum      -1   4546.93  236.15  354.22    nan   4546.68  236.16  354.24      0',
     'collectives.wrong_results', '1 GiB out-of-place: nan (not a count)'),
    ('  1073741824     268435456     float     sum      -1   4546.93  236.15  354.22      0   4546.68  236.16  354.24     -1',
     'collectives.wrong_results', '1 GiB in-place: -1 (not a count)'),
])
def test_non_finite_measurement_is_a_finding(row, check, said):
    """Issue 8 item 6: a nan/inf/zero-time measurement or a #wrong of nan/-1 used to pass silently."""
    curve = [{'min_bytes': GIB, 'busbw_gbps_min': 300.0}]
    good = parse_nccl_tests(NON_FINITE_HEADER + GOOD_ROW + '\n' + NON_FINITE_TRAILER)
    assert col.evaluate_curve(good, curve, 'n', 'all_reduce') == []
    findings = col.evaluate_curve(parse_nccl_tests(NON_FINITE_HEADER + row + '\n' + NON_FINITE_TRAILER), curve, 'n', 'all_reduce')
    assert [f['check'] for f in findings] == [check]
    assert findings[0]['severity'] == 'fail' and findings[0]['component'] == 'all_reduce_perf'
    assert said in findings[0]['message'], findings[0]['message']
    assert set(findings[0]) == FINDING_KEYS


def test_zero_busbw_of_tiny_and_empty_sizes_is_not_a_finding():
    """nccl-tests prints busbw 0.00 for sizes of a few bytes and times near 1 us for size 0: real output."""
    for path in REAL:
        assert 'collectives.invalid_measurement' not in _checks(col.evaluate_curve(_parse(path), [], 'n', None))


@pytest.mark.parametrize('entry,check', [
    ({'busbw_gbps': float('nan')}, 'collectives.invalid_measurement'),
    ({'busbw_gbps': float('inf'), 'algbw_gbps': float('inf')}, 'collectives.invalid_measurement'),
    ({'time_us': 0}, 'collectives.invalid_measurement'),
    ({'time_us': 'NaN'}, 'collectives.invalid_measurement'),
    ({'wrong': float('nan')}, 'collectives.wrong_results'),
    ({'wrong': -1}, 'collectives.wrong_results'),
    ({'wrong': 1.5}, 'collectives.wrong_results'),
])
def test_bench_non_finite_measurement_is_a_finding(entry, check):
    good = {'size_bytes': GIB, 'time_us': 4000.0, 'algbw_gbps': 268.0, 'busbw_gbps': 402.0, 'wrong': 0}
    curve = [{'min_bytes': GIB, 'busbw_gbps_min': 300.0}]
    assert col.evaluate_curve(col.rows_from_bench({'ok': True, 'sizes': [good]}), curve, 'n', 'all_reduce') == []
    bench = {'ok': True, 'sizes': [dict(good, **entry)]}
    findings = col.evaluate_curve(col.rows_from_bench(bench), curve, 'n', 'all_reduce')
    assert [f['check'] for f in findings] == [check]


@pytest.mark.parametrize('name,where', [
    ('nccl-tests_all_reduce_perf_truncated.txt', 'after 64 MiB'),
    ('nccl-tests_all_reduce_perf_timeout.txt', 'after 1 GiB'),
])
def test_incomplete(name, where):
    curve = col.derive_curve(_all_reduce_runs())
    findings = col.evaluate_curve(_parse(os.path.join(DERIVED, name)), curve, 'n', 'all_reduce')
    assert _checks(findings) == ['collectives.incomplete']     # what was measured is fine; no coverage warning
    assert where in findings[0]['message'] and findings[0]['severity'] == 'fail'


def test_nccl_warn_and_error_are_quoted():
    parsed = _parse(os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_nccl-warn-oom.txt'))
    findings = col.evaluate_curve(parsed, [{'min_bytes': GIB, 'busbw_gbps_min': 300}], 'n', None)
    assert _checks(findings) == ['collectives.incomplete', 'collectives.nccl_error']
    error = [f for f in findings if f['check'] == 'collectives.nccl_error'][0]
    assert error['severity'] == 'fail'
    assert "NCCL WARN Cuda failure 'out of memory'" in error['message']
    assert 'Test NCCL failure common.cu:1279' in error['message']
    assert 'before reporting any size' in [f for f in findings if f['check'] == 'collectives.incomplete'][0]['message']


def test_warnings_alone_are_a_warning():
    parsed = _parse(os.path.join(HW, 'nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt'))
    parsed['warnings'] = ['vm:1:2 [0] init.cc:1 NCCL WARN something odd']
    findings = col.evaluate_curve(parsed, [], 'n', 'all_reduce')
    assert [(f['check'], f['severity']) for f in findings] == [('collectives.nccl_warn', 'warn')]


def test_threshold_semantics():
    curve = [{'min_bytes': 16 << 20, 'busbw_gbps_min': 200}, {'min_bytes': 128 << 20, 'busbw_gbps_min': 280},
             {'min_bytes': GIB, 'busbw_gbps_min': 300}]
    assert col.threshold_for(curve, (16 << 20) - 1) is None
    assert col.threshold_for(curve, 16 << 20)['busbw_gbps_min'] == 200
    assert col.threshold_for(curve, 64 << 20)['busbw_gbps_min'] == 200
    assert col.threshold_for(curve, 512 << 20)['busbw_gbps_min'] == 280
    assert col.threshold_for(curve, 8 * GIB)['busbw_gbps_min'] == 300
    # not monotonic: a larger message is never held to less than a smaller one
    odd = [{'min_bytes': 1 << 20, 'busbw_gbps_min': 100}, {'min_bytes': 1 << 24, 'busbw_gbps_min': 50}]
    assert col.threshold_for(odd, 1 << 26)['busbw_gbps_min'] == 100
    with pytest.raises(ProfileError):
        col.threshold_for([{'min_bytes': 'x'}], 1)
    with pytest.raises(ProfileError):
        col.evaluate_curve({'rows': [], 'complete': True}, [{'min_bytes': -1, 'busbw_gbps_min': 1}], 'n', 'all_reduce')
    for floor in (float('nan'), float('inf'), 10 ** 400):
        with pytest.raises(ProfileError) as err:
            col.threshold_for([{'min_bytes': 1, 'busbw_gbps_min': floor}], 1)
        assert 'curve[0]' in str(err.value)


def test_tolerance_lowers_the_floor():
    parsed = _parse(os.path.join(HW, 'nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt'))
    curve = [{'min_bytes': GIB, 'busbw_gbps_min': 370}]
    findings = col.evaluate_curve(parsed, curve, 'n', 'all_reduce')
    assert _checks(findings) == ['collectives.busbw_low'] and findings[0]['measured'] == 354.22
    assert col.evaluate_curve(parsed, curve, 'n', 'all_reduce', tolerance=0.05) == []
    with pytest.raises(ValueError):
        col.evaluate_curve(parsed, curve, 'n', 'all_reduce', tolerance=1.5)


def test_coverage_warning_when_the_run_stops_below_a_point():
    parsed = _parse(os.path.join(HW, 'nccl-tests_all_reduce_perf_NCCL_DEBUG=INFO.txt'))    # 1 GiB only
    findings = col.evaluate_curve(parsed, [{'min_bytes': 4 * GIB, 'busbw_gbps_min': 300}], 'n', 'all_reduce')
    assert [(f['check'], f['severity']) for f in findings] == [('collectives.coverage', 'warn')]
    assert '4 GiB and up' in findings[0]['message']


def test_bench_results_use_the_same_checks():
    bench = {'world_size': 4, 'backend': 'nccl', 'sizes': [
        {'size_bytes': 16 << 20, 'time_us': 100.8, 'algbw_gbps': 166.4, 'busbw_gbps': 249.7},
        {'size_bytes': GIB, 'time_us': 4581.0, 'algbw_gbps': 234.39, 'busbw_gbps': 351.58},
    ]}
    parsed = col.rows_from_bench(bench)
    assert parsed['complete'] and parsed['nranks'] == 4
    curve = col.derive_curve(_all_reduce_runs())
    assert col.evaluate_curve(parsed, curve, 'n', 'all_reduce') == []
    bench['sizes'][1]['busbw_gbps'] = 250.0
    assert _checks(col.evaluate_curve(col.rows_from_bench(bench), curve, 'n', 'all_reduce')) == ['collectives.busbw_low']
    failed = col.rows_from_bench({'ok': False, 'error': 'rank 1 timed out', 'sizes': []})
    assert _checks(col.evaluate_curve(failed, curve, 'n', 'all_reduce')) == ['collectives.incomplete', 'collectives.nccl_error']


def test_derive_curve_edges():
    runs = _all_reduce_runs()
    assert col.derive_curve(runs, points=(32 * GIB,)) == []                 # no run reaches it
    assert col.derive_curve([runs[0]], points=(GIB,)) == [{'min_bytes': GIB, 'busbw_gbps_min': 301.6}]   # run2: 354.93 x 0.85
    with pytest.raises(ValueError):
        col.derive_curve(runs, fraction=0)
    assert col.human_bytes(GIB) == '1 GiB' and col.human_bytes(128 << 20) == '128 MiB' and col.human_bytes(1000) == '1000 B'


GATE_RUN = os.path.join(FIXTURES, 'hardware', 'h200x2-nvlink-gate', 'run1', 'all_reduce_perf.txt')


def _slow_cycles(parsed, size, cycles, factor):
    """The run with the out-of-place busbw of ``size`` times ``factor`` in the given cycles (0-based)."""
    seen = 0
    for row in parsed['rows']:
        if row['size_bytes'] == size:
            if seen in cycles:
                row['out_of_place']['busbw_gbps'] *= factor
            seen += 1
    return parsed


@pytest.mark.parametrize('slow, failed', [((), False), ((0,), False), ((2,), False), ((0, 1), True), ((0, 1, 2), True)])
def test_a_run_of_several_cycles_is_judged_on_the_median_of_each_size(slow, failed):
    """A real 3-cycle run (nccl-tests -N 3): one slow sweep out of three is noise, two are the node."""
    parsed = _parse(GATE_RUN)
    assert parsed['cycles'] == 3 and len(parsed['rows']) == 3 * len({r['size_bytes'] for r in parsed['rows']})
    curve = [{'min_bytes': GIB, 'busbw_gbps_min': 314.9}]
    findings = col.evaluate_curve(_slow_cycles(parsed, GIB, slow, 0.9), curve, 'n', 'all_reduce')
    assert _checks(findings) == (['collectives.busbw_low'] if failed else [])
    if failed:
        assert 'median of its 3 cycles' in findings[0]['message'] and findings[0]['measured'] < 300
    medians = col.busbw_by_size(_parse(GATE_RUN))
    assert medians[GIB] == sorted(r['out_of_place']['busbw_gbps'] for r in _parse(GATE_RUN)['rows'] if r['size_bytes'] == GIB)[1]
