# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SSH mesh's node half (docs/ssh-mesh.md): the peers, ports and threads of ``xuanwu.cluster.mesh_check`` taken
from its options, and ``known_hosts`` lines matched the way OpenSSH matches them (hashed names, ``[host]:port``,
wildcards, negation, ``@revoked``). What module ``mesh_check`` carries with ``_mesh_probe``: no check, no remediation
text (the records are judged on the controller, ``_mesh``, which re-exports these names). Pure: no I/O, no Ansible
imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import hashlib
import hmac
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_ssh import parse_known_hosts  # noqa: F401 pylint: disable=unused-import

SSH_PORT = 22
MAX_WORKERS = 64
# what module mesh_check returns of its settings with the peers' records: what the controller judges them with
# (_mesh.judged)
JUDGED_SETTINGS = ('ssh', 'interface', 'mtu_error', 'known_hosts', 'known_hosts_state', 'key_file', 'key_error', 'user',
                   'timeout')


# ---------------------------------------------------------------------------------------------
# Arguments

def normalise_peers(peers):
    """``[{name, address, port}]`` from the module's ``peers``; raises ValueError naming the bad entry."""
    out = []
    for index, peer in enumerate(peers or []):
        if isinstance(peer, str):
            peer = {'name': peer}
        if not isinstance(peer, dict):
            raise ValueError('peers[%d] must be a dict with name (and address, port), got %r' % (index, peer))
        unknown = sorted(set(peer) - set(('name', 'address', 'port')))
        if unknown:
            raise ValueError('peers[%d] has unknown keys %s (allowed: name, address, port)' % (index, ', '.join(unknown)))
        name = peer.get('name') or peer.get('address')
        address = peer.get('address') or name
        if not isinstance(name, str) or not name.strip() or not isinstance(address, str) or not address.strip():
            raise ValueError('peers[%d] needs a name or an address (strings), got %r' % (index, peer))
        port = peer.get('port', SSH_PORT)
        try:
            port = int(port if port is not None else SSH_PORT)
        except (TypeError, ValueError):
            raise ValueError('peers[%d].port must be a TCP port number, got %r' % (index, peer.get('port')))
        if not 0 < port < 65536:
            raise ValueError('peers[%d].port must be between 1 and 65535, got %d' % (index, port))
        out.append({'name': name.strip(), 'address': address.strip(), 'port': port})
    return out


def ports(values):
    """The extra TCP ports (``tcp_ports``) as integers; raises ValueError for anything else."""
    out = []
    for value in values or []:
        try:
            port = int(value)
        except (TypeError, ValueError):
            raise ValueError('tcp_ports must hold TCP port numbers, got %r' % (value,))
        if not 0 < port < 65536:
            raise ValueError('tcp_ports must hold ports between 1 and 65535, got %d' % port)
        if port not in out:
            out.append(port)
    return out


def workers(value, peers):
    """Threads for ``peers`` peers: at least 1, at most ``MAX_WORKERS`` and never more than the peers."""
    return max(1, min(int(value or 1), MAX_WORKERS, max(peers, 1)))


# ---------------------------------------------------------------------------------------------
# known_hosts, as OpenSSH reads it (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT")

def _hashed_match(field, name):
    parts = field.split('|')
    if len(parts) != 4 or parts[1] != '1':
        return False
    try:
        salt = base64.b64decode(parts[2])
        digest = base64.b64decode(parts[3])
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(hmac.new(salt, name.encode('utf-8'), hashlib.sha1).digest(), digest)


def _pattern_match(pattern, name):
    regex = ''.join('.*' if c == '*' else '.' if c == '?' else re.escape(c) for c in pattern)
    return re.match('^%s$' % regex, name, re.IGNORECASE) is not None


def hosts_match(field, name):
    """True when ``name`` (``host`` or ``[host]:port``) is matched by a known_hosts host field."""
    if field.startswith('|'):
        return _hashed_match(field, name)
    matched = False
    for pattern in field.split(','):
        if pattern.startswith('!'):
            if _pattern_match(pattern[1:], name):
                return False
        elif _pattern_match(pattern, name):
            matched = True
    return matched


def lookup_names(peer, resolved=None):
    """The names OpenSSH looks a peer up under: its address, its name, its IP (``[x]:port`` off port 22)."""
    names = []
    for value in (peer.get('address'), peer.get('name'), resolved):
        if not value:
            continue
        value = value.lower()
        if peer.get('port', SSH_PORT) != SSH_PORT:
            value = '[%s]:%d' % (value, peer['port'])
        if value not in names:
            names.append(value)
    return names


def _matching(entries, names):
    return [e for e in entries if e['marker'] != 'cert-authority' and any(hosts_match(e['hosts'], n) for n in names)]


def base_keytype(name):
    """The key type of a host-key algorithm: ``rsa-sha2-512`` and ``rsa-sha2-256`` are ``ssh-rsa`` keys."""
    return 'ssh-rsa' if name in ('rsa-sha2-256', 'rsa-sha2-512') else name


def known_keytypes(entries, names):
    """The key types known_hosts holds for any of ``names`` (the algorithms to offer the peer first)."""
    return sorted(set(e['keytype'] for e in _matching(entries, names) if e['marker'] is None))


def judge_host_key(entries, names, keytype, key):
    """``ok``, ``unknown`` (no entry for the names), ``changed`` (entries, none this key) or ``revoked``.

    Any matching line with the key is enough (OpenSSH reads every line); ``keytype`` None means the peer
    offered no key of the types known for it.
    """
    if key is not None and any(e['marker'] == 'revoked' and e['key'] == key for e in entries):
        return 'revoked'
    found = [e for e in _matching(entries, names) if e['marker'] is None]
    if not found:
        return 'unknown'
    if keytype is not None and any(e['keytype'] == keytype and e['key'] == key for e in found):
        return 'ok'
    return 'changed'


def fingerprint(key):
    """``SHA256:...`` of a base64 public key, as ``ssh-keygen -l`` prints it."""
    try:
        raw = base64.b64decode(key)
    except (binascii.Error, ValueError, TypeError):
        return None
    return 'SHA256:' + base64.b64encode(hashlib.sha256(raw).digest()).decode('ascii').rstrip('=')
