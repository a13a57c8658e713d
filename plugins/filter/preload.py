# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``preload``: import the per-host action plugins and what they import in Ansible's main process, once per run.

Ansible runs each task of each host in a worker process forked from the main process; a module the main process has
imported, the worker has too. The main process never imports an action plugin itself, so without this each host's
worker imported the collection's judge again (about a third of validate.yml's controller CPU per host; docs/
architecture.md, "Cost per host"). A play's ``hosts`` is templated in the main process, before its workers fork:
``hosts: "{{ 'all' | xuanwu.cluster.preload }}"`` imports them there, reads and validates the shipped profiles there
once (each host resolved its profile again before) and returns the pattern unchanged."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.utils.display import Display

# The action plugins that run once per host in validate.yml and site.yml.
PER_HOST_ACTIONS = ('node_validate', 'workload_check')
PACKAGE = 'ansible_collections.xuanwu.cluster.plugins.action.'

display = Display()


def preload(pattern):
    """``pattern``, unchanged, once PER_HOST_ACTIONS are imported in this process and the shipped profiles read and
    validated (_collection.warm_profiles: each host's worker then finds them validated; a site's own profile is read
    where a host names it). An import that fails is a warning: each worker then imports the plugin itself and reports
    its error where it runs."""
    for name in PER_HOST_ACTIONS:
        try:
            importlib.import_module(PACKAGE + name)
        except Exception as err:  # pylint: disable=broad-except
            display.warning('xuanwu.cluster.preload: %s not imported in the main process: %s' % (name, err))
    try:
        importlib.import_module('ansible_collections.xuanwu.cluster.plugins.plugin_utils._collection').warm_profiles()
    except Exception as err:  # pylint: disable=broad-except
        display.warning('xuanwu.cluster.preload: the shipped profiles were not read in the main process: %s' % err)
    try:
        # the probe's direct answer carries these module_utils to each node: read once here, not in each host's worker
        importlib.import_module('ansible_collections.xuanwu.cluster.plugins.plugin_utils._direct').sources_json()
    except Exception as err:  # pylint: disable=broad-except
        display.warning('xuanwu.cluster.preload: the probe\'s module_utils were not read in the main process: %s' % err)
    return pattern


class FilterModule(object):
    def filters(self):
        return {'preload': preload}
