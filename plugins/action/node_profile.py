# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resolve and validate a host's hardware profile and its xuanwu_* inventory variables (controller only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('profile', 'overrides', 'profile_dirs', 'check_variables'))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        # Every argument is taken as it comes and converted here, with a message that names the
        # inventory variable: Ansible's own message would name the argument and a Python class.
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            profile=dict(type='raw', required=True),
            overrides=dict(type='raw', default={}),
            profile_dirs=dict(type='raw', default=[]),
            check_variables=dict(type='raw', default=True),
        ))
        host = task_vars.get('inventory_hostname', '?')
        problems = []
        known = _collection.role_variables()
        converted = {}
        for arg, name in (('check_variables', 'xuanwu_check_variables'), ('profile_dirs', 'xuanwu_profile_dirs')):
            converted[arg], problem = _collection.convert_variable(name, known[name], args[arg])
            if problem:
                problems.append(problem)
        if problems:
            converted = {'check_variables': True, 'profile_dirs': []}
        if converted['check_variables']:
            names = [n for n in task_vars if n.startswith('xuanwu_') and n != 'xuanwu_facts']
            variables = {}
            for name in names:
                try:
                    variables[name] = self._templar.template(task_vars[name])
                except Exception as err:  # pylint: disable=broad-except
                    problems.append("variable '%s' cannot be templated: %s" % (name, err))
            for produced in ('xuanwu_profile_resolved', 'xuanwu_profile_path', 'xuanwu_findings', 'xuanwu_status', 'xuanwu_workloads',
                             'xuanwu_run_id', 'xuanwu_run_started', 'xuanwu_run_hosts', 'xuanwu_check_summary'):
                known.setdefault(produced, {'type': 'raw'})
            known.setdefault('xuanwu_capture_dest', {'type': 'str'})
            problems.extend(p for p in _collection.check_inventory_vars(variables, known) if p not in problems)
            multinode, problem = _collection.convert_variable(
                'xuanwu_validate_multinode', known['xuanwu_validate_multinode'], variables.get('xuanwu_validate_multinode'))
            if multinode and not problem:
                # the host's address becomes a line of mpirun's hostfile
                name = 'ansible_host' if 'ansible_host' in task_vars else 'inventory_hostname'
                problems.extend(_collection.check_host_address(name, self._templar.template(task_vars.get(name, host))))
            replay = variables.get('xuanwu_replay_dir')
            if isinstance(replay, str) and replay and not os.path.isfile(os.path.join(replay, 'manifest.json')):
                problems.append("xuanwu_replay_dir '%s' is not a capture bundle (no manifest.json there)" % replay)
        try:
            profile, path = _collection.resolve_profile(args['profile'], args['overrides'], converted['profile_dirs'])
        except ProfileError as err:
            problems.append(str(err))
            profile, path = None, None
        if problems:
            result['failed'] = True
            result['problems'] = problems
            result['msg'] = 'host %s: invalid inventory or profile, nothing was changed:\n- %s' % (host, '\n- '.join(problems))
            return result
        result['changed'] = False
        result['profile_path'] = path
        result['ansible_facts'] = {'xuanwu_profile_resolved': profile, 'xuanwu_profile_path': path}
        return result
