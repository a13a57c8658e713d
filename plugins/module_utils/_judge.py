# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The judge: a profile, validated once, and every way of turning measurements into findings.

``Judge(profile)`` validates the profile (``_profile.validate_profile``; check ids against the catalogue)
and then judges node facts (``node``), hosts against each other (``group``), workload runs (``workload``), the GPU
samples taken during them (``dmon``) and the fleet and regression findings of a run (``fleet``); ``compare_hosts``
judges the hosts of one profile against each other where each host has its own site overrides. The profile's site
overrides (``checks.disable``, ``checks.severity``) are applied to every finding here and nowhere else (a unit test
fails if another module applies them). Pure: no I/O. Raises ``ProfileError`` for a bad profile.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import (
    _checks, _checks_base, _dmon_checks, _findings, _host_samples, _profile, _workloads,
)


class Judge(object):
    def __init__(self, profile, path='<profile>'):
        self.profile = _profile.validate_profile(profile, path)
        self._overrides = self.profile.get('checks')

    def _judged(self, findings):
        return _findings.apply_overrides(findings, self._overrides)

    def node(self, facts, host):
        """Findings of one host's facts (docs/facts.md)."""
        return self._judged(_checks.check_node(facts, self.profile, host))

    def node_checks(self, facts, host, catalogue=()):
        """``(findings, checks)``: the findings of ``node``, and ``{check: {status, why}}`` of the checks that judged
        nothing on this host: the node checks that do not apply or whose input was not measured
        (``_checks_base._Run.scope``), and each check of the node's and of ``catalogue`` (ids) that the profile
        switches off (``checks.disable``: not applicable)."""
        run = _checks.node_run(facts, self.profile, host)
        checks = dict(run.scope)
        for check in sorted(set(catalogue) | set(_checks.CHECKS)):
            pattern = _findings.disabled_by(check, self._overrides)
            if pattern is not None:
                checks[check] = {'status': _checks_base.NOT_APPLICABLE, 'why': 'switched off by the profile (checks.disable: %s)' % pattern}
        return self._judged(run.findings), checks

    def group(self, facts_by_host, keys=_checks.DEFAULT_GROUP_KEYS):
        """``consistency.<key>`` findings of the hosts whose value differs from the majority, host by host: the
        comparison of the run (``compare_hosts``) with this profile's overrides for every host."""
        return _flat(compare_hosts(facts_by_host, dict((host, self._overrides) for host in facts_by_host), keys))

    def for_section(self, section):
        """The profile whose ``collectives`` curves are those of ``section`` (``collectives`` or
        ``collectives_multinode``)."""
        if section == 'collectives':
            return self.profile
        return dict(self.profile, collectives=self.profile.get(section) or {})

    def workload(self, kind, run, host, section='collectives'):
        """Findings of one workload run (``_workloads.EVALUATORS``), judged by the curves of ``section``."""
        return self._judged(_workloads.evaluate(kind, run, self.for_section(section), host))

    def dmon(self, dmon, host, workload=None, required=False, device=None, unjudged=None):
        """``(findings, entry)`` of the GPU samples taken during a workload (``_dmon_checks.judge_run``) under the
        profile's ``monitoring`` bounds and ``gpu.clock_event_reasons`` classes, and where the profile sets no
        temperature bound, the GPUs' own (``device``, ``device_bounds``); the site overrides apply to the findings as
        to every other. ``unjudged``: ``{bound: why}`` of bounds that cannot apply to this workload (left unjudged, the
        reason listed in the entry's ``not_judged``)."""
        bounds = dict((k, v) for k, v in (self.profile.get('monitoring') or {}).items()
                      if k in _dmon_checks.DEFAULT_BOUNDS and v is not None)
        classes = (self.profile.get('gpu') or {}).get('clock_event_reasons')
        return _dmon_checks.judged_without(lambda b: _dmon_checks.judge_run(dmon, b, host, workload, required, classes, device),
                                           bounds, unjudged, self._judged)

    def host_cpu(self, entry, host, workload=None, dmon=None):
        """``(findings, entry)`` of the host CPU samples taken during a workload (``_host_samples.judge_run``) under the
        profile's ``workloads.host_cpu`` bounds (and ``monitoring.load_sm_pct`` for the GPUs' idleness), the site
        overrides applied."""
        found, out = _host_samples.judge_run(entry, host_cpu_bounds(self.profile), host, workload, dmon,
                                             load_sm_pct(self.profile))
        return self._judged(found), out

    def fleet(self, findings):
        """The fleet and regression findings the run's fleet step made of this profile's hosts (their figures against
        the fleet's median and the history database: plugin_utils/_fleet_step), under the site overrides."""
        return self._judged(findings)


def compare_hosts(values_by_host, checks_by_host, keys=_checks.DEFAULT_GROUP_KEYS):
    """``{host: [finding, ...]}``: the ``consistency.<key>`` findings of hosts of one profile compared with each other,
    each host's findings under that host's own site overrides (``checks_by_host[host]``: a site may override per host
    or group); hosts left without a finding are left out. Linear in the number of hosts."""
    found = {}
    for finding in _checks.check_group(values_by_host, keys):
        found.setdefault(finding['host'], []).append(finding)
    judged = dict((host, _findings.apply_overrides(findings, (checks_by_host or {}).get(host))) for host, findings in found.items())
    return dict((host, findings) for host, findings in judged.items() if findings)


def host_cpu_bounds(profile):
    """The ``workloads.host_cpu`` bounds of a (resolved) profile, None where unset."""
    return ((profile or {}).get('workloads') or {}).get('host_cpu') or {}


def load_sm_pct(profile):
    """The sm % from which a GPU sample counts as under load (``monitoring.load_sm_pct``)."""
    value = ((profile or {}).get('monitoring') or {}).get('load_sm_pct')
    return value if value is not None else _dmon_checks.DEFAULT_BOUNDS['load_sm_pct']


def _flat(by_host):
    """``{host: [finding, ...]}`` as one list, host by host in name order."""
    return [finding for host in sorted(by_host) for finding in by_host[host]]


def device_bounds(facts):
    """Bounds a host's GPUs report of themselves, from its probe facts: ``{'gtemp_max_c': the maximum operating
    temperature its GPUs report}`` (``{}`` when no GPU reports one, or the facts are not a mapping). The GPUs of a node
    are one model; where they differ, the highest is taken: a T.Limit reading of a GPU heating up between its two
    readings comes out a few degrees low, never high (_parse_nvidia._max_operating_temp)."""
    gpu = facts.get('gpu') if isinstance(facts, dict) else None
    devices = gpu.get('devices') if isinstance(gpu, dict) else None
    temps = [d.get('max_operating_temp_c') for d in devices or [] if isinstance(d, dict)]
    temps = [t for t in temps if isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0]
    return {'gtemp_max_c': max(temps)} if temps else {}


def evaluate(facts, profile, host):
    """Findings of one host against a raw or normalised profile (``Judge(profile).node``)."""
    return Judge(profile).node(facts, host)


def evaluate_group(facts_by_host, keys=_checks.DEFAULT_GROUP_KEYS, profile=None):
    """``Judge(profile).group`` without site overrides when there is no profile."""
    if profile is None:
        return _flat(compare_hosts(facts_by_host, {}, keys))
    return Judge(profile).group(facts_by_host, keys)
