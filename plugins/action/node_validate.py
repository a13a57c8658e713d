# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Probe a node (one round trip) and judge it against its profile, in one task (the node_validate module's action)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils import _facts, _probe, _redact
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _direct, _node, _worker

PROBE_ARGS = ('gather', 'interfaces', 'disk_paths', 'replay_dir', 'timeout', 'nccl_library_globs', 'nccl_python', 'nccl_home')
STAGES = ('build', 'collectives', 'gpu_single', 'workloads', 'container', 'multinode', 'on_failed_hosts', 'recheck_counters')

# With ``variables: true`` each option the task does not give is read from its inventory variable (the module's
# documentation of ``variables``): the task then templates no argument per host, only the values it reads.
OPTION_VARIABLES = (
    ('profile', 'xuanwu_profile'), ('overrides', 'xuanwu_profile_overrides'), ('profile_dirs', 'xuanwu_profile_dirs'),
    ('gather', 'xuanwu_probe_gather'), ('interfaces', 'xuanwu_probe_interfaces'), ('disk_paths', 'xuanwu_disk_paths'),
    ('replay_dir', 'xuanwu_replay_dir'), ('timeout', 'xuanwu_probe_timeout'), ('nccl_library_globs', 'xuanwu_nccl_library_globs'),
    ('nccl_python', 'xuanwu_torch_python'), ('nccl_home', 'nccl_tests_build_nccl_home'),
    ('fail_on', 'xuanwu_fail_on'), ('consistency', 'xuanwu_consistency_check'), ('job_mpirun_args', 'xuanwu_mpirun_args'),
    ('redact_env_keys', 'xuanwu_redact_env_keys'), ('full_facts', 'xuanwu_full_facts'), ('direct', 'xuanwu_probe_direct'),
)
STAGE_VARIABLES = (
    ('collectives', 'xuanwu_validate_collectives'), ('gpu_single', 'xuanwu_validate_gpu_single'),
    ('container', 'xuanwu_container_smoke'), ('workloads', 'xuanwu_validate_workloads'),
    ('multinode', 'xuanwu_validate_multinode'), ('on_failed_hosts', 'xuanwu_workloads_on_failed_hosts'),
    ('recheck_counters', 'xuanwu_recheck_counters'),
)
BUILD_ARCHIVES = ('nccl_tests_build_archive', 'nccl_tests_build_rccl_archive')


def _is_set(value):
    return value is not None and not (isinstance(value, str) and value == '')


def options_from_variables(given, variables, template):
    """The task's options, those it does not give read from the host's variables (``template`` renders one value).

    ``job_ports`` adds ``xuanwu_torch_master_port`` to ``xuanwu_job_ports``, ``job_env`` is ``xuanwu_nccl_env`` with
    ``xuanwu_torch_env`` over it, and ``stages.build`` is on where an nccl-tests or rccl-tests archive is set and no
    capture bundle is replayed, as the stages of validate.yml decide."""
    args = dict(given)

    def value(name):
        return template(variables[name]) if name in variables else None

    for option, name in OPTION_VARIABLES:
        if option not in args and name in variables:
            args[option] = value(name)
    if 'job_ports' not in args:
        ports = value('xuanwu_job_ports')
        master = value('xuanwu_torch_master_port')
        args['job_ports'] = ([master] if _is_set(master) else []) + (list(ports) if isinstance(ports, (list, tuple)) else [])
    if 'job_env' not in args:
        env = {}
        for name in ('xuanwu_nccl_env', 'xuanwu_torch_env'):
            part = value(name)
            if isinstance(part, dict):
                env.update(part)
        args['job_env'] = env
    stages = args.get('stages', {})
    stages = dict(stages) if isinstance(stages, dict) else stages     # not a mapping: the argument spec names it
    if isinstance(stages, dict):
        for stage, name in STAGE_VARIABLES:
            if stage not in stages and name in variables:
                stages[stage] = value(name)
        if 'build' not in stages:
            stages['build'] = any(_is_set(value(name)) for name in BUILD_ARCHIVES) and not args.get('replay_dir')
        args['stages'] = stages
    return args


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


def _as_read(answered, asked):
    """The paths as the node read them (``~`` and variables expanded: node_probe's ``path`` type), where it answered
    one text per path asked; else those asked."""
    if isinstance(answered, list) and len(answered) == len(asked) and all(isinstance(path, str) for path in answered):
        return answered
    return asked


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
                            + ('profile', 'overrides', 'profile_dirs', 'redact_env_keys', 'consistency', 'stages', 'full_facts',
                               'variables', 'direct'))

    def _probe(self, probe_args, task_vars, direct=True):
        """``(facts, error)``: the node's facts, or why there are none. The node answers with its raw outputs
        (node_probe ``parse: false``) and they are parsed here, where the parsers are loaded once per run.
        ``self._probe_via`` says how: ``direct``, or ``module`` and why the direct answer could not go."""
        try:
            direct, why = _direct.usable(self) if direct else (False, 'switched off (direct: false, xuanwu_probe_direct)')
            self._probe_via = 'direct' if direct else 'module: %s' % why
            if direct:
                # the same answer from the same code, without Ansible's module framework on the node (plugin_utils/_direct)
                res = _direct.run(self, 'xuanwu.cluster.node_probe', probe_args, task_vars)
            else:
                res = self._execute_module(module_name='xuanwu.cluster.node_probe', module_args=dict(probe_args, parse=False),
                                           task_vars=task_vars)
        except AnsibleConnectionFailure as err:
            return None, 'unreachable: %s' % err
        except AnsibleError as err:
            return None, 'Probe the node (one round trip): %s' % err
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        # an interpreter Ansible discovered for this probe is handed back as its module would (not looked for again)
        self._interpreter_facts = dict((key, value) for key, value in (res.get('ansible_facts') or {}).items()
                                       if key.startswith('discovered_interpreter_'))
        if res.get('unreachable'):
            return None, 'unreachable: %s' % res.get('msg', 'no answer')
        if res.get('failed') or 'outputs' not in res:
            return None, 'Probe the node (one round trip): %s' % (res.get('msg') or res.get('module_stderr') or 'failed')
        gather = probe_args.get('gather') or ['all']
        try:
            facts = _probe.facts_from_answer(res['outputs'], source=res.get('source'),
                                             groups=_probe.GROUPS if 'all' in gather else tuple(gather),
                                             interfaces=probe_args.get('interfaces'),
                                             disk_paths=_as_read(res.get('disk_paths'), probe_args['disk_paths'] or ['/']),
                                             process_patterns=probe_args.get('process_patterns'),
                                             read_paths=_as_read(res.get('read_paths'),
                                                                 [test['path'] for test in probe_args.get('read_tests') or []]))
        except _probe.AnswerError as err:
            return None, "the node's probe answer is not what node_probe returns: %s" % err
        return facts, ''

    def run(self, tmp=None, task_vars=None):
        # this host's parsing and judging creates many objects: the collector skips the main process's (_worker)
        _worker.freeze_inherited()
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        given = dict(self._task.args)
        if boolean(given.pop('variables', False), strict=False):
            given = options_from_variables(given, task_vars, self._templar.template)
        validation = ArgumentSpecValidator(dict(
            _node.VERDICT_ARGUMENT_SPEC,
            gather=dict(type='list', elements='str', default=['all']),
            interfaces=dict(type='list', elements='str', default=[]),
            disk_paths=dict(type='list', elements='str', default=['/']),
            replay_dir=dict(type='str', default=''),
            timeout=dict(type='int', default=60),
            nccl_library_globs=dict(type='list', elements='str', default=[]),
            nccl_python=dict(type='str', default='python3'),
            nccl_home=dict(type='str', default=''),
            profile=dict(type='raw', required=True),
            overrides=dict(type='raw', default={}),
            profile_dirs=dict(type='raw', default=[]),
            redact_env_keys=dict(type='list', elements='str', default=[]),
            consistency=dict(type='raw', default=True),
            stages=dict(type='dict', default={}),
            full_facts=dict(type='bool', default=False),
            direct=dict(type='bool', default=True),
        )).validate(given)
        try:
            error = validation.errors[0]
        except IndexError:
            error = None
        if error is not None:
            raise AnsibleActionFail('node_validate: %s' % error)
        args = dict(given, **validation.validated_parameters)
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
        facts, error = self._probe(_probe_args(args, profile), task_vars, direct=args['direct'])
        findings, summary, failing, checks = [], None, [], {}
        status = 'error'
        if facts is not None:
            try:
                findings, summary, failing, checks = _node.verdict(facts, profile, host, args['fail_on'], args['job_ports'],
                                                                   args['job_env'], args['job_mpirun_args'])
                status = summary['status']
            except ProfileError as err:
                error = str(err)
        # the values of the job's secret variables never reach the facts (a fact cache may keep them on disk)
        secrets = _redact.secret_values(args['job_env'], args['redact_env_keys'])
        if secrets:
            facts, findings, failing = _redact.redact(facts, secrets), _redact.redact(findings, secrets), _redact.redact(failing, secrets)
            checks = _redact.redact(checks, secrets)
        flags = _flags(facts, profile, status, stages) if facts is not None and not error else []
        # A host that takes part in no later stage keeps its facts and profile in brief (what the whole-run steps read
        # of them, docs/facts.md "Brief facts"): every host's result passes through Ansible's main process, which
        # converts and copies all of it, one host after the other (docs/architecture.md, "Cost per host").
        full = bool(args['full_facts'] or flags)
        kept_facts = (facts or {}) if full else _facts.brief(facts or {})
        kept_profile = profile if full else _facts.brief_profile(profile)
        result.update(
            changed=False,
            status=status,
            summary=summary,
            failing=failing,
            profile_path=path,
            probe_via=getattr(self, '_probe_via', None),
            # every fact is set on every run: a fact cache may hold those of an earlier one
            ansible_facts={'xuanwu_facts': kept_facts, 'xuanwu_profile_resolved': kept_profile, 'xuanwu_profile_path': path,
                           'xuanwu_workloads': [],
                           # the host's one result (status, findings, error, verdict, flags, comparison values): what the
                           # whole-run steps, the report and the gate read of it
                           'xuanwu_node': _node.summary(facts if not error else None, profile, path, args['fail_on'], flags,
                                                        compare=switches['consistency'], host=host, findings=findings,
                                                        status=status, error=error or None, checks=checks)},
        )
        result['ansible_facts'].update(getattr(self, '_interpreter_facts', None) or {})
        if error:
            result['msg'] = '%s was not validated: %s' % (host, error)
        return result
