# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Findings: the one shape every check emits, severities and their rank, site overrides, the summary.

A finding is ``{host, check, component, severity, measured, expected, message, remediation}`` with
``severity`` one of ``fail`` | ``warn`` | ``info``. Every check module describes its checks with
``entry`` (a catalogue entry) and builds findings with ``make``; ``_catalogue`` joins the entries of
all check modules into the one catalogue of check ids. Pure: no I/O, no imports of other modules of
this collection (every check module imports this one).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import string

FAIL, WARN, INFO = 'fail', 'warn', 'info'
SEVERITIES = (FAIL, WARN, INFO)
# Higher is worse. Every ordering of findings or statuses in the collection uses this rank.
RANK = {INFO: 0, WARN: 1, FAIL: 2}
STATUSES = ('pass', WARN, FAIL)
FIELDS = ('host', 'check', 'component', 'severity', 'measured', 'expected', 'message', 'remediation')


def entry(title, severity, remediation, kind=None, compares=None):
    """A catalogue entry: what the check is, its default severity and the remediation text.

    ``kind`` names the component a finding points at (``gpu<N>``), ``compares`` says what is compared with
    what; both go to docs/checks.md. The remediation may hold ``{placeholders}`` that ``make`` fills in.
    """
    if severity not in SEVERITIES:
        raise ValueError('severity must be one of %s, got %r' % (', '.join(SEVERITIES), severity))
    return {'title': title, 'default_severity': severity, 'remediation': remediation,
            'component_kind': kind, 'compares': compares}


def join(*catalogues):
    """One catalogue from several; a check id defined twice is an error (one definition per check)."""
    out = {}
    for catalogue in catalogues:
        for check, spec in catalogue.items():
            if check in out:
                raise ValueError('check id %s is defined twice' % check)
            out[check] = spec
    return out


class _Defaulting(dict):
    def __missing__(self, key):
        return '<%s>' % key


def render(text, context=None):
    """``text`` with ``{placeholders}`` filled from ``context``; a missing one shows as ``<placeholder>``."""
    return string.Formatter().vformat(text, (), _Defaulting(context or {}))


def make(catalogue, host, check, component, measured, expected, message, severity=None, remediation=None,
         context=None):
    """The finding of ``check`` (an id of ``catalogue``): severity and remediation default to the entry's
    (its ``{placeholders}`` filled from ``context`` when one is given)."""
    spec = catalogue[check]
    severity = severity or spec['default_severity']
    if severity not in SEVERITIES:
        raise ValueError('severity must be one of %s, got %r' % (', '.join(SEVERITIES), severity))
    if remediation is None:
        remediation = spec['remediation'] if context is None else render(spec['remediation'], context)
    return {'host': host, 'check': check, 'component': component, 'severity': severity, 'measured': measured,
            'expected': expected, 'message': message, 'remediation': remediation}


def sort_key(finding):
    """Worst first, then by check id and component."""
    return (-RANK.get(finding.get('severity'), -1), finding.get('check') or '', str(finding.get('component') or ''))


# Root cause first: what the node is (its inventory: GPUs present, model, driver, the probes that read them) comes
# before its state, and both before what they cause under load (bandwidth, workloads, GPU samples). Globs, by tier.
ROOT_CAUSE_TIERS = (
    ('probe.*', 'gpu.count', 'gpu.model', 'gpu.driver_*', 'gpu.amd_tools_missing', 'software.driver_version',
     'software.cuda_driver_version', 'gpu.memory', 'gpu.nvlink_count', 'gpu.topology', 'gpu.xgmi_link', 'ib.tools_missing',
     'ib.port_count', 'workload.placement', 'collectives.rank_count'),
    ('gpu.*', 'ib.*', 'network.*', 'host.*', 'software.*', 'consistency.*', 'facts.*', 'mesh.*', 'container.*',
     'workload.gpu_*'),
)


def root_cause_tier(check):
    """0 for an inventory fact, 1 for the node's state, 2 for a consequence under load (collectives, workloads, dmon)."""
    for tier, patterns in enumerate(ROOT_CAUSE_TIERS):
        if any(fnmatch.fnmatchcase(check or '', pattern) for pattern in patterns):
            return tier
    return len(ROOT_CAUSE_TIERS)


def root_cause_key(finding):
    """Worst first, then root cause first (``root_cause_tier``), then by check id and component."""
    return (-RANK.get(finding.get('severity'), -1), root_cause_tier(finding.get('check')), finding.get('check') or '',
            str(finding.get('component') or ''))


def worst(findings):
    """The finding to name first: the worst severity and, among those, the root cause (None without findings)."""
    findings = [f for f in findings or [] if isinstance(f, dict)]
    return min(findings, key=root_cause_key) if findings else None


def grouped_text(findings, limit=None):
    """Findings as text, one line per check (root cause first): a check with several findings (24 sizes of one
    collective) is one line listing them, and each remediation is given once (``Fix: as for [check]`` after)."""
    groups, order = {}, []
    for finding in sorted((f for f in findings or [] if isinstance(f, dict)), key=root_cause_key):
        if finding.get('check') not in groups:
            order.append(finding.get('check'))
        groups.setdefault(finding.get('check'), []).append(finding)
    lines, fixes = [], {}
    for check in order[:limit] if limit else order:
        found = groups[check]
        parts = ['%s: measured %s, expected %s' % (f.get('component'), _text(f.get('measured')), _text(f.get('expected')))
                 for f in found]
        head = '[%s]' % check if len(found) == 1 else '[%s] %d findings:' % (check, len(found))
        fix = []
        for remediation in sorted(set(f.get('remediation') or '' for f in found)):
            if not remediation:
                continue
            if remediation in fixes:
                fix.append('Fix: as for [%s].' % fixes[remediation])
            else:
                fixes[remediation] = check
                fix.append('Fix: %s' % remediation)
        lines.append(' '.join([head, '; '.join(parts) + '.'] + fix))
    if limit and len(order) > limit:
        lines.append('... and %d more check(s)' % (len(order) - limit))
    return lines


def _text(value):
    if value is None:
        return '-'
    if isinstance(value, (list, tuple)):
        return ', '.join(str(v) for v in value)
    return str(value)


def is_failing(finding, fail_on=FAIL):
    """True for a ``fail`` finding, and for a ``warn`` finding when ``fail_on`` is ``warn``."""
    return RANK.get(finding.get('severity'), -1) >= RANK[fail_on]


def failed_checks(findings):
    return sorted(set(f['check'] for f in findings or [] if f.get('severity') == FAIL))


def status_of(findings):
    """``fail`` if any finding fails, else ``warn`` if any warns, else ``pass`` (info never changes it)."""
    worst = max([RANK.get(f.get('severity'), -1) for f in findings or []] or [-1])
    return FAIL if worst >= RANK[FAIL] else WARN if worst >= RANK[WARN] else 'pass'


def summarise(findings):
    """Overall status, counts per severity and per-host status."""
    counts = dict((severity, 0) for severity in SEVERITIES)
    by_host = {}
    for finding in findings or []:
        if finding.get('severity') in counts:
            counts[finding['severity']] += 1
        by_host.setdefault(finding.get('host'), []).append(finding)
    return {'status': status_of(findings), 'counts': counts,
            'hosts': dict((host, status_of(found)) for host, found in by_host.items())}


def merged(findings, added):
    """``(findings, summary)``: a host's findings with ``added`` appended (one already there is not added twice) and
    their ``summarise`` (status, counts), computed once over all of them. The one way a step adds findings to those a
    host has (the workload checks, the comparison between hosts, the fleet step)."""
    out = list(findings or [])
    for finding in added or []:
        if finding not in out:
            out.append(finding)
    return out, summarise(out)


def verdict(host, findings, fail_on='fail', error=None):
    """The gate's message for one host: why it fails (``error``: it was not validated; else its findings at or above
    ``fail_on``, one line per check, root cause first, each remediation once), ``''`` when it passes. The one
    definition of a failing host, for the report's gate and a host's own result alike."""
    if error:
        return '%s was not validated: %s' % (host, error)
    level = fail_on if fail_on in (FAIL, WARN) else FAIL
    failing = [f for f in findings or [] if isinstance(f, dict) and is_failing(f, level)]
    if not failing:
        return ''
    return '%s FAILED %d check(s): %s' % (host, len(set(f.get('check') for f in failing)), ' '.join(grouped_text(failing)))


def _override_for(check, table):
    if check in table:
        return table[check]
    for pattern in table:
        if fnmatch.fnmatchcase(check, pattern):
            return table[pattern]
    return None


def disabled_by(check, checks):
    """The pattern of a profile's ``checks.disable`` that switches ``check`` off, or None."""
    for pattern in (checks or {}).get('disable') or []:
        if fnmatch.fnmatchcase(check, pattern):
            return pattern
    return None


def apply_overrides(findings, checks):
    """Apply a profile's ``checks`` section (``disable``, ``severity``: ids or globs) to findings; a new list."""
    checks = checks or {}
    severities = checks.get('severity') or {}
    out = []
    for finding in findings:
        if disabled_by(finding['check'], checks) is not None:
            continue
        severity = _override_for(finding['check'], severities)
        if severity:
            finding = dict(finding, severity=severity)
        out.append(finding)
    return out
