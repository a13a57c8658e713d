#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: inventory_check
short_description: Validate every host's inventory variables and hardware profile in one controller task
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin), once per run (C(run_once)); it never connects to a host.
  - For each host of O(hosts), does what M(xuanwu.cluster.node_profile) does for one - unknown C(xuanwu_*) variables
    (with a suggestion for typos), wrong types (strings as C(-e name=value) gives them are converted as Ansible's
    argument specs convert them), values outside their grammar, a C(xuanwu_replay_dir) that is not a capture bundle,
    and the profile (found, valid, valid again with the host's overrides).
  - Fails with one message naming every host and every problem; nothing else has run. A profile shared by many hosts
    is resolved once.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
options:
  hosts:
    description: The hosts to validate (usually C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
seealso:
  - module: xuanwu.cluster.node_profile
'''

EXAMPLES = r'''
- name: Validate every host's inventory variables and hardware profile (once, on the controller)
  xuanwu.cluster.inventory_check:
    hosts: "{{ ansible_play_hosts_all }}"
  run_once: true
'''

RETURN = r'''
hosts:
  description: How many hosts were validated.
  returned: success
  type: int
profiles:
  description: Profile files used, with the number of hosts of each.
  returned: success
  type: dict
problems:
  description: Every problem found, by host.
  returned: failure
  type: dict
'''
