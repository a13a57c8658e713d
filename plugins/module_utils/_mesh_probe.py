# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``xuanwu.cluster.mesh_check`` does on a node: resolve, route, connect and log in to each peer.

Network I/O only; the known_hosts matching is ``_mesh_node``'s, the meaning of the records ``_mesh``'s (pure, judged
on the controller). paramiko is passed in (the module
imports it and reports when it is missing). Host keys are checked against the known_hosts entries given,
never added: a peer whose key is unknown or changed is not sent an authentication. No Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket

from ansible_collections.xuanwu.cluster.plugins.module_utils import _mesh_node


def _error(exc):
    text = str(exc) or exc.__class__.__name__
    return text if isinstance(exc, (OSError, EOFError)) else '%s: %s' % (exc.__class__.__name__, text)


def load_client_key(paramiko, path):
    """``(key, None)`` or ``(None, reason)``: the private key at ``path`` (ed25519, ecdsa or rsa)."""
    reasons = []
    for name in ('Ed25519Key', 'ECDSAKey', 'RSAKey'):
        cls = getattr(paramiko, name, None)
        if cls is None:
            continue
        try:
            return cls.from_private_key_file(path), None
        except paramiko.PasswordRequiredException:
            return None, 'the key is protected by a passphrase'
        except (IOError, OSError) as exc:
            return None, _error(exc)
        except (paramiko.SSHException, ValueError) as exc:
            reasons.append(str(exc))
    return None, 'not an ed25519, ecdsa or rsa private key (%s)' % '; '.join(reasons)[:200]


def resolve(address, port):
    """``(ip, None)`` or ``(None, reason)``."""
    try:
        infos = socket.getaddrinfo(address, port, 0, socket.SOCK_STREAM)
    except (socket.gaierror, socket.herror, OSError, UnicodeError) as exc:
        return None, _error(exc)
    if not infos:
        return None, 'no address'
    return infos[0][4][0], None


def tcp_connect(ip, port, timeout):
    """None when a TCP connection to ``ip:port`` opened within ``timeout`` seconds, else the reason."""
    try:
        sock = socket.create_connection((ip, port), timeout=timeout)
    except socket.timeout:
        return 'timed out after %ss' % timeout
    except (OSError, ValueError) as exc:
        return _error(exc)
    sock.close()
    return None


def _prefer_known_types(transport, known):
    """Offer the peer the host-key algorithms known_hosts holds for it first (as OpenSSH does)."""
    if not known:
        return
    options = transport.get_security_options()
    wanted = [name for name in options.key_types if _mesh_node.base_keytype(name) in known]
    if wanted:
        options.key_types = wanted


def ssh_check(paramiko, ip, peer, settings, names):
    """``{names, host_key, keytype, fingerprint, auth, error}`` of an SSH session to the peer."""
    out = {'names': names, 'host_key': None, 'keytype': None, 'fingerprint': None, 'auth': None, 'error': None}
    entries = settings['known_entries']
    timeout = settings['timeout']
    try:
        sock = socket.create_connection((ip, peer['port']), timeout=timeout)
    except (OSError, ValueError) as exc:
        out['error'] = _error(exc)
        return out
    transport = paramiko.Transport(sock)
    try:
        transport.banner_timeout = timeout
        transport.auth_timeout = timeout
        transport.handshake_timeout = timeout
        known = _mesh_node.known_keytypes(entries, names)
        _prefer_known_types(transport, known)
        try:
            transport.start_client(timeout=timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            out['error'] = _error(exc)
            if known and 'host key' in str(exc).lower():
                # the peer has none of the key types known for it: not the key known_hosts holds
                out['host_key'] = _mesh_node.judge_host_key(entries, names, None, None)
            return out
        key = transport.get_remote_server_key()
        out['keytype'], blob = key.get_name(), key.get_base64()
        out['fingerprint'] = _mesh_node.fingerprint(blob)
        out['host_key'] = _mesh_node.judge_host_key(entries, names, out['keytype'], blob)
        if out['host_key'] != 'ok' or settings['client_key'] is None:
            return out
        try:
            transport.auth_publickey(settings['user'], settings['client_key'])
            out['auth'] = transport.is_authenticated()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            out['auth'] = False
            out['error'] = _error(exc)
        return out
    finally:
        transport.close()


def probe_peer(peer, settings, paramiko=None, route=None):
    """The record of one peer: resolve, route (``route(ip)`` -> ``(route, error)``), TCP ports, SSH.

    ``settings``: ``{ssh, tcp_ports, timeout, user, client_key, known_entries}``; SSH is tried only when the
    SSH port connects, a client key loaded and known_hosts has entries (``known_entries`` not None).
    """
    record = dict(peer, resolved=None, resolve_error=None, route=None, route_error=None, tcp={}, ssh=None)
    record['resolved'], record['resolve_error'] = resolve(peer['address'], peer['port'])
    if record['resolve_error']:
        return record
    if route is not None:
        record['route'], record['route_error'] = route(record['resolved'])
    wanted = ([peer['port']] if settings['ssh'] else []) + [p for p in settings['tcp_ports'] if p != peer['port'] or not settings['ssh']]
    for port in wanted:
        record['tcp'][port] = tcp_connect(record['resolved'], port, settings['timeout'])
    if (settings['ssh'] and paramiko is not None and record['tcp'].get(peer['port']) is None
            and settings['known_entries'] is not None and settings['client_key'] is not None):
        record['ssh'] = ssh_check(paramiko, record['resolved'], peer, settings, _mesh_node.lookup_names(peer, record['resolved']))
    return record
