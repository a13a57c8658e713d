# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of bad-node isolation by rounds of node pairs (playbooks/isolate.yml): the floors, the checked
settings (coverage, hosts of interest, seed), the next round's plan, one pair's figures and the report.
Each runs once per round on the controller, except isolation_measurement (once per pair, on its head
node's results)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.module_utils import _isolate
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _isolation_report


def _plain(value):
    """Ansible's lazy containers and tagged values as plain Python data."""
    if isinstance(value, dict):
        return dict((str(k), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def _call(name, func, *args):
    try:
        return func(*[_plain(a) for a in args])
    except _isolate.IsolationError as err:
        raise AnsibleFilterError('xuanwu.cluster.%s: %s' % (name, err))
    except (KeyError, TypeError, ValueError) as err:
        raise AnsibleFilterError('xuanwu.cluster.%s: unusable input (%s: %s)' % (name, type(err).__name__, err))


def isolation_floors(profile, max_bytes='8G'):
    return _call('isolation_floors', _isolate.floors_of, profile, max_bytes)


def isolation_settings(hosts, seed=None, coverage='quick', hosts_of_interest=None):
    return _call('isolation_settings', _isolate.settings, hosts, seed, coverage, hosts_of_interest)


def isolation_next(results, hosts, floors, seed=None, coverage='quick', hosts_of_interest=None):
    def plan(results, hosts, floors, seed, coverage, interest):
        checked = _isolate.settings(hosts, seed, coverage, interest)
        found = _isolate.next_round(hosts, results, floors, checked['seed'], checked['coverage'], checked['interest'])
        return _isolate.plan_for_hosts(found) if found else {'round': None, 'waves': [], 'assign': {}}
    return _call('isolation_next', plan, results, hosts, floors, seed, coverage, hosts_of_interest)


def isolation_measurement(nccl_run, expected_ranks, ib_run=None):
    return _call('isolation_measurement', _isolate.pair_measurement, nccl_run, expected_ranks, ib_run)


def isolation_wave_results(found, round_no, wave_no, pairs):
    return _call('isolation_wave_results', _isolate.wave_results, found, round_no, wave_no, pairs)


def isolation_report(results, hosts, floors, meta=None, coverage='quick', hosts_of_interest=None):
    def report(results, hosts, floors, meta, coverage, interest):
        checked = _isolate.settings(hosts, None, coverage, interest)
        data = dict(meta or {})
        data.update(hosts=sorted(hosts), verdict=_isolate.verdict(hosts, results, floors, checked['coverage'], checked['interest']))
        return {'verdict': data['verdict'], 'files': _isolation_report.render_all(data)}
    return _call('isolation_report', report, results, hosts, floors, meta, coverage, hosts_of_interest)


class FilterModule(object):
    def filters(self):
        return {
            'isolation_floors': isolation_floors,
            'isolation_settings': isolation_settings,
            'isolation_next': isolation_next,
            'isolation_measurement': isolation_measurement,
            'isolation_wave_results': isolation_wave_results,
            'isolation_report': isolation_report,
        }
