"""The decisions of a rollout batch: each host's outcome (first reason wins) and the stop at the failure limit."""
import pytest

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _rollout

OURS = {'backend': 'slurm', 'owned': True, 'drained': True}
REPORT = {'gate_hosts': ['bad'], 'failed_checks': {'bad': ['gpu.count', 'host.time_sync']}, 'verdicts': {'bad': 'bad FAILED 2 check(s)'}}


@pytest.mark.parametrize('host, state, outcome, checks', [
    ('good', {'drain': OURS}, 'passed', []),
    ('good', {'drain': {'backend': 'none'}}, 'passed', []),
    ('bad', {'drain': OURS}, 'failed', ['gpu.count', 'host.time_sync']),
    ('bad', {'drain': {'backend': 'slurm', 'owned': False, 'drained': True, 'message': 'maintenance'}}, 'not_ours', []),
    ('good', {'drain': {'backend': 'slurm', 'owned': True, 'drained': False, 'timed_out': True, 'message': 'jobs'}}, 'failed', ['drain']),
    ('good', {'drain': OURS, 'provision_error': 'Install: apt failed', 'provision_check': 'provision'}, 'failed', ['provision']),
    ('good', {'drain': OURS, 'provision_error': 'Reboot: timeout', 'provision_check': 'reboot'}, 'failed', ['reboot']),
    ('good', {'drain': OURS, 'reboot_reason': 'driver 570 installed, 550 running'}, 'reboot_required', ['reboot']),
    # a broken step wins over the report's verdict (the report judged a node that was not rolled out)
    ('bad', {'drain': OURS, 'provision_error': 'x'}, 'failed', ['provision']),
    # check mode plans as if the drain were made, but never for someone else's node or a drain that timed out
    ('good', {'drain': {'backend': 'slurm', 'owned': True, 'drained': False}, 'check_mode': True}, 'passed', []),
    ('good', {'drain': {'backend': 'slurm', 'owned': True, 'drained': False, 'timed_out': True}, 'check_mode': True}, 'failed', ['drain']),
])
def test_outcome(host, state, outcome, checks):
    got = _rollout.outcome(host, state, REPORT)
    assert got['outcome'] == outcome and got['failed_checks'] == checks
    assert got['outcome'] in _rollout.OUTCOMES
    if outcome != 'passed':
        assert got['reasons'] and all(got['reasons'])


def test_a_reboot_made_is_said_in_the_reasons():
    got = _rollout.outcome('good', {'drain': OURS, 'rebooted': 'new driver'}, REPORT)
    assert got == {'outcome': 'passed', 'failed_checks': [], 'reasons': ['reboot: new driver']}


def test_a_host_without_an_outcome_is_unreachable():
    got = _rollout.batch_outcomes(['a', 'b'], {'a': {'outcome': 'passed'}})
    assert got['a'] == {'outcome': 'passed'} and got['b']['outcome'] == 'unreachable'


def test_a_host_unreachable_at_the_reach_check_has_the_connections_message():
    reached = {'a': {'ping': 'pong'}, 'b': {'unreachable': True, 'msg': 'Failed to connect\nto the host via ssh'},
               'c': {'unreachable': True}}
    got = _rollout.batch_outcomes(['a', 'b', 'c', 'd'], {'a': {'outcome': 'passed'}}, reached)
    assert got['a'] == {'outcome': 'passed'}
    assert got['b'] == {'outcome': 'unreachable', 'failed_checks': ['unreachable'], 'reasons': [
        'unreachable at the start of its batch (not drained, not changed): Failed to connect to the host via ssh']}
    assert got['c']['reasons'] == ['unreachable at the start of its batch (not drained, not changed): no message']
    assert got['d']['outcome'] == 'unreachable' and 'before its outcome was decided' in got['d']['reasons'][0]
    # a host that came back and was decided keeps its outcome; no reach check given: as before
    assert _rollout.batch_outcomes(['b'], {'b': {'outcome': 'failed'}}, reached) == {'b': {'outcome': 'failed'}}
    assert _rollout.batch_outcomes(['b'], {}, None)['b']['reasons'] == _rollout.batch_outcomes(['b'], {})['b']['reasons']


@pytest.mark.parametrize('outcomes, limit, stop', [
    (['passed', 'passed'], 0, False),
    (['passed', 'failed'], 0, True),
    (['passed', 'failed'], 50, False),       # 50 % is not more than 50 %
    (['passed', 'failed', 'passed'], 50, False),
    (['failed', 'failed', 'passed'], 50, True),
    (['failed'], 100, True),                 # a batch whose every host failed always stops (the canary)
    (['not_ours', 'passed'], 0, False),      # someone else's node is no failure
    (['unreachable', 'passed'], 0, True),
    (['reboot_required', 'passed', 'passed', 'passed'], 25, False),
])
def test_stops(outcomes, limit, stop):
    batch = dict(('h%d' % i, {'outcome': o}) for i, o in enumerate(outcomes))
    assert _rollout.stops(batch, limit) is stop


@pytest.mark.parametrize('state, report', [(None, {}), ({}, None), ('x', {})])
def test_bad_input_is_an_error_not_a_traceback(state, report):
    with pytest.raises(_rollout.RolloutError):
        _rollout.outcome('h', state, report)
    with pytest.raises(_rollout.RolloutError):
        _rollout.stops({}, 'ten')
