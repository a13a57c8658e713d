# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SSH mesh and fabric preflight: what a node's probe of its peers means (docs/ssh-mesh.md).

``xuanwu.cluster.mesh_check`` probes every peer from a node (``_mesh_probe``, ``_mesh_node``: the module's payload)
and its action plugin turns each peer's record into findings here, on the controller (``judged``: ``peer_findings``,
``node_findings``); ``known_hosts`` lines are matched the way OpenSSH matches them in ``_mesh_node`` (hashed names,
``[host]:port``, wildcards, negation, ``@revoked``), whose names this module re-exports; ``mtu_findings``
compares every host's (interface, MTU) once, on the controller (``xuanwu.cluster.mesh_compare``).
Every finding names both ends (``node1 → node3``). The role ``ssh_trust`` builds every node's
authorized_keys and known_hosts lines once, from what each node read of itself (``trust_files``).
Pure: no I/O, no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
# The node's half (what module mesh_check carries): every name stays importable from this module.
from ansible_collections.xuanwu.cluster.plugins.module_utils._mesh_node import (  # noqa: F401 pylint: disable=unused-import
    JUDGED_SETTINGS, MAX_WORKERS, SSH_PORT, _hashed_match, _matching, _pattern_match, base_keytype, fingerprint,
    hosts_match, judge_host_key, known_keytypes, lookup_names, normalise_peers, ports, workers,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_net import is_ip_address
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_ssh import (  # noqa: F401 pylint: disable=unused-import
    SECTIONS, parse_known_hosts, parse_trust_read,
)

ARROW = u'\u2192'
_KIND = u'<node> \u2192 <peer>'

CHECKS = {
    'mesh.not_measured': _findings.entry(
        'No mesh result for a host', 'fail',
        'xuanwu.cluster.mesh_check did not run or returned nothing on {node}: see the task\'s error for that host '
        '(unreachable, paramiko missing, bad arguments) and run it again.',
        kind='<node>', compares='every host of the job has a mesh_check result'),
    'mesh.dns': _findings.entry(
        'Peer name does not resolve on the node', 'fail',
        'Make {address} resolve on {node} the way the job names it (DNS or /etc/hosts on every node, the same '
        'answers everywhere), or give mesh_check and the job the peer\'s IP address.',
        kind=_KIND, compares='the peer address resolves on the node (getaddrinfo)'),
    'mesh.interface': _findings.entry(
        'Job interface missing on the node', 'fail',
        '{node} has no readable interface {interface} (`ip link show {interface}`): fix the interface name the job '
        'uses (NCCL_SOCKET_IFNAME, btl_tcp_if_include) or the node\'s network configuration.',
        kind=u'<node> \u2192 *', compares='/sys/class/net/<interface>/mtu reads as a number'),
    'mesh.route': _findings.entry(
        'Peer not routed through the job interface', 'fail',
        'NCCL/MPI traffic to {peer} leaves {node} through {measured} instead of {interface}: fix the routes '
        '(`ip route get {address}` on {node}), the addresses of {interface}, or the interface the job names '
        '(NCCL_SOCKET_IFNAME, btl_tcp_if_include).',
        kind=_KIND, compares='`ip route get <peer address>` on the node leaves through the given interface'),
    'mesh.tcp': _findings.entry(
        'TCP port of a peer not reachable', 'fail',
        'Open TCP port {port} of {peer} to {node}: check the service listens (`ss -ltn` on {peer}), the firewall of '
        'both nodes and the switch ACLs, and that the address is the peer\'s.',
        kind=_KIND, compares='a TCP connection from the node to the peer address and port opens within the timeout'),
    'mesh.ssh': _findings.entry(
        'SSH handshake with a peer failed', 'fail',
        'The TCP port {port} of {peer} answers but no SSH session could be negotiated from {node}: check sshd on '
        '{peer} (`sshd -T`, its log) and that the port is sshd\'s.',
        kind=_KIND, compares='an SSH transport negotiates with the peer (paramiko)'),
    'mesh.known_hosts': _findings.entry(
        'known_hosts missing or empty on the node', 'fail',
        'Write the peers\' host keys to {known_hosts} on {node} (role xuanwu.cluster.ssh_trust); host keys are '
        'never accepted on first use.',
        kind=u'<node> \u2192 *', compares='the known_hosts file holds host keys'),
    'mesh.ssh_key': _findings.entry(
        'Client key of the node unreadable', 'fail',
        'Create or fix the key {key_file} of {user} on {node} (role xuanwu.cluster.ssh_trust makes an ed25519 key '
        'without a passphrase when it is missing).',
        kind=u'<node> \u2192 *', compares='the client key file loads (ed25519, ecdsa or rsa, no passphrase)'),
    'mesh.host_key_unknown': _findings.entry(
        'Host key of a peer unknown', 'fail',
        '{known_hosts} on {node} has no host key for {peer} ({names}): add it from the peer itself (role '
        'xuanwu.cluster.ssh_trust reads it over the managed connection), never by accepting it on first use.',
        kind=_KIND, compares='the peer\'s host key is in known_hosts under its name, address or IP'),
    'mesh.host_key_changed': _findings.entry(
        'Host key of a peer changed', 'fail',
        'The host key {peer} presented to {node} is not the one {known_hosts} holds for it: find out why (a '
        'reinstalled node, an address taken by another machine, an attack) before replacing the entry '
        '(`ssh-keygen -R {address} -f {known_hosts}`, then ssh_trust).',
        kind=_KIND, compares='the peer\'s host key equals the known_hosts entry (and is not @revoked)'),
    'mesh.ssh_auth': _findings.entry(
        'Passwordless SSH to a peer refused', 'fail',
        'Add the public key of {key_file} of {node} to ~{user}/.ssh/authorized_keys on {peer} (role '
        'xuanwu.cluster.ssh_trust); check sshd\'s PubkeyAuthentication, AllowUsers and the file modes on {peer}.',
        kind=_KIND, compares='public-key authentication as the user succeeds'),
    'mesh.mtu': _findings.entry(
        'MTU of the job interface differs between nodes', 'fail',
        'Set the same MTU on the job interface of every node (and the switch ports between them): '
        '`ip link set {interface} mtu {expected_mtu}` on {node}, made permanent in the network configuration; '
        'mismatched MTUs hang or time out NCCL over sockets.',
        kind=_KIND, compares='the MTU of the job interface on the node equals the MTU most nodes of the job have'),
}


def link(node, peer):
    """``node → peer``: the component of a finding between two nodes."""
    return u'%s %s %s' % (node, ARROW, peer)


def _finding(check, node, peer, measured, expected, message, context):
    context = dict(context, node=node, peer=peer)
    return _findings.make(CHECKS, node, check, link(node, peer), measured, expected, message, context=context)


# ---------------------------------------------------------------------------------------------
# Findings of one node

def node_findings(node, settings):
    """The findings about the node itself: job interface unreadable, known_hosts missing or empty, client key
    unreadable.

    ``settings``: ``{ssh, interface, mtu_error, known_hosts, known_hosts_state ('ok'|'missing'|'empty'|...),
    key_file, key_error, user}``.
    """
    out = []
    context = dict((k, settings.get(k)) for k in ('known_hosts', 'key_file', 'user', 'interface'))
    if settings.get('interface') and settings.get('mtu_error'):
        message = 'the job interface %s of %s cannot be read: %s' % (settings['interface'], node, settings['mtu_error'])
        out.append(_finding('mesh.interface', node, '*', settings['mtu_error'], '%s exists' % settings['interface'],
                            message, context))
    if not settings.get('ssh'):
        return out
    state = settings.get('known_hosts_state')
    if state != 'ok':
        out.append(_finding('mesh.known_hosts', node, '*', '%s: %s' % (settings.get('known_hosts'), state),
                            'a known_hosts file with the peers\' host keys',
                            'known_hosts %s is %s: no peer\'s host key can be verified, SSH to the peers was not '
                            'tried' % (settings.get('known_hosts'), state), context))
    if settings.get('key_error'):
        out.append(_finding('mesh.ssh_key', node, '*', '%s: %s' % (settings.get('key_file'), settings['key_error']),
                            'a readable private key without a passphrase',
                            'the client key %s cannot be loaded (%s): authentication to the peers was not tried'
                            % (settings.get('key_file'), settings['key_error']), context))
    return out


def peer_findings(node, record, settings):
    """The findings of one peer's record (``_mesh_probe.probe_peer``) from ``node``."""
    peer = record['name']
    context = {'address': record.get('address'), 'known_hosts': settings.get('known_hosts'),
               'key_file': settings.get('key_file'), 'user': settings.get('user'),
               'interface': settings.get('interface')}
    where = '%s (%s)' % (peer, record.get('address')) if record.get('address') != peer else peer
    if record.get('resolve_error'):
        return [_finding('mesh.dns', node, peer, 'does not resolve: %s' % record['resolve_error'],
                         '%s resolves to an address' % record.get('address'),
                         '%s cannot resolve %s: %s' % (node, where, record['resolve_error']), context)]
    out = []
    out.extend(_route_findings(node, peer, record, settings, context))
    for port, error in sorted((record.get('tcp') or {}).items()):
        if error:
            ctx = dict(context, port=port)
            out.append(_finding('mesh.tcp', node, peer, '%s:%d: %s' % (record['resolved'], port, error),
                                'TCP %s:%d connects within %ss' % (record['resolved'], port, settings.get('timeout')),
                                '%s cannot open TCP port %d of %s: %s' % (node, port, where, error), ctx))
    ssh = record.get('ssh')
    if ssh:
        out.extend(_ssh_findings(node, peer, where, record, ssh, dict(context, port=record.get('port'))))
    return out


def _route_findings(node, peer, record, settings, context):
    interface = settings.get('interface')
    if not interface:
        return []
    if record.get('route_error'):
        return [_finding('mesh.route', node, peer, 'route unreadable: %s' % record['route_error'], 'dev %s' % interface,
                         'the route from %s to %s could not be read: %s' % (node, where_of(record), record['route_error']),
                         dict(context, measured='an unknown device'))]
    route = record.get('route') or {}
    if route.get('type') == 'local' or route.get('dev') == interface:
        return []
    via = ' via %s' % route['via'] if route.get('via') else ''
    measured = 'dev %s%s' % (route.get('dev'), via)
    return [_finding('mesh.route', node, peer, measured, 'dev %s' % interface,
                     'traffic from %s to %s (%s) leaves through %s%s, not the job interface %s'
                     % (node, peer, record['resolved'], route.get('dev'), via, interface),
                     dict(context, measured=route.get('dev')))]


def where_of(record):
    return '%s (%s)' % (record['name'], record.get('resolved') or record.get('address'))


def _ssh_findings(node, peer, where, record, ssh, context):
    key = ssh.get('host_key')
    context = dict(context, names=', '.join(ssh.get('names') or []))
    if ssh.get('error') and key is None:
        return [_finding('mesh.ssh', node, peer, ssh['error'], 'an SSH session on port %s' % record.get('port'),
                         'no SSH session from %s to %s: %s' % (node, where, ssh['error']), context)]
    if key == 'unknown':
        measured = '%s %s not in %s' % (ssh.get('keytype'), ssh.get('fingerprint'), context['known_hosts'])
        return [_finding('mesh.host_key_unknown', node, peer, measured,
                         'a known_hosts entry for %s' % context['names'],
                         '%s does not know the host key of %s (looked up as %s); it was not accepted and SSH was not '
                         'tried' % (node, where, context['names']), context)]
    if key in ('changed', 'revoked'):
        measured = '%s %s' % (ssh.get('keytype'), ssh.get('fingerprint')) if ssh.get('keytype') else ssh.get('error')
        what = 'is revoked (@revoked) in %s' % context['known_hosts'] if key == 'revoked' else \
            'differs from the one %s holds for %s' % (context['known_hosts'], context['names'])
        return [_finding('mesh.host_key_changed', node, peer, measured,
                         'the host key of %s in %s' % (context['names'], context['known_hosts']),
                         'the host key %s presented to %s %s; SSH was not tried' % (where, node, what), context)]
    if ssh.get('auth') is False:
        return [_finding('mesh.ssh_auth', node, peer, 'refused: %s' % (ssh.get('error') or 'authentication failed'),
                         '%s logs in to %s with %s' % (context['user'], peer, context['key_file']),
                         '%s cannot log in to %s as %s with %s: %s' % (node, where, context['user'], context['key_file'],
                                                                       ssh.get('error') or 'authentication failed'), context)]
    return []


def peer_summary(record):
    """A peer as mesh_check returns it: ``{name, address, resolved, tcp_ok, ssh_ok, host_key, route_dev, error}``.

    ``tcp_ok`` / ``ssh_ok`` are None where nothing was tried (a name that did not resolve, ``ssh: false``,
    an unverified host key), never True.
    """
    tcp = record.get('tcp') or {}
    ssh = record.get('ssh')
    errors = [record.get('resolve_error'), record.get('route_error')] + [
        'tcp %d: %s' % (port, error) for port, error in sorted(tcp.items()) if error]
    if ssh and ssh.get('error'):
        errors.append('ssh: %s' % ssh['error'])
    ssh_ok = None
    if ssh and ssh.get('auth') is not None:
        ssh_ok = bool(ssh['auth'])
    elif ssh and ssh.get('host_key') not in (None, 'ok'):
        ssh_ok = False
    return {'name': record['name'], 'address': record.get('address'), 'resolved': record.get('resolved'),
            'tcp_ok': all(e is None for e in tcp.values()) if tcp else None, 'ssh_ok': ssh_ok,
            'host_key': ssh.get('host_key') if ssh else None,
            'route_dev': (record.get('route') or {}).get('dev'),
            'error': '; '.join(e for e in errors if e) or None}


def _record(record):
    """A peer's record as it came through JSON: its TCP ports numbers again (JSON object keys are text)."""
    return dict(record, tcp=dict((int(port), error) for port, error in (record.get('tcp') or {}).items()))


def judged(answer):
    """mesh_check's result from its module's answer (``{host, interface, mtu, records, settings, fail_on_findings}``,
    ``settings`` the ``JUDGED_SETTINGS`` of what the module read): ``{changed, host, interface, mtu, peers, findings}``,
    and ``failed`` with ``msg`` when there is a finding and ``fail_on_findings``."""
    node, settings = answer['host'], answer.get('settings') or {}
    records = [_record(record) for record in answer.get('records') or []]
    findings = node_findings(node, settings)
    for record in records:
        findings.extend(peer_findings(node, record, settings))
    findings.sort(key=_findings.sort_key)
    result = dict(changed=False, host=node, interface=answer.get('interface'), mtu=answer.get('mtu'),
                  peers=[peer_summary(record) for record in records], findings=findings)
    if findings and answer.get('fail_on_findings', True):
        result.update(failed=True, msg='%d mesh finding(s) on %s: %s' % (len(findings), node, '; '.join(
            '%s %s: %s' % (f['check'], f['component'], f['message']) for f in findings[:20])))
    return result


# ---------------------------------------------------------------------------------------------
# The nodes of a job compared (once, on the controller)

def mtu_findings(results):
    """``{host: [mesh.mtu / mesh.not_measured findings]}`` from ``{host: mesh_check result}``.

    The reference is the MTU most hosts have (a tie goes to the larger MTU); each host with another MTU gets
    one finding naming it and a host with the reference MTU. A host without a result, or whose result has no
    interface, is not measured (``mesh.not_measured``). A host whose interface's MTU was unreadable already
    has its own finding from mesh_check and is left out. Linear in the number of hosts.
    """
    out = {}
    measured = {}
    for host in sorted(results):
        result = results[host]
        if not isinstance(result, dict) or result.get('skipped') or 'mtu' not in result:
            out[host] = [_findings.make(CHECKS, host, 'mesh.not_measured', host, 'no mesh_check result',
                                        'a mesh_check result with the MTU of the job interface',
                                        'mesh_check returned no result for %s: the MTU of its job interface is not '
                                        'known' % host, context={'node': host})]
        elif not result.get('interface'):
            out[host] = [_findings.make(CHECKS, host, 'mesh.not_measured', host, 'mesh_check ran without interface',
                                        'the MTU of the job interface',
                                        'mesh_check ran on %s without an interface: no MTU to compare' % host,
                                        context={'node': host})]
        elif isinstance(result.get('mtu'), int):
            measured[host] = (result['interface'], result['mtu'])
    counts = {}
    for _interface, mtu in measured.values():
        counts[mtu] = counts.get(mtu, 0) + 1
    if len(counts) < 2:
        return out
    reference = max(counts, key=lambda mtu: (counts[mtu], mtu))
    ref_host = min(h for h, (_i, mtu) in measured.items() if mtu == reference)
    ref_interface = measured[ref_host][0]
    for host in sorted(measured):
        interface, mtu = measured[host]
        if mtu == reference:
            continue
        context = {'node': host, 'peer': ref_host, 'interface': interface, 'expected_mtu': reference}
        out.setdefault(host, []).append(_findings.make(
            CHECKS, host, 'mesh.mtu', link(host, ref_host), '%s mtu %d' % (interface, mtu),
            'mtu %d (%s of %s on %d of %d hosts)' % (reference, ref_interface, ref_host, counts[reference], len(measured)),
            'the job interface %s of %s has MTU %d, %s has %d on %s (as %d of %d hosts): frames larger than %d are '
            'dropped between them' % (interface, host, mtu, ref_host, reference, ref_interface, counts[reference],
                                      len(measured), min(mtu, reference)), context=context))
    return out


# ---------------------------------------------------------------------------------------------
# ssh_trust: every node's keys, once (the role's read task prints the sections below)

# A host name by its grammar (RFC 1123 labels, underscores as inventories use them): no wildcard, negation, comma,
# bracket, blank or control character can reach a known_hosts host field.
_HOST_NAME = re.compile(r'^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*$')


def known_host_name(name):
    """``name`` when it may stand in a known_hosts host field (an IP address, or a host name by its grammar), else
    ``None``."""
    if is_ip_address(name):
        return name
    return name if isinstance(name, str) and _HOST_NAME.match(name) else None


def _known_name(name, port):
    return name if port == SSH_PORT else '[%s]:%d' % (name, port)


def trust_files(reads, port=SSH_PORT, addresses=True):
    """authorized_keys and known_hosts lines for every node, from ``{host: parse_trust_read(...)}``, once.

    Each node's host keys are listed under its inventory name, its ``ansible_host`` and (``addresses``) its global
    addresses; an address that more than one node has (a container bridge such as docker0's) is left out, since
    it names no single node. ``missing``: ``{host: what}`` for a node with no user key or no host key, or whose
    names are not all addresses or host names (``known_host_name``): such a name is never written, and the node is
    named with what it printed. Linear in the number of nodes.
    """
    owners = {}
    if addresses:
        for host, read in reads.items():
            for address in set(read.get('addresses') or []):
                owners.setdefault(address, set()).add(host)
    shared = sorted(a for a, hosts in owners.items() if len(hosts) > 1)
    authorized, known, missing = [], [], {}
    for host in sorted(reads):
        read = reads[host]
        lacking = [what for what, value in (('no user key', read.get('user_key')), ('no host key', read.get('host_keys')))
                   if not value]
        candidates = [host, read.get('ansible_host')] + (sorted(set(read.get('addresses') or []) - set(shared)) if addresses else [])
        hostile = ['%r is not an address or host name' % (str(name)[:60],) for name in candidates
                   if name and known_host_name(name) is None]
        if lacking or read.get('problems') or hostile:
            missing[host] = ', '.join(lacking + list(read.get('problems') or []) + hostile)
        if read.get('user_key') and read['user_key'] not in authorized:
            authorized.append(read['user_key'])
        names = []
        for name in candidates:
            if name and known_host_name(name) is not None and name not in names:
                names.append(name)
        if not names:
            continue
        field = ','.join(_known_name(name, port) for name in names)
        known.extend('%s %s' % (field, key) for key in read.get('host_keys') or [])
    return {'authorized_keys': authorized, 'known_hosts': known, 'missing': missing, 'shared_addresses': shared}


# How the controller reached a node when ssh_trust read its host keys (docs/ssh-mesh.md, "Host keys from the first
# contact"): keys read over a channel whose own host key was not verified may be an attacker's, and ssh_trust would
# make every node trust them.
LOCAL_CONNECTIONS = frozenset(('local', 'ansible.builtin.local', 'podman', 'containers.podman.podman', 'buildah',
                               'containers.podman.buildah', 'docker', 'community.docker.docker', 'chroot',
                               'community.general.chroot'))
SSH_CONNECTIONS = frozenset(('ssh', 'ansible.builtin.ssh', 'smart'))
PARAMIKO_CONNECTIONS = frozenset(('paramiko', 'paramiko_ssh', 'ansible.builtin.paramiko_ssh', 'ansible.builtin.paramiko'))
_UNCHECKED_OPTION = re.compile(r'(?i)(?:^|\s)-o\s*["\']?\s*(StrictHostKeyChecking)\s*[= ]\s*["\']?(no|off|false|accept-new)\b')
_NULL_KNOWN_HOSTS = re.compile(r'(?i)(?:^|\s)-o\s*["\']?\s*(UserKnownHostsFile|GlobalKnownHostsFile)\s*[= ]\s*["\']?/dev/null\b')


def _truth(value):
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ('1', 'true', 'yes', 'on', 'y', 't')


def channel_problem(connection, host_key_checking, ssh_args='', paramiko_auto_add=False):
    """Why a node's host keys read over this connection cannot be trusted, or ``None`` when the channel verified the
    node: ``connection`` (the connection plugin's name), ``host_key_checking`` (its effective setting),
    ``ssh_args`` (every SSH option string of the host, joined: ssh_args, ssh_common_args, ssh_extra_args),
    ``paramiko_auto_add`` (paramiko's host_key_auto_add). A local connection or a container runtime of the controller
    needs no host key; SSH verifies one only with host key checking on and no option that turns it off or accepts a new
    key unseen (``StrictHostKeyChecking=no|accept-new``, a known_hosts of ``/dev/null``); another connection is not
    known to verify anything."""
    name = str(connection or 'ssh').strip()
    if name in LOCAL_CONNECTIONS:
        return None
    if name not in SSH_CONNECTIONS and name not in PARAMIKO_CONNECTIONS:
        return 'connection %s is not known to verify the host key of the node' % name
    if not _truth(host_key_checking):
        return 'host key checking is off for this host (host_key_checking = False)'
    if name in PARAMIKO_CONNECTIONS:
        return 'paramiko adds unknown host keys (host_key_auto_add)' if _truth(paramiko_auto_add) else None
    unchecked = _UNCHECKED_OPTION.search(ssh_args or '')
    if unchecked:
        return 'its SSH options say %s=%s' % (unchecked.group(1), unchecked.group(2))
    nowhere = _NULL_KNOWN_HOSTS.search(ssh_args or '')
    if nowhere:
        return 'its SSH options say %s=/dev/null' % nowhere.group(1)
    return None
