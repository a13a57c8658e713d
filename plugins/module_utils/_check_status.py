# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The status of each check of a host in a run report: the one derivation that every report format states
(report.json's ``hosts.<host>.checks``, junit.xml, report.md, report.html, xuanwu.prom; docs/report-format.md,
"Check status").

``host_checks(entry, catalogue)`` gives ``{check: {'status': status, 'why': text or None}}`` for every check of the
catalogue and every check a finding names, from a host's report entry (``_report.host_entry``): its findings, the
checks its node account says judged nothing (``entry['checks']``: ``_checks_base._Run.scope`` and the site's
``checks.disable``, carried by ``xuanwu_node.checks``), the workloads that ran on it and what they could not judge.
Statuses, in this order of precedence:

- ``fail``, ``warn``, ``info``: a finding of the check (the worst severity);
- ``not_measured``: its input was not measured (the host was not probed, a probe failed or did not run, a tool is
  missing, a stage that was asked for measured nothing, a run could not judge it); ``why`` says which;
- ``not_applicable``: it cannot apply to this host (another vendor's GPUs, a section or key the profile does not set,
  a check the profile switches off, a stage that did not run here); ``why`` says which;
- ``pass``: judged, nothing found.

Never a pass for what was not measured. Pure: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue, _findings

FAIL, WARN, INFO, PASS = 'fail', 'warn', 'info', 'pass'
NOT_MEASURED, NOT_APPLICABLE = 'not_measured', 'not_applicable'
# every status a check can have, worst first (a finding's severities, then the others)
STATUSES = (FAIL, WARN, INFO, PASS, NOT_MEASURED, NOT_APPLICABLE)
# the statuses of a check that judged nothing: junit.xml's skipped test cases
SKIPPED = (NOT_MEASURED, NOT_APPLICABLE)
# how each status reads in the reports (junit.xml's skipped messages begin with it)
WORDS = {FAIL: 'fail', WARN: 'warn', INFO: 'info', PASS: 'passed', NOT_MEASURED: 'not measured',
         NOT_APPLICABLE: 'not applicable'}

# The checks of a stage (collectives, workloads, the SSH mesh, ...) apply to a host only where that stage ran on it
# (a run of one of these kinds in its workloads) or found something: a stage that did not run is no pass.
STAGE_AREAS = {
    'collectives': ('nccl_tests',),
    'workload': ('torch_allreduce', 'ddp_smoke', 'fault_isolation', 'soak', 'link_counters', 'gpu_single', 'elastic_restart'),
    'mesh': ('mesh',),
    'container': ('container_smoke',),
    # the scheduler's view of a node before a rollout returns it to service
    'scheduler': ('scheduler',),
    # the dmon checks: where a workload's GPU samples were read (a workload run with "dmon" and its "gpus")
    'dmon': ('dmon',),
}
# Why the checks of a stage area are not applicable to a host where that stage did not run.
STAGE_NOT_RUN = {
    'collectives': 'the collectives (nccl-tests) did not run on this host',
    'workload': 'no workload ran on this host',
    'mesh': 'the SSH mesh preflight did not run on this host',
    'container': 'the container smoke did not run on this host',
    'scheduler': 'the scheduler was not read for this host (a rollout reads it before a return to service)',
    'dmon': 'no GPU samples were taken on this host (no workload ran with nvidia-smi dmon)',
}
# The stage a run of kind not_measured names (workload_check's ``stage``) -> the area whose checks it leaves unmeasured.
STAGE_OF = {'collectives': 'collectives', 'collectives_multinode': 'collectives', 'torch_workloads': 'workload',
            'torch_workloads_multinode': 'workload', 'workload': 'workload'}
# Checks of one opt-in workload within a stage area: {check id prefix: the kind that must have run}. Where the stage
# ran without that workload, its checks are not applicable, never passes.
WORKLOAD_OF_CHECKS = {'workload.elastic_': 'elastic_restart'}
HOST_CPU_CHECKS = ('workload.host_cpu_iowait', 'workload.host_cpu_steal', 'workload.host_cpu_bound')
STEP_CHECKS = ('workload.ddp_step_jitter', 'workload.ddp_step_periodic', 'workload.ddp_straggler')
# words of a run's "not judged" reason that say the check cannot apply (rather than that its input is missing)
_CANNOT_APPLY = ('the profile sets no', 'by design', 'one rank')


def judged_kinds(entry):
    """The workload kinds of a host's report entry that were judged (a run not applicable to the host is not), plus
    ``dmon`` where GPU samples were judged."""
    runs = [w for w in entry.get('workloads') or [] if isinstance(w, dict)]
    kinds = set(w.get('kind') for w in runs if not w.get('not_applicable'))
    if any(isinstance(w.get('dmon'), dict) and w['dmon'].get('gpus') for w in runs):
        kinds.add('dmon')
    return kinds


def dmon_not_judged(entry):
    """``{check: [why]}`` of the dmon checks that some run could not judge (its ``dmon.not_judged``), ``dmon.*``
    standing for every dmon check."""
    out = {}
    for run in entry.get('workloads') or []:
        dmon = run.get('dmon') if isinstance(run, dict) and isinstance(run.get('dmon'), dict) else {}
        for why in dmon.get('not_judged') or []:
            text = '%s: %s' % (run.get('component') or run.get('kind'), why)
            for check in set(re.findall(r'dmon\.(?:\*|[a-z_]+)', str(why))):
                out.setdefault(check, []).append(text)
    return out


def samples_not_judged(entry):
    """``{check: [why]}`` of the host CPU and DDP step-time checks that no run of a host could judge: no host CPU
    samples (or a bound the profile leaves unset), no per-step times of a DDP smoke on the GPUs, one rank only."""
    out = {}
    runs = [w for w in entry.get('workloads') or [] if isinstance(w, dict)]
    cpu = [w for w in runs if isinstance(w.get('host_cpu'), dict)]
    if runs and not any(w['host_cpu'].get('series') for w in cpu):
        why = '; '.join(sorted(set('%s: %s' % (w.get('component') or w.get('kind'), w['host_cpu']['not_measured'])
                                   for w in cpu if w['host_cpu'].get('not_measured')))) or 'no host CPU samples were taken'
        for check in HOST_CPU_CHECKS:
            out.setdefault(check, []).append(why)
    judged = [w for w in cpu if w['host_cpu'].get('series')]
    for check in HOST_CPU_CHECKS:
        reasons = ['%s: %s' % (w.get('component') or w.get('kind'), why) for w in judged
                   for why in w['host_cpu'].get('not_judged') or [] if str(why).startswith(check + ':')]
        if judged and len(reasons) == len(judged):
            out.setdefault(check, []).extend(reasons)
    ddp = [w for w in runs if w.get('kind') == 'ddp_smoke' and isinstance(w.get('step_times'), dict)]
    if ddp and not any(w['step_times'].get('p99_ratio') is not None for w in ddp):
        for check in STEP_CHECKS:
            out.setdefault(check, []).extend('%s: %s' % (w.get('component'), w['step_times'].get('not_judged')) for w in ddp)
    elif ddp and not any(w['step_times'].get('last_rank') for w in ddp):
        out.setdefault('workload.ddp_straggler', []).append('one rank: no rank to wait for')
    return out


def _unjudged(check, not_judged):
    """Why the dmon, host CPU or step-time ``check`` was judged by no run (``not_judged``: the two functions above), or
    None."""
    if not check.startswith('dmon.') and check not in HOST_CPU_CHECKS + STEP_CHECKS:
        return None
    why = not_judged.get(check, []) + (not_judged.get('dmon.*', []) if check.startswith('dmon.') else [])
    return '; '.join(why) or None


def broken_stages(entry):
    """``{area: why}`` of the stage areas a run of kind ``not_measured`` says were asked for and measured nothing."""
    out = {}
    for run in entry.get('workloads') or []:
        if isinstance(run, dict) and run.get('kind') == 'not_measured':
            area = STAGE_OF.get(run.get('stage'))
            if area:
                what = run.get('component') or run.get('stage')
                out.setdefault(area, []).append('%s was asked for and measured nothing: %s' % (what, run.get('not_measured')))
    return dict((area, '; '.join(reasons)) for area, reasons in out.items())


def runs_not_applicable(entry):
    """``{area: why}`` of the stage areas whose every run on this host cannot apply to it (fewer than two ranks)."""
    out = {}
    for run in entry.get('workloads') or []:
        if isinstance(run, dict) and run.get('not_applicable'):
            for area, kinds in STAGE_AREAS.items():
                if run.get('kind') in kinds:
                    out.setdefault(area, []).append(str(run.get('component') or run.get('kind')))
    return dict((area, 'its runs on this host cannot apply to it (%s: see "not applicable")' % ', '.join(names))
                for area, names in out.items())


def _worst(findings):
    """{check: its worst finding's severity}."""
    worst = {}
    for finding in findings:
        check, severity = finding.get('check'), finding.get('severity')
        if severity in _findings.RANK and _findings.RANK[severity] >= _findings.RANK.get(worst.get(check), -1):
            worst[check] = severity
    return worst


def host_checks(entry, catalogue=None):
    """``{check: {'status', 'why'}}`` of one host's report ``entry`` for every check of ``catalogue`` (check ids; the
    whole catalogue by default) and every check one of its findings names, in check order (module docstring)."""
    catalogue = _catalogue.CATALOGUE if catalogue is None else catalogue
    findings = [f for f in entry.get('findings') or [] if isinstance(f, dict)]
    worst = _worst(findings)
    given = entry.get('checks') if isinstance(entry.get('checks'), dict) else {}
    kinds = judged_kinds(entry)
    # the stage areas that ran nothing judged here: (status, why) where a run says why, a stage asked for first
    stages = dict((area, (NOT_APPLICABLE, why)) for area, why in runs_not_applicable(entry).items())
    stages.update((area, (NOT_MEASURED, why)) for area, why in broken_stages(entry).items())
    not_judged = dmon_not_judged(entry)
    not_judged.update(samples_not_judged(entry))
    out = {}
    for check in sorted(set(catalogue) | set(worst)):
        if check in worst:
            status, why = worst[check], None
        elif entry.get('error'):
            status, why = NOT_MEASURED, 'the host was not probed: %s' % entry['error']
        elif isinstance(given.get(check), dict) and given[check].get('status') in SKIPPED:
            status, why = given[check]['status'], given[check].get('why')
        else:
            status, why = _judged(check, kinds, stages, not_judged)
        out[check] = {'status': status, 'why': why}
    return out


def _judged(check, kinds, stages, not_judged):
    """``(status, why)`` of a check without a finding on a probed host whose node account says nothing of it."""
    area = check.split('.', 1)[0]
    if area in STAGE_AREAS and not kinds & set(STAGE_AREAS[area]):
        return stages.get(area) or (NOT_APPLICABLE, STAGE_NOT_RUN[area])
    for prefix, kind in WORKLOAD_OF_CHECKS.items():
        if check.startswith(prefix) and kind not in kinds:
            return NOT_APPLICABLE, '%s did not run on this host (not in xuanwu_torch_workloads, or not judged here)' % kind
    why = _unjudged(check, not_judged)
    if why:
        return (NOT_APPLICABLE if any(words in why for words in _CANNOT_APPLY) else NOT_MEASURED), why
    return PASS, None


def counts(checks):
    """``{status: number of checks}`` of ``host_checks``'s result, every status of STATUSES (0 included)."""
    out = dict((status, 0) for status in STATUSES)
    for value in checks.values():
        out[value['status']] = out.get(value['status'], 0) + 1
    return out


def grouped(checks):
    """``[(status, why, [check, ...])]``: the checks of ``host_checks``'s result with one status and one reason
    together, worst status first (STATUSES), then by reason; checks in id order."""
    groups = {}
    for check in sorted(checks):
        groups.setdefault((checks[check]['status'], checks[check].get('why') or ''), []).append(check)
    rank = dict((status, i) for i, status in enumerate(STATUSES))
    return [(status, why or None, names) for (status, why), names in
            sorted(groups.items(), key=lambda item: (rank.get(item[0][0], len(rank)), item[0][1]))]
