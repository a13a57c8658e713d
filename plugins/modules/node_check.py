#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_check
short_description: Compare a node's probed facts with its hardware profile
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin); it never connects to the host.
  - Compares C(xuanwu_facts) (from M(xuanwu.cluster.node_probe)) with C(xuanwu_profile_resolved)
    (from M(xuanwu.cluster.node_profile)) and returns findings. Each finding names the host, the check id, the
    component (C(gpu2), C(gpu1<->gpu2), C(mlx5_3/1), C(eth0), ...), the severity (C(fail), C(warn), C(info)),
    the measured and expected values and what to do. The checks are listed in C(docs/checks.md).
  - Sets the host's one result C(xuanwu_node) - C(status), C(findings), C(verdict) (the gate's message) and the few values
    M(xuanwu.cluster.host_compare) compares between the hosts of a run (driver, NCCL, CUDA toolkit and kernel versions);
    that comparison runs once per run, never here.
  - The task itself does not fail on findings.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
  - xuanwu.cluster.verdict
options:
  facts:
    description: The facts to check. Defaults to the host's C(xuanwu_facts).
    type: dict
  profile:
    description: The resolved profile. Defaults to the host's C(xuanwu_profile_resolved).
    type: dict
seealso:
  - module: xuanwu.cluster.node_validate
  - module: xuanwu.cluster.host_compare
'''

EXAMPLES = r'''
- name: Probe
  xuanwu.cluster.node_probe:

- name: Check
  xuanwu.cluster.node_check:
  register: check

- name: Fail on findings
  ansible.builtin.fail:
    msg: "{{ check.failing }}"
  when: check.failing | length > 0
'''

RETURN = r'''
findings:
  description: Every finding.
  returned: success
  type: list
  elements: dict
  sample:
    - host: node02
      check: gpu.nvlink_pair
      component: gpu1<->gpu2
      severity: fail
      measured: NV12
      expected: NV18
      message: GPU pair linked by NV12, profile expects NV18
      remediation: Run nvidia-smi nvlink --status; reseat or replace the GPU baseboard; open an RMA.
status:
  description: C(fail), C(warn) or C(pass).
  returned: success
  type: str
summary:
  description: Status and counts per severity.
  returned: success
  type: dict
failing:
  description: The findings at or above O(fail_on).
  returned: success
  type: list
  elements: dict
'''
