# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus's scrape configuration built from an inventory, and Prometheus durations (role prometheus).

:func:`scrape_configs` turns the hosts to scrape (inventory names and their addresses) into the
``scrape_configs`` list of ``prometheus.yml``: one job for node_exporter, one for dcgm-exporter when
its port is set, one for Prometheus itself. Every target carries ``instance: <inventory name>``, so a
node_exporter series and the ``host`` label of the collection's own metrics (docs/metrics.md) name the
host the same way. :func:`duration_seconds` reads a Prometheus duration (``30d``, ``1y``, ``1w2d12h``).

No Ansible imports, no I/O; bad input raises ``ValueError`` with a message that names it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Prometheus's duration grammar (model.ParseDuration): units from the largest to the smallest, each at
# most once, or a lone "0".
_DURATION_RE = re.compile(r'^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$')
_UNITS = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)
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
    for number, unit in zip(match.groups(), _UNITS):
        if number is not None:
            total += int(number) * unit
    return total


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
                   node_job='node', dcgm_job='dcgm'):
    """The ``scrape_configs`` of prometheus.yml.

    ``hosts``: inventory names of the node_exporter hosts, in order (repeats are dropped);
    ``addresses``: a mapping host -> address to connect to (``ansible_host``; a host it lacks is reached by
    its name); ``dcgm_hosts``: the hosts that run dcgm-exporter (default: none), scraped on ``dcgm_port``
    (0: no dcgm job). One static config per host (its ``instance`` label is its inventory name).
    """
    if not isinstance(addresses, dict):
        raise ValueError('addresses must be a mapping of host -> address, got %r' % (addresses,))
    for job in (node_job, dcgm_job):
        if not isinstance(job, str) or not _JOB_RE.match(job):
            raise ValueError('%r is not a Prometheus job name (letters, digits, _ and -)' % (job,))
    if node_job == dcgm_job:
        raise ValueError('the node_exporter and dcgm-exporter jobs need different names, both are %r' % node_job)
    node_port = _port(node_port, 'the node_exporter port')
    dcgm_port = _port(dcgm_port, 'the dcgm-exporter port', allow_zero=True)
    configs = []
    if self_target:
        configs.append({'job_name': 'prometheus', 'static_configs': [{'targets': [self_target]}]})
    configs.append({'job_name': node_job,
                    'static_configs': _static_configs(_checked_hosts(hosts, addresses, 'hosts to scrape'), addresses, node_port)})
    if dcgm_port and dcgm_hosts:
        configs.append({'job_name': dcgm_job,
                        'static_configs': _static_configs(_checked_hosts(dcgm_hosts, addresses, 'dcgm-exporter hosts'),
                                                          addresses, dcgm_port)})
    return configs
