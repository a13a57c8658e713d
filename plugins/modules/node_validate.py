#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_validate
short_description: Probe a node in one round trip and judge it against its hardware profile, in one task
version_added: 0.1.0
description:
  - The whole per-host part of a validation in one task - an action plugin - so that a fleet costs one task per host
    (C(docs/architecture.md), "Cost per host").
  - Resolves the host's profile on the controller (O(profile), O(overrides), O(profile_dirs)), runs
    M(xuanwu.cluster.node_probe) on the node once (the probe groups of O(gather), the profile's disks and job process
    patterns added), and judges the facts on the controller like M(xuanwu.cluster.node_check).
  - The node answers with its raw outputs (M(xuanwu.cluster.node_probe) O(xuanwu.cluster.node_probe#module:parse=false),
    the process list filtered on the node) and they are parsed on the controller, where the parsers are loaded once per
    run; the facts are those M(xuanwu.cluster.node_probe) builds on the node. An answer that is not what the node writes
    is the host's error naming the field.
  - A node that cannot be reached or probed is not failed here; its C(xuanwu_node.status) is C(error) with the reason in
    C(xuanwu_node.error), so that the report covers every host, and the gate fails the host afterwards.
  - Records in C(xuanwu_node.flags) the stages the host takes part in (a per-node stage of O(stages) is on and the host
    is fit, or C(on_failed_hosts); C(multinode) and the host is fit; its InfiniBand counters are to be read again after
    a load). M(xuanwu.cluster.host_compare) makes the host list of each later play of C(validate.yml) from them once per
    run, so a stage that is switched off costs nothing per host.
  - The values of the job's secret environment variables (O(job_env), O(redact_env_keys)) are masked in the facts and
    findings before they are set.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
  - xuanwu.cluster.verdict
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
    details: The probes only read.
options:
  variables:
    description:
      - Read each option the task does not give from its inventory variable - O(profile) from C(xuanwu_profile),
        O(overrides) C(xuanwu_profile_overrides), O(profile_dirs) C(xuanwu_profile_dirs), O(gather)
        C(xuanwu_probe_gather), O(interfaces) C(xuanwu_probe_interfaces), O(disk_paths) C(xuanwu_disk_paths),
        O(replay_dir) C(xuanwu_replay_dir), O(timeout) C(xuanwu_probe_timeout), O(nccl_library_globs)
        C(xuanwu_nccl_library_globs), O(nccl_python) C(xuanwu_torch_python), O(nccl_home) C(nccl_tests_build_nccl_home),
        O(fail_on) C(xuanwu_fail_on), O(consistency) C(xuanwu_consistency_check),
        O(job_mpirun_args) C(xuanwu_mpirun_args), O(redact_env_keys) C(xuanwu_redact_env_keys), O(full_facts)
        C(xuanwu_full_facts), O(direct) C(xuanwu_probe_direct); O(job_ports) is C(xuanwu_torch_master_port) and
        C(xuanwu_job_ports), O(job_env) C(xuanwu_nccl_env) with C(xuanwu_torch_env) over it, and O(stages) the
        C(xuanwu_validate_*), C(xuanwu_container_smoke), C(xuanwu_workloads_on_failed_hosts) and C(xuanwu_recheck_counters)
        switches, C(build) on where C(nccl_tests_build_archive) or C(nccl_tests_build_rccl_archive) is set and no bundle is replayed.
      - Only the values read are templated, so a fleet's task templates no argument per host (C(docs/architecture.md),
        "Cost per host"). The role C(xuanwu.cluster.node_health) runs the module this way.
    type: bool
    default: false
  profile:
    description: Profile name (for example C(h200x4-nvlink)) or path to a profile file. Required (given, or with O(variables) read from C(xuanwu_profile)).
    type: raw
  overrides:
    description: Keys replacing the profile's (dicts merge, lists and scalars replace).
    type: raw
    default: {}
  profile_dirs:
    description: Directories searched before the shipped ones for profiles by name and for the profiles and policy files a profile extends.
    type: raw
    default: []
  gather:
    description: Probe groups (M(xuanwu.cluster.node_probe) O(xuanwu.cluster.node_probe#module:gather)).
    type: list
    elements: str
    default: [all]
  interfaces:
    description: Network interfaces (names or globs) to probe; empty means every non-virtual interface.
    type: list
    elements: str
    default: []
  disk_paths:
    description: Paths whose free space is probed; the profile's C(host.disks) paths are added.
    type: list
    elements: str
    default: ['/']
  replay_dir:
    description: Capture bundle to replay instead of running the tools (read where the module runs).
    type: str
    default: ''
  timeout:
    description: Seconds after which one probe command is stopped and recorded as failed.
    type: int
    default: 60
  direct:
    description:
      - Probe through the node's Python directly - a short fixed program on its command line (C(python -I -c ...)), the
        probe's own code and the options on its standard input, nothing written on the node - instead of sending
        M(xuanwu.cluster.node_probe) as a module; the same code gives the same answer without Ansible's module framework,
        about a quarter of the module's CPU on the node (C(docs/architecture.md), "What a node module carries").
      - Where Ansible itself would not pipe a module (become without pipelining), on a connection without standard input
        or a PowerShell node, the module runs whatever this says (RV(probe_via) says which and why).
      - C(false) always sends the module, for a site whose node policy refuses inline interpreter programs.
    type: bool
    default: true
  nccl_library_globs:
    description: Extra glob patterns where C(libnccl.so.2) may be found.
    type: list
    elements: str
    default: []
  nccl_python:
    description:
      - The Python the PyTorch workloads run with; the NCCL wheel on its C(sys.path) (the one PyTorch loads) is probed
        before the system's NCCL (C(xuanwu.cluster.node_probe)'s O(nccl_python)).
    type: str
    default: python3
  nccl_home:
    description:
      - The NCCL directory nccl-tests is built against, when an absolute path (C(xuanwu.cluster.node_probe)'s
        O(nccl_home)); anything else is ignored.
    type: str
  redact_env_keys:
    description: More environment variable names whose values are secrets.
    type: list
    elements: str
    default: []
  consistency:
    description: Keep the values M(xuanwu.cluster.host_compare) compares; C(false) leaves the host out of the comparison.
    type: raw
    default: true
  stages:
    description:
      - The stages switched on for this host, each a boolean (strings such as C(true) or C(no) are converted) -
        C(build), C(collectives), C(workloads), C(multinode), C(on_failed_hosts), C(recheck_counters).
    type: dict
    default: {}
  full_facts:
    description:
      - Set the whole C(xuanwu_facts) and C(xuanwu_profile_resolved) for every host. By default a host that takes part in
        no later stage (C(xuanwu_node.flags) empty) gets them in brief - C(brief=true), what the whole-run steps read
        (C(docs/facts.md), "Brief facts") - because every host's result passes through Ansible's main process, one host
        after the other. The hosts of a later stage always get them whole.
    type: bool
    default: false
seealso:
  - module: xuanwu.cluster.node_probe
  - module: xuanwu.cluster.node_check
  - module: xuanwu.cluster.host_compare
'''

EXAMPLES = r'''
- name: Probe and judge the node (one task per host)
  xuanwu.cluster.node_validate:
    profile: h200x4-nvlink
    stages:
      collectives: true
  changed_when: false
'''

RETURN = r'''
status:
  description: C(fail), C(warn) or C(pass); C(error) when the node could not be probed.
  returned: always
  type: str
summary:
  description: Status and counts per severity (null when the node could not be probed).
  returned: always
  type: dict
failing:
  description: The findings at or above O(fail_on).
  returned: always
  type: list
  elements: dict
profile_path:
  description: The profile file used.
  returned: always
  type: str
probe_via:
  description:
    - How the node was probed - C(direct), or C(module) and why the direct answer did not go (O(direct)).
  returned: when the profile resolved (an invalid profile probes nothing)
  type: str
  sample: 'module: become without pipelining (a become method may need a terminal)'
ansible_facts:
  description:
    - C(xuanwu_facts) and C(xuanwu_profile_resolved) (in brief unless the host takes part in a later stage or O(full_facts)),
      C(xuanwu_profile_path), C(xuanwu_workloads) (empty) and the host's one
      result C(xuanwu_node) - C(status) (C(error) when the node was not probed, the reason in C(error)), C(findings),
      C(verdict) (the gate's message, empty when the host passes), C(flags), C(compare), C(fail_on), C(checks) (the checks
      that judged nothing on the host, not applicable or not measured, and why) (C(docs/facts.md)).
  returned: always
  type: dict
'''
