"""Integration: playbooks/isolate.yml over local hosts with test doubles for mpirun and ib_write_bw. The mpirun
double reads the hostfile it is given and prints the real-shaped 16-rank nccl-tests output (2 nodes x 8 GPUs)
with every bandwidth scaled by a factor that depends on the two hosts of the pair: a bad node halves every pair
it is in, a bad link one pair."""
import json
import os
import sys

import pytest
import yaml

from test_collectives_workloads import inventory, write_test_double
from test_validate_playbook import ROOT, playbook

DERIVED = os.path.join(ROOT, 'tests', 'fixtures', 'derived')
SIXTEEN = os.path.join(DERIVED, 'nccl', 'nccl-tests_all_reduce_perf_16-ranks.txt')   # busbw 365.15 GB/s at 8 GiB
IB_CLIENT = os.path.join(DERIVED, 'ib_write_bw', 'client_report-gbits_ndr-392gbps.txt')
IB_SERVER = os.path.join(DERIVED, 'ib_write_bw', 'server_mb-sec_ethernet.txt')
HOSTS = ['node%d' % i for i in range(1, 6)]   # 5 hosts: round 1 has an odd host out (the other tests take 4: fewer waves)

pytestmark = pytest.mark.skipif(__import__('shutil').which('ansible-playbook') is None, reason='ansible-playbook not on PATH')

FAKE_MPIRUN = r'''
import json, sys
sys.path.insert(0, %(tests)r)
from nccl_text import scaled
args = sys.argv[1:]
hosts = [line.split()[0] for line in open(args[args.index('--hostfile') + 1]) if line.strip() and not line.startswith('#')]
fabric = json.load(open(%(fabric)r))
factor = 1.0
for host in hosts:
    if host in fabric['bad']:
        factor = min(factor, 0.5)
if sorted(hosts) in [sorted(link) for link in fabric['links']]:
    factor = min(factor, 0.55)
with open(%(log)r, 'a') as log:
    log.write(' '.join(sorted(hosts)) + '\n')
sys.stdout.write(scaled(open(%(capture)r).read(), factor))
'''

FAKE_IB_WRITE_BW = r'''
import json, sys
args = sys.argv[1:]
me = args[args.index('-d') + 1][len('dev-'):]
port = args.index('-p')
if len(args) == port + 2:        # server: no peer address after the port
    sys.stdout.write(open(%(server)r).read())
    sys.exit(0)
peer = args[-1]
fabric = json.load(open(%(fabric)r))
slow = me in fabric['ib_bad'] or peer in fabric['ib_bad']
sys.stdout.write(open(%(client)r).read().replace('392.41', '180.20' if slow else '392.41'))
'''


def python_double(path, body, **values):
    path.write_text('#!%s\n# test double: stands in for the real tool in tests\n%s' % (sys.executable, body % values))
    path.chmod(0o755)


def flat(out):
    """The output with its whitespace folded: the callback wraps the summary line."""
    return ' '.join(out.split())


def run_isolate(tmp_path, bad=(), links=(), ib_bad=(), ib_floor=None, hosts=HOSTS, extra=()):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    fabric = tmp_path / 'fabric.json'
    fabric.write_text(json.dumps({'bad': list(bad), 'links': [list(link) for link in links], 'ib_bad': list(ib_bad)}))
    log = tmp_path / 'pairs.log'
    python_double(bindir / 'mpirun', FAKE_MPIRUN, tests=os.path.join(ROOT, 'tests'), fabric=str(fabric), log=str(log), capture=SIXTEEN)
    python_double(bindir / 'ib_write_bw', FAKE_IB_WRITE_BW, fabric=str(fabric), server=IB_SERVER, client=IB_CLIENT)
    write_test_double(bindir / 'all_reduce_perf', 'exit 0\n')
    profile = {'schema_version': 1, 'name': 'pairs', 'isolation': {'pair_busbw_gbps_min': 330.0}}
    if ib_floor:
        profile['infiniband'] = {'ports_min': 0, 'ib_write_bw_gbps_min': ib_floor}
    (tmp_path / 'pairs.yml').write_text(yaml.safe_dump(profile))
    hosts = dict((h, {'xuanwu_ib_write_bw_args': ['-d', 'dev-' + h, '--report_gbits']}) for h in hosts)
    inv = inventory(tmp_path, hosts, xuanwu_profile=str(tmp_path / 'pairs.yml'), xuanwu_nccl_tests_bin_dir=str(bindir),
                    xuanwu_mpirun=str(bindir / 'mpirun'), xuanwu_multinode_slots=8, xuanwu_ib_write_bw=str(bindir / 'ib_write_bw'))
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/isolate.yml', '-e', 'xuanwu_reports_dir=%s' % reports, *extra, timeout=900)
    runs = os.listdir(str(reports)) if reports.exists() else []
    assert len(runs) == 1, out[-4000:]
    folder = reports / runs[0]
    assert (folder / 'isolation.json').exists(), out[-6000:]
    return rc, out, folder, json.loads((folder / 'isolation.json').read_text()), log.read_text().splitlines()


def test_one_bad_node_is_found_in_three_rounds_and_reported(tmp_path):
    rc, out, folder, report, pairs = run_isolate(tmp_path, bad=['node4'])
    verdict = report['verdict']
    assert rc == 2, out[-4000:]
    assert [b['host'] for b in verdict['bad_nodes']] == ['node4'], verdict
    assert (verdict['bad_links'], verdict['inconclusive'], verdict['rounds']) == ([], [], 3)
    # quick coverage: 6 of the 10 links tested and said so; only node1 (in round 1 twice, then the reference of rounds
    # 2 and 3) had all four of its links tested: a clean pass; the others passed among their tested links only
    assert verdict['passed'] == ['node1'] and verdict['passed_partial'] == ['node2', 'node3', 'node5']
    assert verdict['coverage']['links_tested'] == 6 and verdict['coverage']['links_total'] == 10
    assert '1 bad node(s), 0 bad link(s), 0 inconclusive host(s); 6 of 10 links tested (coverage partial)' in flat(out)
    assert out.count('TASK [xuanwu.cluster.collectives_multinode : Find nccl-tests]') == 3   # one include per round
    # round 1: (1,2) (3,4), then the odd host 5 with 1; round 2: 3 and 4 against references; round 3: 4 again
    assert sorted(pairs[:2]) == ['node1 node2', 'node3 node4'] and pairs[2] == 'node1 node5'   # a wave's pairs run at once
    assert len(pairs) == verdict['pair_runs'] == 6
    slow = [p for p in verdict['bad_nodes'][0]['evidence'] if p['outcome'] == 'slow']
    assert all(abs(p['busbw_gbps'] - 182.58) < 0.02 and p['busbw_floor_gbps'] == 330.0 for p in slow), slow
    svg = (folder / 'isolation-heatmap.svg').read_text()
    assert svg.startswith('<svg') and svg.count('<rect') == 1 + 2 * 6 + 5   # frame, both halves of 7 pairs, legend
    html = (folder / 'report.html').read_text()
    assert '<svg' in html and 'node4' in html
    md = (folder / 'report.md').read_text()
    assert '## Bad nodes' in md and '**node4**' in md
    assert 'node4: bad node after bad-node isolation' in out
    assert (folder / 'multinode' / 'node3+node4-all_reduce-hostfile').exists()


def test_all_healthy_passes_in_one_round_with_ib_write_bw_as_a_second_measurement(tmp_path):
    """Every pair fast by nccl-tests and by ib_write_bw (run on each pair, server and client, with each host's
    arguments): one round, exit 0. That a slow ib_write_bw alone makes a bad node is the isolation's logic:
    tests/unit/plugins/module_utils/test_isolate.py::test_ib_write_bw_is_a_second_measurement."""
    rc, out, _folder, report, pairs = run_isolate(tmp_path, ib_floor=350.0, hosts=HOSTS[:4])
    verdict = report['verdict']
    assert rc == 0, out[-4000:]
    assert verdict['rounds'] == 1 and verdict['passed_partial'] == HOSTS[:4] and sorted(pairs) == ['node1 node2', 'node3 node4']
    assert 'no bad node found among the tested pairs; 2 of 6 links tested (coverage partial)' in flat(out)
    # rounds 2 and 3 are not needed: their includes are skipped as a whole (no task of the role runs for them)
    assert out.count('TASK [xuanwu.cluster.collectives_multinode : Find nccl-tests]') == 1
    assert 'skipping: [node1]' in out.split('TASK [Run round 3')[1].split('TASK [')[0]
    ib = sorted((p['pair'], p['ib_write_bw_gbps'], p['ib_write_bw_floor_gbps']) for p in verdict['pairs'])
    assert ib == [(['node1', 'node2'], 392.41, 350.0), (['node3', 'node4'], 392.41, 350.0)], verdict['pairs']


def test_full_coverage_finds_a_bad_link_that_quick_coverage_does_not_test(tmp_path):
    """xuanwu_isolation_coverage=full: one round of 3 waves of 2 disjoint pairs tests the 6 links of 4 hosts once each;
    the slow link node1-node3 (not one of quick's round-1 pairs) is a bad link, its members fail, the others pass."""
    rc, out, folder, report, pairs = run_isolate(tmp_path, links=[['node1', 'node3']], hosts=HOSTS[:4],
                                                 extra=('-e', 'xuanwu_isolation_coverage=full'))
    verdict = report['verdict']
    assert rc == 2, out[-4000:]
    assert [link['pair'] for link in verdict['bad_links']] == [['node1', 'node3']] and verdict['bad_nodes'] == verdict['inconclusive'] == []
    assert 'node1 with node3 under the floor while node1 passed with 2 other partner(s) (node2, node4)' in verdict['bad_links'][0]['reason']
    assert verdict['passed'] == ['node2', 'node4'] and verdict['rounds'] == 1
    assert sorted(pairs) == sorted(' '.join(p) for p in verdict['coverage']['tested']) and len(pairs) == 6
    assert sorted(set(pairs)) == ['node1 node2', 'node1 node3', 'node1 node4', 'node2 node3', 'node2 node4', 'node3 node4']
    assert [len([p for p in verdict['pairs'] if p['wave'] == w]) for w in (1, 2, 3)] == [2, 2, 2]
    assert '0 bad node(s), 1 bad link(s), 0 inconclusive host(s); 6 of 6 links tested (coverage full)' in flat(out)
    assert 'node1: bad link after bad-node isolation' in out and 'node3: bad link after bad-node isolation' in out
    assert 'node2: ' not in out.split('PLAY [Fail the hosts the isolation flagged]')[1]
    assert out.count('TASK [xuanwu.cluster.collectives_multinode : Find nccl-tests]') == 1
    md = (folder / 'report.md').read_text()
    assert '**node1 with node3**' in md and 'every pair of the 4 hosts' in md and 'coverage full, mode full' in md
