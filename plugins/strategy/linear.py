# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: linear
short_description: Ansible's linear strategy, with the collection's controller code loaded once before the workers start
version_added: 0.1.0
description:
  - Runs tasks exactly as C(ansible.builtin.linear) does (lockstep per batch, C(run_once) as there).
  - Ansible runs each task of each host in a worker process forked from the controller's main process, and a worker
    loads the action plugin and everything it imports again for every host. This strategy imports the collection's
    controller code (the judge, the checks, the profile schema) in the main process when the play starts, so that
    every worker inherits it; a fleet of hundreds of hosts saves that import on every host (C(docs/architecture.md),
    "Cost per host").
  - The playbooks of the collection use it for the plays that run a task on every host.
author: xuanwu.cluster contributors
'''

import importlib

from ansible.plugins.strategy.linear import StrategyModule as LinearStrategyModule

# What the per-host controller work imports (the actions node_validate, node_check, workload_check).
PRELOAD = (
    'ansible_collections.xuanwu.cluster.plugins.plugin_utils._node',
    'ansible_collections.xuanwu.cluster.plugins.plugin_utils._collection',
    'ansible_collections.xuanwu.cluster.plugins.module_utils._judge',
    'ansible_collections.xuanwu.cluster.plugins.module_utils._redact',
    'ansible_collections.xuanwu.cluster.plugins.module_utils._catalogue',
)


def preload():
    """Import ``PRELOAD``; return the modules that could not be imported (the play runs as linear does then)."""
    missing = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


class StrategyModule(LinearStrategyModule):

    def __init__(self, tqm):
        super(StrategyModule, self).__init__(tqm)
        preload()
