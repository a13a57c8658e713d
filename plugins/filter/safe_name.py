# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``xuanwu.cluster.safe_name`` (a host name or other untrusted name as one safe file name) and
``xuanwu.cluster.under_cwd`` (a folder under the controller's working directory, never ``$PWD``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _paths


def safe_name(name):
    try:
        return _paths.safe_name(name)
    except TypeError as err:
        raise AnsibleFilterError(str(err))


def under_cwd(name):
    try:
        return _paths.under_cwd(name)
    except TypeError as err:
        raise AnsibleFilterError(str(err))


class FilterModule(object):
    def filters(self):
        return {'safe_name': safe_name, 'under_cwd': under_cwd}
