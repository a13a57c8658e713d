# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks: node facts (docs/facts.md) + a hardware profile (docs/profiles.md) -> findings.

Findings have the shape of ``_findings.make``. ``check_node`` checks one host against a normalised
profile: the probe statuses here, then each area (``_checks_gpu``, ``_checks_fabric``, ``_checks_host``;
their run object is ``_checks_base._Run``); ``check_group`` compares hosts with each other. ``_judge``
validates the profile once and applies the site overrides. ``CHECKS`` joins every node check's entry.
Pure: no I/O.

Absent facts are never a pass for a required item: a tool that is not installed where the profile
needs its hardware fails (``gpu.driver_missing``, ``ib.tools_missing``, ...); a probe that failed or
could not be parsed fails through ``probe.*``; facts that were not collected (probe skipped) give an
info finding (``facts.not_collected``); a value the tool did not report warns (``facts.not_measured``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _checks_amd, _checks_fabric, _checks_gpu, _checks_host, _findings, _probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._checks_base import (
    _Run, _c, _get,
)


# The checks of this module: probes and facts, hosts compared with each other.
PROBE_CHECKS = {
    # --- probes and facts ------------------------------------------------------------------
    'probe.failed': _c(
        'A probe command failed', 'probe <name>', 'fail',
        'probes[name].status == failed (fail where the profile needs its facts, warn otherwise)',
        'Run `{command}` on the node by hand and fix what it reports (exit code {rc}). For nvidia-smi "couldn\'t communicate '
        'with the NVIDIA driver": load the driver (modprobe nvidia; check dmesg, DKMS build for the running kernel, Secure '
        'Boot signing). Re-run the validation afterwards.'),
    'probe.parse_error': _c(
        'A probe printed output the parser does not understand', 'probe <name>', 'fail',
        'probes[name].status == parse_error (fail where the profile needs its facts, warn otherwise)',
        'Run `{command}` on the node and compare with the excerpt in the finding. If the tool prints something new (other '
        'version), capture a bundle (playbooks/capture.yml) and open an issue with it; otherwise fix the tool installation. '
        'On a replayed capture bundle whose file could not be read (the finding names the file and why: a link, not a '
        'regular file, too large), capture the bundle again.'),
    'probe.section_parse_error': _c(
        'Part of a probe\'s output not understood', 'probe <name>: <section>', 'fail',
        'probes[name].section_errors is empty (fail where the profile needs its facts, warn otherwise); the other '
        'sections of the output are still checked',
        'Run `{command}` on the node and read the part about {section} (quoted in the finding). A section the tool prints '
        'in a new shape: capture a bundle (playbooks/capture.yml) and open an issue with it; an error printed in its place '
        'names the fault of that component.'),
    'facts.not_collected': _c(
        'Facts the profile needs were not collected', '<section>', 'info',
        'profile requires a section whose probe was skipped or absent from the capture bundle',
        'Run the validation with the probe group enabled (or capture a bundle that includes `{probe}`) to check this item.'),
    'facts.not_measured': _c(
        'A value the profile requires was not reported', '<component>', 'warn',
        'profile requires a value that the tool reported as N/A or not at all',
        'Check by hand on the node: {how}. Newer drivers/tools report it; otherwise confirm it manually.'),
}
CONSISTENCY_CHECKS = {
    # --- across hosts ---------------------------------------------------------------------
    'consistency.software.driver_version': _c(
        'Driver version differs from the other hosts', 'host', 'fail', 'software.driver_version equals the majority',
        'Align the NVIDIA driver with the rest of the cluster ({expected}): install that version (with the same Fabric '
        'Manager version) and reboot. Ranks on different drivers can hang NCCL jobs.'),
    'consistency.software.nccl_version': _c(
        'NCCL version differs from the other hosts', 'host', 'fail', 'software.nccl_version equals the majority',
        'Install NCCL {expected} like the other hosts: ranks with different NCCL versions can hang or fail.'),
    'consistency.software.cuda_toolkit_version': _c(
        'CUDA toolkit differs from the other hosts', 'host', 'warn', 'software.cuda_toolkit_version equals the majority',
        'Install CUDA toolkit {expected} like the other hosts.'),
    'consistency.host.kernel.release': _c(
        'Kernel differs from the other hosts', 'host', 'warn', 'host.kernel.release equals the majority',
        'Boot kernel {expected} like the other hosts (rebuild DKMS modules for it).'),
}

# Every node check, in the order of docs/checks.md.
CHECKS = _findings.join(PROBE_CHECKS, _checks_gpu.CHECKS, _checks_amd.CHECKS, _checks_fabric.CHECKS, _checks_host.CHECKS, CONSISTENCY_CHECKS)

DEFAULT_GROUP_KEYS = ('software.driver_version', 'software.nccl_version', 'software.cuda_toolkit_version', 'host.kernel.release')

# ``consistency.<key>`` for a fact key without its own entry above (evaluate_group's ``keys``).
CONSISTENCY_DEFAULT = _c(
    'A fact differs from the other hosts', '<key>', 'warn', 'the value of <key> is the one most hosts have',
    'Align {key} with the other hosts ({expected}).')


def _entry(check):
    return CHECKS.get(check) or (CONSISTENCY_DEFAULT if check.startswith('consistency.') else CHECKS[check])


def render_remediation(check, context=None):
    """The remediation text of ``check`` with ``{placeholders}`` filled from ``context``."""
    return _findings.render(_entry(check)['remediation'], context)


# ---------------------------------------------------------------------------------------------
# Probe statuses.

def _check_probes(run):
    probes = run.facts.get('probes')
    if not isinstance(probes, dict):
        return
    wanted = set(name for name in ('gpu', 'infiniband', 'network', 'host', 'software') if run.profile.get(name))
    for key in sorted(probes):
        record = probes[key]
        if not isinstance(record, dict):
            continue
        status = record.get('status')
        if status not in ('failed', 'parse_error'):
            continue
        if status == 'failed' and 'gpu' in wanted and key.startswith('nvidia_') and _checks_gpu.nvml_mismatch(run.facts.get('gpu') or {}):
            continue    # nvidia-smi cannot start NVML: gpu.driver_library_mismatch names the cause once
        sections = _probe.FEEDS.get(key.split(':', 1)[0])
        relevant = sections is None or bool(wanted.intersection(sections))
        check = 'probe.failed' if status == 'failed' else 'probe.parse_error'
        error = record.get('error') or ('exit code %s' % record.get('rc'))
        excerpt = record.get('excerpt')
        what = 'failed' if status == 'failed' else 'output not understood'
        message = 'probe %s (`%s`) %s: %s' % (key, record.get('command'), what, error)
        if excerpt:
            message += '\n--- output excerpt ---\n%s' % excerpt
        run.add(check, 'probe %s' % key, status, 'ok', message, severity='fail' if relevant else 'warn',
                command=record.get('command') or key, rc=record.get('rc'))
    for key in sorted(probes):
        record = probes[key]
        problems = record.get('section_errors') if isinstance(record, dict) else None
        if not isinstance(problems, list) or record.get('status') != 'ok':
            continue
        sections = _probe.FEEDS.get(key.split(':', 1)[0])
        relevant = sections is None or bool(wanted.intersection(sections))
        for problem in problems:
            if not isinstance(problem, dict):
                continue
            section = str(problem.get('section'))
            message = 'probe %s (`%s`): the part about %s was not understood: %s' % (
                key, record.get('command'), section, problem.get('error'))
            if problem.get('excerpt'):
                message += '\n--- what was read ---\n%s' % problem['excerpt']
            run.add('probe.section_parse_error', 'probe %s: %s' % (key, section), 'not understood', 'ok', message,
                    severity='fail' if relevant else 'warn', command=record.get('command') or key, section=section)


# ---------------------------------------------------------------------------------------------
# The public functions (plugins/module_utils/_judge.py validates the profile and applies the site overrides).

def check_node(facts, profile, host):
    """Check one host's facts against a normalised profile; return the findings (a list)."""
    return node_run(facts, profile, host).findings


def node_run(facts, profile, host):
    """Check one host's facts against a normalised profile: the run (``_checks_base._Run``), its ``findings`` and its
    ``scope``, the checks that judged nothing on this host and why (not applicable, not measured)."""
    run = _Run(facts, profile, host, CHECKS)
    _check_probes(run)
    want = run.profile.get('gpu')
    if not want:
        run.skip(list(_checks_gpu.CHECKS) + list(_checks_amd.CHECKS), 'the profile has no gpu section')
    elif want.get('vendor') == 'amd':
        run.skip(_checks_amd.NVIDIA_ONLY, "the profile's GPUs are AMD (gpu.vendor amd): an NVIDIA check")
        _checks_amd.check_amd(run)
    else:
        run.skip(_checks_amd.CHECKS, "the profile's GPUs are NVIDIA (gpu.vendor %s): an AMD check" % (want.get('vendor') or 'nvidia'))
        _checks_gpu.check_gpu(run)
    _checks_fabric.check_infiniband(run)
    _checks_fabric.check_network(run)
    _checks_host.check_host(run)
    _checks_host.check_hygiene(run)
    _checks_host.check_software(run)
    return run


def check_group(facts_by_host, keys=DEFAULT_GROUP_KEYS):
    """Compare hosts: for each dotted fact key, every host whose value differs from the majority gets a
    ``consistency.<key>`` finding. Hosts without the value are left out; when all agree there is nothing."""
    findings = []
    hosts = sorted(facts_by_host or {})
    for key in keys:
        values = {}
        for host in hosts:
            value = _get(facts_by_host[host], key)
            if value is not None:
                values[host] = str(value)
        distinct = sorted(set(values.values()))
        if len(distinct) < 2:
            continue
        tally = sorted(((sum(1 for v in values.values() if v == d), d) for d in distinct), key=lambda t: (-t[0], t[1]))
        majority = tally[0][1] if tally[0][0] > tally[1][0] else None
        check = 'consistency.%s' % key
        catalogue = {check: _entry(check)}
        summary = ', '.join('%s on %d host(s)' % (d, n) for n, d in tally)
        for host in hosts:
            if host not in values or values[host] == majority:
                continue
            expected = majority if majority is not None else 'one value on every host'
            findings.append(_findings.make(
                catalogue, host, check, key, values[host], expected,
                '%s is %s on this host; across %d hosts: %s' % (key, values[host], len(values), summary),
                context={'expected': expected, 'key': key}))
    return findings
