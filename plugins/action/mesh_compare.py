# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare the job interface's MTU of every host's mesh_check result, once, on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings, _mesh
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _node


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('hosts', 'result', 'fail_on_findings'))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type='list', elements='str', required=True),
            result=dict(type='str', default='xuanwu_mesh'),
            fail_on_findings=dict(type='bool', default=True),
        ))
        hostvars = task_vars.get('hostvars') or {}
        # each host's registered result read once from the fact caches (never hostvars[host], docs/architecture.md)
        results = dict((host, _node.host_values(hostvars, host, (args['result'],))[args['result']]) for host in args['hosts'])
        found = _mesh.mtu_findings(results)
        findings = sorted((f for fs in found.values() for f in fs), key=_findings.sort_key)
        mtus = dict((host, r.get('mtu')) for host, r in results.items() if isinstance(r, dict) and r.get('interface'))
        result.update(changed=False, hosts=list(args['hosts']), mtu=mtus, findings=findings,
                      failing=sorted(h for h, fs in found.items() if any(_findings.is_failing(f) for f in fs)))
        if findings and args['fail_on_findings']:
            result.update(failed=True, msg='%d mesh finding(s) between the hosts: %s' % (len(findings), '; '.join(
                '%s %s: %s' % (f['check'], f['component'], f['message']) for f in findings[:20])))
        return result
