# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scheduler's health of a node before it returns to service, judged on the controller (docs/scheduler.md): the
checks (``CHECKS``), ``health_findings`` of what module ``scheduler_node`` read (action ``daemon`` on the node, action
``health`` in the scheduler's controller), ``health_result`` (what the action plugin ``scheduler_node`` adds to the
module's answer to ``health``) and ``health_summary`` (what the report keeps). Pure, no Ansible imports.

Draining, resuming, planning and reading a node are ``_scheduler_node``'s (the node's half, the only one module
``scheduler_node`` carries); every name of it stays importable from this module, and the schedulers' output is read by
``_parse_scheduler`` (scontrol, sinfo, slurmd -C, kubectl, systemctl is-active).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import excerpt
# The node's half: every name stays importable from this module.
from ansible_collections.xuanwu.cluster.plugins.module_utils._scheduler_node import (  # noqa: F401 pylint: disable=unused-import
    ACTIONS, ANNOTATION_REASON, ANNOTATION_RUN, AVAILABLE, BACKENDS, check_node_name, check_params,
    check_run_id, daemon_unit, DAEMON_UNITS, decide, DEFAULT_REASON, DOWN, DRAINED, DRAINING,
    ELLIPSIS, gres_gpus, HEALTH_REASON_PREFIX, is_health_reason, KUBE_DRAIN_TIMEOUT, KUBE_GPU_RESOURCES, KUBE_NODE,
    KUBE_NODES, KUBE_PODS, KUBE_REASON_MAX_CHARS, kubectl, kubectl_annotate, kubectl_drain, kubectl_get_node,
    kubectl_get_nodes, kubectl_pods_on, kubectl_unannotate, kubectl_uncordon, NODE_NAME, _NOT_FOUND,
    our_reason, parse_kube_node, parse_kube_nodes, parse_kube_pods, parse_scontrol_node, parse_sinfo_nodes,
    parse_slurmd_config, parse_systemctl_is_active, plan_batch, read_daemon, read_health, reason_owner, REASON_PREFIX,
    run_action, RUN_ID, SchedulerError, scontrol_drain, scontrol_resume, scontrol_show, SINFO, SINFO_FORMAT,
    sinfo_nodes, SLURM_BASES, SLURM_BUSY, slurm_condition, SLURM_OUT, SLURM_REASON_MAX_BYTES, SLURM_SHOW,
    SLURMD_C, SYSTEMCTL, UNAVAILABLE, UNIT_STATES, UNIT_UP, whose,
)

# A Slurm node state (its base, or a flag after "+") that a resume does not make fit for jobs: slurmctld hears no
# slurmd, the node registered with less than slurm.conf says, or it is marked failing.
SLURM_UNFIT = ('DOWN', 'NOT_RESPONDING', 'FAIL', 'FAILING', 'INVALID_REG', 'INVAL', 'FUTURE', 'UNKNOWN', 'UNK')

_e = _findings.entry
CHECKS = {
    'scheduler.daemon_down': _e(
        "The scheduler's daemon on the node is not running", 'fail',
        'Start it and read why it stopped. Slurm: systemctl start slurmd; journalctl -u slurmd and the SlurmdLogFile '
        '(munge running with the cluster\'s key, slurm.conf the same as the controller\'s, the node name slurmd takes '
        'from the host name one that slurm.conf defines). Kubernetes: systemctl start kubelet; journalctl -u kubelet '
        '(container runtime up, certificates valid, swap off). The node stays drained with this run\'s reason; the '
        'same rollout run id returns it once the daemon is active and the node passes.'),
    'scheduler.node_state': _e(
        'The controller holds the node in a state that a return to service would not clear', 'fail',
        'Read the state and reason: scontrol show node NAME (kubectl describe node NAME). DOWN, NOT_RESPONDING (down*, '
        'idle*): slurmctld hears no slurmd: check slurmd, munge, clocks and the network between node and controller '
        '(SlurmdPort 6818, SlurmctldPort 6817). INVALID_REG (sinfo inval): the node registered with fewer CPUs, less '
        'memory or fewer GPUs than slurm.conf: compare slurmd -C with its NodeName line, fix the hardware or the '
        'configuration, restart slurmd. FAIL: marked failing. Kubernetes Ready False or Unknown: the kubelet posts no '
        'status: kubelet, container runtime, network plugin. A drain or cordon someone else made during the run is '
        'theirs to lift.'),
    'scheduler.view_mismatch': _e(
        "The node's own view of itself differs from the controller's", 'fail',
        'A node name that differs means the inventory points this host at another scheduler node (scheduler_node_name, '
        'the NodeName line or NodeHostName in slurm.conf, the kubelet\'s --hostname-override): fix the mapping before a '
        'resume returns the wrong node. Fewer CPUs, less memory or fewer GPUs than slurm.conf (CPUs, RealMemory, Gres) '
        'make slurmctld mark the node INVALID_REG: find the missing DIMM or GPU (the node checks name it), or correct '
        'the NodeName line and run scontrol reconfigure. Kubernetes allocatable nvidia.com/gpu or amd.com/gpu other than '
        'the GPUs on the node: restart the device plugin pod on the node and read its log.'),
    'scheduler.not_measured': _e(
        "The scheduler's view of the node was asked for and could not be read", 'fail',
        'Read the quoted error: a binary not found (scheduler_systemctl, scheduler_slurmd, scheduler_scontrol, '
        'scheduler_kubectl name it or its path), a command that failed, or output that is not the tool\'s. A node whose '
        'scheduler health could not be read is not returned to service.'),
}


def _short(name):
    return name.split('.', 1)[0].lower() if isinstance(name, str) and name else None


def health_result(result):
    """What the action plugin of ``scheduler_node`` adds to the module's answer to action ``health`` (``result``, with
    its ``health``): ``{healthy, findings, message}``, the findings of ``health_findings``."""
    health = result.get('health') if isinstance(result.get('health'), dict) else {}
    node = health.get('node') or result.get('node')
    findings = health_findings(health, node)
    if findings:
        message = 'node %s is not fit to return to service: %s' % (node, '; '.join(f['message'] for f in findings))
    else:
        message = 'node %s: %s %s, %s in the controller, its own view matches: fit to return to service' % (
            node, health['daemon']['unit'], health['daemon']['state'], health['controller']['state'])
    return {'healthy': not findings, 'findings': findings, 'message': message}


def health_summary(health):
    """What the report keeps of a health read: ``{backend, daemon, state, node_view}`` in a few words each."""
    health = health if isinstance(health, dict) else {}
    daemon = health.get('daemon') if isinstance(health.get('daemon'), dict) else {}
    controller = health.get('controller') if isinstance(health.get('controller'), dict) else {}
    view = health.get('node_view') if isinstance(health.get('node_view'), dict) else {}
    gres = ' Gres=%s' % view['gres'] if view.get('gres') else ''
    return {'backend': health.get('backend'),
            'daemon': '%s %s (%s)' % (daemon.get('unit'), daemon.get('state'), daemon.get('source')) if daemon else None,
            'state': controller.get('state'), 'reason': controller.get('reason') or None,
            'node_view': 'CPUs=%s RealMemory=%s%s' % (view.get('cpus'), view.get('real_memory'), gres) if view else None,
            'errors': len(health.get('errors') or [])}


def health_findings(health, host):
    """The findings of a node's scheduler health (``read_health``'s ``health``): its daemon, its state in the controller,
    its own view against the controller's, what could not be read. Pure; [] is fit for a return to service."""
    health = health if isinstance(health, dict) else {}
    found = []
    node = health.get('node') or host
    unit = DAEMON_UNITS.get(health.get('backend'), 'daemon')

    def add(check, component, measured, expected, message):
        found.append(_findings.make(CHECKS, host, check, component, measured, expected, message))

    for error in health.get('errors') or []:
        add('scheduler.not_measured', node, 'not read', 'read', excerpt(str(error), 400))
    daemon = health.get('daemon') if isinstance(health.get('daemon'), dict) else None
    if daemon and daemon.get('active') is not True:
        unit = daemon.get('unit') or unit
        add('scheduler.daemon_down', unit, daemon.get('detail') or daemon.get('state'),
            'active' if daemon.get('source') == 'systemd' else 'running',
            '%s is not running on the node (%s): the scheduler cannot start jobs on it, a return to service would take '
            'jobs it fails' % (unit, daemon.get('detail') or daemon.get('state')))
    controller = health.get('controller') if isinstance(health.get('controller'), dict) else None
    if controller is None:
        return found
    if health.get('backend') == 'slurm':
        found.extend(_slurm_state(controller, health, host, node))
        found.extend(_slurm_view(controller, health, host, node))
    elif health.get('backend') == 'kubernetes':
        found.extend(_kube_state(controller, health, host, node))
        found.extend(_kube_view(controller, health, host, node))
    return found


def _foreign_drain(controller, health):
    """The words for a drain (cordon) that is not this run's, or None."""
    if controller.get('condition') in (DRAINED, DRAINING) and reason_owner(controller.get('reason'), health.get('run_id')) != 'ours':
        return '%s by %s during the run' % (controller['condition'], whose(controller.get('reason'), health.get('run_id')))
    return None


def _slurm_state(controller, health, host, node):
    state = str(controller.get('state') or '')
    words = set(w for w in re.split(r'[+]', state.strip().upper().rstrip('*~#%$@^!-')) if w)
    unfit = sorted(words & set(SLURM_UNFIT)) + (['NOT_RESPONDING (*)'] if state.strip().endswith('*') else [])
    out = []
    if unfit:
        reason = controller.get('reason')
        out.append(_findings.make(CHECKS, host, 'scheduler.node_state', node, state, 'not DOWN, NOT_RESPONDING, FAIL, INVALID_REG',
                                  'slurmctld holds node %s as %s (%s)%s: a resume would not make it take jobs' % (
                                      node, state, ', '.join(unfit), ', reason "%s"' % reason if reason else '')))
    foreign = _foreign_drain(controller, health)
    if foreign:
        out.append(_findings.make(CHECKS, host, 'scheduler.node_state', node, state, 'drained by this run only',
                                  'node %s is %s; the rollout does not lift it' % (node, foreign)))
    return out


def _below(out, host, what, mine, theirs, message):
    if isinstance(mine, int) and isinstance(theirs, int) and mine < theirs:
        out.append(_findings.make(CHECKS, host, 'scheduler.view_mismatch', what, mine, '>= %d' % theirs, message))


def _slurm_view(controller, health, host, node):
    out = []
    view = health.get('node_view') if isinstance(health.get('node_view'), dict) else None
    if view is None:
        return out
    names = set(n for n in (_short(controller.get('name')), _short(controller.get('host_name'))) if n)
    if view.get('name') and names and _short(view['name']) not in names:
        out.append(_findings.make(CHECKS, host, 'scheduler.view_mismatch', 'slurmd NodeName', view['name'], ' or '.join(sorted(names)),
                                  'slurmd -C on the host says NodeName=%s, the controller\'s node %s is NodeHostName=%s: this '
                                  'host is not that node' % (view['name'], node, controller.get('host_name') or '?')))
    _below(out, host, 'slurmd CPUs', view.get('cpus'), controller.get('cpus'),
           'slurmd -C counts %s CPUs, slurm.conf gives node %s CPUs=%s: the node registers INVALID_REG' % (
               view.get('cpus'), node, controller.get('cpus')))
    _below(out, host, 'slurmd RealMemory', view.get('real_memory'), controller.get('real_memory'),
           'slurmd -C reads RealMemory=%s MB, slurm.conf gives node %s RealMemory=%s: the node registers INVALID_REG' % (
               view.get('real_memory'), node, controller.get('real_memory')))
    gpus, seen = view.get('gpus'), 'slurmd -C (Gres=%s)' % view.get('gres')
    if not isinstance(gpus, int):
        gpus, seen = health.get('gpus'), 'the probe'
    _below(out, host, 'slurmd Gres gpu', gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else None, controller.get('gpus'),
           '%s sees %s GPU(s), slurm.conf gives node %s Gres=%s: the node registers INVALID_REG' % (
               seen, gpus, node, controller.get('gres')))
    return out


def _kube_state(controller, health, host, node):
    out = []
    if controller.get('ready') is not True:
        status = controller.get('ready_status') or 'no Ready condition'
        out.append(_findings.make(CHECKS, host, 'scheduler.node_state', node, 'Ready=%s' % status, 'Ready=True',
                                  'the node %s is not Ready (%s): the kubelet posts no healthy status, an uncordon would '
                                  'not let pods run on it' % (node, status)))
    foreign = _foreign_drain(controller, health)
    if foreign:
        out.append(_findings.make(CHECKS, host, 'scheduler.node_state', node, controller.get('state'), 'cordoned by this run only',
                                  'node %s is %s; the rollout does not uncordon it' % (node, foreign)))
    return out


def _kube_view(controller, health, host, node):
    out = []
    mine, theirs = _short(health.get('hostname')), set(n for n in (_short(controller.get('host_name')), _short(node)) if n)
    if mine and controller.get('host_name') and mine not in theirs:
        out.append(_findings.make(CHECKS, host, 'scheduler.view_mismatch', 'kubelet node name', health.get('hostname'),
                                  controller.get('host_name'), 'the Kubernetes node %s was registered by host %s, this host '
                                  'is %s: this host is not that node' % (node, controller.get('host_name'), health.get('hostname'))))
    gpus = health.get('gpus')
    if isinstance(gpus, int) and not isinstance(gpus, bool):
        resource = KUBE_GPU_RESOURCES.get(health.get('gpu_vendor') or 'nvidia', KUBE_GPU_RESOURCES['nvidia'])
        allocatable = (controller.get('gpus') or {}).get(resource, 0)
        if allocatable != gpus:
            out.append(_findings.make(CHECKS, host, 'scheduler.view_mismatch', resource, allocatable, gpus,
                                      'node %s offers %s %s to pods, the probe saw %d GPU(s) on the host' % (
                                          node, 'an unreadable' if allocatable is None else allocatable, resource, gpus)))
    return out
