#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: mesh_compare
short_description: Compare the MTU of the job interface between the nodes of a job, once, on the controller
version_added: 0.2.0
description:
  - Runs on the controller only (an action plugin), once per run (C(run_once)); it never connects to a host.
  - Reads each host's registered M(xuanwu.cluster.mesh_check) result (O(result)) once, from the fact caches
    (never through C(hostvars[host]), which builds every variable of the host), and compares the MTU of the job
    interface between the hosts (field guide §8, NCCL timeouts from routing, interface names and MTU).
  - The reference is the MTU most hosts have (a tie goes to the larger MTU); a host with another MTU gets a
    C(mesh.mtu) finding naming it and a host with the reference MTU (C(node3 → node1)). A host without a result,
    or whose result has no interface, gets C(mesh.not_measured).
  - The cost is linear in the number of hosts.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
options:
  hosts:
    description: The hosts of the job (usually C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  result:
    description: The name the M(xuanwu.cluster.mesh_check) task registered its result under.
    type: str
    default: xuanwu_mesh
  fail_on_findings:
    description: Fail the task when there is a finding (the findings are returned either way).
    type: bool
    default: true
seealso:
  - module: xuanwu.cluster.mesh_check
'''

EXAMPLES = r'''
- name: Check every peer from every node
  xuanwu.cluster.mesh_check:
    name: "{{ inventory_hostname }}"
    peers: "{{ ansible_play_hosts_all }}"
    interface: ib0
  register: xuanwu_mesh

- name: Compare the MTU of ib0 between the nodes (once)
  xuanwu.cluster.mesh_compare:
    hosts: "{{ ansible_play_hosts_all }}"
    result: xuanwu_mesh
  run_once: true
'''

RETURN = r'''
hosts:
  description: O(hosts).
  returned: always
  type: list
  elements: str
mtu:
  description: The MTU of each host's job interface (null where it could not be read).
  returned: always
  type: dict
  sample: {"node1": 9000, "node2": 9000, "node3": 1500}
findings:
  description: The C(mesh.mtu) and C(mesh.not_measured) findings, worst first.
  returned: always
  type: list
  elements: dict
failing:
  description: The hosts with a failing finding.
  returned: always
  type: list
  elements: str
'''
