# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run module scheduler_node where the task says (the node, or the host that reaches the scheduler's controller) and,
for action ``health``, judge what it read here on the controller: the module carries the node's half
(``_scheduler_node``) only, never the checks and their remediation texts (``_scheduler``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.xuanwu.cluster.plugins.module_utils import _scheduler


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        self._supports_check_mode = True
        self._supports_async = True
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        wrap_async = self._task.async_val and not self._connection.has_native_async
        result = merge_hash(result, self._execute_module(task_vars=task_vars, wrap_async=wrap_async))
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        # the module's answer to health: what it read; the findings are judged here
        if result.get('action') == 'health' and isinstance(result.get('health'), dict) and not result.get('failed'):
            result.update(_scheduler.health_result(result))
        return result
