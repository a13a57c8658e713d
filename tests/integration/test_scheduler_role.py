"""The scheduler role through ansible-playbook against a stateful test double of scontrol/sinfo
(slurm_double.py: the nodes in a JSON file): drain and resume round trip, someone else's drain left as it
was, fail replacing the reason, plan refusing over the share, the timeout waiting for jobs, check mode."""
import json
import os
import shutil

import pytest
import yaml

from slurm_double import install
from test_validate_playbook import playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')

RUN = '2026-12-01.r1'
HOSTS = ('node01', 'node02', 'node03', 'node04')


@pytest.fixture
def slurm(tmp_path):
    """scontrol and sinfo (copies of the double) and the state of four nodes of partition gpu."""
    nodes = dict((h, {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}) for h in HOSTS)
    nodes['node02'] = {'state': 'IDLE+DRAIN', 'reason': 'bad dimm B2', 'partitions': ['gpu']}
    nodes['node03'] = {'state': 'MIXED', 'reason': '', 'partitions': ['gpu'], 'jobs_for_reads': 2}
    install(str(tmp_path), nodes)
    return tmp_path


def nodes(tmp_path):
    return json.loads((tmp_path / 'slurm-double-state.json').read_text())['nodes']


def updates(tmp_path):
    path = tmp_path / 'slurm-double-calls.jsonl'
    calls = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [c for c in calls if c[:2] == ['scontrol', 'update']]


def role(tmp_path, hosts, action, *extra, **role_vars):
    """Run the role on ``hosts``; returns (rc, output, {host: scheduler_result})."""
    out_dir = tmp_path / ('results-%s-%d' % (action, len(list(tmp_path.iterdir()))))
    out_dir.mkdir()
    play = [{'name': 'Scheduler', 'hosts': ','.join(hosts), 'gather_facts': False,
             'tasks': [{'name': 'Scheduler role', 'ansible.builtin.include_role': {'name': 'xuanwu.cluster.scheduler'}},
                       {'name': 'Keep the result', 'ansible.builtin.copy': {
                           'content': '{{ scheduler_result | to_json }}', 'dest': str(out_dir) + '/{{ inventory_hostname }}.json',
                           'mode': '0600'}, 'check_mode': False, 'delegate_to': 'localhost'}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    variables = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}',
                 'scheduler_backend': 'slurm', 'scheduler_action': action, 'scheduler_run_id': RUN,
                 'scheduler_scontrol': str(tmp_path / 'scontrol'), 'scheduler_sinfo': str(tmp_path / 'sinfo'),
                 'scheduler_poll_interval': 1}
    variables.update(role_vars)
    inv = {'all': {'hosts': dict((h, {}) for h in HOSTS), 'vars': variables}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inv))
    rc, out = playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), *extra)
    assert 'Traceback' not in out, out[-3000:]
    results = dict((p[:-5], json.loads((out_dir / p).read_text())) for p in os.listdir(str(out_dir)))
    return rc, out, results


@pytest.mark.both_controllers
def test_drain_then_resume_round_trip(slurm):
    rc, out, results = role(slurm, ['node01'], 'drain')
    assert rc == 0, out[-3000:]
    result = results['node01']
    assert (result['owned'], result['changed'], result['drained'], result['timed_out']) == (True, True, True, False)
    assert result['before']['state'] == 'available'
    assert nodes(slurm)['node01'] == {'state': 'IDLE+DRAIN', 'reason': 'xuanwu %s: rollout' % RUN, 'partitions': ['gpu']}
    # Again: our own drain is already there, so nothing is changed (idempotence, on every controller)
    made = updates(slurm)
    rc, out, results = role(slurm, ['node01'], 'drain')
    assert rc == 0, out[-3000:]
    assert (results['node01']['owned'], results['node01']['changed']) == (True, False), results
    assert updates(slurm) == made and nodes(slurm)['node01']['state'] == 'IDLE+DRAIN'
    rc, out, results = role(slurm, ['node01'], 'resume')
    assert rc == 0, out[-3000:]
    assert (results['node01']['owned'], results['node01']['changed']) == (True, True)
    assert nodes(slurm)['node01'] == {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}


def test_someone_elses_drain_keeps_its_state_and_reason_after_drain_and_resume(slurm):
    before = nodes(slurm)['node02']
    for action in ('drain', 'resume'):
        rc, out, results = role(slurm, ['node02'], action)
        assert rc == 0, out[-3000:]
        assert (results['node02']['owned'], results['node02']['changed']) == (False, False)
        assert 'someone else (reason "bad dimm B2")' in results['node02']['message']
    assert nodes(slurm)['node02'] == before
    assert updates(slurm) == []


def test_fail_replaces_the_reason_of_our_drain_only(slurm):
    rc, out, _results = role(slurm, ['node01', 'node02'], 'drain')
    assert rc == 0, out[-3000:]
    rc, out, results = role(slurm, ['node01', 'node02'], 'fail', scheduler_reason='failed checks: gpu.count, nvlink.links_down')
    assert rc == 0, out[-3000:]
    assert (results['node01']['owned'], results['node01']['changed']) == (True, True)
    assert nodes(slurm)['node01']['reason'] == 'xuanwu %s: failed checks: gpu.count, nvlink.links_down' % RUN
    assert nodes(slurm)['node01']['state'] == 'IDLE+DRAIN'
    assert (results['node02']['owned'], results['node02']['changed']) == (False, False)
    assert nodes(slurm)['node02']['reason'] == 'bad dimm B2'


def test_plan_refuses_a_batch_over_the_share(slurm):
    rc, out, _results = role(slurm, ['node01', 'node03'], 'plan', scheduler_nodes=['node01', 'node03'],
                             scheduler_max_drain_share=0.5)
    assert rc != 0
    flat = ' '.join(out.split())
    assert ('partition gpu: 3 of 4 nodes would be unavailable (1 already drained or down, 2 in this batch), '
            'more than scheduler_max_drain_share 0.5 (2 nodes)') in flat, out[-3000:]
    rc, out, results = role(slurm, ['node01', 'node03'], 'plan', scheduler_nodes=['node01'], scheduler_max_drain_share=0.5)
    assert rc == 0, out[-3000:]
    assert results['node01']['partitions'] == [{'partition': 'gpu', 'total': 4, 'unavailable_before': 1, 'unavailable_after': 2,
                                                'batch': 1, 'limit': 0.5, 'ok': True}]
    assert updates(slurm) == []


def test_jobs_that_outlast_the_timeout_leave_the_node_draining(slurm):
    state = json.loads((slurm / 'slurm-double-state.json').read_text())
    state['nodes']['node03']['jobs_for_reads'] = -1          # the jobs never end
    (slurm / 'slurm-double-state.json').write_text(json.dumps(state))
    rc, out, results = role(slurm, ['node03'], 'drain', scheduler_drain_timeout=2)
    assert rc == 0, out[-3000:]
    result = results['node03']
    assert (result['timed_out'], result['drained'], result['owned']) == (True, False, True)
    assert result['after']['state'] == 'draining' and result['after']['detail'] == 'MIXED+DRAIN'
    assert 'jobs (state MIXED+DRAIN, CPUAlloc=8) still running' in result['message']
    assert nodes(slurm)['node03']['state'] == 'MIXED+DRAIN'


def test_a_drain_waits_for_the_jobs_to_end(slurm):
    rc, out, results = role(slurm, ['node03'], 'drain')
    assert rc == 0, out[-3000:]
    assert (results['node03']['timed_out'], results['node03']['drained'], results['node03']['jobs_running']) == (False, True, 0)
    assert nodes(slurm)['node03']['state'] == 'IDLE+DRAIN'


@pytest.mark.both_controllers
def test_check_mode_changes_nothing(slurm):
    before = nodes(slurm)
    rc, out, results = role(slurm, ['node01', 'node02'], 'drain', '--check')
    assert rc == 0, out[-3000:]
    assert nodes(slurm) == before and updates(slurm) == []
    assert results['node01']['changed'] is True
    assert results['node01']['commands'] == ['%s update nodename=node01 state=drain reason=xuanwu %s: rollout' % (slurm / 'scontrol', RUN)]
    assert (results['node02']['changed'], results['node02']['commands']) == (False, [])


@pytest.mark.parametrize('role_vars, message', [
    ({'scheduler_run_id': ''}, 'scheduler_node: scheduler_run_id is required for drain'),
    ({'scheduler_scontrol': 'no-such-scontrol'}, 'scheduler_node: scheduler_scontrol: no-such-scontrol not found on PATH'),
    ({'scheduler_backend': 'lsf'}, 'scheduler_backend'),
])
def test_bad_input_is_a_clear_error(slurm, role_vars, message):
    rc, out, _results = role(slurm, ['node01'], 'drain', **role_vars)
    assert rc != 0
    assert message in ' '.join(out.split()), out[-3000:]
    assert updates(slurm) == []
