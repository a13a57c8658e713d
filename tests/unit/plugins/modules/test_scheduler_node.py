"""scheduler_node run as Ansible runs a module (a child process reading its arguments from a file): bad
input and a missing binary are a clear failure, never a traceback; backend none changes nothing."""
import importlib.util
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _scheduler
from test_bundle_modules import run_module as run_bundle_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
_SPEC = importlib.util.spec_from_file_location('slurm_double', os.path.join(ROOT, 'tests', 'integration', 'slurm_double.py'))
slurm_double = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(slurm_double)


def run_module(tmp_path, args):
    return run_bundle_module(tmp_path, 'scheduler_node', args)


@pytest.fixture
def scontrol(tmp_path):
    slurm_double.install(str(tmp_path), {'gpu1': {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}})
    return str(tmp_path / 'scontrol')


@pytest.mark.parametrize('args, message', [
    ({'backend': 'slurm', 'action': 'drain', 'node': 'gpu1'}, 'scheduler_node: scheduler_run_id is required for drain'),
    ({'backend': 'slurm', 'action': 'drain', 'node': 'gpu1', 'run_id': 'r1', 'scontrol': '/nonexistent/scontrol'},
     'scheduler_node: scheduler_scontrol: /nonexistent/scontrol is not an executable file on this host'),
    ({'backend': 'slurm', 'action': 'drain', 'node': 'gpu1', 'run_id': 'r1', 'scontrol': 'xuanwu-no-such-scontrol'},
     'scheduler_node: scheduler_scontrol: xuanwu-no-such-scontrol not found on PATH of this host'),
    ({'backend': 'kubernetes', 'action': 'drain', 'node': 'gpu1', 'run_id': 'r1', 'kubectl': 'xuanwu-no-such-kubectl'},
     'scheduler_node: scheduler_kubectl: xuanwu-no-such-kubectl not found on PATH of this host'),
    ({'backend': 'lsf', 'action': 'drain'}, 'value of backend must be one of: none, slurm, kubernetes, got: lsf'),
    ({'backend': 'slurm', 'action': 'drain', 'run_id': 'r1', 'node': 'gpu9'}, 'node gpu9 is not known to Slurm'),
])
def test_bad_input_fails_clearly(tmp_path, scontrol, args, message):
    args = dict(args)
    if args.get('backend') == 'slurm' and 'scontrol' not in args:
        args['scontrol'] = scontrol
    result = run_module(tmp_path, args)
    assert result.get('failed') is True, result
    assert message in result['msg']


def test_none_backend_reports_no_scheduler(tmp_path):
    result = run_module(tmp_path, {'action': 'drain'})
    assert (result['changed'], result['backend'], result['owned']) == (False, 'none', True)   # no scheduler holds it for anyone else
    assert result['message'] == 'no scheduler (scheduler_backend none): nothing to drain'


def test_check_mode_runs_no_update(tmp_path, scontrol):
    result = run_module(tmp_path, {'backend': 'slurm', 'action': 'drain', 'node': 'gpu1', 'run_id': 'r1',
                                   'scontrol': scontrol, '_ansible_check_mode': True})
    assert (result['changed'], result['commands']) == (True, ['%s update nodename=gpu1 state=drain reason=xuanwu r1: rollout' % scontrol])
    state = json.loads((tmp_path / 'slurm-double-state.json').read_text())
    assert state['nodes']['gpu1']['state'] == 'IDLE'
    calls = (tmp_path / 'slurm-double-calls.jsonl').read_text()
    assert 'update' not in calls


def test_plan_refusal_is_a_failure_naming_the_partition(tmp_path, scontrol):
    result = run_module(tmp_path, {'backend': 'slurm', 'action': 'plan', 'nodes': ['gpu1'], 'run_id': 'r1',
                                   'sinfo': scontrol.replace('scontrol', 'sinfo'), 'max_drain_share': 0.5})
    assert result.get('failed') is True
    assert result['msg'].startswith('scheduler plan refused: partition gpu: 1 of 1 nodes would be unavailable')


def test_daemon_and_health_as_a_module_on_a_node_whose_slurmd_is_dead(tmp_path):
    slurm_double.install(str(tmp_path), {'gpu1': {'state': 'IDLE+DRAIN', 'reason': 'xuanwu r1: rollout batch 1', 'partitions': ['gpu'],
                                                  'slurmd': 'inactive'}})
    node = str(tmp_path / 'nodes' / 'gpu1')
    daemon = run_module(tmp_path, {'backend': 'slurm', 'action': 'daemon', 'node': 'gpu1', 'systemctl': node + '/systemctl',
                                   'slurmd': node + '/slurmd', '_ansible_check_mode': True})
    assert daemon['daemon']['state'] == 'inactive' and daemon['daemon']['active'] is False, daemon
    assert daemon['node_view']['real_memory'] == 64000 and daemon['changed'] is False
    health = run_module(tmp_path, {'backend': 'slurm', 'action': 'health', 'node': 'gpu1', 'run_id': 'r1', 'daemon': daemon,
                                   'scontrol': str(tmp_path / 'scontrol'), 'gpus': 4})
    # the module only reads; its action plugin judges what it read on the controller
    assert health.get('failed') is not True and 'findings' not in health and health['health']['daemon']['active'] is False, health
    health.update(_scheduler.health_result(health))
    assert health['healthy'] is False, health
    assert [f['check'] for f in health['findings']] == ['scheduler.daemon_down']
    # a slurmd that is not installed is said, never a traceback: its view is not measured
    missing = run_module(tmp_path, {'backend': 'slurm', 'action': 'daemon', 'node': 'gpu1', 'systemctl': node + '/systemctl',
                                    'slurmd': 'xuanwu-no-such-slurmd'})
    assert 'scheduler_slurmd: xuanwu-no-such-slurmd not found on PATH' in missing['node_view_error']
