#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: scheduler_node
short_description: Drain, fail or resume a node in Slurm or Kubernetes, or check that a batch may be drained
version_added: 0.2.0
description:
  - Takes a node out of the batch scheduler before it is changed, and returns it to service afterwards, without ever
    touching a node that someone else took out.
  - "Ownership rule: a drain made by this module carries the reason C(xuanwu <run_id>: <reason>) (Slurm: the node's
    Reason; Kubernetes: the annotations C(xuanwu.io/drained-by) and C(xuanwu.io/drain-reason)). A node that is already
    drained, draining, cordoned or down for any other reason is left exactly as it is (RV(owned=false)); a node drained by
    the same run id (a resumed run) is this run's."
  - O(action=drain) drains the node (Slurm C(scontrol update nodename=NAME state=drain reason=...); Kubernetes
    C(kubectl annotate --overwrite) then C(kubectl drain --ignore-daemonsets --delete-emptydir-data --timeout=Ns))
    and waits at most O(drain_timeout) seconds until no job runs on it (Slurm state DRAINED, not DRAINING or MIXED+DRAIN).
    After the timeout the node stays draining and RV(timed_out=true).
  - O(action=resume) returns the node to service only when this run drained it.
  - "O(action=fail) keeps a node this run drained drained, with the reason replaced by C(xuanwu <run_id>: <reason>)
    (cut to Slurm's 255 bytes with C(...)); any other node is left as it is."
  - O(action=plan) reads the whole cluster once (C(sinfo -h -N -o %N|%P|%T), C(kubectl get nodes -o json)) and fails,
    naming the partition, the counts and the limit, when draining O(nodes) would leave more than O(max_drain_share)
    of any partition they belong to (Kubernetes, of the cluster) unavailable, nodes already drained or down included.
    A node the scheduler does not list is a refusal too.
  - O(action=daemon) runs on the node itself and reads the scheduler's daemon there (O(daemon_unit), by default
    C(slurmd) or C(kubelet)) with C(systemctl is-active), or where systemd does not answer, whether its process runs;
    the host name; for Slurm C(slurmd -C), the node's hardware as slurmd reads it. It never fails for what it reads.
  - O(action=health) reads the node's state in the controller (C(scontrol --oneliner show node), C(kubectl get node -o
    json)) and judges it with what O(action=daemon) read (O(daemon)) before a return to service. A daemon that is not
    running (C(scheduler.daemon_down)); a Slurm state DOWN, NOT_RESPONDING, FAIL or INVALID_REG, a Kubernetes node not
    Ready, a drain or cordon of someone else (C(scheduler.node_state)); a node name, CPUs, RealMemory or GPUs of the
    node's own view below or other than the controller's (C(scheduler.view_mismatch)); and what could not be read
    (C(scheduler.not_measured)) are RV(findings), RV(healthy) is false. It fails only for bad input.
  - O(backend=none) changes nothing and says there is no scheduler.
  - The commands run as argument vectors (no shell). Slurm 22.05 and later understand every command line.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
    details: In check mode only reading commands run; RV(commands) lists the commands that would change the node and
      C(changed) is what it would be.
options:
  backend:
    description: The scheduler.
    type: str
    choices: [none, slurm, kubernetes]
    default: none
  action:
    description: What to do, see the description.
    type: str
    choices: [drain, resume, fail, plan, daemon, health]
    required: true
  run_id:
    description: The rollout's run id (letters, digits, C(.), C(_), C(-); at most 64 characters). Required for C(drain),
      C(resume), C(fail) and C(health).
    type: str
  reason:
    description: "Text put after C(xuanwu <run_id>:) in the drain reason, for example C(failed checks gpu.count).
      Empty means C(rollout)."
    type: str
    default: rollout
  node:
    description: The node's name in the scheduler. Required for every action but C(plan).
    type: str
  nodes:
    description: For C(plan), the scheduler names of the nodes of the batch.
    type: list
    elements: str
    default: []
  drain_timeout:
    description: Seconds to wait for the jobs on a draining node to end (Kubernetes C(kubectl drain --timeout));
      C(0) does not wait.
    type: int
    default: 600
  poll_interval:
    description: Seconds between two reads of the node's state while waiting (Slurm).
    type: int
    default: 10
  max_drain_share:
    description: Share (0 to 1) of a partition (Kubernetes, of the cluster) that may be unavailable at once, for C(plan).
    type: float
    default: 0.25
  scontrol:
    description: The C(scontrol) binary, a name looked up on PATH or an absolute path.
    type: str
    default: scontrol
  sinfo:
    description: The C(sinfo) binary, a name looked up on PATH or an absolute path.
    type: str
    default: sinfo
  kubectl:
    description: The C(kubectl) binary, a name looked up on PATH or an absolute path.
    type: str
    default: kubectl
  kubeconfig:
    description: The kubeconfig file passed to kubectl with C(--kubeconfig); empty uses kubectl's own default.
    type: str
    default: ""
  systemctl:
    description: For C(daemon), the C(systemctl) binary; where it is missing or systemd does not answer, the daemon's
      process is looked for instead.
    type: str
    default: systemctl
  slurmd:
    description: For C(daemon) with Slurm, the C(slurmd) binary run as C(slurmd -C).
    type: str
    default: slurmd
  daemon_unit:
    description: For C(daemon), the systemd unit (and process name) of the node's daemon; empty is C(slurmd) (Slurm) or
      C(kubelet) (Kubernetes).
    type: str
    default: ""
  daemon:
    description: For C(health), the registered result of O(action=daemon) on the node.
    type: dict
  gpus:
    description: For C(health), the GPUs the probe saw on the node (C(xuanwu_facts.gpu.count)); compared with Slurm's Gres
      (where C(slurmd -C) prints none) and the Kubernetes allocatable GPUs. Not given, they are not compared.
    type: int
  gpu_vendor:
    description: For C(health) with Kubernetes, whose GPU resource counts (C(nvidia) C(nvidia.com/gpu), C(amd) C(amd.com/gpu)).
    type: str
    choices: [nvidia, amd]
'''

EXAMPLES = r'''
- name: Refuse a batch that would take more than a quarter of a partition out
  xuanwu.cluster.scheduler_node:
    backend: slurm
    action: plan
    nodes: "{{ ansible_play_batch | map('extract', hostvars, 'inventory_hostname_short') | list }}"
  run_once: true

- name: Drain this node before it is changed
  xuanwu.cluster.scheduler_node:
    backend: slurm
    action: drain
    run_id: "{{ xuanwu_run_id }}"
    node: "{{ inventory_hostname_short }}"
  register: drain

- name: Keep a failed node drained, with the failed checks as the reason
  xuanwu.cluster.scheduler_node:
    backend: kubernetes
    action: fail
    run_id: "{{ xuanwu_run_id }}"
    reason: "failed checks: gpu.count, nvlink.links_down"
    node: "{{ inventory_hostname_short }}"
  delegate_to: localhost

- name: Read slurmd on the node itself
  xuanwu.cluster.scheduler_node:
    backend: slurm
    action: daemon
    node: "{{ inventory_hostname_short }}"
  register: daemon

- name: Check that the node may return to service
  xuanwu.cluster.scheduler_node:
    backend: slurm
    action: health
    run_id: "{{ xuanwu_run_id }}"
    node: "{{ inventory_hostname_short }}"
    daemon: "{{ daemon }}"
    gpus: "{{ xuanwu_facts.gpu.count }}"
  register: health
'''

RETURN = r'''
backend:
  description: The backend.
  returned: always
  type: str
node:
  description: The node (C(null) for C(plan)).
  returned: always
  type: str
action:
  description: The action.
  returned: always
  type: str
before:
  description: The node before the action, C(state) one of C(available), C(draining), C(drained), C(down), C(reason) its
    drain reason without Slurm's C([user@time]), C(detail) the scheduler's own word (C(MIXED+DRAIN), C(cordoned)).
  returned: drain, resume, fail
  type: dict
  sample: {state: available, reason: "", detail: IDLE}
after:
  description: The node after the action, as RV(before) (in check mode, the state it would have).
  returned: drain, resume, fail
  type: dict
  sample: {state: drained, reason: "xuanwu 2026-12-01T0100: rollout", detail: IDLE+DRAIN}
owned:
  description:
    - Whether the node's drain is this run's (made now or by an earlier run with the same run id).
    - With O(backend=none) always true, since no scheduler holds the node for anyone else.
  returned: always
  type: bool
drained:
  description: Whether the node is drained at the end (takes no job and runs none), whoever drained it.
  returned: always
  type: bool
timed_out:
  description: Whether the wait for the node's jobs ended at O(drain_timeout) with jobs still running (the node stays draining).
  returned: always
  type: bool
jobs_running:
  description: Jobs (Slurm; 0 once DRAINED, C(null) while Slurm only says DRAINING) or pods (Kubernetes; not DaemonSet or
    static pods) still running on the node after a drain; C(null) when not read.
  returned: always
  type: int
commands:
  description: The commands that changed the node (in check mode, that would have).
  returned: always
  type: list
  elements: str
message:
  description: What happened, and for a node left alone, whose drain it is.
  returned: always
  type: str
partitions:
  description: For C(plan), per partition touched by the batch, C(total), C(unavailable_before), C(unavailable_after),
    C(batch), C(limit) and C(ok).
  returned: plan
  type: list
  elements: dict
daemon:
  description: For C(daemon), the node's daemon, C(unit), C(source) (C(systemd) or C(process)), C(state) (the unit state, or
    C(running)/C(not running)), C(active) and C(detail).
  returned: daemon
  type: dict
  sample: {unit: slurmd, source: systemd, state: inactive, active: false, detail: "systemctl is-active slurmd: inactive (exit code 3)"}
hostname:
  description: For C(daemon), the host name of the node.
  returned: daemon
  type: str
node_view:
  description: For C(daemon) with Slurm, C(slurmd -C) read (C(name), C(cpus), C(real_memory), C(gres), C(gpus), ...); C(null)
    when it could not be read.
  returned: daemon
  type: dict
node_view_error:
  description: For C(daemon) with Slurm, why C(slurmd -C) could not be read, else C(null).
  returned: daemon
  type: str
health:
  description: For C(health), what was read - C(daemon), C(controller) (the node's state, reason, host name, CPUs,
    RealMemory, Gres or allocatable GPUs in the controller), C(node_view), C(hostname), C(gpus), C(errors).
  returned: health
  type: dict
healthy:
  description: For C(health), whether the node is fit to return to service (no finding).
  returned: health
  type: bool
findings:
  description: For C(health), the findings (C(scheduler.daemon_down), C(scheduler.node_state), C(scheduler.view_mismatch),
    C(scheduler.not_measured)), named after the node.
  returned: health
  type: list
  elements: dict
'''

import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.xuanwu.cluster.plugins.module_utils._scheduler_node import SchedulerError, run_action


def binaries(backend, action):
    """The options naming the binaries that the action runs; ``daemon`` reads where it can (``optional``)."""
    if action == 'daemon':
        return ()
    if backend == 'slurm':
        return ('sinfo',) if action == 'plan' else ('scontrol',)
    return ('kubectl',) if backend == 'kubernetes' else ()


def optional(backend, action):
    """The binaries of ``daemon``: one that is missing is said in its result, not a failure."""
    if action != 'daemon' or backend == 'none':
        return ()
    return ('systemctl', 'slurmd') if backend == 'slurm' else ('systemctl',)


def processes():
    """The names (comm) of the processes running on this host."""
    names = set()
    for pid in os.listdir('/proc') if os.path.isdir('/proc') else []:
        if pid.isdigit():
            try:
                with open(os.path.join('/proc', pid, 'comm')) as handle:
                    names.add(handle.read().strip())
            except (IOError, OSError):
                continue
    return names


def resolve(module, option, value):
    """The binary's path; a clear failure when it is missing."""
    if os.sep in value:
        if os.path.isfile(value) and os.access(value, os.X_OK):
            return value
        raise SchedulerError('scheduler_%s: %s is not an executable file on this host' % (option, value))
    path = module.get_bin_path(value)
    if not path:
        raise SchedulerError('scheduler_%s: %s not found on PATH of this host (set scheduler_%s to its path, or '
                             'scheduler_delegate_to to a host that has it)' % (option, value, option))
    return path


def main():
    module = AnsibleModule(
        argument_spec=dict(
            backend=dict(type='str', default='none', choices=['none', 'slurm', 'kubernetes']),
            action=dict(type='str', required=True, choices=['drain', 'resume', 'fail', 'plan', 'daemon', 'health']),
            run_id=dict(type='str'),
            reason=dict(type='str', default='rollout'),
            node=dict(type='str'),
            nodes=dict(type='list', elements='str', default=[]),
            drain_timeout=dict(type='int', default=600),
            poll_interval=dict(type='int', default=10),
            max_drain_share=dict(type='float', default=0.25),
            scontrol=dict(type='str', default='scontrol'),
            sinfo=dict(type='str', default='sinfo'),
            kubectl=dict(type='str', default='kubectl'),
            kubeconfig=dict(type='str', default='', no_log=False),
            systemctl=dict(type='str', default='systemctl'),
            slurmd=dict(type='str', default='slurmd'),
            daemon_unit=dict(type='str', default=''),
            daemon=dict(type='dict'),
            gpus=dict(type='int'),
            gpu_vendor=dict(type='str', choices=['nvidia', 'amd']),
        ),
        supports_check_mode=True,
    )
    params = dict(module.params)

    def run(argv, mutating):
        if mutating and module.check_mode:
            return 0, '', ''
        return module.run_command(argv, environ_update={'LC_ALL': 'C'})

    missing = {}
    try:
        for option in binaries(params['backend'], params['action']):
            params[option] = resolve(module, option, params[option])
        for option in optional(params['backend'], params['action']):
            try:
                params[option] = resolve(module, option, params[option])
            except SchedulerError as err:
                params[option], missing[option] = None, str(err)
        local = {'processes': processes, 'hostname': socket.gethostname, 'missing': missing}
        result = run_action(params, run, time.sleep, time.monotonic, module.check_mode, local)
    except SchedulerError as err:
        module.fail_json(msg='scheduler_node: %s' % err, backend=params['backend'], action=params['action'],
                         node=params.get('node'), changed=False)
    if result.pop('failed', False):
        module.fail_json(msg=result.pop('message'), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
