# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``xuanwu.cluster.prometheus_scrape_configs`` and ``xuanwu.cluster.prometheus_duration_seconds``
(role xuanwu.cluster.prometheus)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _scrape


def _addresses(hosts, hostvars):
    out = {}
    for host in hosts:
        if not isinstance(host, str) or host in out:
            continue  # the scrape configuration says what is wrong with a name
        try:
            variables = hostvars[host]
        except KeyError:
            raise AnsibleFilterError('prometheus_scrape_configs: %r is not a host of the inventory' % (host,))
        address = variables.get('ansible_host', host) if hasattr(variables, 'get') else host
        out[host] = address if isinstance(address, str) else str(address)
    return out


def prometheus_scrape_configs(hosts, hostvars, node_port=9100, dcgm_hosts=None, dcgm_port=0,
                              self_target='localhost:9090', node_job='node', dcgm_job='dcgm', job_settings=None):
    if not isinstance(hosts, (list, tuple)) or not isinstance(dcgm_hosts or [], (list, tuple)):
        raise AnsibleFilterError('prometheus_scrape_configs: the hosts must be lists of inventory host names, got %r and %r'
                                 % (hosts, dcgm_hosts))
    dcgm_hosts = list(dcgm_hosts or [])
    try:
        addresses = _addresses(list(hosts) + dcgm_hosts, hostvars)
        return _scrape.scrape_configs(hosts, addresses, node_port=node_port, dcgm_hosts=dcgm_hosts, dcgm_port=dcgm_port,
                                      self_target=self_target, node_job=node_job, dcgm_job=dcgm_job,
                                      job_settings=job_settings)
    except ValueError as err:
        raise AnsibleFilterError('prometheus_scrape_configs: %s' % err)


def prometheus_duration_seconds(text, variable=None):
    """Seconds of a Prometheus duration. Not one: None (the role's assert says so), or with ``variable`` an error that
    names it."""
    try:
        return _scrape.duration_seconds(text)
    except ValueError as err:
        if variable is None:
            return None
        raise AnsibleFilterError('%s: %s' % (variable, err))


class FilterModule(object):
    def filters(self):
        return {'prometheus_scrape_configs': prometheus_scrape_configs,
                'prometheus_duration_seconds': prometheus_duration_seconds}
