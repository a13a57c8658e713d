# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``xuanwu.cluster.exporter_listen`` and ``xuanwu.cluster.exporter_web_config`` (roles node_exporter,
prometheus, dcgm_exporter)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket

import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _exporter_web


def _resolve(name):
    """The addresses ``name`` resolves to on the controller (the address Ansible reaches the host by), or []."""
    if not isinstance(name, str) or not name or _exporter_web.ip_address(name) is not None:
        return []
    try:
        infos = socket.getaddrinfo(name, None, 0, socket.SOCK_STREAM)
    except (socket.error, UnicodeError, ValueError):
        return []
    out = []
    for info in infos:
        address = info[4][0]
        if address not in out:
            out.append(address)
    return out


def _fact_addresses(facts):
    """The host's addresses (None when its facts do not say) and its default addresses, from ``ansible_facts``."""
    facts = facts if hasattr(facts, 'get') else {}
    listed = None
    if 'all_ipv4_addresses' in facts or 'all_ipv6_addresses' in facts:
        listed = set()
        for key in ('all_ipv4_addresses', 'all_ipv6_addresses'):
            for address in facts.get(key) or []:
                normal = _exporter_web.ip_address(address)
                if normal is not None:
                    listed.add(normal)
    defaults = []
    for key in ('default_ipv4', 'default_ipv6'):
        entry = facts.get(key)
        if hasattr(entry, 'get') and entry.get('address'):
            defaults.append(entry.get('address'))
    return listed, defaults


def exporter_listen(value, variable, port, port_variable, allow_wildcard=False, allow_variable='', host='',
                    inventory_address='', facts=None):
    if not isinstance(allow_wildcard, bool):
        raise AnsibleFilterError('exporter_listen: allow_wildcard is a boolean (%s | bool), got %r' % (allow_variable, allow_wildcard))
    try:
        needs_default = isinstance(value, str) and not value.strip() and not allow_wildcard
        listed, defaults = _fact_addresses(facts)
        return _exporter_web.listen(value, variable, port, port_variable, allow_wildcard=allow_wildcard,
                                    allow_variable=allow_variable, host=host, inventory_address=inventory_address,
                                    resolved=_resolve(inventory_address) if needs_default else [],
                                    host_addresses=listed, default_addresses=defaults)
    except ValueError as err:
        raise AnsibleFilterError(str(err))


def exporter_web_config(basic_auth_users, cert_file='', key_file='', variable_prefix='', existing='', check_only=False):
    """The web config file's content (a mapping; {} for none). ``existing``: the file on the host as text;
    ``check_only``: check the inputs without hashing (a preflight)."""
    earlier = None
    if isinstance(existing, str) and existing.strip():
        try:
            earlier = yaml.safe_load(existing)
        except yaml.YAMLError:
            earlier = None
    try:
        return _exporter_web.web_config(basic_auth_users, cert_file=cert_file, key_file=key_file,
                                        variable_prefix=variable_prefix, existing=earlier, check_only=bool(check_only))
    except ValueError as err:
        raise AnsibleFilterError(str(err))


class FilterModule(object):
    def filters(self):
        return {'exporter_listen': exporter_listen, 'exporter_web_config': exporter_web_config}
