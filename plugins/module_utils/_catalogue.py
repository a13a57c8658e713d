# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The catalogue of every check id: the entries of each check module, joined (docs/checks.md).

Each check module keeps its entries next to the code that emits them (``CHECKS``): node checks in
``_checks`` (probes, hosts compared), ``_checks_gpu``, ``_checks_fabric`` and ``_checks_host``, the
nccl-tests curve checks in ``_collectives``, InfiniBand counter growth in ``_links``,
the workload and run checks in ``_workloads``, the container smoke in ``_container``, the scheduler's view of a node
before it returns to service in ``_scheduler``. The profile validator takes the ids from here, the JUnit
report lists them, and docs/checks.md is generated from here (``checks_markdown``). Pure: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import (
    _dmon_checks,
    _checks, _checks_amd, _container, _checks_fabric, _checks_gpu, _checks_host, _collectives, _findings, _fleet, _links, _mesh, _scheduler,
    _workloads,
)

_NODE = 'xuanwu.cluster.node_check, from the facts of xuanwu.cluster.node_probe'
# (title of the docs section, where the checks are emitted, the module that declares them, the name of its entries), in
# the order of docs/checks.md. The one list of the check areas: the catalogue, docs/checks.md and the profile keys the
# areas declare (PROFILE_KEYS) are derived from it; test_registrations.py fails while a module declares catalogue entries
# or profile keys that do not reach it.
_AREAS = (
    ('Probes and facts', _NODE + ' (plugins/module_utils/_checks.py)', _checks, 'PROBE_CHECKS'),
    ('GPU', _NODE + ' (plugins/module_utils/_checks_gpu.py)', _checks_gpu, 'CHECKS'),
    ('AMD GPU', _NODE + ' for profiles with gpu.vendor amd (plugins/module_utils/_checks_amd.py); gpu.count, gpu.model, '
     'gpu.memory, gpu.pcie_*, gpu.ecc_* also apply, with AMD remediation texts', _checks_amd, 'CHECKS'),
    ('InfiniBand, network, RoCE and link flaps', _NODE + ' (plugins/module_utils/_checks_fabric.py)', _checks_fabric, 'CHECKS'),
    ('Host, hygiene before a job, software', _NODE + ' (plugins/module_utils/_checks_host.py)', _checks_host, 'CHECKS'),
    ('Hosts compared with each other', _NODE + ', across the hosts of one profile (plugins/module_utils/_checks.py)',
     _checks, 'CONSISTENCY_CHECKS'),
    ('Collective benchmark checks', 'xuanwu.cluster.workload_check kind nccl_tests (each nccl-tests run)',
     _collectives, 'CHECKS'),
    ('Fleet thresholds and history', 'xuanwu.cluster.validation_report, once per run on the controller, over the '
     'nccl-tests figures of every host (plugins/module_utils/_fleet.py, docs/fleet-history.md)', _fleet, 'CHECKS'),
    ('InfiniBand counters under load', 'xuanwu.cluster.workload_check kind link_counters', _links, 'CHECKS'),
    ('SSH mesh and fabric preflight', 'xuanwu.cluster.mesh_check on each node, for each peer, and '
     'xuanwu.cluster.mesh_compare once on the controller (plugins/module_utils/_mesh.py, docs/ssh-mesh.md)',
     _mesh, 'CHECKS'),
    ('Workload and run checks', 'xuanwu.cluster.workload_check (collectives, torch workloads, stages that did not run)',
     _workloads, 'CHECKS'),
    ('Container smoke', 'xuanwu.cluster.workload_check kind container_smoke, from nvidia-smi -L that '
     'xuanwu.cluster.container_smoke ran in a container with the node\'s GPUs (plugins/module_utils/_container.py, '
     'docs/container-smoke.md)', _container, 'CHECKS'),
    ('GPU samples during the workloads', 'xuanwu.cluster.workload_check, from the nvidia-smi dmon samples '
     'xuanwu.cluster.workload_run took while each workload ran (plugins/module_utils/_dmon_checks.py, docs/metrics.md)',
     _dmon_checks, 'CHECKS'),
    ('Scheduler health before a return to service', 'xuanwu.cluster.workload_check kind scheduler, from what '
     'xuanwu.cluster.scheduler_node read on the node (action daemon) and in the controller (action health), before a '
     'rollout returns the node to service (plugins/module_utils/_scheduler.py, docs/scheduler.md)', _scheduler, 'CHECKS'),
)

# (title, where, entries) of each area, in the order of docs/checks.md
AREAS = tuple((title, where, getattr(module, name)) for title, where, module, name in _AREAS)

CATALOGUE = _findings.join(*(checks for _title, _where, checks in AREAS))

# The modules of the check areas, each once, in the order of AREAS.
AREA_MODULES = tuple(module for i, (_title, _where, module, _name) in enumerate(_AREAS)
                     if module not in [row[2] for row in _AREAS[:i]])

# (module name, its PROFILE_KEYS) of every area module whose checks read profile keys it declares itself
# (``PROFILE_KEYS``: {section: {key: spec}}, the spec language of _spec), next to the code that reads them; the profile
# schema takes them in. Derived: a module of AREAS that declares PROFILE_KEYS is in it.
PROFILE_KEYS = tuple((module.__name__.rsplit('.', 1)[-1], module.PROFILE_KEYS) for module in AREA_MODULES
                     if hasattr(module, 'PROFILE_KEYS'))


def titles():
    """{check id: title} of every check."""
    return dict((check, spec['title']) for check, spec in CATALOGUE.items())


def _cell(text):
    return (text or '').replace('|', '\\|')


def checks_markdown():
    """docs/checks.md: every check of the catalogue, by area."""
    out = [
        '# Checks',
        '',
        '<!-- Generated from plugins/module_utils/_catalogue.py (checks_markdown); do not edit by hand. -->',
        '',
        'Every finding names the host, the check id, the component, the severity, what was measured,',
        'what the profile expected, a message and the remediation below (with the component\'s values',
        'filled in). Severities: `fail` (the node is not fit), `warn` (fit, but look at it), `info`.',
        'A site can drop checks or change their severity in the profile (`checks.disable`,',
        '`checks.severity`, ids or globs such as `ib.*`; see docs/profiles.md); an id or glob that matches',
        'no check below is a profile error.',
        '',
        'Missing facts never pass a required item: a tool that is not installed where the profile needs its',
        'hardware fails (`gpu.driver_missing`, `gpu.amd_tools_missing`, `ib.tools_missing`, `host.chrony_missing`,',
        '`software.*`); a',
        'failed or unparseable probe fails through `probe.*`; facts that were not collected give',
        '`facts.not_collected` (info); a value the tool did not report gives `facts.not_measured` (warn).',
        'A stage that was asked for and measured nothing fails with `workload.not_measured` (the container smoke',
        'with `container.not_measured`).',
    ]
    for title, where, checks in AREAS:
        out += ['', '## %s' % title, '', 'Emitted by %s.' % where, '']
        if any(spec['component_kind'] for spec in checks.values()):
            out += ['| check | severity | component | what it compares | remediation |', '|---|---|---|---|---|']
            for check, spec in checks.items():
                out.append('| `%s` | %s | `%s` | %s | %s |' % (
                    check, spec['default_severity'], spec['component_kind'], _cell(spec['compares']),
                    _cell(_findings.render(spec['remediation']))))
        else:
            out += ['| check | severity | what it means | remediation |', '|---|---|---|---|']
            for check in sorted(checks):
                spec = checks[check]
                out.append('| `%s` | %s | %s | %s |' % (
                    check, spec['default_severity'], _cell(spec['title']), _cell(spec['remediation'])))
    out += [
        '',
        '## More on comparing hosts',
        '',
        '`evaluate_group` compares hosts on `%s` by default; a key outside this list gives'
        % '`, `'.join(_checks.DEFAULT_GROUP_KEYS),
        '`consistency.<key>` findings with severity warn.',
        '',
        'Driver drift between hosts of one profile (`consistency.software.driver_version`) fails by default: a',
        'production gate passes nodes into one job, and a job whose ranks run different NVIDIA drivers is the',
        'classic NCCL hang (each driver pairs with its own CUDA driver API, Fabric Manager and NVLink/P2P',
        'behaviour; ranks stop agreeing on transports and protocol versions and the collective waits forever',
        'instead of failing). A warning would let such a node into the job. A site that rolls a driver out',
        'node by node and keeps the mixed fleet out of shared jobs can lower it in the profile',
        '(`checks.severity: {consistency.software.driver_version: warn}`). Within one node the driver is read',
        'from three places: the loaded kernel module (`/proc/driver/nvidia/version`), NVML (`nvidia-smi -q -x`)',
        'and each GPU (`--query-gpu`); `gpu.driver_library_mismatch` and `gpu.driver_version_mixed` fail when',
        'they disagree.',
        '',
    ]
    return '\n'.join(out)
