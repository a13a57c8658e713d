"""Bad-node isolation (_isolate) on a simulated fabric: the bus bandwidth of a pair depends on which
nodes are paired. The healthy pair figure is a real one: the all_reduce busbw at 8 GiB of the 4x H200
capture (tests/fixtures/hardware/h200x4-nvlink); a bad node gives every pair it is in 40-60 % of it,
a bad link one pair; every figure carries +-2 % noise."""
import os
import random

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _isolate as iso
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nccl import parse_nccl_tests

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, '..', '..', '..', 'fixtures', 'hardware', 'h200x4-nvlink', 'nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt')


def healthy_pair_busbw():
    with open(CAPTURE) as handle:
        rows = parse_nccl_tests(handle.read())['rows']
    return max(rows, key=lambda r: r['size_bytes'])['out_of_place']['busbw_gbps']


HEALTHY = healthy_pair_busbw()
FLOORS = {'busbw_gbps': round(HEALTHY * 0.9, 2), 'ib_write_bw_gbps': None}


def fabric(bad=(), links=(), seed=0, noise=0.02, missing=()):
    """measure(pair, round, wave): busbw of a pair on a fabric with these bad nodes and bad links."""
    rng = random.Random(seed)
    slow = dict((host, 0.4 + 0.2 * rng.random()) for host in bad)
    bad_links = set(frozenset(link) for link in links)

    def measure(pair, _round, _wave):
        if set(pair) & set(missing):
            return {'busbw_gbps': None, 'error': 'mpirun exited 1'}
        factor = 1.0
        for host in pair:
            factor = min(factor, slow.get(host, 1.0))
        if frozenset(pair) in bad_links:
            factor = min(factor, 0.5)
        return {'busbw_gbps': round(HEALTHY * factor * (1 + rng.uniform(-noise, noise)), 2)}
    return measure


def names(count):
    return ['gpu%03d' % i for i in range(count)]


def test_healthy_figure_is_the_capture():
    assert HEALTHY == 365.15


SIZES = [64, 128, 256, 65, 7]


@pytest.mark.parametrize('count', SIZES)
def test_all_healthy_passes_in_one_round_without_false_suspects(count):
    for seed in range(3):
        answer = iso.run(names(count), fabric(seed=seed), FLOORS)
        assert answer['rounds'] == 1
        assert (answer['bad_nodes'], answer['bad_links'], answer['inconclusive']) == ([], [], [])
        # quick coverage: no host is a clean pass, the coverage says how many links were tested
        assert answer['passed'] == [] and answer['passed_partial'] == names(count)
        assert answer['pair_runs'] == count // 2 + count % 2
        assert answer['coverage']['links_tested'] == count // 2 + count % 2
        assert answer['coverage']['links_total'] == count * (count - 1) // 2 and not answer['coverage']['complete']


@pytest.mark.parametrize('count', SIZES)
def test_one_bad_node_is_found_in_three_rounds(count):
    for bad in sorted({names(count)[0], names(count)[count // 2], names(count)[-1]}):
        answer = iso.run(names(count), fabric(bad=[bad]), FLOORS)
        assert answer['rounds'] == 3
        assert [b['host'] for b in answer['bad_nodes']] == [bad]
        assert (answer['bad_links'], answer['inconclusive']) == ([], [])
        assert answer['passed_partial'] == [h for h in names(count) if h != bad] and answer['passed'] == []
        evidence = answer['bad_nodes'][0]['evidence']
        assert sorted(e['round'] for e in evidence if e['outcome'] == 'slow')[-2:] == [2, 3]
        assert all(e['busbw_gbps'] < e['busbw_floor_gbps'] == FLOORS['busbw_gbps'] for e in evidence)


@pytest.mark.parametrize('count', [64, 128, 256, 65])
@pytest.mark.parametrize('together', [True, False])
def test_two_bad_nodes_are_both_found(count, together):
    hosts = names(count)
    bad = [hosts[2], hosts[3]] if together else [hosts[2], hosts[40]]  # 2 and 3 share a round-1 pair
    answer = iso.run(hosts, fabric(bad=bad, seed=1), FLOORS)
    assert answer['rounds'] == 3
    assert [b['host'] for b in answer['bad_nodes']] == bad
    assert (answer['bad_links'], answer['inconclusive']) == ([], [])
    first = [p for p in answer['pairs'] if p['round'] == 1 and p['outcome'] == 'slow']
    assert [p['pair'] for p in first] == ([bad] if together else [[hosts[2], hosts[3]], [hosts[40], hosts[41]]])


@pytest.mark.parametrize('count', [64, 128, 256, 65])
def test_a_bad_link_is_reported_as_a_link_not_as_nodes(count):
    hosts = names(count)
    link = [hosts[10], hosts[11]]
    answer = iso.run(hosts, fabric(links=[link], seed=2), FLOORS)
    assert answer['rounds'] == 2
    assert answer['bad_nodes'] == [] and answer['inconclusive'] == []
    assert [entry['pair'] for entry in answer['bad_links']] == [link]
    evidence = answer['bad_links'][0]['evidence']
    assert [(e['round'], e['outcome']) for e in evidence] == [(1, 'slow'), (2, 'pass'), (2, 'pass')]
    assert answer['passed_partial'] == [h for h in hosts if h not in link]
    assert [answer['host_status'][h] for h in link] == ['bad_link', 'bad_link']


def test_a_bad_node_and_a_bad_link_together():
    hosts = names(128)
    answer = iso.run(hosts, fabric(bad=[hosts[100]], links=[[hosts[10], hosts[11]]], seed=3), FLOORS)
    assert answer['rounds'] == 3
    assert [b['host'] for b in answer['bad_nodes']] == [hosts[100]]
    assert [entry['pair'] for entry in answer['bad_links']] == [[hosts[10], hosts[11]]]


def test_more_suspects_than_references_run_in_waves_of_distinct_references():
    hosts = names(8)
    bad = hosts[:6]   # pairs (0,1), (2,3), (4,5) fail; 6 and 7 are the only references
    results = []
    measure = fabric(bad=bad, noise=0)
    plan = iso.next_round(hosts, results, FLOORS)
    for wave_no, wave in enumerate(plan['waves'], 1):
        results += [dict(round=1, wave=wave_no, pair=p, **measure(p, 1, wave_no)) for p in wave]
    plan = iso.next_round(hosts, results, FLOORS)
    assert plan['round'] == 2 and [len(w) for w in plan['waves']] == [2, 2, 2]
    for wave in plan['waves']:
        assert sorted(h for p in wave for h in p if h in ('gpu006', 'gpu007')) == ['gpu006', 'gpu007']
    answer = iso.run(hosts, measure, FLOORS)
    assert [b['host'] for b in answer['bad_nodes']] == bad
    third = [p for p in answer['pairs'] if p['round'] == 3]
    second = dict((tuple(p['pair']), p) for p in answer['pairs'] if p['round'] == 2)
    for suspect in bad:   # round 3 confirms against another reference than round 2
        r2 = [p['pair'] for p in second.values() if suspect in p['pair']][0]
        r3 = [p['pair'] for p in third if suspect in p['pair']][0]
        assert r2 != r3


def test_odd_host_out_is_tested_in_a_second_wave_of_round_one():
    waves = iso.round1(names(5))
    assert waves == [[['gpu000', 'gpu001'], ['gpu002', 'gpu003']], [['gpu000', 'gpu004']]]
    answer = iso.run(names(5), fabric(bad=['gpu004']), FLOORS)
    assert [b['host'] for b in answer['bad_nodes']] == ['gpu004'] and answer['rounds'] == 3
    assert answer['passed_partial'] == names(4)


def test_seed_shuffles_round_one_deterministically():
    assert iso.round1(names(64), seed=7) == iso.round1(list(reversed(names(64))), seed=7)
    assert iso.round1(names(64), seed=7) != iso.round1(names(64))
    assert sorted(h for p in iso.round1(names(64), seed=7)[0] for h in p) == names(64)


def test_no_reference_node_is_inconclusive_never_a_pass():
    answer = iso.run(names(6), fabric(bad=names(6)), FLOORS)
    assert answer['rounds'] == 1 and answer['bad_nodes'] == [] and answer['passed'] == []
    assert [u['host'] for u in answer['inconclusive']] == names(6)
    assert 'no reference node' in answer['inconclusive'][0]['reason']


def test_a_single_host_cannot_be_isolated():
    answer = iso.run(['solo'], fabric(), FLOORS)
    assert answer['passed'] == [] and [u['host'] for u in answer['inconclusive']] == ['solo']


def test_runs_without_a_figure_are_not_measured_never_pass():
    hosts = names(16)
    answer = iso.run(hosts, fabric(missing=[hosts[5]]), FLOORS)
    assert [u['host'] for u in answer['inconclusive']] == [hosts[5]]
    assert 'no figure' in answer['inconclusive'][0]['reason'] and hosts[5] not in answer['passed']
    assert all(e['error'] == 'mpirun exited 1' for e in answer['inconclusive'][0]['evidence'])


def test_intermittent_suspect_is_inconclusive():
    hosts = names(8)
    calls = {'n': 0}
    base = fabric(noise=0)

    def measure(pair, rnd, wave):
        if 'gpu003' in pair and rnd in (1, 2):
            return {'busbw_gbps': 100.0}
        calls['n'] += 1
        return base(pair, rnd, wave)
    answer = iso.run(hosts, measure, FLOORS)
    assert [u['host'] for u in answer['inconclusive']] == ['gpu003']
    assert 'intermittent' in answer['inconclusive'][0]['reason'] and answer['bad_nodes'] == []


def test_ib_write_bw_is_a_second_measurement():
    floors = dict(FLOORS, ib_write_bw_gbps=350.0)
    hosts = names(16)

    def measure(pair, _r, _w):
        return {'busbw_gbps': HEALTHY, 'ib_write_bw_gbps': 180.0 if 'gpu009' in pair else 390.5}
    answer = iso.run(hosts, measure, floors)
    assert [b['host'] for b in answer['bad_nodes']] == ['gpu009']
    assert answer['bad_nodes'][0]['evidence'][0]['ib_write_bw_floor_gbps'] == 350.0
    # requested and not measured is never a pass
    assert iso.outcome({'busbw_gbps': HEALTHY}, floors) == 'not_measured'


@pytest.mark.parametrize('hosts', [None, 'gpu1', ['a', 'a'], ['a', ''], [1, 2]])
def test_bad_host_lists_are_clear_errors(hosts):
    with pytest.raises(iso.IsolationError):
        iso.round1(hosts)


def test_profile_takes_the_pair_floor_and_the_ib_write_bw_floor():
    from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import validate_profile
    from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
    base = {'schema_version': 1, 'name': 'p', 'infiniband': {'ports_min': 8, 'ib_write_bw_gbps_min': 360}}
    profile = validate_profile(dict(base, isolation={'pair_busbw_gbps_min': 330.5}))
    assert profile['isolation'] == {'pair_busbw_gbps_min': 330.5, 'collective': 'all_reduce'}
    assert profile['infiniband']['ib_write_bw_gbps_min'] == 360
    for bad in ({'pair_busbw_gbps_min': -1}, {'collective': 'all_reduse'}, {'pair_floor': 3}):
        with pytest.raises(ProfileError):
            validate_profile(dict(base, isolation=bad))


def _read(*parts):
    with open(os.path.join(HERE, '..', '..', '..', 'fixtures', *parts)) as handle:
        return handle.read()


SIXTEEN = ('derived', 'nccl', 'nccl-tests_all_reduce_perf_16-ranks.txt')


@pytest.mark.parametrize('run, ranks, ib, expected', [
    ({'stdout': _read(*SIXTEEN), 'exit_code': 0}, 16, None, {'busbw_gbps': 365.15, 'ib_write_bw_gbps': None, 'error': None}),
    ({'stdout': _read(*SIXTEEN), 'exit_code': 0}, 16, {'stdout': _read('derived', 'ib_write_bw', 'client_all-sizes_slow.txt')},
     {'busbw_gbps': 365.15, 'ib_write_bw_gbps': 181.02, 'error': None}),
    ({'stdout': _read(*SIXTEEN), 'exit_code': 0}, 8, None,
     {'busbw_gbps': None, 'ib_write_bw_gbps': None, 'error': 'nccl-tests ran 16 rank(s), expected 8 (two nodes x their GPUs)'}),
    ({'skipped_reason': 'check mode: would run mpirun'}, 16, None,
     {'busbw_gbps': None, 'ib_write_bw_gbps': None, 'error': 'nccl-tests not run: check mode: would run mpirun'}),
    ({'timed_out': True, 'timeout_s': 900, 'stdout': ''}, 16, None,
     {'busbw_gbps': None, 'ib_write_bw_gbps': None, 'error': 'nccl-tests timed out after 900 s'}),
    ({'stdout': '', 'exit_code': 1, 'output_tail': 'ORTE was unable to reliably start one or more daemons.'}, 16, None,
     {'busbw_gbps': None, 'ib_write_bw_gbps': None,
      'error': 'nccl-tests output not understood (exit 1): no nccl-tests header, result row or trailer found; '
               'output ends: ORTE was unable to reliably start one or more daemons.'}),
])
def test_pair_measurement(run, ranks, ib, expected):
    assert iso.pair_measurement(run, ranks, ib) == expected


def test_pair_measurement_ib_write_bw_that_did_not_measure():
    ib_run = {'stdout': _read('derived', 'ib_write_bw', 'error_couldnt-connect.txt'), 'exit_code': 1}
    result = iso.pair_measurement({'stdout': _read(*SIXTEEN)}, 16, ib_run)
    assert result['ib_write_bw_gbps'] is None and 'ib_write_bw output not understood (exit 1): no result table' in result['error']


def test_floors_from_the_profile_or_the_multinode_curve():
    curve = {'all_reduce': {'curve': [{'min_bytes': 1 << 20, 'busbw_gbps_min': 100.0}, {'min_bytes': 1 << 30, 'busbw_gbps_min': 300.0}]}}
    assert iso.floors_of({'isolation': {'pair_busbw_gbps_min': 330}}, '8G') == {
        'busbw_gbps': 330.0, 'ib_write_bw_gbps': None, 'collective': 'all_reduce'}
    assert iso.floors_of({'collectives_multinode': curve, 'infiniband': {'ib_write_bw_gbps_min': 360}}, '8G') == {
        'busbw_gbps': 300.0, 'ib_write_bw_gbps': 360.0, 'collective': 'all_reduce'}
    assert iso.floors_of({'collectives_multinode': curve}, '512M')['busbw_gbps'] == 100.0
    with pytest.raises(iso.IsolationError, match='no pair floor'):
        iso.floors_of({'name': 'bare'}, '8G')
    with pytest.raises(iso.IsolationError, match='like 8G'):
        iso.floors_of({'collectives_multinode': curve}, 'lots')


def test_wave_results_fill_a_silent_head_as_not_measured():
    found = [{'round': 2, 'wave': 1, 'busbw_gbps': 350.0, 'ib_write_bw_gbps': None, 'error': None},
             None, {'round': 1, 'wave': 1, 'busbw_gbps': 350.0}]   # the last one is stale: an earlier round
    results = iso.wave_results(found, 2, 1, [['a', 'b'], ['c', 'd'], ['e', 'f']])
    assert [r['pair'] for r in results] == [['a', 'b'], ['c', 'd'], ['e', 'f']]
    assert [r['busbw_gbps'] for r in results] == [350.0, None, None]
    assert 'no result from the head node c' in results[1]['error'] and iso.outcome(results[2], FLOORS) == 'not_measured'


def test_plan_for_hosts_gives_each_host_its_pairs():
    plan = iso.plan_for_hosts({'round': 1, 'waves': iso.round1(names(5))})
    assert plan['assign']['gpu000'] == {'1': ['gpu000', 'gpu001'], '2': ['gpu000', 'gpu004']}
    assert plan['assign']['gpu003'] == {'1': ['gpu002', 'gpu003']}


def test_wave_results_read_numbers_templated_as_text():
    found = [{'round': '3', 'wave': '1', 'busbw_gbps': None, 'error': 'node1: Run across the nodes failed: boom'}]
    assert iso.wave_results(found, 3, 1, [['node1', 'node2']])[0]['error'] == 'node1: Run across the nodes failed: boom'


# Coverage (issue 31): quick tests N/2 of the N(N-1)/2 links and says so; full tests every link once
# (round-robin); targeted every link between the hosts of interest and each of them against references.

def _links(count):
    return count * (count - 1) // 2


@pytest.mark.parametrize('count', range(2, 18))
def test_round_robin_tests_every_link_exactly_once_in_disjoint_waves(count):
    for seed in (None, 5):
        waves = iso.next_round(names(count), [], FLOORS, seed, 'full')['waves']
        assert len(waves) == (count - 1 if count % 2 == 0 else count)
        for wave in waves:
            hosts = [h for pair in wave for h in pair]
            assert len(hosts) == len(set(hosts)) == 2 * (count // 2)      # disjoint; one host sits out for odd N
            assert all(pair == sorted(pair) for pair in wave)
        links = [tuple(pair) for wave in waves for pair in wave]
        assert len(links) == len(set(links)) == _links(count)
    assert iso.round_robin(['solo']) == [] and iso.next_round(['solo'], [], FLOORS, None, 'full') is None


def _placements(count, draws, picks, seed):
    rng = random.Random(seed)
    return [rng.sample(names(count), picks) for _draw in range(draws)]


def _clean(answer, bad=(), links=()):
    """Exactly these bad nodes and links, nothing inconclusive, every other host a clean pass."""
    assert [b['host'] for b in answer['bad_nodes']] == sorted(bad), answer['bad_nodes']
    assert [link['pair'] for link in answer['bad_links']] == sorted(sorted(link) for link in links), answer['bad_links']
    assert answer['inconclusive'] == [], answer['inconclusive']
    flagged = set(bad) | set(h for link in links for h in link)
    assert answer['passed'] == [h for h in sorted(answer['host_status']) if h not in flagged]
    assert answer['coverage']['complete'] and answer['rounds'] == 1


@pytest.mark.parametrize('count', [16, 64])
def test_a_single_bad_link_is_found_40_of_40_with_full_coverage_and_missed_by_quick(count):
    found = missed = 0
    for draw, link in enumerate(_placements(count, 40, 2, seed=31)):
        answer = iso.run(names(count), fabric(links=[link], seed=draw), FLOORS, seed=draw, coverage='full')
        _clean(answer, links=[link])
        assert answer['pair_runs'] == answer['coverage']['links_tested'] == _links(count)
        assert answer['answer'] == '0 bad node(s), 1 bad link(s), 0 inconclusive host(s); %d of %d links tested (coverage full)' % (
            _links(count), _links(count))
        reason = answer['bad_links'][0]['reason']
        assert 'under the floor while %s passed with %d other partner(s)' % (min(link), count - 2) in reason
        found += 1
        quick = iso.run(names(count), fabric(links=[link], seed=draw), FLOORS, seed=draw)
        if not quick['bad_links']:
            missed += 1   # the link was not one of round 1's pairs: quick cannot see it, and says so
            assert quick['answer'].startswith('no bad node found among the tested pairs; %d of %d links tested (coverage partial)' % (
                count // 2, _links(count)))
            assert 'xuanwu_isolation_coverage=full' in quick['answer'] and quick['passed'] == []
            assert set(quick['host_status'].values()) == {'pass_partial'}
    assert found == 40 and missed >= 35


@pytest.mark.parametrize('count', [16, 64])
def test_full_coverage_tells_bad_nodes_from_bad_links_without_false_accusation(count):
    for draw, picked in enumerate(_placements(count, 10, 5, seed=32)):
        one = iso.run(names(count), fabric(bad=picked[:1], seed=draw), FLOORS, coverage='full')
        _clean(one, bad=picked[:1])
        assert one['bad_nodes'][0]['failed_with'] == [h for h in names(count) if h != picked[0]]
        assert 'failed with %d of its %d tested partners' % (count - 1, count - 1) in one['bad_nodes'][0]['reason']
        _clean(iso.run(names(count), fabric(bad=picked[:2], seed=draw), FLOORS, coverage='full'), bad=picked[:2])
        both = iso.run(names(count), fabric(bad=picked[:1], links=[picked[1:3]], seed=draw), FLOORS, coverage='full')
        _clean(both, bad=picked[:1], links=[picked[1:3]])
        # a node with two bad links (its port or cable) is in both, not a bad node
        two = iso.run(names(count), fabric(links=[picked[0:2], [picked[0], picked[2]]], seed=draw), FLOORS, coverage='full')
        _clean(two, links=[picked[0:2], [picked[0], picked[2]]])
        assert 'likely common part' in two['bad_links'][0]['reason']


def test_full_coverage_runs_without_a_figure_are_inconclusive_never_pass():
    hosts = names(8)
    answer = iso.run(hosts, fabric(missing=[hosts[3]]), FLOORS, coverage='full')
    assert [u['host'] for u in answer['inconclusive']] == [hosts[3]] and answer['bad_nodes'] == []
    assert 'no figure' in answer['inconclusive'][0]['reason'] and answer['host_status'][hosts[3]] == 'inconclusive'
    assert answer['passed'] == [h for h in hosts if h != hosts[3]]


def test_full_coverage_of_three_hosts_two_bad_leaves_the_second_undecided():
    answer = iso.run(['a', 'b', 'c'], fabric(bad=['a', 'b']), FLOORS, coverage='full')
    assert [b['host'] for b in answer['bad_nodes']] == ['a']
    assert [u['host'] for u in answer['inconclusive']] == ['b', 'c']   # b with c failed; neither passed with anyone else
    assert 'untold' in answer['inconclusive'][0]['reason'] and answer['passed'] == []


def test_targeted_coverage_tests_the_links_of_the_hosts_of_interest_and_references():
    hosts = names(16)
    chosen = [hosts[3], hosts[7], hosts[11]]
    plan = iso.next_round(hosts, [], FLOORS, None, 'targeted', chosen)
    pairs = [tuple(p) for wave in plan['waves'] for p in wave]
    for wave in plan['waves']:
        members = [h for p in wave for h in p]
        assert len(members) == len(set(members))
    among = [p for p in pairs if set(p) <= set(chosen)]
    assert sorted(among) == [(chosen[0], chosen[1]), (chosen[0], chosen[2]), (chosen[1], chosen[2])]
    for host in chosen:   # each against two distinct references
        refs = [h for p in pairs if host in p for h in p if h not in chosen]
        assert len(refs) == len(set(refs)) == 2
    assert len(pairs) == 3 + 3 * 2 and len(plan['waves']) == 3 + 2
    link = iso.run(hosts, fabric(links=[chosen[:2]]), FLOORS, None, 'targeted', chosen)
    assert [b['pair'] for b in link['bad_links']] == [chosen[:2]] and link['bad_nodes'] == link['inconclusive'] == []
    assert link['coverage']['links_between_hosts_of_interest'] == 3 and link['coverage']['hosts_of_interest'] == chosen
    assert link['rounds'] == 1 and not link['coverage']['complete']
    assert link['answer'] == ('0 bad node(s), 1 bad link(s), 0 inconclusive host(s); 9 of 120 links tested (coverage partial), of them 3 '
                              'of the 3 links between the 3 hosts of interest; xuanwu_isolation_coverage=full tests every link')
    assert sorted(link['not_tested']) == sorted(set(hosts) - set(h for p in pairs for h in p))
    node = iso.run(hosts, fabric(bad=[chosen[2]]), FLOORS, None, 'targeted', chosen)
    assert [b['host'] for b in node['bad_nodes']] == [chosen[2]] and node['bad_links'] == node['inconclusive'] == []
    assert 'failed with 4 of its 4 tested partners' in node['bad_nodes'][0]['reason']


@pytest.mark.parametrize('kwargs, message', [
    ({'coverage': 'fulll'}, 'xuanwu_isolation_coverage must be one of quick, full, targeted'),
    ({'coverage': ['full']}, 'xuanwu_isolation_coverage must be one of'),
    ({'coverage': 'targeted'}, 'xuanwu_isolation_coverage targeted needs xuanwu_isolation_hosts_of_interest'),
    ({'coverage': 'targeted', 'interest': ['a', 'zz']}, 'xuanwu_isolation_hosts_of_interest names host(s) that are not isolated here: zz'),
    ({'coverage': 'targeted', 'interest': {'a': 1}}, 'xuanwu_isolation_hosts_of_interest must be a list of host names'),
    ({'coverage': 'targeted', 'interest': [3]}, 'xuanwu_isolation_hosts_of_interest must be a list of host names'),
    ({'coverage': 'targeted', 'interest': 'a,b'}, 'as JSON on the command line: -e \'{"xuanwu_isolation_hosts_of_interest": ["node1"'),
    ({'interest': ['a']}, 'xuanwu_isolation_hosts_of_interest is given while xuanwu_isolation_coverage is quick'),
    ({'seed': 'seven'}, 'xuanwu_isolation_seed must be an integer'),
    ({'seed': True}, 'xuanwu_isolation_seed must be an integer'),
])
def test_settings_refuse_values_naming_the_variable(kwargs, message):
    with pytest.raises(iso.IsolationError) as err:
        iso.settings(['a', 'b', 'c'], **kwargs)
    assert message in str(err.value)


def test_settings_take_the_values_as_extra_vars_give_them():
    assert iso.settings(['a', 'b', 'c']) == {'seed': None, 'coverage': 'quick', 'interest': []}
    assert iso.settings(['a', 'b', 'c'], seed='7', coverage='targeted', interest=['c', 'a']) == {
        'seed': 7, 'coverage': 'targeted', 'interest': ['a', 'c']}


def test_three_hosts_the_bad_one_is_confirmed_against_two_distinct_references_and_the_reason_names_them():
    """Three hosts: round 1 pairs a-b and a-c; c's pair fails, so a is a suspect too and b the only reference. a is
    cleared against b in round 2 and becomes c's second reference in round 3: the reason names b and a, never b twice."""
    hosts = ['a', 'b', 'c']
    answer = iso.run(hosts, fabric(bad=['c'], noise=0), FLOORS)
    assert [b['host'] for b in answer['bad_nodes']] == ['c'] and answer['inconclusive'] == []
    reason = answer['bad_nodes'][0]['reason']
    assert reason == 'failed against two reference nodes: b (round 2) and a (round 3)', reason
    partners = [[h for h in e['pair'] if h != 'c'][0] for e in answer['bad_nodes'][0]['evidence'] if e['round'] > 1]
    assert partners == ['b', 'a']


def _result(rnd, pair, busbw):
    return {'round': rnd, 'wave': 1, 'pair': pair, 'busbw_gbps': busbw, 'ib_write_bw_gbps': None, 'error': None}


def test_slow_once_is_never_a_bad_node():
    """Slow against one reference (round 2) and not confirmed (no round 3, or passed in round 3): inconclusive, and
    twice against the same only reference cannot tell a node from a link: inconclusive too."""
    slow, fast = HEALTHY * 0.5, HEALTHY
    hosts = ['a', 'b', 'c', 'd']
    first = [_result(1, ['a', 'b'], fast), _result(1, ['c', 'd'], slow)]
    unconfirmed = iso.verdict(hosts, first + [_result(2, ['a', 'c'], slow), _result(2, ['b', 'd'], fast)], FLOORS)
    assert unconfirmed['bad_nodes'] == [] and [u['host'] for u in unconfirmed['inconclusive']] == ['c']
    assert 'not confirmed in round 3' in unconfirmed['inconclusive'][0]['reason']
    passed_later = iso.verdict(hosts, first + [_result(2, ['a', 'c'], slow), _result(2, ['b', 'd'], fast),
                                               _result(3, ['b', 'c'], fast)], FLOORS)
    assert passed_later['bad_nodes'] == [] and 'intermittent' in passed_later['inconclusive'][0]['reason']
    same = iso.verdict(hosts, first + [_result(2, ['a', 'c'], slow), _result(2, ['b', 'd'], fast),
                                       _result(3, ['a', 'c'], slow)], FLOORS)
    assert same['bad_nodes'] == [] and [u['host'] for u in same['inconclusive']] == ['c']
    assert same['inconclusive'][0]['reason'].startswith('slow against a in rounds 2 and 3, the only reference node')
