# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight of one host: its ``xuanwu_*`` inventory variables and its hardware profile.

Shared by the per-host action ``node_profile`` and the whole-run action ``inventory_check`` (every
host of a play in one controller task). Controller side only: reads profile files, never a node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection

# Variables the collection sets itself (facts of an earlier task, or of an earlier run in a fact cache):
# never inventory mistakes.
PRODUCED = ('xuanwu_profile_resolved', 'xuanwu_profile_path', 'xuanwu_findings', 'xuanwu_status', 'xuanwu_workloads',
            'xuanwu_run_id', 'xuanwu_run_started', 'xuanwu_run_hosts', 'xuanwu_check_summary', 'xuanwu_facts',
            'xuanwu_facts_end', 'xuanwu_node', 'xuanwu_group_findings',
            'xuanwu_group_failing', 'xuanwu_stage_hosts', 'xuanwu_multinode_hosts', 'xuanwu_recheck_hosts',
            'xuanwu_rollout_hosts', 'xuanwu_rollout_record', 'xuanwu_batch', 'xuanwu_batch_hosts')


def known_variables():
    """Every variable the roles declare, plus the ones the collection produces (any type)."""
    known = _collection.role_variables()
    for produced in PRODUCED:
        known.setdefault(produced, {'type': 'raw'})
    known.setdefault('xuanwu_capture_dest', {'type': 'str'})
    return known


def default(known, name):
    """The default of ``name`` in the roles' argument specs."""
    return (known.get(name) or {}).get('default')


class ProfileCache(object):
    """Resolved profiles by (reference, overrides, directories): a fleet of one profile resolves it once."""

    def __init__(self):
        self._cache = {}

    def resolve(self, ref, overrides, dirs):
        try:
            key = json.dumps([ref, overrides, dirs], sort_keys=True, default=str)
        except (TypeError, ValueError):
            key = None
        if key is not None and key in self._cache:
            found = self._cache[key]
        else:
            try:
                found = _collection.resolve_profile(ref, overrides, dirs)
            except ProfileError as err:
                found = err
            if key is not None:
                self._cache[key] = found
        if isinstance(found, ProfileError):
            raise found
        return found


def check_host(variables, address, known, profiles):
    """Problems of one host, and its resolved profile and path (None, None when there are problems).

    ``variables``: the host's ``xuanwu_*`` values, templated; ``address``: ``(variable name, value)`` of the
    address a hostfile line would name; ``profiles``: a ``ProfileCache``.
    """
    problems = []
    converted = {}
    for name in ('xuanwu_check_variables', 'xuanwu_profile_dirs'):
        value = variables.get(name, default(known, name))
        converted[name], problem = _collection.convert_variable(name, known[name], value)
        if problem:
            problems.append(problem)
    if problems:
        converted = {'xuanwu_check_variables': True, 'xuanwu_profile_dirs': []}
    if converted['xuanwu_check_variables'] is not False:
        problems.extend(p for p in _collection.check_inventory_vars(variables, known) if p not in problems)
        multinode, problem = _collection.convert_variable(
            'xuanwu_validate_multinode', known['xuanwu_validate_multinode'], variables.get('xuanwu_validate_multinode'))
        if multinode and not problem:
            # the host's address becomes a line of mpirun's hostfile
            problems.extend(_collection.check_host_address(address[0], address[1]))
        replay = variables.get('xuanwu_replay_dir')
        smoke, problem = _collection.convert_variable(
            'xuanwu_container_smoke', known['xuanwu_container_smoke'], variables.get('xuanwu_container_smoke'))
        if smoke and not problem and not variables.get('xuanwu_container_image') and not replay:
            problems.append("xuanwu_container_smoke is true but xuanwu_container_image is not set: name the image the smoke runs "
                            "nvidia-smi -L in (for example nvcr.io/nvidia/cuda:12.6.3-base-ubuntu24.04), or switch the smoke off")
        if isinstance(replay, str) and replay and not os.path.isfile(os.path.join(replay, 'manifest.json')):
            problems.append("xuanwu_replay_dir '%s' is not a capture bundle (no manifest.json there)" % replay)
    ref = variables.get('xuanwu_profile')
    if ref is None or ref == '':
        problems.append("variable 'xuanwu_profile' is not set: name a profile (for example h200x4-nvlink) or a profile file")
        return problems, None, None
    overrides = variables.get('xuanwu_profile_overrides', default(known, 'xuanwu_profile_overrides')) or {}
    try:
        profile, path = profiles.resolve(ref, overrides, converted['xuanwu_profile_dirs'] or [])
    except ProfileError as err:
        problems.extend(str(err).splitlines())      # each mistake of the profile or its overrides, a line of its own
        return problems, None, None
    if problems:
        return problems, None, None
    return problems, profile, path


def message(problems_by_host):
    """One message for every host with problems: the preflight's failure."""
    lines = []
    for host in sorted(problems_by_host):
        lines.append('host %s: invalid inventory or profile, nothing was changed:\n- %s' % (host, '\n- '.join(problems_by_host[host])))
    return '\n'.join(lines)
