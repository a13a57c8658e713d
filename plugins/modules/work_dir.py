#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: work_dir
short_description: Make a private work directory on the node, or check a fixed one
version_added: 0.1.0
description:
  - Gives a role a directory for the scripts and archives it copies to the node and runs or unpacks as root, that no
    other local user can write to, replace or point elsewhere.
  - With O(parent), makes a fresh directory there the way C(mkdtemp) does (mode 0700, an unpredictable name starting
    with O(prefix), owned by the running user). O(parent) must be owned by root or the running user, and writable by
    others only when it is sticky (as C(/tmp) and C(/var/tmp) are).
  - With O(path), a fixed directory (the older role variables), which is made with mode 0700 when missing, and refused when
    it exists and is a symlink, is not a directory, is not owned by the running user, or is writable by its group or by
    others. The message names the path, its owner and its mode.
  - The module never removes anything; the roles remove the directories they made (M(ansible.builtin.file)
    C(state=absent)).
extends_documentation_fragment:
  - xuanwu.cluster.attributes
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
    details: In check mode nothing is made; a fixed directory that exists is still checked, and a new directory's path is
      returned as O(parent)/O(prefix)C(XXXXXXXX).
  diff_mode:
    support: none
    description: Will return details on what has changed (or possibly needs changing in diff_mode), when in diff mode.
options:
  parent:
    description: Absolute directory to make a fresh private directory in. Mutually exclusive with O(path).
    type: str
  prefix:
    description: Start of the fresh directory's name (a plain name, no C(/)).
    type: str
    default: xuanwu-
  path:
    description: Absolute fixed directory to check (and make when missing). Mutually exclusive with O(parent).
    type: str
'''

EXAMPLES = r'''
- name: Make a private directory for this run
  xuanwu.cluster.work_dir:
    parent: /var/tmp
    prefix: xuanwu-ofed.
  register: workdir

- name: Refuse a planted fixed directory before anything changes
  xuanwu.cluster.work_dir:
    path: /var/tmp/xuanwu-ofed
  check_mode: true
  changed_when: false
'''

RETURN = r'''
path:
  description: The directory (in check mode, for O(parent), a placeholder path that does not exist).
  returned: success
  type: str
  sample: /var/tmp/xuanwu-ofed.k3j9x2ab
created:
  description: Whether the directory was made by this call (or, in check mode, would be).
  returned: success
  type: bool
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.xuanwu.cluster.plugins.module_utils._workdir import WorkDirError, ensure_fixed, make_private


def main():
    module = AnsibleModule(
        argument_spec=dict(
            parent=dict(type='str'),
            prefix=dict(type='str', default='xuanwu-'),
            path=dict(type='str'),
        ),
        required_one_of=[('parent', 'path')],
        mutually_exclusive=[('parent', 'path')],
        supports_check_mode=True,
    )
    p = module.params
    create = not module.check_mode
    try:
        if p['path'] is not None:
            created = ensure_fixed(p['path'], create=create)
            path = p['path']
        else:
            path = make_private(p['parent'], p['prefix'], create=create)
            created = True
    except WorkDirError as err:
        module.fail_json(msg=str(err))
    module.exit_json(changed=created, created=created, path=path)


if __name__ == '__main__':
    main()
