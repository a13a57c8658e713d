# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run module mesh_check on the node and judge what it read of its peers here on the controller (``_mesh.judged``): the
module carries the node's half (``_mesh_node``, ``_mesh_probe``) only, never the mesh checks and their remediation
texts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _mesh
from ansible_collections.xuanwu.cluster.plugins.plugin_utils._judged_module import JudgedModule

ANSWER = ('host', 'interface', 'mtu', 'records', 'settings', 'fail_on_findings')


class ActionModule(JudgedModule):

    def judge(self, result):
        # the module's answer: the peers' records and the settings they are judged with
        if 'records' in result:
            answer = dict((key, result.pop(key, None)) for key in ANSWER)
            result.update(_mesh.judged(answer))
        return result
