# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare a host's probed facts with its hardware profile and return findings (controller only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _node


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('facts', 'profile') + tuple(_node.VERDICT_ARGUMENT_SPEC))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            _node.VERDICT_ARGUMENT_SPEC,
            facts=dict(type='dict'),
            profile=dict(type='dict'),
        ))
        host = task_vars.get('inventory_hostname')
        facts = args['facts'] if args['facts'] is not None else self._templar.template(task_vars.get('xuanwu_facts'))
        profile = args['profile'] if args['profile'] is not None else self._templar.template(task_vars.get('xuanwu_profile_resolved'))
        if not facts or not profile:
            result['failed'] = True
            result['msg'] = 'node_check needs facts (xuanwu.cluster.node_probe) and a resolved profile (xuanwu.cluster.node_profile)'
            return result
        if isinstance(facts, dict) and facts.get('brief'):
            # the brief facts of a host in no later stage cannot be judged again: most probes are not in them
            result.update(failed=True, msg='node_check: the xuanwu_facts of %s are the brief ones node_validate keeps of a host '
                                           'in no later stage (docs/facts.md, "Brief facts"); probe it again '
                                           '(xuanwu.cluster.node_probe), or run with xuanwu_full_facts: true' % host)
            return result
        try:
            profile = _collection.host_profile(profile, task_vars, self._templar.template)
        except ProfileError as err:
            result.update(failed=True, msg=str(err))
            return result
        try:
            findings, summary, failing, checks = _node.verdict(facts, profile, host, args['fail_on'], args['job_ports'],
                                                               args['job_env'], args['job_mpirun_args'])
        except ProfileError as err:
            result['failed'] = True
            result['msg'] = str(err)
            return result
        result.update(
            changed=False,
            findings=findings,
            status=summary['status'],
            summary=summary,
            failing=failing,
            # xuanwu_workloads starts empty: facts may come back from a fact cache of an earlier run.
            ansible_facts={'xuanwu_workloads': [],
                           'xuanwu_node': _node.summary(facts, profile, task_vars.get('xuanwu_profile_path'), args['fail_on'],
                                                        host=host, findings=findings, status=summary['status'], checks=checks)},
        )
        return result
