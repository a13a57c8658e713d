# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One host's verdict from its facts and profile, and the hosts compared with each other (controller side).

Shared by the actions ``node_check`` (facts probed by an earlier task), ``node_validate`` (probe and
verdict in one task), ``host_compare`` (every host of a run once, after the probes) and
``validation_report``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue, _checks, _findings, _hygiene, _judge

# The arguments of a host's verdict (documented by the doc fragment xuanwu.cluster.verdict).
VERDICT_ARGUMENT_SPEC = dict(
    fail_on=dict(type='str', default='fail', choices=['fail', 'warn']),
    job_ports=dict(type='list', elements='raw', default=[]),
    job_env=dict(type='dict', default={}),
    job_mpirun_args=dict(type='list', elements='str', default=[]),
)

# The facts compared between the hosts of one profile (consistency.<key>).
CONSISTENCY_KEYS = _checks.DEFAULT_GROUP_KEYS


def verdict(facts, profile, host, fail_on='fail', job_ports=(), job_env=None, job_mpirun_args=()):
    """``(findings, summary, failing, checks)`` of one host (``checks``: ``Judge.node_checks``'s, the checks that judged
    nothing on it and why); raises ``ProfileError`` for a bad profile."""
    ports = _hygiene.job_ports(env=job_env or {}, mpirun_args=list(job_mpirun_args), extra=list(job_ports))
    judge = _judge.Judge(_hygiene.with_job_ports(profile, ports))
    findings, checks = judge.node_checks(facts, host, _catalogue.CATALOGUE)
    summary = _findings.summarise(findings)
    failing = [f for f in findings if _findings.is_failing(f, fail_on)]
    return findings, summary, failing, checks


def _dig(facts, key):
    value = facts
    for part in key.split('.'):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def summary(facts, profile, path, fail_on='fail', flags=(), compare=True, host=None, findings=(), status=None, error=None,
            checks=None):
    """The host's one result fact, ``xuanwu_node``: what the later steps, the report and the gate read of it, small
    whatever the size of its facts.

    ``status`` (pass, warn, fail; ``error`` when it was not validated), ``findings``, ``error`` (why it was not
    validated, or None), ``verdict`` (the gate's message, ``''`` when it passes: ``_findings.verdict``), ``fail_on``
    (the lowest severity that fails it), ``flags`` (the stages switched on for it: ``stages``, ``on_failed``,
    ``multinode``, ``recheck``), ``compare`` (the values the comparison between hosts reads; None leaves the host
    out of it) and ``checks`` (``{check: {status, why}}`` of the checks that judged nothing on it: not applicable, not
    measured; the report's check status reads them, docs/report-format.md).
    """
    entry = None
    if compare and facts is not None and not error:
        entry = {'profile_path': path, 'checks': (profile or {}).get('checks'),
                 'values': dict((key, _dig(facts or {}, key)) for key in CONSISTENCY_KEYS)}
    findings = list(findings or [])
    status = 'error' if error else status or _findings.status_of(findings)
    return {'status': status, 'findings': findings, 'error': error or None,
            'verdict': _findings.verdict(host, findings, fail_on, error), 'compare': entry, 'flags': list(flags),
            'fail_on': fail_on, 'checks': dict(checks or {})}


def with_findings(node, host, added):
    """``xuanwu_node`` with ``added`` findings (``_findings.merged``): status and verdict computed again, an error
    stays an error. A host without a result yet gets one."""
    node = dict(node) if isinstance(node, dict) else summary(None, None, None, host=host)
    findings, merged = _findings.merged(node.get('findings'), added)
    node['findings'] = findings
    if node.get('status') != 'error':
        node['status'] = merged['status']
    node['verdict'] = _findings.verdict(host, findings, node.get('fail_on') or 'fail', node.get('error'))
    return node


def _nested(values):
    facts = {}
    for key, value in values.items():
        node = facts
        parts = key.split('.')
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return facts


def compare(entries):
    """``consistency.<key>`` findings by host: the hosts of one profile file compared with each other.

    ``entries``: ``{host: summary(...)['compare']}``; each host's own ``checks`` overrides (disable, severity)
    apply to its findings. Linear in the number of hosts.
    """
    by_profile = {}
    for host, entry in entries.items():
        if isinstance(entry, dict) and entry.get('profile_path'):
            by_profile.setdefault(entry['profile_path'], {})[host] = _nested(entry.get('values') or {})
    found = {}
    for group in by_profile.values():
        if len(group) < 2:
            continue
        found.update(_judge.compare_hosts(group, dict((host, entries[host].get('checks')) for host in group), CONSISTENCY_KEYS))
    return found


def _caches(hostvars):
    manager = getattr(hostvars, '_variable_manager', None)
    return getattr(manager, '_fact_cache', None), getattr(manager, '_nonpersistent_fact_cache', None)


def fact_names(hostvars, host):
    """The names of the facts a module set for ``host`` (this run, or an earlier one kept by a fact cache)."""
    facts_cache, _set_facts = _caches(hostvars)
    try:
        return set((facts_cache.get(host) or {}) if facts_cache is not None else ())
    except Exception:  # pylint: disable=broad-except
        return set()


def host_values(hostvars, host, names):
    """Values of ``names`` of ``host`` as the facts hold them (set_fact's over a module's), None where absent.

    Reads the variable manager's fact caches directly: ``hostvars[host]`` would build every variable of the
    host, deep-copying all its facts (tens of KB per node) on each read, which made reading every host of a
    fleet cost seconds per hundred hosts. Falls back to ``hostvars.raw_get`` where those caches are not there.
    """
    facts_cache, set_facts = _caches(hostvars)
    if facts_cache is None or set_facts is None:
        data = hostvars.raw_get(host) if hasattr(hostvars, 'raw_get') else hostvars[host]
        return dict((name, data.get(name) if hasattr(data, 'get') else None) for name in names)
    try:
        facts = facts_cache.get(host) or {}
    except Exception:  # pylint: disable=broad-except
        facts = {}
    extra = set_facts.get(host) or {}
    return dict((name, extra[name] if name in extra else facts.get(name)) for name in names)


def plan(summaries):
    """The comparison between hosts and the host lists of the later stages, from every host's ``xuanwu_node``.

    Returns ``{'findings': {host: [...]}, 'failing': [...], 'stage_hosts': [...], 'multinode_hosts': [...],
    'recheck_hosts': [...]}``: a host whose comparison fails is not fit for a stage (unless its flags say
    ``on_failed``), like a host whose own checks fail (node_validate leaves the flags out for it).
    """
    entries = dict((h, s['compare']) for h, s in summaries.items() if isinstance(s, dict) and isinstance(s.get('compare'), dict))
    found = compare(entries)
    failing = sorted(h for h, fs in found.items() if any(_findings.is_failing(f, 'fail') for f in fs))
    out = {'findings': found, 'failing': failing, 'stage_hosts': [], 'multinode_hosts': [], 'recheck_hosts': []}
    bad = set(failing)
    for host in sorted(summaries):
        flags = (summaries[host] or {}).get('flags') or [] if isinstance(summaries[host], dict) else []
        if 'stages' in flags and (host not in bad or 'on_failed' in flags):
            out['stage_hosts'].append(host)
        if 'multinode' in flags and host not in bad:
            out['multinode_hosts'].append(host)
        if 'recheck' in flags and (host not in bad or 'on_failed' in flags):
            out['recheck_hosts'].append(host)
    return out
