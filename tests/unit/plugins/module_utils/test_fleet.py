"""Fleet thresholds and regressions (_fleet) on real bus bandwidth noise: the ten real validate.yml runs of a
2x H200 host (tests/fixtures/hardware/h200x2-nvlink-gate/, nccl-tests -N 3, every run healthy) give 30
single-sweep figures per collective and size; a fleet of 40 hosts is made of them."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _fleet
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nccl import parse_nccl_tests

GATE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'hardware', 'h200x2-nvlink-gate')
RUNS = ['run%d' % n for n in range(1, 11)]
COLLECTIVES = ['all_reduce_perf', 'all_gather_perf', 'reduce_scatter_perf', 'alltoall_perf', 'sendrecv_perf']
GIB = 1 << 30
FLEET = {'k': 3.0, 'min_hosts': 8, 'min_bytes': GIB, 'min_spread_share': 0.01, 'runs': 0}
HISTORY = {'regression_max_share': 0.05, 'runs': 5, 'min_runs': 3, 'min_bytes': GIB}


def _sweeps(path):
    """[{size: busbw}] per sweep (cycle) of one real run, sizes of 1 GiB and up."""
    with open(path) as handle:
        parsed = parse_nccl_tests(handle.read())
    sweeps, last = [], None
    for row in parsed['rows']:
        size = int(row['size_bytes'])
        if last is None or size < last:     # a new sweep starts where the size falls back
            sweeps.append({})
        last = size
        if size >= GIB:
            sweeps[-1][size] = row['out_of_place']['busbw_gbps']
    return sweeps


SWEEPS = dict((c, [s for run in RUNS for s in _sweeps(os.path.join(GATE, run, c.replace('_perf', '') + '_perf.txt'))])
              for c in COLLECTIVES)


def _median_of(sweeps):
    return dict((size, _fleet.median([s[size] for s in sweeps])) for size in sweeps[0])


def fleet(n=40):
    """n hosts: host i's figure of a size is the median of three real sweeps, as nccl-tests -N 3 judges it."""
    out = {}
    for i in range(n):
        out['node%02d' % i] = dict((c, _median_of([SWEEPS[c][(i + j) % len(SWEEPS[c])] for j in (0, 7, 13)])) for c in COLLECTIVES)
    return out


def single_sweep_fleet():
    """30 hosts, each one real sweep (the noisiest figures the fixtures hold)."""
    return dict(('node%02d' % i, dict((c, SWEEPS[c][i]) for c in COLLECTIVES)) for i in range(30))


def slowed(figures, factor):
    return dict((c, dict((s, round(v * factor, 2)) for s, v in sizes.items())) for c, sizes in figures.items())


def healthy(figures):
    return dict((h, 'pass') for h in figures)


def test_the_fixtures_give_30_sweeps_per_collective_at_four_sizes():
    assert all(len(SWEEPS[c]) == 30 and sorted(SWEEPS[c][0]) == [GIB, 2 * GIB, 4 * GIB, 8 * GIB] for c in COLLECTIVES)


@pytest.mark.parametrize('make', [fleet, single_sweep_fleet])
def test_no_false_alarm_over_the_real_healthy_runs(make):
    figures = make()
    findings, section = _fleet.evaluate_fleet(figures, healthy(figures), FLEET, 'h200x2-nvlink')
    assert findings == [] and section['outliers'] == {} and section['not_applied'] == []
    assert sorted(section['figures']) == sorted(COLLECTIVES)
    assert all(len(sizes) == 4 for sizes in section['figures'].values())


@pytest.mark.parametrize('collective', COLLECTIVES)
def test_one_host_6_percent_slow_from_1_GiB_is_caught_and_only_it(collective):
    figures = fleet()
    figures['node17'] = dict(figures['node17'], **{collective: slowed(figures['node17'], 0.94)[collective]})
    findings, section = _fleet.evaluate_fleet(figures, healthy(figures), FLEET, 'h200x2-nvlink')
    assert {f['host'] for f in findings} == {'node17'} and section['outliers'] == {'node17': [f['component'] for f in findings]}
    assert sorted(f['component'] for f in findings) == sorted('%s %s' % (collective, s) for s in ('1 GiB', '2 GiB', '4 GiB', '8 GiB'))
    fig = section['figures'][collective][str(GIB)]
    first = [f for f in findings if f['component'] == collective + ' 1 GiB'][0]
    assert first['check'] == 'collectives.fleet_outlier' and first['severity'] == 'fail'
    assert first['measured'] == figures['node17'][collective][GIB] < fig['threshold']
    # measured, the fleet median, the MAD, k and the number of hosts are named; the fix too
    for part in ('median %s GB/s' % fig['median'], 'MAD %s GB/s' % fig['mad'], 'k 3', '40 healthy hosts', str(first['measured'])):
        assert part in first['message'], (part, first['message'])
    assert 'fleet median %s' % fig['median'] in first['expected'] and 'over 40 hosts' in first['expected']
    assert 'h200x2-nvlink' in first['remediation'] and 'NCCL_DEBUG=INFO' in first['remediation']


def test_the_threshold_is_median_minus_k_mad_with_a_floor():
    values = [100.0, 101.0, 99.0, 100.0, 130.0, 100.0, 50.0, 100.0, 100.0]
    got = _fleet.fleet_threshold(values, 3.0, 0.0)
    assert got['median'] == 100.0 and got['mad'] == 0.0 and got['threshold'] == 100.0
    got = _fleet.fleet_threshold(values, 3.0, 0.01)
    assert got['spread'] == 1.0 and got['threshold'] == 97.0      # a fleet of near-identical figures: the floor
    got = _fleet.fleet_threshold([10.0, 12.0, 14.0, 16.0, 18.0], 2.0, 0.01)
    assert got['median'] == 14.0 and got['mad'] == round(2 * 1.4826, 3) and got['threshold'] == round(14 - 2 * 2 * 1.4826, 3)


def test_fewer_than_min_hosts_is_not_applied_and_said():
    figures = fleet(8)
    statuses = healthy(figures)
    statuses['node03'] = 'fail'     # a failed host is not part of the fleet
    figures['node05'] = slowed(figures['node05'], 0.5)
    findings, section = _fleet.evaluate_fleet(figures, statuses, FLEET, 'h200x2-nvlink')
    assert findings == [] and section['figures'] == {}
    assert 'fleet threshold not applied to all_reduce_perf 1 GiB: 7 healthy host(s) < min_hosts 8' in section['not_applied']
    assert len(section['not_applied']) == 20


def test_earlier_runs_count_their_hosts_once_towards_min_hosts():
    figures = fleet(4)
    earlier = dict(((c, s), [('old%d' % (i % 5), v) for i, v in enumerate([figures['node00'][c][s]] * 10)])
                   for c in COLLECTIVES for s in figures['node00'][c])
    figures['node02'] = slowed(figures['node02'], 0.9)
    findings, section = _fleet.evaluate_fleet(figures, healthy(figures), dict(FLEET, runs=3), 'p', earlier)
    assert {f['host'] for f in findings} == {'node02'}
    assert section['figures']['all_reduce_perf'][str(GIB)]['hosts'] == 9
    assert section['figures']['all_reduce_perf'][str(GIB)]['samples'] == 14


def history_of(factors, collective='all_reduce_perf'):
    """A host's earlier runs, newest first: the real run medians of run1.. times ``factors``."""
    base = [_median_of(SWEEPS[collective][3 * i:3 * i + 3]) for i in range(10)]
    return {collective: dict((s, [('r%d' % (len(factors) - i), round(base[i][s] * f, 2)) for i, f in enumerate(factors)])
                             for s in base[0])}


def now(factor, collective='all_reduce_perf'):
    return {collective: dict((s, round(v * factor, 2)) for s, v in _median_of(SWEEPS[collective][27:30]).items())}


def test_a_host_6_percent_slower_than_its_last_5_runs_regressed_since_the_right_run():
    # newest first: r6 was already 7 % slow but healthy (recorded before the profile had a history section)
    history = history_of([0.93, 1.0, 1.0, 1.0, 1.0, 1.0])
    findings, regressed, not_judged = _fleet.evaluate_regression('node1', now(0.94), history, HISTORY)
    assert not_judged == [] and len(findings) == 4
    f = findings[0]
    assert f['check'] == 'collectives.regressed' and f['component'] == 'all_reduce_perf 1 GiB' and f['severity'] == 'fail'
    assert 'regressed since run r5' in f['message'] and 'since run r5' in f['remediation']
    assert regressed[0] == 'all_reduce_perf 1 GiB since run r5'
    baseline = _fleet.median([v for _r, v in history['all_reduce_perf'][GIB][:5]])
    assert 'baseline %s GB/s' % round(baseline, 3) in f['message'] and f['measured'] == now(0.94)['all_reduce_perf'][GIB]


@pytest.mark.parametrize('collective', COLLECTIVES)
@pytest.mark.parametrize('factor, caught', [(0.94, True), (0.98, False), (1.0, False)])
def test_regression_6_percent_caught_2_percent_not(collective, factor, caught):
    findings, _regressed, _not_judged = _fleet.evaluate_regression(
        'node1', now(factor, collective), history_of([1.0] * 5, collective), HISTORY)
    assert bool(findings) == caught and all('since run r5' in f['message'] for f in findings)


def test_too_few_earlier_runs_are_not_judged_and_said():
    findings, _regressed, not_judged = _fleet.evaluate_regression('node1', now(0.5), history_of([1.0, 1.0]), HISTORY)
    assert findings == [] and 'all_reduce_perf 1 GiB: 2 earlier run(s) < min_runs 3' in not_judged
