# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Author and attributes shared by the collection's modules and action plugins."""

    # Modules and action plugins that only read or run on the controller: full check mode, no diff.
    DOCUMENTATION = r'''
author:
  - xuanwu.cluster contributors (@xuanwu-cluster)
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    support: none
    description: Will return details on what has changed (or possibly needs changing in diff_mode), when in diff mode.
'''
