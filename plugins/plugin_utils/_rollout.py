# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decisions of a rollout batch (site.yml, docs/rollout.md): each host's outcome, and whether the batch's
failures stop the rollout. Pure functions on plain data; the filters of plugins/filter/rollout.py call them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

OUTCOMES = ('passed', 'failed', 'reboot_required', 'not_ours', 'unreachable')
FAILING = ('failed', 'reboot_required', 'unreachable')


class RolloutError(ValueError):
    """Input a decision cannot be made from."""


def drained(drain, check_mode=False):
    """Whether the rollout may change the node: drained by this run, no scheduler, or (check mode) it would be."""
    drain = drain or {}
    if drain.get('backend', 'none') == 'none' or drain.get('drained'):
        return True
    return bool(check_mode) and not drain.get('timed_out') and drain.get('owned', True) is not False


def outcome(host, state, report):
    """``{outcome, failed_checks, reasons}`` of one host of a batch.

    ``state``: what the batch's tasks kept of the host - ``drain`` (the scheduler's result), ``check_mode``,
    ``provision_error`` and ``provision_check`` (the step that broke), ``reboot_reason`` (a reboot still needed),
    ``rebooted`` (the reboot made); ``report``: the batch report's ``gate_hosts``, ``failed_checks``, ``verdicts``.
    The first that applies wins: someone else's drain, a drain that did not finish, a broken step, a reboot still
    needed, the report's verdict; else passed.
    """
    if not isinstance(state, dict) or not isinstance(report, dict):
        raise RolloutError('the state of %s and the batch report must be mappings' % host)
    drain = state.get('drain') or {}
    if drain.get('owned', True) is False:
        return {'outcome': 'not_ours', 'failed_checks': [], 'reasons': [drain.get('message') or 'drained by someone else']}
    if not drained(drain, state.get('check_mode')):
        return {'outcome': 'failed', 'failed_checks': ['drain'], 'reasons': [drain.get('message') or 'not drained']}
    if state.get('provision_error'):
        return {'outcome': 'failed', 'failed_checks': [state.get('provision_check') or 'provision'],
                'reasons': [state['provision_error']]}
    if state.get('reboot_reason'):
        return {'outcome': 'reboot_required', 'failed_checks': ['reboot'],
                'reasons': ['reboot required: %s' % state['reboot_reason']]}
    if host in (report.get('gate_hosts') or []):
        return {'outcome': 'failed', 'failed_checks': list((report.get('failed_checks') or {}).get(host) or ['validation']),
                'reasons': [(report.get('verdicts') or {}).get(host) or 'the validation failed']}
    reasons = ['reboot: %s' % state['rebooted']] if state.get('rebooted') else []
    return {'outcome': 'passed', 'failed_checks': [], 'reasons': reasons}


def batch_outcomes(batch, outcomes, reached=None):
    """Every host of ``batch`` with its outcome: a host without one failed or became unreachable before it was decided.

    ``reached``: ``{host: the result of the batch's reach check}`` (site.yml tries every node of a batch before its
    drain); a host without an outcome whose check was unreachable is said so, with the connection's message.
    """
    outcomes = outcomes or {}
    reached = reached if isinstance(reached, dict) else {}
    out = {}
    for host in batch:
        check = reached.get(host) if isinstance(reached.get(host), dict) else {}
        if outcomes.get(host):
            out[host] = outcomes[host]
        elif check.get('unreachable'):
            message = ' '.join(str(check.get('msg') or 'no message').split())
            out[host] = {'outcome': 'unreachable', 'failed_checks': ['unreachable'],
                         'reasons': ['unreachable at the start of its batch (not drained, not changed): %s' % message]}
        else:
            out[host] = {'outcome': 'unreachable', 'failed_checks': ['unreachable'],
                         'reasons': ['the host failed or became unreachable before its outcome was decided']}
    return out


def stops(outcomes, max_fail_percentage):
    """Whether the batch's failures stop the rollout, as Ansible decides it for ``max_fail_percentage``: more than
    that share of the batch failed, or every host of it did."""
    try:
        limit = float(max_fail_percentage)
    except (TypeError, ValueError):
        raise RolloutError('max_fail_percentage must be a number, got %r' % (max_fail_percentage,))
    size = len(outcomes)
    failed = sum(1 for entry in outcomes.values() if (entry or {}).get('outcome') in FAILING)
    return failed > 0 and (failed == size or failed * 100.0 > limit * size)
