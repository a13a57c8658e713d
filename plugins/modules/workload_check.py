#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: workload_check
short_description: Judge a workload run against the hardware profile and add its findings to the host's
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin).
  - Takes a run registered from M(xuanwu.cluster.workload_run) and judges it by O(kind) against the host's profile
    (C(xuanwu_profile_resolved)); C(nccl_tests) and C(torch_allreduce) against the C(collectives) bandwidth curves,
    C(ddp_smoke), C(fault_isolation), C(elastic_restart), C(gpu_single) and C(soak) against the C(workloads) section; C(task_error) records a stage whose
    task failed outright (O(run) holds C(task) and C(message)); C(not_measured) records a stage that was requested and
    cannot measure anything (O(run) holds C(stage) and C(reason)); C(link_counters) compares the InfiniBand error counters
    of the probe (O(run) C(before), the host's C(xuanwu_facts.infiniband)) with those read after the load (C(after), the
    C(xuanwu_facts_end) of M(xuanwu.cluster.node_probe) with C(stage=end)) against the profile's
    C(infiniband.counters_growth_max); C(scheduler) judges the scheduler's view of the node before a rollout returns it
    to service (O(run) is the result of M(xuanwu.cluster.scheduler_node) with C(action=health); docs/scheduler.md).
  - A run that was skipped (check mode, no recorded output in a replayed bundle) is a C(workload.not_measured) finding
    (fail), since a requested measurement that was not made is never a pass.
  - A run whose bus bandwidth has no curve in the profile is kept in the report as not judged (C(not_judged) in its
    summary), never as a silent pass.
  - A run that timed out, crashed or printed nothing parsable is a finding quoting what was read.
  - Adds the findings to the host's result C(xuanwu_node) (its status and verdict computed again) and the run's figures to
    C(xuanwu_workloads)
    (they appear in the report).
  - When O(run) holds C(dmon) (M(xuanwu.cluster.workload_run) sampled C(nvidia-smi dmon) beside the workload), the samples
    are judged against the profile's C(monitoring) bounds (C(dmon.sustained_clock), C(dmon.temperature),
    C(dmon.memory_growth), C(dmon.ecc), C(dmon.unparsable); C(docs/metrics.md)), and the clock event reasons sampled beside
    them against the profile's C(gpu.clock_event_reasons) classes (C(dmon.throttle) fail, C(dmon.throttle_warn) warn; the
    SW power cap of a GPU at full load is never a finding). The site overrides of the profile (C(checks.disable),
    C(checks.severity)) apply to these findings as to every other. The run's summary keeps a per-GPU summary and at most
    120 points per figure. For C(nccl_tests) the summary also keeps the profile's floor curve of the collective (C(curve)).
  - A run of fewer than two ranks (nccl-tests, the torch all-reduce benchmark or fault isolation on one GPU) is not judged on
    its bandwidth or fault handling; its summary says so in C(not_applicable), never a failure and never a pass.
  - A bus bandwidth above what the links of the profile can carry is C(collectives.implausible); its figures are kept as
    C(busbw_gbps_implausible), not as C(busbw_gbps), so that they are neither plotted nor exported as a measurement.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
options:
  kind:
    description: What ran.
    type: str
    required: true
    choices: [container_smoke, ddp_smoke, elastic_restart, fault_isolation, gpu_single, link_counters, mesh, nccl_tests, not_measured,
              scheduler, soak, task_error, torch_allreduce]
  run:
    description:
      - The registered result of M(xuanwu.cluster.workload_run). For C(nccl_tests) it needs a C(collective) key
        (or O(component)) naming the collective.
      - For C(mesh), C(findings) (the host's M(xuanwu.cluster.mesh_check) and M(xuanwu.cluster.mesh_compare) findings),
        C(peers_checked), C(interface), C(mtu).
    type: dict
    required: true
  component:
    description: Component named in the findings (for example C(all_reduce_perf) or C(pair node01+node02 all_reduce_perf)).
    type: str
  profile:
    description: The resolved profile. Defaults to the host's C(xuanwu_profile_resolved).
    type: dict
  scope:
    description: V(multinode) judges against the profile's C(collectives_multinode) curves instead of C(collectives).
    type: str
    choices: [node, multinode]
    default: node
  record:
    description: Add the findings to the host's. V(false) only returns them (to decide on a diagnostic re-run first).
    type: bool
    default: true
  debug_run:
    description: A diagnostic re-run (for example with C(NCCL_DEBUG=INFO)) whose command and log end are kept in the report.
    type: dict
  dmon_required:
    description:
      - V(true) makes dmon sampling that could not run, and each dmon check that could not see its inputs (too few samples
        under load, a column dmon did not print), a C(dmon.not_measured) finding (warn).
      - V(false) lists them in the run's C(dmon.not_judged) (or C(dmon.not_measured)) only.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Judge the all_reduce run
  xuanwu.cluster.workload_check:
    kind: nccl_tests
    run: "{{ run | combine({'collective': 'all_reduce'}) }}"
'''

RETURN = r'''
findings:
  description: The findings of this run.
  returned: success
  type: list
  elements: dict
status:
  description: The host's status after adding them (C(pass), C(warn), C(fail)).
  returned: success
  type: str
summary:
  description:
    - The figures kept for the report (bus bandwidth per size, step time, time to error, growth).
    - C(not_judged) says why bandwidth that was measured was not compared (no curve in the profile); C(not_measured) why
      nothing was measured; C(not_applicable) why the run cannot apply to the host (fewer than two ranks); C(implausible) why
      its bandwidth is not a measurement of the links.
  returned: success
  type: dict
'''
