#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: mesh_check
short_description: Check from a node that it reaches every peer of a job over TCP and passwordless SSH
version_added: 0.2.0
description:
  - Runs on the node and checks every peer of O(peers) the way a multi-node job will talk to it
    (C(docs/ssh-mesh.md)); it only reads and connects, so it runs in check mode too.
  - Resolves each peer's address on the node (C(mesh.dns)); with O(interface), checks that the route to the peer
    leaves through that interface (C(ip -j route get), or the text of C(ip route get) where iproute2 has no JSON;
    C(mesh.route)) and returns the interface's MTU (C(/sys/class/net/IF/mtu)) for
    M(xuanwu.cluster.mesh_compare) to compare between the nodes.
  - Opens a TCP connection to the SSH port and to each of O(tcp_ports) (C(mesh.tcp)), then an SSH session with
    paramiko (C(mesh.ssh)). The peer's host key is looked up in O(known_hosts) under the peer's address, name and IP
    (C([host]:port) off port 22, hashed names, wildcards, C(@revoked)); an unknown key is C(mesh.host_key_unknown),
    a different one C(mesh.host_key_changed). A host key is never added to O(known_hosts) and never accepted
    unverified; no authentication is sent to a peer whose key did not verify. A missing or empty O(known_hosts) is
    C(mesh.known_hosts). Public-key login as O(user) with O(key_file) is C(mesh.ssh_auth).
  - Every finding names both ends (C(node1 → node3)) in the collection's finding shape (C(docs/checks.md)). The module
    reads on the node; its action plugin judges what it read on the controller, so the node carries no check.
  - Peers are checked in parallel by at most O(workers) threads; while the network is the limit the time is about
    (number of peers / O(workers)) × the time of one peer, at most O(timeout) seconds per connection.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
requirements:
  - paramiko (on the node; Debian/Ubuntu C(python3-paramiko), RHEL C(python3-paramiko), or C(pip install paramiko)
    in the venv of the role xuanwu.cluster.python_venv) when O(ssh=true).
  - C(ip) (iproute2) on the node when O(interface) is given.
options:
  peers:
    description:
      - The peers to check, each a dict with C(name), C(address) (default the name) and C(port) (the SSH port, default
        C(22)), or a name alone.
      - The node itself may be among them (a route of type C(local) is accepted whatever O(interface) is).
    type: list
    elements: raw
    required: true
  name:
    description: The node's name in the findings (usually C(inventory_hostname)); default the node's host name.
    type: str
  user:
    description: The user to log in as on the peers; default the user the module runs as.
    type: str
  key_file:
    description: The private key to log in with (ed25519, ecdsa or rsa, without a passphrase).
    type: path
    default: ~/.ssh/id_ed25519
  known_hosts:
    description: The known_hosts file on the node that the peers' host keys must be in.
    type: path
    default: ~/.ssh/known_hosts
  ssh:
    description: Check SSH (host key and login); V(false) checks TCP only (the SSH port is then not connected to
      unless it is in O(tcp_ports)).
    type: bool
    default: true
  tcp_ports:
    description: More TCP ports to connect to on each peer (the rendezvous port of torchrun, a fixed NCCL or MPI port).
    type: list
    elements: int
    default: []
  timeout:
    description: Seconds for each connection, SSH handshake and login.
    type: float
    default: 5
  workers:
    description: Peers checked at the same time (threads), 1 to 64.
    type: int
    default: 16
  interface:
    description: The interface the job's traffic must use (the value of C(NCCL_SOCKET_IFNAME), C(btl_tcp_if_include)).
    type: str
  fail_on_findings:
    description: Fail the task when there is a finding (the findings are returned either way).
    type: bool
    default: true
seealso:
  - module: xuanwu.cluster.mesh_compare
  - name: docs/ssh-mesh.md
    description: The mesh preflight, the findings, how host keys are handled, the role xuanwu.cluster.ssh_trust.
    link: https://github.com/xuanwu-cluster/xuanwu.cluster/blob/main/docs/ssh-mesh.md
'''

EXAMPLES = r'''
- name: Check every node of the job reaches every other over SSH and the rendezvous port
  xuanwu.cluster.mesh_check:
    name: "{{ inventory_hostname }}"
    peers: "{{ ansible_play_hosts_all }}"
    tcp_ports: [29500]
    interface: "{{ xuanwu_nccl_socket_ifname | default(omit) }}"
  register: xuanwu_mesh

- name: TCP only, peers by name
  xuanwu.cluster.mesh_check:
    peers: [node01, node02, node03]
    ssh: false
    tcp_ports: [22, 29500]
'''

RETURN = r'''
host:
  description: O(name), the node in the findings.
  returned: always
  type: str
interface:
  description: O(interface), or null.
  returned: always
  type: str
mtu:
  description: The MTU of O(interface) on the node, null without O(interface) or when it cannot be read.
  returned: always
  type: int
peers:
  description: One entry per peer. C(tcp_ok) and C(ssh_ok) are null where nothing was tried, never true then.
    C(host_key) is C(ok), C(unknown), C(changed), C(revoked) or null (not checked).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "node3", "address": "10.0.0.3", "resolved": "10.0.0.3", "tcp_ok": true, "ssh_ok": true,
            "host_key": "ok", "route_dev": "ib0", "error": null}]
findings:
  description: The findings (host, check, component, severity, measured, expected, message, remediation).
  returned: always
  type: list
  elements: dict
'''

import getpass
import os
import socket
import traceback
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.xuanwu.cluster.plugins.module_utils import _mesh_node, _mesh_probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_net import parse_mtu, parse_route_get

try:
    import paramiko
    PARAMIKO_ERROR = None
except ImportError:
    paramiko = None
    PARAMIKO_ERROR = traceback.format_exc()


def _read(path):
    try:
        with open(path) as handle:
            return handle.read(), None
    except (IOError, OSError) as exc:
        return None, str(exc)


def _known_hosts(path):
    """``(entries or None, state)``: None when no host key can be verified."""
    if not os.path.exists(path):
        return None, 'missing'
    text, error = _read(path)
    if error:
        return None, 'unreadable: %s' % error
    entries = _mesh_node.parse_known_hosts(text)['entries']
    return (entries, 'ok') if entries else (None, 'empty')


def _mtu(interface):
    text, error = _read('/sys/class/net/%s/mtu' % interface)
    if error:
        return None, error
    try:
        return parse_mtu(text), None
    except ParseError as exc:
        return None, '%s: %r' % (exc, exc.excerpt)


def _router(module):
    ip = module.get_bin_path('ip')

    def route(address):
        if ip is None:
            return None, 'ip (iproute2) not found on the node'
        reasons = []
        for argv in ([ip, '-j', 'route', 'get', address], [ip, 'route', 'get', address]):
            rc, out, err = module.run_command(argv, environ_update={'LC_ALL': 'C'})
            try:
                return parse_route_get(out if rc == 0 else err or out), None
            except ParseError as exc:
                reasons.append('`%s`: %s (read %r)' % (' '.join(argv[1:]), exc.reason, exc.excerpt[:120]))
        return None, '; '.join(reasons)
    return route


def main():
    module = AnsibleModule(
        argument_spec=dict(
            peers=dict(type='list', elements='raw', required=True),
            name=dict(type='str'),
            user=dict(type='str'),
            key_file=dict(type='path', default='~/.ssh/id_ed25519'),
            known_hosts=dict(type='path', default='~/.ssh/known_hosts'),
            ssh=dict(type='bool', default=True),
            tcp_ports=dict(type='list', elements='int', default=[]),
            timeout=dict(type='float', default=5),
            workers=dict(type='int', default=16),
            interface=dict(type='str'),
            fail_on_findings=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params['ssh'] and paramiko is None:
        module.fail_json(msg=missing_required_lib('paramiko', reason='to check SSH to the peers (or set ssh: false)'),
                         exception=PARAMIKO_ERROR)
    if not params['peers']:
        module.fail_json(msg='peers is empty: there is nothing to check (give at least one peer)')
    try:
        peers = _mesh_node.normalise_peers(params['peers'])
        tcp_ports = _mesh_node.ports(params['tcp_ports'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if not 0 < params['timeout'] <= 600:
        module.fail_json(msg='timeout must be between 0 and 600 seconds, got %s' % params['timeout'])
    node = params['name'] or socket.gethostname()
    interface = params['interface'] or None
    mtu, mtu_error = _mtu(interface) if interface else (None, None)
    settings = {'ssh': params['ssh'], 'tcp_ports': tcp_ports, 'timeout': params['timeout'],
                'user': params['user'] or getpass.getuser(), 'key_file': params['key_file'], 'known_hosts': params['known_hosts'],
                'interface': interface, 'mtu_error': mtu_error, 'client_key': None, 'known_entries': None,
                'known_hosts_state': None, 'key_error': None}
    if params['ssh']:
        settings['known_entries'], settings['known_hosts_state'] = _known_hosts(params['known_hosts'])
        settings['client_key'], settings['key_error'] = _mesh_probe.load_client_key(paramiko, params['key_file'])
    with ThreadPoolExecutor(max_workers=_mesh_node.workers(params['workers'], len(peers))) as pool:
        records = list(pool.map(lambda peer: _mesh_probe.probe_peer(peer, settings, paramiko), peers))
    if interface:
        route = _router(module)
        for record in records:
            if record['resolved']:
                record['route'], record['route_error'] = route(record['resolved'])
    # what was read, judged by the action plugin on the controller (_mesh.judged): the node carries no check
    module.exit_json(changed=False, host=node, interface=interface, mtu=mtu, records=records,
                     settings=dict((key, settings[key]) for key in _mesh_node.JUDGED_SETTINGS),
                     fail_on_findings=params['fail_on_findings'])


if __name__ == '__main__':
    main()
