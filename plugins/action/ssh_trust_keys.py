# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every node's public key and host keys, once, on the controller: the lines of authorized_keys and known_hosts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils import _mesh
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _node


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('hosts', 'result', 'port', 'addresses'))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type='list', elements='str', required=True),
            result=dict(type='str', required=True),
            port=dict(type='int', default=22),
            addresses=dict(type='bool', default=True),
        ))
        hostvars = task_vars.get('hostvars') or {}
        reads = {}
        for host in args['hosts']:
            # each host's registered read once, from the fact caches (never hostvars[host], docs/architecture.md)
            registered = _node.host_values(hostvars, host, (args['result'],))[args['result']]
            reads[host] = _mesh.parse_trust_read(registered.get('stdout') if isinstance(registered, dict) else None)
        files = _mesh.trust_files(reads, port=args['port'], addresses=args['addresses'])
        result.update(changed=False, hosts=list(args['hosts']), missing=files['missing'],
                      shared_addresses=files['shared_addresses'],
                      authorized_keys='\n'.join(files['authorized_keys']), known_hosts='\n'.join(files['known_hosts']))
        # in check mode a key not made yet is expected; anything else missing stops the role
        blocking = dict((h, what) for h, what in files['missing'].items()
                        if not (self._play_context.check_mode and what == 'no user key'))
        if blocking:
            result.update(failed=True, msg='ssh_trust: cannot trust every node: %s' % '; '.join(
                '%s: %s' % (host, what) for host, what in sorted(blocking.items())))
        return result
