#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: ssh_trust_keys
short_description: Build the authorized_keys and known_hosts lines of every node of a job, once, on the controller
version_added: 0.2.0
description:
  - Runs on the controller only (an action plugin), once per run (C(run_once)); it never connects to a host.
    Used by the role xuanwu.cluster.ssh_trust (C(docs/ssh-mesh.md)).
  - Reads each host's registered result of the role's read task (O(result)) once, from the fact caches, and returns
    every node's public key (the lines of authorized_keys) and every node's SSH host keys under its inventory name,
    its C(ansible_host) and its global addresses (the lines of known_hosts; C([name]:port) when O(port) is not 22).
    An address more than one node has (a container bridge) is left out, as it names no single node.
  - Fails naming each node that has no user key or no host key (in check mode a user key that is not made yet is
    only listed in RV(missing)). The cost is linear in the number of hosts.
  - Fails, before anything is written, naming each node whose keys were read over a channel that did not verify the
    node's own host key (SSH with host key checking off, C(StrictHostKeyChecking=no) or C(accept-new), a known_hosts
    of C(/dev/null), paramiko adding unknown keys, or a connection not known to verify anything), unless
    O(first_enrolment) names it. Local and container connections of the controller need no host key.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
options:
  hosts:
    description: The nodes to trust each other (the role passes C(ansible_play_batch)).
    type: list
    elements: str
    required: true
  result:
    description: The name the read task registered its result under.
    type: str
    required: true
  port:
    description: The SSH port of the nodes as the peers reach it.
    type: int
    default: 22
  addresses:
    description: List each node's global addresses (C(ip -j addr show scope global)) in known_hosts too.
    type: bool
    default: true
  first_enrolment:
    description:
      - Inventory names of nodes whose keys may be read over a channel that did not verify them, for a first
        enrolment the operator vouches for. Each is named in a warning and in RV(first_enrolment).
    type: list
    elements: str
    default: []
  record_dir:
    description:
      - Folder on the controller where a first enrolment is recorded - C(<record_dir>/ssh-trust/<UTC time>.json), mode
        0600 in folders of mode 0700 - with each enrolled node, why its channel did not verify it, the names it is
        trusted under and the SHA256 fingerprints of the host keys trusted (RV(record)). Nothing is written when no node
        was enrolled, or in check mode. Empty - no record.
    type: str
    default: ''
seealso:
  - module: xuanwu.cluster.mesh_check
'''

EXAMPLES = r'''
- name: Every node's keys, once
  xuanwu.cluster.ssh_trust_keys:
    hosts: "{{ ansible_play_batch }}"
    result: __ssh_trust_read
  run_once: true
  register: __ssh_trust_all
'''

RETURN = r'''
authorized_keys:
  description: Every node's public key, one per line.
  returned: always
  type: str
known_hosts:
  description: The known_hosts lines of every node's host keys.
  returned: always
  type: str
  sample: "node1,10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA..."
missing:
  description: What each incomplete node lacks.
  returned: always
  type: dict
shared_addresses:
  description: Addresses found on more than one node, left out of known_hosts.
  returned: always
  type: list
  elements: str
first_enrolment:
  description: The nodes of O(first_enrolment) whose keys were indeed read over a channel that did not verify them.
  returned: always
  type: list
  elements: str
record:
  description: The file recording this first enrolment (O(record_dir)); empty when none was written.
  returned: always
  type: str
unverified:
  description: The nodes reached over a channel that did not verify them and not named in O(first_enrolment), with why.
  returned: failed
  type: dict
hosts:
  description: O(hosts).
  returned: always
  type: list
  elements: str
'''
