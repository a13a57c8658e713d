# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare the hosts of a run with each other and list the hosts of each later stage, once, on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _node


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('hosts',))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type='list', elements='str', required=True),
        ))
        hostvars = task_vars.get('hostvars') or {}
        summaries = {}
        for host in args['hosts']:
            summary = _node.host_values(hostvars, host, ('xuanwu_node',))['xuanwu_node']
            if isinstance(summary, dict):
                summaries[host] = summary
        plan = _node.plan(summaries)
        # results, not facts: a fact cache would keep them for the next run (validate.yml sets them with set_fact)
        result.update(changed=False, compared=sum(1 for s in summaries.values() if s.get('compare')), hosts=list(args['hosts']),
                      findings=plan['findings'], failing=plan['failing'], stage_hosts=plan['stage_hosts'],
                      multinode_hosts=plan['multinode_hosts'], recheck_hosts=plan['recheck_hosts'])
        return result
