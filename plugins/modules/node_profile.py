#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_profile
short_description: Resolve and validate a host's hardware profile and inventory variables
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin); it never connects to the host.
  - Finds the profile by name in the collection's C(profiles/) directory (or O(profile_dirs)), or loads it from a path,
    merges it over the profiles and policy files it C(extends) (looked up the same way), validates it, deep-merges
    O(overrides) and validates the result again.
  - With O(check_variables), also rejects C(xuanwu_*) inventory variables that no role of the collection declares
    (suggesting the closest known name) or whose type is wrong, and a C(xuanwu_replay_dir) that holds no capture bundle.
  - Every problem of the host is reported in one message naming the file or variable and the key; nothing is changed.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
options:
  profile:
    description: Profile name (for example C(h200x4-nvlink)) or path to a profile YAML file.
    type: str
    required: true
  overrides:
    description: Keys replacing the profile's (dicts merge, lists and scalars replace).
    type: dict
    default: {}
  profile_dirs:
    description: Directories searched before the shipped ones for profiles by name and for the profiles and policy files a profile extends.
    type: list
    elements: path
    default: []
  check_variables:
    description: Validate the host's C(xuanwu_*) inventory variables against the roles' argument specs.
    type: bool
    default: true
'''

EXAMPLES = r'''
- name: Resolve the profile of this host
  xuanwu.cluster.node_profile:
    profile: "{{ xuanwu_profile }}"
    overrides: "{{ xuanwu_profile_overrides | default({}) }}"
'''

RETURN = r'''
profile_path:
  description: The profile file used.
  returned: success
  type: str
  sample: /usr/share/ansible/collections/ansible_collections/xuanwu/cluster/profiles/h200x4-nvlink.yml
collection_version:
  description:
    - The version of the collection that resolved the profile (its C(MANIFEST.json) when installed, else C(galaxy.yml)).
    - Role C(xuanwu.cluster.health_watch) pins the code it installs on a node to it.
  returned: success
  type: str
  sample: 0.1.0
problems:
  description: Every problem found, one line each.
  returned: failure
  type: list
  elements: str
  sample: ["unknown variable 'xuanwu_proflie' (did you mean 'xuanwu_profile'?)"]
ansible_facts:
  description: C(xuanwu_profile_resolved) (the validated profile, overrides applied) and C(xuanwu_profile_path).
  returned: success
  type: dict
'''
