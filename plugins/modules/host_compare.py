#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: host_compare
short_description: Compare the hosts of a run with each other, once, on the controller
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin), once per run (C(run_once)); it never connects to a host.
  - Reads the small C(xuanwu_node) fact of each host of O(hosts) (set by M(xuanwu.cluster.node_validate) or
    M(xuanwu.cluster.node_check)) once, from the fact caches (the host's other facts are neither copied nor templated),
    and compares the driver, NCCL, CUDA toolkit and kernel versions of the hosts
    that use the same profile file. A host whose value differs from the majority gets a C(consistency.<key>) finding
    (C(docs/checks.md)); the host's own profile overrides apply to it.
  - Lists the hosts of each later play of C(validate.yml) from the stages each host takes part in (C(xuanwu_node.flags)),
    leaving out a host whose comparison fails.
  - The cost is linear in the number of hosts. The results are returned, not set as facts (a fact cache would keep
    them for the next run).
extends_documentation_fragment:
  - xuanwu.cluster.attributes
options:
  hosts:
    description: The hosts to compare (usually C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
seealso:
  - module: xuanwu.cluster.node_validate
'''

EXAMPLES = r'''
- name: Compare the hosts with each other (once, on the controller)
  xuanwu.cluster.host_compare:
    hosts: "{{ ansible_play_hosts_all }}"
  run_once: true
  register: plan
'''

RETURN = r'''
compared:
  description: How many hosts had values to compare.
  returned: always
  type: int
findings:
  description: The C(consistency.*) findings by host.
  returned: always
  type: dict
failing:
  description: The hosts with a failing finding.
  returned: always
  type: list
  elements: str
hosts:
  description: O(hosts), the hosts of the run.
  returned: always
  type: list
  elements: str
stage_hosts:
  description: The hosts of the per-node stages.
  returned: always
  type: list
  elements: str
multinode_hosts:
  description: The hosts of the multi-node stage.
  returned: always
  type: list
  elements: str
recheck_hosts:
  description: The hosts whose InfiniBand counters are read again after the load.
  returned: always
  type: list
  elements: str
'''
