# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Probe a node (one round trip) and judge it against its profile, in one task (the node_validate module's action)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils import _redact
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _node

PROBE_ARGS = ('gather', 'interfaces', 'disk_paths', 'replay_dir', 'timeout', 'nccl_library_globs')
STAGES = ('build', 'collectives', 'gpu_single', 'workloads', 'container', 'multinode', 'on_failed_hosts', 'recheck_counters')


def _probe_args(args, profile):
    probe = dict((k, args[k]) for k in PROBE_ARGS if args.get(k) not in (None, '', []))
    disks = [d.get('path') for d in ((profile.get('host') or {}).get('disks') or []) if isinstance(d, dict) and d.get('path')]
    probe['disk_paths'] = list(dict.fromkeys(list(args.get('disk_paths') or []) + disks))
    reads = [item for item in ((profile.get('host') or {}).get('storage') or []) if isinstance(item, dict) and item.get('read_mb_s_min') is not None]
    if reads:
        probe['read_tests'] = [{'path': item['path'], 'max_bytes': int(item['read_max_gib'] * 2 ** 30),
                                'max_seconds': float(item['read_max_s'])} for item in reads]
    patterns = (profile.get('host') or {}).get('leftover_process_patterns')
    if patterns is not None:
        probe['process_patterns'] = patterns
    return probe


def _flags(facts, profile, status, stages):
    """The stages this host takes part in (``xuanwu_node.flags``): host_compare makes the later plays' host
    lists from them once per run, so a stage that is switched off costs nothing per host."""
    fit = status != 'fail'
    flags = []
    per_node = stages['build'] or stages['collectives'] or stages['gpu_single'] or stages['workloads']
    if (per_node or stages['container']) and (fit or stages['on_failed_hosts']):
        flags.append('stages')
    if stages['on_failed_hosts']:
        flags.append('on_failed')
    if stages['multinode'] and fit:
        flags.append('multinode')
    loaded = per_node or stages['multinode'] or stages['recheck_counters']
    counters = ((facts.get('probes') or {}).get('ib_counters') or {}).get('status') == 'ok'
    cas = ((facts.get('infiniband') or {}).get('cas') or {})
    growth = ((profile.get('infiniband') or {}).get('counters_growth_max') or {})
    if loaded and counters and cas and growth:
        flags.append('recheck')
    return flags


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(PROBE_ARGS + tuple(_node.VERDICT_ARGUMENT_SPEC)
                            + ('profile', 'overrides', 'profile_dirs', 'redact_env_keys', 'consistency', 'stages'))

    def _probe(self, probe_args, task_vars):
        """``(facts, error)``: the node's facts, or why there are none."""
        try:
            res = self._execute_module(module_name='xuanwu.cluster.node_probe', module_args=probe_args, task_vars=task_vars)
        except AnsibleConnectionFailure as err:
            return None, 'unreachable: %s' % err
        except AnsibleError as err:
            return None, 'Probe the node (one round trip): %s' % err
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if res.get('unreachable'):
            return None, 'unreachable: %s' % res.get('msg', 'no answer')
        facts = (res.get('ansible_facts') or {}).get('xuanwu_facts')
        if res.get('failed') or not isinstance(facts, dict):
            return None, 'Probe the node (one round trip): %s' % (res.get('msg') or res.get('module_stderr') or 'failed')
        return facts, ''

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            _node.VERDICT_ARGUMENT_SPEC,
            gather=dict(type='list', elements='str', default=['all']),
            interfaces=dict(type='list', elements='str', default=[]),
            disk_paths=dict(type='list', elements='str', default=['/']),
            replay_dir=dict(type='str', default=''),
            timeout=dict(type='int', default=60),
            nccl_library_globs=dict(type='list', elements='str', default=[]),
            profile=dict(type='raw', required=True),
            overrides=dict(type='raw', default={}),
            profile_dirs=dict(type='raw', default=[]),
            redact_env_keys=dict(type='list', elements='str', default=[]),
            consistency=dict(type='raw', default=True),
            stages=dict(type='dict', default={}),
        ))
        host = task_vars.get('inventory_hostname')
        switches = dict(('stages.%s' % name, args['stages'].get(name, False)) for name in STAGES)
        switches['consistency'] = args['consistency']
        for name in sorted(switches):
            switches[name], problem = _collection.convert_variable(name, {'type': 'bool'}, switches[name])
            if problem:
                result.update(failed=True, msg=problem)
                return result
        stages = dict((name, bool(switches['stages.%s' % name])) for name in STAGES)
        dirs, problem = _collection.convert_variable('profile_dirs', {'type': 'list'}, args['profile_dirs'])
        try:
            if problem:
                raise ProfileError('xuanwu_profile_dirs', None, problem)
            profile, path = _collection.resolve_profile(args['profile'], args['overrides'], dirs or [])
        except ProfileError as err:
            result.update(failed=True, msg='host %s: invalid profile, nothing was probed: %s' % (host, err))
            return result
        facts, error = self._probe(_probe_args(args, profile), task_vars)
        findings, summary, failing = [], None, []
        status = 'error'
        if facts is not None:
            try:
                findings, summary, failing = _node.verdict(facts, profile, host, args['fail_on'], args['job_ports'],
                                                           args['job_env'], args['job_mpirun_args'])
                status = summary['status']
            except ProfileError as err:
                error = str(err)
        # the values of the job's secret variables never reach the facts (a fact cache may keep them on disk)
        secrets = _redact.secret_values(args['job_env'], args['redact_env_keys'])
        if secrets:
            facts, findings, failing = _redact.redact(facts, secrets), _redact.redact(findings, secrets), _redact.redact(failing, secrets)
        flags = _flags(facts, profile, status, stages) if facts is not None and not error else []
        result.update(
            changed=False,
            status=status,
            summary=summary,
            failing=failing,
            profile_path=path,
            # every fact is set on every run: a fact cache may hold those of an earlier one
            ansible_facts={'xuanwu_facts': facts or {}, 'xuanwu_profile_resolved': profile, 'xuanwu_profile_path': path,
                           'xuanwu_workloads': [],
                           # the host's one result (status, findings, error, verdict, flags, comparison values): what the
                           # whole-run steps, the report and the gate read of it
                           'xuanwu_node': _node.summary(facts if not error else None, profile, path, args['fail_on'], flags,
                                                        compare=switches['consistency'], host=host, findings=findings,
                                                        status=status, error=error or None)},
        )
        if error:
            result['msg'] = '%s was not validated: %s' % (host, error)
        return result
