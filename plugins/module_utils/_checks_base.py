# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node checks' common parts: the catalogue entry helper, small value helpers and the run object that
collects one host's findings (``_Run``). The checks are in ``_checks_gpu``, ``_checks_fabric`` and ``_checks_host``;
``_checks`` runs them. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nvidia import PCIE_LINK_RANK


def _c(title, kind, severity, compares, remediation):
    return _findings.entry(title, severity, remediation, kind=kind, compares=compares)


# ---------------------------------------------------------------------------------------------
# Small helpers.

def _get(data, dotted, default=None):
    cur = data
    for part in dotted.split('.'):
        if not isinstance(cur, dict) or part not in cur:
            return default
        cur = cur[part]
    return cur


def _num(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def version_tuple(text):
    """'580.159.04' -> (580, 159, 4); ignores non-numeric parts ('12.4.r12.4' -> (12, 4, 12, 4))."""
    return tuple(int(p) for p in re.findall(r'[0-9]+', str(text)))


def version_at_least(value, minimum):
    have, want = list(version_tuple(value)), list(version_tuple(minimum))
    size = max(len(have), len(want))
    return have + [0] * (size - len(have)) >= want + [0] * (size - len(want))


def version_matches(value, pattern):
    """Exact, component prefix ("580" / "580." match "580.159.04") or glob ("580.*")."""
    value, pattern = str(value).strip(), str(pattern).strip()
    if any(c in pattern for c in '*?['):
        return fnmatch.fnmatchcase(value, pattern)
    want = [p for p in re.split(r'[.\-+]', pattern.rstrip('.')) if p != '']
    have = [p for p in re.split(r'[.\-+]', value) if p != '']
    if len(have) < len(want):
        return False
    for a, b in zip(have, want):
        if a != b and not (a.isdigit() and b.isdigit() and int(a) == int(b)):
            return False
    return True


def _link_score(link):
    if not isinstance(link, str):
        return -1
    link = link.strip().upper()
    match = re.match(r'^NV([0-9]+)$', link)
    if match:
        return 100 + int(match.group(1))
    if link == 'SOC':        # older nvidia-smi name of SYS
        link = 'SYS'
    if link in PCIE_LINK_RANK:
        return len(PCIE_LINK_RANK) - PCIE_LINK_RANK.index(link)
    return -1


def link_at_least(measured, expected):
    """True when topology link ``measured`` is as good as ``expected`` (NV18 >= NV12 > PIX > ... > SYS)."""
    want = _link_score(expected)
    have = _link_score(measured)
    return have >= want >= 0


def _norm_bus(bus):
    """'00000000:18:00.0' / '0000:18:00' -> (0, 0x18, 0); None when not a PCI address."""
    if not isinstance(bus, str):
        return None
    match = re.search(r'(?:([0-9a-fA-F]+):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.[0-7])?\s*$', bus.strip())
    if not match:
        return None
    return (int(match.group(1) or '0', 16), int(match.group(2), 16), int(match.group(3), 16))


# ---------------------------------------------------------------------------------------------
# The run.

NOT_APPLICABLE = 'not_applicable'
NOT_MEASURED = 'not_measured'
# at most this many characters of a probe's error in a reason (the whole error is in its probe.* finding)
WHY_MAX = 160


class _Run(object):
    """One host's checks: ``findings``, and ``scope`` (``{check: {status, why}}``): the checks that judged nothing on
    this host and why, ``not_applicable`` (the profile does not ask for it, another vendor's GPUs) or ``not_measured``
    (its input is missing: a probe failed or did not run, a tool is not installed). A check in neither passed."""

    def __init__(self, facts, profile, host, catalogue):
        self.catalogue = catalogue
        self.facts = facts if isinstance(facts, dict) else {}
        self.profile = profile
        self.host = host
        self.findings = []
        self.scope = {}
        self._seen = set()

    def skip(self, checks, why):
        """``checks`` do not apply to this host (``why``); the first reason given for a check holds."""
        for check in checks:
            self.scope.setdefault(check, {'status': NOT_APPLICABLE, 'why': why})

    def unmeasured(self, checks, why):
        """The input of ``checks`` was not measured on this host (``why``); the first reason given for a check holds."""
        for check in checks:
            self.scope.setdefault(check, {'status': NOT_MEASURED, 'why': why})

    def probe_why(self, probes):
        """Why the facts of ``probes`` are missing, in words: the first that failed, printed what was not understood,
        whose tool is not installed, or that did not run."""
        found = dict((p, []) for p in probes)
        for key, record in sorted((self.facts.get('probes') or {}).items()) if isinstance(self.facts.get('probes'), dict) else []:
            for probe in probes:
                if isinstance(record, dict) and (key == probe or key.startswith(probe + ':')):
                    found[probe].append((key, record))
        for wanted, text in (('failed', 'probe %s failed: %s'), ('parse_error', 'probe %s printed output that was not understood: %s'),
                             ('missing', 'probe %s: not found on the node (%s)')):
            for probe in probes:
                for key, record in found[probe]:
                    if record.get('status') == wanted:
                        detail = (record.get('command') or key) if wanted == 'missing' else (
                            record.get('error') or 'exit code %s' % record.get('rc'))
                        detail = ' '.join(str(detail).split())
                        return text % (key, detail if len(detail) <= WHY_MAX else detail[:WHY_MAX - 1] + '…')
        return 'probe %s did not run (not gathered, or not in the capture bundle)' % '/'.join(probes)

    def status(self, key):
        probes = self.facts.get('probes')
        record = probes.get(key) if isinstance(probes, dict) else None
        return record.get('status') if isinstance(record, dict) else None

    def statuses(self, prefix):
        probes = self.facts.get('probes')
        if not isinstance(probes, dict):
            return []
        return [rec.get('status') for key, rec in probes.items()
                if isinstance(rec, dict) and (key == prefix or key.startswith(prefix + ':'))]

    def add(self, check, component, measured, expected, message, severity=None, **context):
        key = (check, component, str(measured), str(expected))
        if key in self._seen:
            return
        self._seen.add(key)
        context.setdefault('component', component)
        context.setdefault('expected', expected)
        context.setdefault('measured', measured)
        self.findings.append(_findings.make(self.catalogue, self.host, check, component, measured, expected, message,
                                            severity=severity, remediation=context.pop('remediation', None),
                                            context=context))

    def unknown(self, probes, component, what, checks=()):
        """Facts for ``what`` are absent: stay silent when a probe finding explains it, else say so (info); ``checks``
        (those that read them) are not measured."""
        self.unmeasured(checks, '%s: %s' % (what, self.probe_why(probes)))
        states = []
        for probe in probes:
            states.extend(self.statuses(probe))
        if any(s in ('failed', 'parse_error') for s in states):
            return
        if any(s == 'missing' for s in states):
            self.add('facts.not_measured', component, 'tool not installed', what,
                     '%s: cannot check %s, `%s` is not installed' % (component, what, probes[0]),
                     how='install the tool of probe %s' % probes[0])
            return
        self.add('facts.not_collected', component, 'not collected', what,
                 '%s: not checked (%s): probe %s did not run' % (component, what, '/'.join(probes)), probe=probes[0])

    def not_measured(self, component, what, how, checks=()):
        """The tool did not report ``what`` of ``component`` (a warning); ``checks`` (those that read it) are not measured
        where no other component of theirs has a finding."""
        self.unmeasured(checks, '%s: %s was not reported (%s)' % (component, what, how))
        self.add('facts.not_measured', component, None, what,
                 '%s: %s was not reported; the profile requires it' % (component, what), how=how)


def _g(value):
    return ('%g' % value) if isinstance(value, float) else str(value)
