# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resolve and validate a host's hardware profile and its xuanwu_* inventory variables (controller only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _preflight


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
        known = _preflight.known_variables()
        problems = []
        variables = {}
        for name in [n for n in task_vars if n.startswith('xuanwu_') and n != 'xuanwu_facts']:
            try:
                variables[name] = self._templar.template(task_vars[name])
            except Exception as err:  # pylint: disable=broad-except
                problems.append("variable '%s' cannot be templated: %s" % (name, err))
        variables.update(xuanwu_profile=args['profile'], xuanwu_profile_overrides=args['overrides'],
                         xuanwu_profile_dirs=args['profile_dirs'], xuanwu_check_variables=args['check_variables'])
        name = 'ansible_host' if 'ansible_host' in task_vars else 'inventory_hostname'
        address = (name, self._templar.template(task_vars.get(name, host)))
        found, profile, path = _preflight.check_host(variables, address, known, _preflight.ProfileCache())
        problems.extend(p for p in found if p not in problems)
        if problems:
            result['failed'] = True
            result['problems'] = problems
            result['msg'] = _preflight.message({host: problems})
            return result
        result['changed'] = False
        result['profile_path'] = path
        # what a role pins on the node (xuanwu.cluster.health_watch installs this version's module_utils)
        result['collection_version'] = _collection.version()
        result['ansible_facts'] = {'xuanwu_profile_resolved': profile, 'xuanwu_profile_path': path}
        return result
