# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run module scheduler_node where the task says (the node, or the host that reaches the scheduler's controller) and,
for action ``health``, judge what it read here on the controller: the module carries the node's half
(``_scheduler_node``) only, never the checks and their remediation texts (``_scheduler``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _scheduler
from ansible_collections.xuanwu.cluster.plugins.plugin_utils._judged_module import JudgedModule


class ActionModule(JudgedModule):

    def judge(self, result):
        # the module's answer to health: what it read; the findings are judged here
        if result.get('action') == 'health' and isinstance(result.get('health'), dict):
            result.update(_scheduler.health_result(result))
        return result
