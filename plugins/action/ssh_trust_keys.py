# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every node's public key and host keys, once, on the controller: the lines of authorized_keys and known_hosts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

from ansible import constants as C
from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils import _mesh, _workdir
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _node


RECORD_FOLDER = 'ssh-trust'


def enrolment_record(enrolled, reads):
    """What is recorded of a first enrolment: per enrolled node why its channel did not verify it, its ansible_host and
    the fingerprints of its host keys (never a key itself: the fingerprints say which were trusted)."""
    hosts = {}
    for host in sorted(enrolled):
        read = reads.get(host) or {}
        keys = ['%s %s' % (parts[0], _mesh.fingerprint(parts[1])) for parts in (str(line).split() for line in read.get('host_keys') or [])
                if len(parts) >= 2]
        hosts[host] = {'channel': enrolled[host], 'ansible_host': read.get('ansible_host'), 'host_keys': keys}
    return {'kind': 'ssh_trust first enrolment', 'recorded_at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
            'hosts': hosts}


def write_enrolment(record_dir, record):
    """Write ``record`` to ``<record_dir>/ssh-trust/<time>.json`` (0600, never over another file); its path.

    Both folders are private work directories of the running user (``_workdir.ensure_fixed``: made 0700 when missing;
    a link, another owner or a folder others may write to is refused)."""
    if not record_dir or '\x00' in record_dir:
        raise ValueError('record_dir %r is not a folder path' % (record_dir,))
    record_dir = os.path.abspath(record_dir)
    folder = os.path.join(record_dir, RECORD_FOLDER)
    for path in (record_dir, folder):
        _workdir.ensure_fixed(path)
    stamp = record['recorded_at'].replace('-', '').replace(':', '')
    for index in range(100):
        path = os.path.join(folder, '%s%s.json' % (stamp, '' if index == 0 else '-%d' % index))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
        except OSError:
            if os.path.lexists(path):
                continue
            raise
        with os.fdopen(fd, 'w') as handle:
            handle.write(json.dumps(record, indent=2, sort_keys=True) + '\n')
        return path
    raise OSError('no free file name for %s in %s' % (stamp, folder))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('hosts', 'result', 'port', 'addresses', 'first_enrolment', 'record_dir'))

    def _channel_problem(self, hostvars, host):
        """Why the keys read of ``host`` cannot be trusted (its connection did not verify its host key), or None."""
        try:
            variables = hostvars.raw_get(host) if hasattr(hostvars, 'raw_get') else hostvars[host]
            variables = dict(variables)
        except Exception:  # pylint: disable=broad-except
            variables = {}
        connection = self._templar.template(variables.get('ansible_connection')) or self._task.connection or C.DEFAULT_TRANSPORT
        connection = str(connection)
        plugin = 'paramiko_ssh' if connection in _mesh.PARAMIKO_CONNECTIONS else 'ssh'

        def option(name, default=None):
            try:
                value = C.config.get_config_value(name, plugin_type='connection', plugin_name=plugin, variables=variables)
            except Exception:  # pylint: disable=broad-except
                return default
            return self._templar.template(value) if isinstance(value, str) else value

        if plugin == 'ssh':
            args = ' '.join(str(option(name) or '') for name in ('ssh_args', 'ssh_common_args', 'ssh_extra_args'))
            return _mesh.channel_problem(connection, option('host_key_checking', True), args)
        return _mesh.channel_problem(connection, option('host_key_checking', True), '', option('host_key_auto_add', False))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type='list', elements='str', required=True),
            result=dict(type='str', required=True),
            port=dict(type='int', default=22),
            addresses=dict(type='bool', default=True),
            first_enrolment=dict(type='list', elements='str', default=[]),
            record_dir=dict(type='str', default=''),
        ))
        hostvars = task_vars.get('hostvars') or {}
        reads = {}
        for host in args['hosts']:
            # each host's registered read once, from the fact caches (never hostvars[host], docs/architecture.md)
            registered = _node.host_values(hostvars, host, (args['result'],))[args['result']]
            stdout = registered.get('stdout') if isinstance(registered, dict) else None
            # no output at all (the task did not run there) reads as nothing read: no key, no address
            reads[host] = _mesh.parse_trust_read(stdout if isinstance(stdout, str) else '')
        # host keys read over a channel that did not verify the node are trusted only for the hosts named for a first
        # enrolment; any other such host stops the role before anything is written
        unverified = dict((host, why) for host, why in ((h, self._channel_problem(hostvars, h)) for h in args['hosts']) if why)
        enrolled = dict((h, why) for h, why in unverified.items() if h in args['first_enrolment'])
        refused = dict((h, why) for h, why in unverified.items() if h not in enrolled)
        if refused:
            result.update(failed=True, changed=False, unverified=refused, first_enrolment=sorted(enrolled), msg=(
                'ssh_trust: will not make the nodes trust host keys read over a channel that did not verify them: %s. '
                'Give the controller the nodes\' host keys first (a known_hosts file, SSHFP records or an SSH CA: '
                'docs/ssh-mesh.md, "Host keys from the first contact"), or, for a first enrolment of hosts you '
                'vouch for, name them in ssh_trust_first_enrolment.' % '; '.join(
                    '%s: %s' % (h, why) for h, why in sorted(refused.items()))))
            return result
        for host in sorted(enrolled):
            self._display.warning('ssh_trust: the host keys of %s were read over a channel that did not verify them (%s); '
                                  'trusted because ssh_trust_first_enrolment names it' % (host, enrolled[host]))
        files = _mesh.trust_files(reads, port=args['port'], addresses=args['addresses'])
        result.update(changed=False, hosts=list(args['hosts']), missing=files['missing'], first_enrolment=sorted(enrolled),
                      record='',
                      shared_addresses=files['shared_addresses'],
                      authorized_keys='\n'.join(files['authorized_keys']), known_hosts='\n'.join(files['known_hosts']))
        # in check mode a key not made yet is expected; anything else missing stops the role
        blocking = dict((h, what) for h, what in files['missing'].items()
                        if not (self._play_context.check_mode and what == 'no user key'))
        if blocking:
            result.update(failed=True, msg='ssh_trust: cannot trust every node: %s' % '; '.join(
                '%s: %s' % (host, what) for host, what in sorted(blocking.items())))
            return result
        # the enrolment is recorded before the role writes anything to the nodes, and only when it will
        if enrolled and args['record_dir'] and not self._play_context.check_mode:
            try:
                result['record'] = write_enrolment(args['record_dir'], enrolment_record(enrolled, reads))
            except (IOError, OSError, ValueError, _workdir.WorkDirError) as err:
                result.update(failed=True, msg='ssh_trust: the first enrolment of %s could not be recorded in %s: %s; '
                                               'nothing was trusted' % (', '.join(sorted(enrolled)), args['record_dir'], err))
                return result
            self._display.display('ssh_trust: first enrolment recorded in %s' % result['record'])
        return result
