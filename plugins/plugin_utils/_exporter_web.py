# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where an exporter listens and who may ask it (roles node_exporter, prometheus, dcgm_exporter).

:func:`listen` chooses and checks the address a service binds: an IP address the inventory names for the host
(``ansible_host`` when it is one, else the address its name resolves to when the host has it, else the host's
default address), never every interface unless the operator says so. :func:`web_config` builds the file that
``--web.config.file`` (node_exporter, Prometheus) and ``--web-config-file`` (dcgm-exporter) read: TLS
(``tls_server_config``) and basic auth (``basic_auth_users``, bcrypt hashes only; a clear-text password is hashed
here, or its earlier hash kept when it still matches, so that a run that changes nothing writes the same file).

No Ansible imports, no I/O; bad input raises ``ValueError`` with a message that names the variable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

# What an operator may write for "every interface"; '' is every address only with the wildcard allowed (without
# it, '' is the default: the host's own address).
WILDCARDS = ('0.0.0.0', '::')
# bcrypt as exporter-toolkit reads it (golang.org/x/crypto/bcrypt): $2a$, $2b$ or $2y$, cost 04-31, 53 characters
_BCRYPT_RE = re.compile(r'^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$')
_USER_RE = re.compile(r'^[A-Za-z0-9_.@+-]{1,64}$')
# a path on the node that reaches a YAML file, a command line or a container's -v: absolute, no spaces, quotes,
# colons, '$', '`', '%' or backslashes
_PATH_RE = re.compile(r'^/[^ \t\n"\'$`%:\\]+$')
BCRYPT_COST = 10


def ip_address(text):
    """The IP address ``text`` names, normalised (``[fd00::1]`` -> ``fd00::1``), or None."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if text.startswith('[') and text.endswith(']'):
        text = text[1:-1]
    if '%' in text:
        return None  # a zone (fe80::1%eth0): '%' is a systemd specifier in a unit; not supported
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def port(value, variable):
    """A TCP port 1-65535 (an int or digits); ``ValueError`` naming ``variable`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not re.match(r'^[0-9]+$', str(value).strip()):
        raise ValueError('%s is a TCP port 1-65535, got %r' % (variable, value))
    number = int(str(value).strip())
    if not 1 <= number <= 65535:
        raise ValueError('%s is a TCP port 1-65535, got %r' % (variable, value))
    return number


def hostport(address, number):
    """``address:port`` as Go's listeners and Prometheus's targets want it (IPv6 in brackets, '' for every address)."""
    return ('[%s]:%d' if ':' in address else '%s:%d') % (address, number)


def _is_loopback(address):
    return ipaddress.ip_address(address).is_loopback


def _default_address(variable, host, inventory_address, resolved, host_addresses, default_addresses):
    """The host's address from the inventory: ``(address, how it was chosen)``."""
    named = ip_address(inventory_address)
    if named is not None:
        if host_addresses is not None and not _is_loopback(named) and named not in host_addresses:
            raise ValueError(
                '%s is empty, so %s would listen on its inventory address %s (ansible_host), but that is not an address '
                'of the host (it has %s): a NAT or forwarded address? Set %s to the address of %s that Prometheus '
                'reaches.' % (variable, host, named, ', '.join(sorted(host_addresses)) or 'none', variable, host))
        return named, 'ansible_host'
    for candidate in resolved or ():
        address = ip_address(candidate)
        if address is not None and not _is_loopback(address) and (host_addresses is None or address in host_addresses):
            return address, '%s resolves to it' % inventory_address
    for candidate in default_addresses or ():
        address = ip_address(candidate)
        if address is not None:
            return address, 'the default address of the host (facts)'
    raise ValueError(
        '%s is empty and %s has no address to listen on: its inventory address %r is not an IP address and does not '
        'resolve to one of its addresses, and it has no default route. Set %s to the IP address Prometheus reaches.'
        % (variable, host, inventory_address, variable))


def listen(value, variable, port_value, port_variable, allow_wildcard=False, allow_variable='', host='',
           inventory_address='', resolved=(), host_addresses=None, default_addresses=()):
    """Where a service listens.

    ``value``: the role's listen address variable (``variable`` names it). ``''`` (the default) means the host's
    own address: ``inventory_address`` (``ansible_host`` or the inventory name) when it is an IP address (refused
    when ``host_addresses``, the host's addresses from its facts, does not hold it), else the first of
    ``resolved`` (what that name resolves to) that the host has, else the first of ``default_addresses`` (the
    host's default IPv4 and IPv6 addresses). ``0.0.0.0`` and ``::`` (and ``''`` when the wildcard is allowed)
    listen on every interface and are refused unless ``allow_wildcard`` (``allow_variable`` names it). Any other
    value must be an IP address.

    Returns ``{address, wildcard, listen, local, port, chosen_by}``: ``listen`` is the ``--web.listen-address``
    value, ``local`` the host part of a URL that reaches the service from the host itself (bracketed IPv6).
    """
    number = port(port_value, port_variable)
    if not isinstance(value, str):
        raise ValueError('%s is an IP address of the host (or empty: its inventory address), got %r' % (variable, value))
    text = value.strip()
    address = ip_address(text) if text else ''
    if text and address is None:
        raise ValueError('%s is an IP address of the host (or empty: its inventory address), got %r: a host name, a '
                         'zone (%%) or anything else does not reach the command line' % (variable, value))
    wildcard = address in WILDCARDS or (address == '' and bool(allow_wildcard))
    if wildcard and not allow_wildcard:
        raise ValueError('%s is %s: every interface of %s, so anyone who reaches the host reads its metrics. Listen on '
                         'the internal address (leave %s empty for the inventory address) or, when every interface is '
                         'meant (a firewall in front, web config with auth), say so with %s: true.'
                         % (variable, address, host or 'the host', variable, allow_variable))
    chosen_by = variable
    if address == '' and not wildcard:
        address, chosen_by = _default_address(variable, host or 'the host', inventory_address, resolved, host_addresses,
                                              default_addresses)
    if wildcard:
        local = '[::1]' if address == '::' else '127.0.0.1'
        chosen_by = '%s (every interface, %s)' % (variable, allow_variable)
    else:
        local = '[%s]' % address if ':' in address else address
    return {'address': address, 'wildcard': wildcard, 'listen': hostport(address, number) if address else ':%d' % number,
            'local': local, 'port': number, 'chosen_by': chosen_by}


def _hasher():
    """``(hash, check)`` of the bcrypt the controller has (the Python package bcrypt, else passlib), or None."""
    try:
        import bcrypt  # pylint: disable=import-outside-toplevel

        def _hash(password):
            return bcrypt.hashpw(password.encode('utf-8'), bcrypt.gensalt(BCRYPT_COST)).decode('ascii')

        def _check(password, hashed):
            try:
                return bcrypt.checkpw(password.encode('utf-8'), hashed.encode('ascii'))
            except ValueError:
                return False
        return _hash, _check
    except ImportError:
        pass
    try:
        from passlib.hash import bcrypt as passlib_bcrypt  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None

    def _passlib_hash(password):
        return passlib_bcrypt.using(rounds=BCRYPT_COST, ident='2b').hash(password)

    def _passlib_check(password, hashed):
        try:
            return passlib_bcrypt.verify(password, hashed)
        except ValueError:
            return False
    return _passlib_hash, _passlib_check


def path(value, variable):
    """``value`` when it is an absolute path a command line and a YAML file can carry; ``ValueError`` otherwise."""
    if not isinstance(value, str) or not _PATH_RE.match(value):
        raise ValueError('%s is an absolute path without spaces, quotes, colons, %%, $, ` or backslashes, got %r'
                         % (variable, value))
    return value


def users(value, variable, existing=None, hasher=None, check_only=False):
    """``basic_auth_users`` ({name: bcrypt hash}) of a list of ``{name, password_hash}`` or ``{name, password}``.

    A clear-text ``password`` (from a vault) is hashed with bcrypt (cost 10) by ``hasher`` (default: the
    controller's bcrypt or passlib; none there is an error that asks for the hash); ``existing`` ({name: hash}, the
    file on the host) keeps a hash that still matches its password. ``check_only``: check everything (bcrypt there
    for a clear-text password included) without hashing; the hash of a clear-text password is then None. Errors
    name ``variable`` and the user, never a password.
    """
    if not isinstance(value, (list, tuple)):
        raise ValueError('%s is a list of {name, password_hash} (or {name, password}), got %s'
                         % (variable, type(value).__name__))
    existing = existing if isinstance(existing, dict) else {}
    out = {}
    for index, user in enumerate(value):
        where = '%s[%d]' % (variable, index)
        if not isinstance(user, dict):
            raise ValueError('%s is {name, password_hash} or {name, password}, got %s' % (where, type(user).__name__))
        unknown = sorted(set(user) - set(('name', 'password', 'password_hash')))
        if unknown:
            raise ValueError('%s: unknown key %s (name, password_hash or password)' % (where, ', '.join(map(str, unknown))))
        name = user.get('name')
        if not isinstance(name, str) or not _USER_RE.match(name):
            raise ValueError('%s: name is 1-64 of A-Z a-z 0-9 _ . @ + -, got %r' % (where, name))
        if name in out:
            raise ValueError('%s: the user %s is listed twice' % (where, name))
        where = '%s (user %s)' % (variable, name)
        if ('password' in user) == ('password_hash' in user):
            raise ValueError('%s: give password_hash (bcrypt) or password (clear text from a vault, hashed here), one '
                             'of them' % where)
        if 'password_hash' in user:
            hashed = user['password_hash']
            if not isinstance(hashed, str) or not _BCRYPT_RE.match(hashed.strip()):
                raise ValueError('%s: password_hash is not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04-31, 60 characters), '
                                 'as htpasswd -nBC 10 USER prints it after the colon' % where)
            out[name] = hashed.strip()
            continue
        password = user['password']
        if not isinstance(password, str) or not password:
            raise ValueError('%s: password is empty or not text' % where)
        if len(password.encode('utf-8')) > 72:
            raise ValueError('%s: password is longer than the 72 bytes bcrypt reads' % where)
        tools = hasher or _hasher()
        if tools is None:
            raise ValueError('%s: a clear-text password needs bcrypt on the controller to hash it (the Python package '
                             'bcrypt or passlib), and neither is installed; give its bcrypt hash as password_hash '
                             'instead (htpasswd -nBC 10 %s prints it after the colon)' % (where, name))
        if check_only:
            out[name] = None
            continue
        hash_password, check_password = tools
        earlier = existing.get(name)
        if isinstance(earlier, str) and _BCRYPT_RE.match(earlier) and check_password(password, earlier):
            out[name] = earlier
        else:
            out[name] = hash_password(password)
    return out


def web_config(basic_auth_users, cert_file='', key_file='', variable_prefix='', existing=None, hasher=None,
               check_only=False):
    """The content of a web config file (exporter-toolkit), or {} when neither TLS nor basic auth is asked.

    ``cert_file``/``key_file``: the TLS certificate and key on the node (both or neither);
    ``basic_auth_users``: as :func:`users`; ``variable_prefix`` (``node_exporter``) names the variables in
    errors; ``existing``: the parsed file on the node, whose hashes are kept when they still match; ``check_only``:
    as :func:`users` (the preflight, before anything changes).
    """
    prefix = variable_prefix + '_' if variable_prefix else ''
    config = {}
    if bool(cert_file) != bool(key_file):
        raise ValueError('%stls_cert and %stls_key go together: TLS needs both the certificate and its key'
                         % (prefix, prefix))
    if cert_file:
        config['tls_server_config'] = {'cert_file': path(cert_file, prefix + 'tls_cert'),
                                       'key_file': path(key_file, prefix + 'tls_key')}
    earlier = existing.get('basic_auth_users') if isinstance(existing, dict) else None
    hashed = users(basic_auth_users or [], prefix + 'basic_auth_users', existing=earlier, hasher=hasher,
                   check_only=check_only)
    if hashed:
        config['basic_auth_users'] = hashed
    return config
