# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``xuanwu.cluster.collection_path``: a file or folder shipped with the collection, wherever the collection is
installed (an inventory that names the demo bundles this way keeps working when AWX moves ``inventory_dir``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection


def collection_path(name):
    if not isinstance(name, string_types) or not name.strip():
        raise AnsibleFilterError('collection_path: a relative path inside the collection is expected, got %r' % (name,))
    parts = name.replace('\\', '/').split('/')
    if os.path.isabs(name) or '..' in parts or '\0' in name:
        raise AnsibleFilterError("collection_path: '%s' must be relative to the collection, without '..'" % name)
    path = os.path.join(_collection.ROOT, *[p for p in parts if p not in ('', '.')])
    if not os.path.exists(path):
        raise AnsibleFilterError("collection_path: '%s' is not in the collection (looked in %s)" % (name, _collection.ROOT))
    return path


class FilterModule(object):
    def filters(self):
        return {'collection_path': collection_path}
