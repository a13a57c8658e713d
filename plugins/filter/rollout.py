# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of a rollout batch (site.yml): a host's outcome, the batch's outcomes, whether the batch stops the rollout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.filter.isolation import _plain
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _rollout


def _call(name, func, *args):
    try:
        return func(*[_plain(a) for a in args])
    except _rollout.RolloutError as err:
        raise AnsibleFilterError('xuanwu.cluster.%s: %s' % (name, err))
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise AnsibleFilterError('xuanwu.cluster.%s: unusable input (%s: %s)' % (name, type(err).__name__, err))


def rollout_drained(drain, check_mode=False):
    return _call('rollout_drained', _rollout.drained, drain, check_mode)


def rollout_outcome(state, host, report):
    return _call('rollout_outcome', lambda s, h, r: _rollout.outcome(h, s, r), state, host, report)


def rollout_batch_outcomes(outcomes, batch, reached=None):
    return _call('rollout_batch_outcomes', lambda o, b, r: _rollout.batch_outcomes(b, o, r), outcomes, batch, reached)


def rollout_stops(outcomes, max_fail_percentage):
    return _call('rollout_stops', _rollout.stops, outcomes, max_fail_percentage)


class FilterModule(object):
    def filters(self):
        return {'rollout_drained': rollout_drained, 'rollout_outcome': rollout_outcome, 'rollout_batch_outcomes': rollout_batch_outcomes,
                'rollout_stops': rollout_stops}
