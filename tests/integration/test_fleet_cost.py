"""validate.yml costs one task per healthy host whatever the number of hosts (docs/architecture.md, "Cost per
host"): counted from the play recap at two fleet sizes, never timed. The whole-run steps (preflight, host
comparison, report) run once; the gate runs on the failed hosts only; a stage that is off costs nothing."""
import os
import re

import pytest

from test_validate_playbook import BUNDLE, ROOT, playbook, the_report, write_inventory

FAULTY = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node04')
RECAP = re.compile(r'^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)', re.M)


def recap(out):
    return dict((m.group(1), dict(ok=int(m.group(2)), changed=int(m.group(3)), failed=int(m.group(5)), skipped=int(m.group(6))))
                for m in RECAP.finditer(out))


def run(tmp_path, n, faulty=(), extra=()):
    hosts = dict(('node%03d' % i, {'xuanwu_replay_dir': FAULTY if i in faulty else BUNDLE}) for i in range(n))
    inv = write_inventory(tmp_path, hosts)
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'reports'), *extra)
    return rc, out, recap(out)


@pytest.mark.both_controllers
def test_a_healthy_host_costs_one_task_and_the_controller_work_does_not_grow(tmp_path):
    localhost = {}
    for n in (3, 12):
        (tmp_path / str(n)).mkdir()
        rc, out, counts = run(tmp_path / str(n), n)
        assert rc == 0, out[-3000:]
        first = 'node000'
        others = [h for h in counts if h.startswith('node') and h != first]
        assert len(others) == n - 1
        # one task each; no skipped task either (a skipped task still costs a worker per host)
        assert all(counts[h] == dict(ok=1, changed=0, failed=0, skipped=0) for h in others), counts
        # the first host carries the run_once steps: the localhost check, preflight, host comparison and its record
        assert counts[first]['ok'] <= 5 and counts[first]['skipped'] == 0, counts[first]
        _folder, report = the_report(tmp_path / str(n) / 'reports')
        assert report['summary']['status']['pass'] == n
        localhost[n] = counts['localhost']
    assert localhost[3] == localhost[12], localhost


def test_the_gate_runs_on_the_failed_hosts_only(tmp_path):
    rc, out, counts = run(tmp_path, 6, faulty=(2, 4))
    assert rc == 2, out[-3000:]
    assert counts['node002']['failed'] == 1 and counts['node004']['failed'] == 1
    assert all(counts[h]['ok'] == 1 and counts[h]['failed'] == 0 for h in ('node001', 'node003', 'node005')), counts
    assert 'node004 FAILED 1 check(s): [host.time_sync]' in out
    _folder, report = the_report(tmp_path / 'reports')
    assert report['summary']['failed_hosts'] == ['node002', 'node004']


def test_a_switched_off_stage_matches_no_host(tmp_path):
    rc, out, _counts = run(tmp_path, 3)
    assert rc == 0
    for play in ('Measure the collectives and run the training workloads', 'Measure the collectives across the nodes',
                 'Read the link error counters again'):
        after = out.split('PLAY [%s' % play, 1)[1]
        assert after.split('\n', 2)[1].strip() == 'skipping: no hosts matched', after[:300]


def test_a_limit_without_localhost_is_refused_before_anything_runs(tmp_path):
    hosts = dict(('node%03d' % i, {'xuanwu_replay_dir': BUNDLE}) for i in range(2))
    inv = write_inventory(tmp_path, hosts)
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '--limit', 'node000,node001',
                       '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'reports'))
    assert rc != 0
    assert '--limit left out localhost' in out, out[-3000:]
    assert 'Probe and judge the node' not in out
