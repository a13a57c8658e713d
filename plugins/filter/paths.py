# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``xuanwu.cluster.under_cwd``: a folder under the controller's working directory (never ``$PWD``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _paths


def under_cwd(name):
    try:
        return _paths.under_cwd(name)
    except TypeError as err:
        raise AnsibleFilterError(str(err))


class FilterModule(object):
    def filters(self):
        return {'under_cwd': under_cwd}
