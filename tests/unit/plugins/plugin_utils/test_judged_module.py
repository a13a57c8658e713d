"""The action plugins of scheduler_node and mesh_check run the module and judge its answer on the controller; async is
refused, because async_status would hand the module's answer back unjudged (its findings as a pass)."""
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.xuanwu.cluster.plugins.action import mesh_check, scheduler_node


def _action(cls, async_val=0):
    task = mock.MagicMock(async_val=async_val, check_mode=False, action='xuanwu.cluster.' + cls.__module__.rsplit('.', 1)[-1],
                          args={}, diff=False)
    connection = mock.MagicMock()
    action = cls(task, connection, mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), mock.MagicMock())
    return action


@pytest.mark.parametrize('module', [scheduler_node, mesh_check])
def test_async_is_refused_before_the_module_runs(module):
    action = _action(module.ActionModule, async_val=60)
    with mock.patch.object(action, '_execute_module') as execute, pytest.raises(AnsibleActionFail, match='does not support async'):
        action.run(task_vars={})
    execute.assert_not_called()


def test_the_answer_is_judged_and_a_failed_module_comes_back_as_it_is():
    action = _action(scheduler_node.ActionModule)
    answer = {'action': 'health', 'health': {'reachable': True}}
    with mock.patch.object(action, '_execute_module', return_value=dict(answer)), \
            mock.patch.object(action, '_remove_tmp_path'), \
            mock.patch.object(scheduler_node._scheduler, 'health_result', return_value={'findings': ['judged']}) as judge:
        result = action.run(task_vars={})
    judge.assert_called_once()
    assert result['findings'] == ['judged']
    with mock.patch.object(action, '_execute_module', return_value={'failed': True, 'msg': 'no sinfo'}), \
            mock.patch.object(action, '_remove_tmp_path'), \
            mock.patch.object(scheduler_node._scheduler, 'health_result') as judge:
        result = action.run(task_vars={})
    judge.assert_not_called()
    assert result['failed'] and result['msg'] == 'no sinfo'
