# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus's scrape configuration built from an inventory, and Prometheus durations (role prometheus).

:func:`scrape_configs` turns the hosts to scrape (inventory names and their addresses) into the
``scrape_configs`` list of ``prometheus.yml``: one job for node_exporter, one for dcgm-exporter when
its port is set, one for Prometheus itself. Every target carries ``instance: <inventory name>``, so a
node_exporter series and the ``host`` label of the collection's own metrics (docs/metrics.md) name the
host the same way; ``job_settings`` adds a job's scheme, TLS and basic auth (a password only by file).
:func:`duration_seconds` reads a Prometheus duration (``30d``, ``1y``, ``1w2d12h``) and :func:`duration_text`
writes one as Prometheus prints it (``35d`` -> ``5w``), so a role compares what it asked with what runs by
length, never by spelling.

No Ansible imports, no I/O; bad input raises ``ValueError`` with a message that names it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Prometheus's duration grammar (model.ParseDuration): units from the largest to the smallest, each at
# most once, or a lone "0".
_DURATION_RE = re.compile(r'^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$')
_UNITS_MS = (365 * 86400000, 7 * 86400000, 86400000, 3600000, 60000, 1000, 1)
# host names, IPv4 and IPv6 addresses: no spaces, quotes, slashes or YAML/PromQL syntax
_ADDRESS_RE = re.compile(r'^[A-Za-z0-9_.:%-]+$')
_JOB_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_-]*$')


def duration_seconds(text):
    """Seconds of a Prometheus duration such as ``30d``, ``720h``, ``1y``, ``2w3d``; ``ValueError`` otherwise."""
    if not isinstance(text, str):
        raise ValueError('a Prometheus duration is text such as 30d, not %s' % type(text).__name__)
    text = text.strip()
    match = _DURATION_RE.match(text)
    if text == '0':
        return 0
    if not text or not match:
        raise ValueError('%r is not a Prometheus duration (a number and a unit y, w, d, h, m, s or ms, '
                         'largest unit first, e.g. 30d, 90d, 1y, 1w2d)' % text)
    total = 0
    for number, unit in zip(match.groups(), _UNITS_MS):
        if number is not None:
            total += int(number) * unit
    # whole milliseconds add up exactly; seconds as an int where they are whole
    return total // 1000 if total % 1000 == 0 else total / 1000.0


def duration_text(seconds):
    """A duration as Prometheus prints it (prometheus/common model.Duration.String): years and weeks only when they
    divide it exactly, then days, hours, minutes, seconds, milliseconds; ``0s`` for nothing. ``35d`` reads back as
    ``5w``, ``720h`` and ``4w2d`` as ``30d``, ``365d`` as ``1y``."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise ValueError('a duration is a number of seconds, at least 0, not %r' % (seconds,))
    ms = int(round(seconds * 1000))
    if ms == 0:
        return '0s'
    out = []
    for unit, size, exact in (('y', 365 * 86400000, True), ('w', 7 * 86400000, True), ('d', 86400000, False),
                              ('h', 3600000, False), ('m', 60000, False), ('s', 1000, False), ('ms', 1, False)):
        if exact and ms % size:
            continue
        if ms >= size:
            out.append('%d%s' % (ms // size, unit))
            ms %= size
    return ''.join(out)


def _port(value, name, allow_zero=False):
    if isinstance(value, bool):
        raise ValueError('%s must be a TCP port number, got %r' % (name, value))
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise ValueError('%s must be a TCP port number, got %r' % (name, value))
    if not (allow_zero and port == 0) and not 1 <= port <= 65535:
        raise ValueError('%s must be 1-65535%s, got %r' % (name, ' (0: off)' if allow_zero else '', value))
    return port


def target(address, port):
    """``address:port`` as Prometheus wants it (an IPv6 address in brackets)."""
    if ':' in address and not address.startswith('['):
        return '[%s]:%d' % (address, port)
    return '%s:%d' % (address, port)


# What a job may add to its scrape configuration, and the one form of each: a password only as a file
# (password_file), never inline in prometheus.yml.
_JOB_SETTINGS = ('scheme', 'basic_auth', 'tls_config')
_TLS_KEYS = ('ca_file', 'server_name')
_FILE_RE = re.compile(r'^/[^\0\n]*$')


def _job_settings(job, settings):
    """The checked settings of one job, in prometheus.yml's order (scheme, basic_auth, tls_config)."""
    what = 'job_settings of the job %s' % job
    if not isinstance(settings, dict):
        raise ValueError('%s must be a mapping, got %r' % (what, settings))
    unknown = sorted(set(settings) - set(_JOB_SETTINGS))
    if unknown:
        raise ValueError('%s: %s not one of %s' % (what, ', '.join(map(str, unknown)), ', '.join(_JOB_SETTINGS)))
    out = {}
    scheme = settings.get('scheme', 'http')
    if scheme not in ('http', 'https'):
        raise ValueError('%s: scheme is http or https, got %r' % (what, scheme))
    if scheme == 'https':
        out['scheme'] = 'https'
    auth = settings.get('basic_auth')
    if auth:
        if not isinstance(auth, dict) or 'password' in auth:
            raise ValueError('%s: basic_auth is {username, password_file}: the password stays in a file of its own, '
                             'never in prometheus.yml' % what)
        if sorted(auth) != ['password_file', 'username'] or not isinstance(auth['username'], str) \
                or not auth['username'] or ':' in auth['username'] \
                or not isinstance(auth['password_file'], str) or not _FILE_RE.match(auth['password_file']):
            raise ValueError('%s: basic_auth is {username (no colon), password_file (an absolute path)}, got %r'
                             % (what, sorted(auth)))
        out['basic_auth'] = {'username': auth['username'], 'password_file': auth['password_file']}
    tls = settings.get('tls_config')
    if tls:
        if scheme != 'https':
            raise ValueError('%s: tls_config without scheme https' % what)
        if not isinstance(tls, dict) or set(tls) - set(_TLS_KEYS) \
                or not all(isinstance(tls[key], str) and tls[key] for key in tls) \
                or ('ca_file' in tls and not _FILE_RE.match(tls['ca_file'])):
            raise ValueError('%s: tls_config holds ca_file (an absolute path) and server_name, got %r' % (what, tls))
        out['tls_config'] = dict((key, tls[key]) for key in _TLS_KEYS if key in tls)
    return out


def _job(name, static_configs, job_settings):
    job = {'job_name': name}
    job.update(_job_settings(name, job_settings.get(name) or {}))
    job['static_configs'] = static_configs
    return job


def _static_configs(hosts, addresses, port):
    return [{'targets': [target(addresses.get(host, host), port)], 'labels': {'instance': host}} for host in hosts]


def _checked_hosts(hosts, addresses, what):
    if not isinstance(hosts, (list, tuple)):
        raise ValueError('%s must be a list of inventory host names, got %r' % (what, hosts))
    seen = set()
    out = []
    for host in hosts:
        if not isinstance(host, str) or not _ADDRESS_RE.match(host):
            raise ValueError('%s: %r is not an inventory host name Prometheus can label' % (what, host))
        address = addresses.get(host, host)
        if not isinstance(address, str) or not _ADDRESS_RE.match(address.strip('[]')):
            raise ValueError('%s: the address of %s (ansible_host) %r is not a host name or IP address' % (what, host, address))
        if host not in seen:
            seen.add(host)
            out.append(host)
    return out


def scrape_configs(hosts, addresses, node_port=9100, dcgm_hosts=None, dcgm_port=0, self_target='localhost:9090',
                   node_job='node', dcgm_job='dcgm', job_settings=None):
    """The ``scrape_configs`` of prometheus.yml.

    ``hosts``: inventory names of the node_exporter hosts, in order (repeats are dropped);
    ``addresses``: a mapping host -> address to connect to (``ansible_host``; a host it lacks is reached by
    its name); ``dcgm_hosts``: the hosts that run dcgm-exporter (default: none), scraped on ``dcgm_port``
    (0: no dcgm job). One static config per host (its ``instance`` label is its inventory name).
    ``job_settings``: per job name (``prometheus``, ``node_job``, ``dcgm_job``) its ``scheme`` (http, https),
    ``basic_auth`` ({username, password_file}: an inline password is refused) and ``tls_config`` ({ca_file,
    server_name}, with https only).
    """
    if not isinstance(addresses, dict):
        raise ValueError('addresses must be a mapping of host -> address, got %r' % (addresses,))
    job_settings = job_settings or {}
    if not isinstance(job_settings, dict) or set(job_settings) - set(('prometheus', node_job, dcgm_job)):
        raise ValueError('job_settings maps the jobs prometheus, %s and %s to their settings, got %r'
                         % (node_job, dcgm_job, job_settings))
    for job in (node_job, dcgm_job):
        if not isinstance(job, str) or not _JOB_RE.match(job):
            raise ValueError('%r is not a Prometheus job name (letters, digits, _ and -)' % (job,))
    if node_job == dcgm_job:
        raise ValueError('the node_exporter and dcgm-exporter jobs need different names, both are %r' % node_job)
    node_port = _port(node_port, 'the node_exporter port')
    dcgm_port = _port(dcgm_port, 'the dcgm-exporter port', allow_zero=True)
    configs = []
    if self_target:
        configs.append(_job('prometheus', [{'targets': [self_target]}], job_settings))
    configs.append(_job(node_job, _static_configs(_checked_hosts(hosts, addresses, 'hosts to scrape'), addresses, node_port),
                        job_settings))
    if dcgm_port and dcgm_hosts:
        configs.append(_job(dcgm_job, _static_configs(_checked_hosts(dcgm_hosts, addresses, 'dcgm-exporter hosts'),
                                                      addresses, dcgm_port), job_settings))
    return configs
