# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action plugin of a module that reads on a node and is judged on the controller (docs/architecture.md, "What a
node module carries"): the module runs where the task says, as Ansible's own ``normal`` action runs it (check mode,
delegation; not async, whose later status would come back unjudged), and ``judge`` turns its answer into the task's
result here, so that the module's payload carries no check catalogue."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash


class JudgedModule(ActionBase):
    """Runs the task's module; ``judge(result)`` returns the task's result from the module's (one that failed comes
    back as it is)."""

    def judge(self, result):
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        self._supports_check_mode = True
        # async refused (Ansible says so): async_status would hand back the module's answer unjudged, findings as a pass
        self._supports_async = False
        result = super(JudgedModule, self).run(tmp, task_vars)
        del tmp
        result = merge_hash(result, self._execute_module(task_vars=task_vars))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result if result.get('failed') else self.judge(result)
