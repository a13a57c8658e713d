# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate every host's xuanwu_* inventory variables and hardware profile in one controller task."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _node, _preflight


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('hosts',))

    def _variables(self, hostvars, host):
        """The host's xuanwu_* variables, templated, and its hostfile address; problems of templating."""
        hv = hostvars[host]
        variables, problems = {}, []
        # facts (a module set them, maybe in an earlier run kept by a fact cache) are not inventory variables
        facts = _node.fact_names(hostvars, host)
        for name in [n for n in hv if n.startswith('xuanwu_') and n not in _preflight.PRODUCED and n not in facts]:
            try:
                variables[name] = hv[name]
            except Exception as err:  # pylint: disable=broad-except
                problems.append("variable '%s' cannot be templated: %s" % (name, err))
        key = 'ansible_host' if 'ansible_host' in hv else 'inventory_hostname'
        try:
            address = (key, hv[key] if key in hv else host)
        except Exception as err:  # pylint: disable=broad-except
            address = (key, host)
            problems.append("variable '%s' cannot be templated: %s" % (key, err))
        return variables, address, problems

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type='list', elements='str', required=True),
        ))
        hostvars = task_vars.get('hostvars') or {}
        known = _preflight.known_variables()
        profiles = _preflight.ProfileCache()
        bad = {}
        used = {}
        for host in args['hosts']:
            try:
                variables, address, problems = self._variables(hostvars, host)
            except Exception as err:  # pylint: disable=broad-except
                bad[host] = ['cannot read the variables of the host: %s' % err]
                continue
            found, _profile, path = _preflight.check_host(variables, address, known, profiles)
            problems.extend(p for p in found if p not in problems)
            if problems:
                bad[host] = problems
            else:
                used[path] = used.get(path, 0) + 1
        if bad:
            result['failed'] = True
            result['problems'] = bad
            result['msg'] = _preflight.message(bad)
            return result
        result.update(changed=False, hosts=len(args['hosts']), profiles=used)
        return result
