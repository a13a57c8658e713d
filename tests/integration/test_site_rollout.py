"""site.yml as a rollout (docs/rollout.md), through ansible-playbook on replayed captures, with a stateful test
double of Slurm's scontrol/sinfo (slurm_double.py, node states in a JSON file): the canary, a faulty node left
drained with the run id and its failed checks, the stop at the failure limit with the later batches untouched
(their Slurm state and the double's call log prove it), resume with the same run id, a node drained by someone
else kept as it was, a node that cannot be reached recorded while its batch goes on, and check mode changing nothing."""
import json
import os
import shutil
import subprocess
import time

import pytest
import yaml

from slurm_double import install
from test_validate_playbook import BUNDLE, ROOT, playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')

FAULTY = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node04')  # host.time_sync fails (docs/fault-corpus.md)
RUN = 'CHG-4711'


class Cluster(object):
    """A replayed fleet under the Slurm double; ``faulty`` hosts replay a capture whose checks fail."""

    def __init__(self, tmp_path, hosts, faulty=(), foreign=None, host_vars=None, slurmd_dead=()):
        self.dir = tmp_path
        self.host_vars = host_vars or {}
        nodes = dict((h, {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}) for h in hosts)
        for host, reason in (foreign or {}).items():
            nodes[host] = {'state': 'IDLE+DRAIN', 'reason': reason, 'partitions': ['gpu']}
        for host in slurmd_dead:
            nodes[host]['slurmd'] = 'inactive'  # stopped: the controller has not noticed yet (within SlurmdTimeout)
        install(str(tmp_path), nodes)
        self.hosts = list(hosts)
        self.faulty = set(faulty)

    def inventory(self):
        variables = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}',
                     'xuanwu_profile': 'h200x4-nvlink', 'scheduler_backend': 'slurm',
                     'scheduler_scontrol': str(self.dir / 'scontrol'), 'scheduler_sinfo': str(self.dir / 'sinfo'),
                     'scheduler_poll_interval': 1, 'scheduler_max_drain_share': 1.0}
        # each node's own systemctl and slurmd (the scheduler health before a return to service)
        hosts = dict((h, dict({'xuanwu_replay_dir': FAULTY if h in self.faulty else BUNDLE,
                               'scheduler_systemctl': str(self.dir / 'nodes' / h / 'systemctl'),
                               'scheduler_slurmd': str(self.dir / 'nodes' / h / 'slurmd')}, **self.host_vars.get(h, {})))
                     for h in self.hosts)
        path = self.dir / 'inventory.yml'
        path.write_text(yaml.safe_dump({'all': {'vars': variables, 'hosts': hosts}}))
        return str(path)

    def run(self, *extra):
        return playbook('-i', self.inventory(), 'site.yml', '-e', 'xuanwu_run_id=%s' % RUN,
                        '-e', 'xuanwu_reports_dir=%s' % (self.dir / 'reports'), '-e', 'xuanwu_runs_dir=%s' % (self.dir / 'runs'),
                        *extra)

    def nodes(self):
        return json.loads((self.dir / 'slurm-double-state.json').read_text())['nodes']

    def calls(self):
        path = self.dir / 'slurm-double-calls.jsonl'
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def touched(self, calls):
        """Nodes the calls named (show or update); sinfo reads the whole partition and names none."""
        names = set()
        for call in calls:
            names.update(word.split('=', 1)[1] for word in call if word.lower().startswith('nodename='))
            if call[1:3] == ['show', 'node']:
                names.add(call[3])
        return names

    def state(self):
        return json.loads((self.dir / 'runs' / RUN / 'state.json').read_text())


def latest(state):
    out = {}
    for batch in state['batches']:
        out.update(batch['outcomes'])
    return out


@pytest.mark.both_controllers
def test_a_faulty_node_stays_drained_the_rollout_stops_and_a_rerun_resumes(tmp_path):
    cluster = Cluster(tmp_path, ['node1', 'node2', 'node3', 'node4'], faulty={'node3'}, foreign={'node2': 'maintenance by dcops'})
    rc, out = cluster.run('-e', 'xuanwu_serial=1')
    assert rc == 2, out[-4000:]
    nodes = cluster.nodes()
    assert nodes['node1'] == {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}, 'the canary passed: back in service'
    assert nodes['node2']['reason'] == 'maintenance by dcops' and 'DRAIN' in nodes['node2']['state'], "someone else's drain is kept"
    assert 'DRAIN' in nodes['node3']['state']
    assert nodes['node3']['reason'].startswith('xuanwu %s: failed checks: ' % RUN) and 'host.time_sync' in nodes['node3']['reason']
    assert nodes['node4'] == {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}
    assert 'node4' not in cluster.touched(cluster.calls()), 'a host of a later batch was touched after the stop'
    state = cluster.state()
    assert state['stopped_at_batch'] == 3 and [b['hosts'] for b in state['batches']] == [['node1'], ['node2'], ['node3']]
    assert state['outcome'] == 'stopped' and state['held_drained'] == ['node3'] and state['not_run_hosts'] == ['node4']
    outcomes = latest(state)
    assert [outcomes[h]['outcome'] for h in ('node1', 'node2', 'node3')] == ['passed', 'not_ours', 'failed']
    assert 'node4' not in outcomes
    assert 'host.time_sync' in outcomes['node3']['failed_checks']
    assert 'node3 stays drained (failed)' in out

    # the fix, then the same command: node1 is done and not touched, node3 comes back, node4 is rolled out
    cluster.faulty = set()
    before = len(cluster.calls())
    rc, out = cluster.run('-e', 'xuanwu_serial=1')
    assert rc == 0, out[-4000:]
    touched = cluster.touched(cluster.calls()[before:])
    assert 'node1' not in touched, 'a host that passed in this run was touched again on resume'
    assert {'node3', 'node4'} <= touched
    nodes = cluster.nodes()
    assert nodes['node3'] == {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}
    assert nodes['node4'] == {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}
    assert nodes['node2']['reason'] == 'maintenance by dcops' and 'DRAIN' in nodes['node2']['state']
    state = cluster.state()
    outcomes = latest(state)
    assert outcomes['node3']['outcome'] == 'passed' and outcomes['node4']['outcome'] == 'passed'
    assert 'resumed after 3 batch(es): 1 host(s) passed before' in out
    # exit 0 and the record agrees: someone else's drain (node2), left as it was, is no failure of the run
    assert (state['outcome'], state['held_drained'], state['not_ours_hosts']) == ('passed', [], ['node2']), state


# A limit of 0 (the default) stopping the rollout at the first failed batch: test_a_faulty_node_stays_drained_...; the
# arithmetic of the limit for every share: tests/unit/plugins/plugin_utils/test_rollout.py.
# node5's slurmd is dead (stopped; slurmctld has not noticed yet): it passes the node checks, and the scheduler health
# keeps it out of service, counted as failed, with the reason in Slurm, the batch report, the run record and the output.
@pytest.mark.parametrize('limit, stops', [(50, False)])
def test_the_failure_limit_decides_whether_the_rollout_goes_on(tmp_path, limit, stops):
    hosts = ['node%d' % i for i in range(1, 7)]
    cluster = Cluster(tmp_path, hosts, faulty={'node3'}, slurmd_dead={'node5'})
    rc, out = cluster.run('-e', 'xuanwu_serial=2', '-e', 'xuanwu_max_fail_percentage=%d' % limit)
    assert rc == 2, out[-4000:]
    state = cluster.state()
    later = {'node5', 'node6'}
    if stops:
        assert state['stopped_at_batch'] == 2, state
        assert not later & cluster.touched(cluster.calls()), 'the rollout went on past the failure limit'
        assert all(cluster.nodes()[h]['state'] == 'IDLE' for h in later)
    else:
        # 1 failed host of 2 is 50 %, not more than the limit: the rollout goes on to the last batch
        assert state['stopped_at_batch'] is None and len(state['batches']) == 3, state
        assert later <= cluster.touched(cluster.calls())
        assert latest(state)['node6']['outcome'] == 'passed'
    assert 'xuanwu %s: failed checks' % RUN in cluster.nodes()['node3']['reason']
    # the dead slurmd: never resumed, drained with a reason naming the check, failed in the record, the report and the output
    node5 = cluster.nodes()['node5']
    assert 'DRAIN' in node5['state'] and node5['reason'] == 'xuanwu %s: failed checks: scheduler.daemon_down' % RUN, node5
    assert ['scontrol', 'update', 'nodename=node5', 'state=resume'] not in cluster.calls()
    entry = latest(state)['node5']
    assert entry['outcome'] == 'failed' and entry['failed_checks'] == ['scheduler.daemon_down'], entry
    assert 'slurmd: measured systemctl is-active slurmd: inactive (exit code 3), expected active' in entry['reasons'][0], entry
    assert 'node5' in state['held_drained'], state
    flat = ' '.join(out.split())
    assert 'node5 stays drained (failed): node5 FAILED 1 check(s): [scheduler.daemon_down]' in flat
    assert 'slurmd is not running on the node' in json.dumps(report_of(tmp_path, 3, 'node5'))
    assert [f['check'] for f in report_of(tmp_path, 3, 'node5')['findings']] == ['scheduler.daemon_down']
    assert [w['kind'] for w in report_of(tmp_path, 3, 'node6')['workloads']] == ['scheduler']
    assert report_of(tmp_path, 3, 'node6')['workloads'][0]['scheduler']['daemon'] == 'slurmd active (systemd)'


def report_of(tmp_path, batch, host):
    """The host's entry in the report of its batch (reports/<run id>/<run id>.batch<k>/report.json)."""
    return json.loads((tmp_path / 'reports' / RUN / ('%s.batch%d' % (RUN, batch)) / 'report.json').read_text())['hosts'][host]


# newest controller only: site.yml's check mode on ansible-core 2.16 is test_production_inventory.py's
# test_site_check_diff_takes_the_example_as_it_is
def test_check_mode_lists_the_plan_and_changes_nothing(tmp_path):
    cluster = Cluster(tmp_path, ['node1', 'node2', 'node3'], faulty={'node2'})
    before = cluster.nodes()
    rc, out = cluster.run('--check', '--diff', '-e', 'xuanwu_serial=1')
    assert rc == 0, out[-4000:]
    assert cluster.nodes() == before
    assert not [c for c in cluster.calls() if c[:2] == ['scontrol', 'update']], 'check mode ran scontrol update'
    assert out.count('PLAY [Roll out batch by batch]') == 3, 'every batch is shown'
    assert 'Check mode: node2 would stay drained (failed)' in out
    flat = ' '.join(out.split())  # the callback wraps long messages
    assert 'Would run: %s update nodename=node1 state=drain reason=xuanwu %s: rollout batch 1' % (tmp_path / 'scontrol', RUN) in flat

    # the plan is no rollout: the same run id afterwards rolls out every host, the check run's outcomes count for nothing
    rc, out = cluster.run('-e', 'xuanwu_serial=1')
    assert rc == 2, out[-4000:]
    updated = [c for c in cluster.calls() if c[:2] == ['scontrol', 'update']]
    assert ['scontrol', 'update', 'nodename=node1', 'state=resume'] in updated, updated
    assert cluster.state()['stopped_at_batch'] == 2


def test_a_node_that_needs_a_reboot_stays_drained_unless_reboots_are_allowed(tmp_path):
    cluster = Cluster(tmp_path, ['node1', 'node2'])
    marker = tmp_path / 'reboot-required'
    marker.write_text('*** System restart required ***\n')
    rc, out = cluster.run('-e', 'xuanwu_serial=1', '-e', 'xuanwu_reboot_required_file=%s' % marker)
    assert rc == 2, out[-4000:]
    nodes = cluster.nodes()
    assert nodes['node1']['reason'] == 'xuanwu %s: reboot required' % RUN and 'DRAIN' in nodes['node1']['state']
    assert nodes['node2']['state'] == 'IDLE', 'the failed canary stops the rollout'
    entry = latest(cluster.state())['node1']
    assert entry['outcome'] == 'reboot_required' and 'reboot-required' in entry['reasons'][0]
    # allowed: the drained node is rebooted. Here every host is this machine (local connection), where the reboot
    # module refuses to reboot the controller: the reboot is tried on node2 and its failure keeps node2 drained.
    # node1 stays as the first run left it (drained by another run: not this run's).
    rc, out = playbook('-i', cluster.inventory(), 'site.yml', '-e', 'xuanwu_run_id=second', '-e', 'xuanwu_serial=1',
                       '-e', 'xuanwu_reboot_required_file=%s' % marker, '-e', 'xuanwu_allow_reboot=true',
                       '-e', 'xuanwu_runs_dir=%s' % (tmp_path / 'runs'), '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'reports'))
    assert rc == 2, out[-4000:]
    reboots = [' '.join(part.split('TASK [', 1)[0].split()) for part in out.split('TASK [Reboot the drained node]')[1:]]
    assert len(reboots) == 2 and 'skipping: [node1]' in reboots[0] and 'would reboot the control node' in reboots[1], reboots
    second = latest(json.loads((tmp_path / 'runs' / 'second' / 'state.json').read_text()))
    assert second['node1']['outcome'] == 'not_ours'
    assert second['node2']['outcome'] == 'failed' and second['node2']['failed_checks'] == ['reboot'], second
    assert 'Reboot the drained node' in second['node2']['reasons'][0]
    assert cluster.nodes()['node2']['reason'] == 'xuanwu second: failed checks: reboot'


# A node whose connection fails (ssh is told to fail before it opens a socket, as test_production_inventory.py does)
UNREACHABLE = {'ansible_connection': 'ssh', 'ansible_host': '192.0.2.1', 'ansible_ssh_extra_args': '-o ProxyCommand=false'}


def test_an_unreachable_node_is_recorded_the_batch_goes_on_and_it_counts_against_the_limit(tmp_path):
    """node1 is the first node of its batch, where Slurm's share check runs once for the batch: the batch's other nodes
    are rolled out all the same, node1 is recorded unreachable with the connection's message, and it counts against the
    limit: with node3 failed, 2 of 3 are more than 50 % (node3 alone is not), so the rollout stops after the batch,
    node4 is never touched, and the exit status is Ansible's for an unreachable host, 4."""
    cluster = Cluster(tmp_path, ['node1', 'node2', 'node3', 'node4'], faulty={'node3'}, host_vars={'node1': UNREACHABLE})
    rc, out = cluster.run('-e', 'xuanwu_serial=3', '-e', 'xuanwu_max_fail_percentage=50')
    assert rc == 4, out[-4000:]
    state = cluster.state()
    assert [b['hosts'] for b in state['batches']] == [['node1', 'node2', 'node3']], state
    outcomes = latest(state)
    assert dict((h, e['outcome']) for h, e in outcomes.items()) == {'node1': 'unreachable', 'node2': 'passed', 'node3': 'failed'}
    assert outcomes['node1']['failed_checks'] == ['unreachable'], outcomes
    assert outcomes['node1']['reasons'][0].startswith('unreachable at the start of its batch (not drained, not changed): ')
    assert '192.0.2.1' in outcomes['node1']['reasons'][0], outcomes
    assert (state['outcome'], state['stopped_at_batch'], state['not_run_hosts']) == ('stopped', 1, ['node4']), state
    assert state['held_drained'] == ['node3'], state
    nodes = cluster.nodes()
    idle = {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}
    assert nodes['node2'] == idle, 'the reachable node that passed is back in service'
    assert 'DRAIN' in nodes['node3']['state'] and 'host.time_sync' in nodes['node3']['reason']
    assert nodes['node1'] == idle and nodes['node4'] == idle
    assert not {'node1', 'node4'} & cluster.touched(cluster.calls()), 'the unreachable node or a later batch was touched'
    flat = ' '.join(out.split())
    assert 'Run %s stops at batch 1: its failed and unreachable hosts are more than 50%% of it' % RUN in flat
    assert out.count('PLAY [Roll out batch by batch]') == 1


def _start_rollout(cluster):
    """site.yml as a process of its own (a kill -9 of it leaves its workers running, as on a real controller)."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_CACHE_PLUGIN='memory')
    argv = ['ansible-playbook', '-i', cluster.inventory(), 'site.yml', '-e', 'xuanwu_run_id=%s' % RUN,
            '-e', 'xuanwu_reports_dir=%s' % (cluster.dir / 'reports'), '-e', 'xuanwu_runs_dir=%s' % (cluster.dir / 'runs'),
            '-e', 'xuanwu_serial=1']
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait(predicate, what, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError('not within %d s: %s' % (timeout, what))


@pytest.mark.parametrize('when', ['during the drain command', 'after the drain, before the outcome'])
def test_a_rollout_killed_while_its_batch_drains_leaves_a_record_naming_the_node(tmp_path, when):
    """kill -9 of ansible-playbook at each step between a batch's drain and its outcome: the record names the node this
    run drained (an orphaned worker may finish the drain after the kill), and a resume with the same id clears it."""
    cluster = Cluster(tmp_path, ['node1', 'node2'])
    hold = tmp_path / 'hold-drain'
    if when == 'during the drain command':
        hold.write_text('')
    proc = _start_rollout(cluster)
    try:
        if when == 'during the drain command':
            _wait((tmp_path / 'drain-held').exists, 'the canary drain to begin')
        else:
            _wait(lambda: 'DRAIN' in cluster.nodes()['node1']['state'], 'the canary to be drained')
        proc.kill()                     # kill -9 of the rollout; its worker goes on
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        if hold.exists():
            hold.unlink()               # the orphaned worker's drain ends now
    _wait(lambda: 'DRAIN' in cluster.nodes()['node1']['state'], 'the orphaned drain to end')
    nodes = cluster.nodes()
    assert nodes['node1']['reason'].startswith('xuanwu %s' % RUN), nodes['node1']
    state = cluster.state()
    assert state['outcome'] == 'interrupted', state
    assert state['held_drained'] == ['node1'] and state['drain_in_progress'] == ['node1'], state
    assert 'node2' not in cluster.touched(cluster.calls())
    # the same id again: node1 is validated and returned, node2 rolled out, nothing held
    rc, out = cluster.run('-e', 'xuanwu_serial=1')
    assert rc == 0, out[-4000:]
    state = cluster.state()
    assert (state['outcome'], state['held_drained'], state['drain_in_progress']) == ('passed', [], []), state
    assert all(n['state'] == 'IDLE' for n in cluster.nodes().values()), cluster.nodes()
