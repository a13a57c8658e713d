# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of what SSH keeps and prints (private to the collection): a known_hosts file as OpenSSH reads it (sshd(8)
"SSH_KNOWN_HOSTS FILE FORMAT") and what role ssh_trust's read task printed on a node (its keys and addresses).
Text in, dict out; anything but text is a ParseError."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_net import parse_ip_addr


def _lines(text, source):
    if not isinstance(text, str):
        raise ParseError(source, 'expected text, got %s' % type(text).__name__, text)
    return text.splitlines()


def parse_known_hosts(text):
    """The entries of a known_hosts file: ``{'entries': [{marker, hosts, keytype, key, line}], 'bad_lines': [n]}``.

    Comments and blank lines are skipped; a line that is not ``[@marker] hosts keytype base64-key [comment]``
    is listed in ``bad_lines`` (1-based), as OpenSSH skips it.
    """
    entries, bad = [], []
    for number, raw in enumerate(_lines(text, 'known_hosts'), 1):
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        fields = line.split()
        marker = None
        if fields[0].startswith('@'):
            marker = fields.pop(0)[1:]
        if len(fields) < 3 or marker not in (None, 'revoked', 'cert-authority') or not _is_base64(fields[2]):
            bad.append(number)
            continue
        entries.append({'marker': marker, 'hosts': fields[0], 'keytype': fields[1], 'key': fields[2], 'line': number})
    return {'entries': entries, 'bad_lines': bad}


def _is_base64(text):
    try:
        base64.b64decode(text.encode('ascii'), validate=True)
    except (binascii.Error, ValueError, UnicodeError):
        return False
    return True


SECTIONS = ('user-key', 'host-keys', 'addresses', 'ansible-host')
_KEY_LINE = re.compile(r'^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(?:256|384|521)|sk-ssh-ed25519@openssh\.com|'
                       r'sk-ecdsa-sha2-nistp256@openssh\.com) ([A-Za-z0-9+/]+={0,2})(?:\s.*)?$')


def parse_trust_read(text):
    """What the ssh_trust read task printed on a node: ``{user_key, host_keys, addresses, ansible_host, problems}``.

    Sections start with ``== <name>`` (``SECTIONS``); keys are ``type base64`` (the comment dropped), addresses
    come from ``ip -j addr show scope global``. What cannot be read is listed in ``problems``, never raised.
    """
    sections = dict((name, []) for name in SECTIONS)
    current = None
    for line in _lines(text, 'ssh_trust read'):
        if line.startswith('== ') and line[3:].strip() in sections:
            current = line[3:].strip()
        elif current and line.strip():
            sections[current].append(line.strip())
    problems = []
    user = _public_keys(sections['user-key'], problems)
    host_keys = _public_keys(sections['host-keys'], problems)
    addresses = []
    if sections['addresses']:
        try:
            addresses = [a['address'] for a in parse_ip_addr('\n'.join(sections['addresses']))]
        except ParseError as exc:
            problems.append('addresses: %s' % exc)
    return {'user_key': user[0] if user else None, 'host_keys': host_keys,
            'addresses': addresses, 'ansible_host': (sections['ansible-host'] or [None])[0], 'problems': problems}


def _public_keys(lines, problems):
    keys = []
    for line in lines:
        match = _KEY_LINE.match(line)
        if match and _is_base64(match.group(2)):
            keys.append('%s %s' % (match.group(1), match.group(2)))
        else:
            problems.append('not a public key: %r' % line[:80])
    return keys
