# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep the record of a rollout in runs/<run id>/ on the controller: start, one step per batch, finish."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import getpass
import os
import shutil
import socket
import sys
import tempfile
import time

import yaml
from ansible import __version__ as ANSIBLE_VERSION
from ansible import constants as C
from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils import _redact
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _launch_kit, _node, _paths, _preflight
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _runrecord as rr

# what Ansible adds to every host's variables (not inventory variables; `groups` alone is as long as the inventory)
MAGIC = frozenset((
    'ansible_check_mode', 'ansible_collection_name', 'ansible_config_file', 'ansible_dependent_role_names',
    'ansible_diff_mode', 'ansible_facts', 'ansible_forks', 'ansible_index_var', 'ansible_inventory_sources',
    'ansible_limit', 'ansible_local', 'ansible_loop', 'ansible_loop_var', 'ansible_parent_role_names',
    'ansible_parent_role_paths', 'ansible_play_batch', 'ansible_play_hosts', 'ansible_play_hosts_all',
    'ansible_play_name', 'ansible_play_role_names', 'ansible_playbook_python', 'ansible_role_name', 'ansible_role_names',
    'ansible_run_tags', 'ansible_search_path', 'ansible_skip_tags', 'ansible_verbosity', 'ansible_version',
    'environment', 'group_names', 'groups', 'hostvars', 'inventory_dir', 'inventory_file', 'inventory_hostname',
    'inventory_hostname_short', 'omit', 'play_hosts', 'playbook_dir', 'role_name', 'role_names', 'role_path', 'role_uuid'))
# what a batch step reads of each host, as the facts hold it (never templated again)
FACT_VARIABLES = ('xuanwu_facts',)
STEPS = ('start', 'drain', 'batch', 'finish', 'kit')
# what the launch kit reads of each host that passed: its results as the facts hold them, and a few variables (templated)
KIT_RESULTS = ('xuanwu_facts', 'xuanwu_workloads', 'xuanwu_profile_resolved')
KIT_VARIABLES = ('ansible_host', 'xuanwu_multinode_slots', 'xuanwu_nccl_env', 'xuanwu_torch_env', 'xuanwu_redact_env_keys',
                 'xuanwu_mpirun', 'xuanwu_mpirun_args', 'xuanwu_torch_master_port', 'xuanwu_torch_python', 'xuanwu_torch_nproc',
                 'xuanwu_profile', 'xuanwu_profile_dirs')
# the launch settings of the kit and the variables that set them (unset: _launch_kit.DEFAULT_SETTINGS, the roles' defaults)
KIT_SETTINGS = {'mpirun': 'xuanwu_mpirun', 'mpirun_args': 'xuanwu_mpirun_args', 'master_port': 'xuanwu_torch_master_port',
                'python': 'xuanwu_torch_python'}


def _now():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def _mkdir(path):
    if not os.path.isdir(path):
        os.makedirs(path, rr.DIR_MODE)
    os.chmod(path, _paths.umask_mode(rr.DIR_MODE))


def _read_bytes(path):
    with open(path, 'rb') as handle:
        return handle.read()


def _remove(path):
    """Remove ``path`` (the launch kit an earlier run of this run id wrote): a link itself, never what it points to."""
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def _dig(data, *path):
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _copy_tree(src, dst):
    """Copy the regular files and folders of ``src`` into ``dst`` (links are not followed, nor copied)."""
    _mkdir(dst)
    for name in sorted(os.listdir(src)):
        source, target = os.path.join(src, name), os.path.join(dst, name)
        if os.path.islink(source):
            continue
        if os.path.isdir(source):
            _copy_tree(source, target)
        elif os.path.isfile(source):
            shutil.copyfile(source, target)
            os.chmod(target, _paths.umask_mode(rr.FILE_MODE))


def _recorded_state(record, run_id):
    """The path of the record's state.json and its content; RecordError when the start step did not run."""
    state_path = os.path.join(record, 'state.json')
    if not os.path.isfile(state_path):
        raise rr.RecordError('no run record at %s: the step start of run %s did not run' % (record, run_id))
    return state_path, rr.check_state(rr.load_json(state_path, 'run state'), state_path)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('step', 'run_id', 'runs_dir', 'hosts', 'batch', 'outcomes', 'reports_dir', 'redo',
                             'stopped_at_batch', 'started', 'failed'))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            step=dict(type='str', required=True, choices=list(STEPS)),
            run_id=dict(type='str', required=True),
            runs_dir=dict(type='path'),
            hosts=dict(type='list', elements='str', default=[]),
            batch=dict(type='int'),
            outcomes=dict(type='dict', default={}),
            reports_dir=dict(type='path'),
            redo=dict(type='bool', default=False),
            stopped_at_batch=dict(type='int'),
            started=dict(type='str'),
            failed=dict(type='dict', default={}),
        ))
        # plain data: what Ansible hands over may be tagged strings, which the record's YAML and JSON must not see
        args = rr.plain(args)
        if not args['run_id'].strip():
            return dict(result, failed=True, msg='run_record: run_id is empty; name the run (xuanwu_run_id)')
        runs_dir = args['runs_dir'] or task_vars.get('xuanwu_runs_dir') or os.path.join(os.getcwd(), 'runs')
        run_dir = os.path.join(runs_dir, _paths.safe_name(args['run_id']))
        # check mode: the record of the plan is written beside the real one (runs/<id>/check/), never into it, so
        # that a rehearsal never makes a later real run skip hosts (docs/run-record.md)
        check = bool(self._task.check_mode or self._play_context.check_mode)
        record = os.path.join(run_dir, 'check') if check else run_dir
        try:
            step = getattr(self, '_' + args['step'])
            data = step(args, task_vars, run_dir, record, check)
        except rr.RecordError as err:
            return dict(result, failed=True, msg='run_record %s: %s' % (args['step'], err))
        except (IOError, OSError) as err:
            return dict(result, failed=True, msg='run_record %s: cannot write the run record %s: %s' % (
                args['step'], record, err))
        result.update(data)
        result.update(changed=False, run_dir=record, check_mode=check)
        return result

    # ---- start ----

    def _start(self, args, task_vars, run_dir, record, check):
        state_path = os.path.join(record, 'state.json')
        _mkdir(run_dir)
        _mkdir(record)
        if check:
            # the rehearsal starts from the real run's state (so it shows what a real resume would skip)
            real = os.path.join(run_dir, 'state.json')
            base = rr.check_state(rr.load_json(real, 'run state'), real) if os.path.isfile(real) else None
            state = dict(base, check_mode=True) if base else rr.new_state(args['run_id'], _now(), args['hosts'], True)
            resumed = base is not None
        elif os.path.isfile(state_path):
            state = rr.check_state(rr.load_json(state_path, 'run state'), state_path)
            resumed = True
        else:
            state = rr.new_state(args['run_id'], _now(), args['hosts'])
            resumed = False
        hostvars = task_vars.get('hostvars') or {}
        inventory, envs, lines, profiles, locks, secrets = {}, {}, [], {}, {}, []
        cache = _preflight.ProfileCache()
        for host in args['hosts']:
            variables = self._variables(hostvars, host)
            shown, found = rr.redact_variables(variables)
            secrets.extend(found)
            inventory[host] = shown
            if isinstance(shown.get('xuanwu_nccl_env'), dict):
                envs[host] = shown['xuanwu_nccl_env']
            profile = self._profile(variables, cache)
            if profile and profile.get('name') and profile['name'] not in profiles:
                profiles[profile['name']] = profile
            gpus = ((profile or {}).get('gpu') or {}).get('count')
            address = variables.get('ansible_host') or host
            lines.append((address, rr.slots(variables.get('xuanwu_multinode_slots'), gpus)))
            locks[host] = rr.venv_locks(variables.get('python_venv_envs'), lambda p: _read_bytes(
                p if os.path.isabs(p) else os.path.join(task_vars.get('playbook_dir') or os.getcwd(), p)))
        header = '# inventory variables of run %s as the run started; secrets are masked (%s)\n' % (args['run_id'], rr.MASK)
        rr.write_atomic(os.path.join(record, 'inventory.yml'), header + yaml.safe_dump(
            {'hosts': inventory}, default_flow_style=False, sort_keys=True, allow_unicode=True))
        _mkdir(os.path.join(record, 'profiles'))
        for name, profile in profiles.items():
            rr.write_atomic(os.path.join(record, 'profiles', _paths.safe_name(name) + '.yml'), yaml.safe_dump(
                rr.plain(profile), default_flow_style=False, sort_keys=False, allow_unicode=True))
        rr.write_atomic(os.path.join(record, 'hostfile'), rr.hostfile_text(lines))
        rr.write_atomic(os.path.join(record, 'nccl-env.txt'), rr.env_text(envs))
        session = {'at': _now(), 'check_mode': check, 'ansible_version': ANSIBLE_VERSION,
                   'playbook': rr.playbooks_of(sys.argv[1:]),
                   'playbook_dir': task_vars.get('playbook_dir'),
                   'controller_user': getpass.getuser(), 'controller_host': socket.gethostname(),
                   'command_line': rr.redact_free_text(' '.join(sys.argv), secrets) if sys.argv else None}
        meta_path = os.path.join(record, 'meta.json')
        if resumed and os.path.isfile(meta_path):
            # the first session's meta is kept; each resumption is added to it
            meta = rr.load_json(meta_path, 'run meta')
            meta = meta if isinstance(meta, dict) else {}
            meta['resumptions'] = list(meta.get('resumptions') or []) + [session]
            state = dict(state, resumed_at=session['at'])
        else:
            log_path = C.DEFAULT_LOG_PATH
            meta = dict(session, run_id=args['run_id'], started=state.get('started'), log_path=log_path,
                        log_offset=os.path.getsize(log_path) if log_path and os.path.isfile(log_path) else 0)
            del meta['at']
        rr.write_atomic(meta_path, rr.dump_json(meta))
        # versions.json: the hosts' venv locks as the run starts; each batch adds what its hosts' facts say
        versions_path = os.path.join(record, 'versions.json')
        versions = rr.load_json(versions_path, 'versions') if os.path.isfile(versions_path) else {}
        for host in args['hosts']:
            entry = versions.get(host) if isinstance(versions.get(host), dict) else {}
            entry['venv_locks'] = locks[host]
            versions[host] = entry
        rr.write_atomic(versions_path, rr.dump_json(versions))
        rr.write_atomic(state_path, rr.dump_json(state))
        out = rr.progress(state)
        out.update(resumed=resumed, remaining_hosts=rr.remaining(state, args['hosts'], args['redo']))
        return out

    def _variables(self, hostvars, host):
        """The host's inventory variables, templated (a value that cannot be templated is recorded as such)."""
        try:
            hv = hostvars[host]
        except Exception as err:  # pylint: disable=broad-except
            raise rr.RecordError('cannot read the variables of %s: %s' % (host, err))
        skip = _node.fact_names(hostvars, host)
        variables = {}
        for name in hv:
            if name in MAGIC or name in skip or name.startswith('ansible_play_'):
                continue
            try:
                variables[name] = hv[name]
            except Exception as err:  # pylint: disable=broad-except
                variables[name] = '<cannot be templated: %s>' % str(err).splitlines()[0][:200] if str(err) else '<cannot be templated>'
        return variables

    @staticmethod
    def _profile(variables, cache):
        ref = variables.get('xuanwu_profile')
        if not ref:
            return None
        dirs = variables.get('xuanwu_profile_dirs')
        try:
            profile, _path = cache.resolve(ref, {}, dirs if isinstance(dirs, list) else [])
        except Exception:  # pylint: disable=broad-except
            return None   # the preflight (inventory_check) names a bad profile; the record keeps what it can
        return profile

    # ---- drain (the intent, before the batch's first drain command) ----

    def _drain(self, args, task_vars, run_dir, record, check):
        if args['batch'] is None:
            raise rr.RecordError('batch: the index of the batch is required')
        state_path, state = _recorded_state(record, args['run_id'])
        now = _now()
        # brought up to date at once (as finish does): killed from here on, the record names these hosts held drained
        state = rr.finish(rr.begin_drain(state, args['batch'], args['hosts'], now), now)
        rr.write_atomic(state_path, rr.dump_json(state))
        out = rr.progress(state)
        out.update(resumed=False, draining=sorted(state['draining']), held_drained=state['held_drained'])
        return out

    # ---- batch ----

    def _batch(self, args, task_vars, run_dir, record, check):
        if args['batch'] is None:
            raise rr.RecordError('batch: the index of the batch is required')
        state_path, state = _recorded_state(record, args['run_id'])
        # the batch began when it was given (started), else when the previous batch (or the run) ended
        started = args['started'] or rr.last_time(state)
        state = rr.add_batch(state, args['batch'], args['hosts'], args['outcomes'], started, _now())
        hostvars = task_vars.get('hostvars') or {}
        versions_path = os.path.join(record, 'versions.json')
        versions = rr.load_json(versions_path, 'versions') if os.path.isfile(versions_path) else {}
        for host in args['hosts']:
            facts = _node.host_values(hostvars, host, FACT_VARIABLES).get('xuanwu_facts')
            entry = versions.get(host) if isinstance(versions.get(host), dict) else {}
            if isinstance(facts, dict):
                entry.update(rr.versions(facts))
                entry['batch'] = args['batch']
            versions[host] = entry
        rr.write_atomic(versions_path, rr.dump_json(versions))
        rr.write_atomic(state_path, rr.dump_json(state))
        out = rr.progress(state)
        out['resumed'] = False
        return out

    # ---- finish ----

    def _finish(self, args, task_vars, run_dir, record, check):
        state_path, state = _recorded_state(record, args['run_id'])
        reports_dir = args['reports_dir'] or task_vars.get('xuanwu_reports_dir') or os.path.join(os.getcwd(), 'reports')
        report = os.path.join(reports_dir, _paths.safe_name(args['run_id']))
        copied = os.path.isdir(report)
        if copied:
            _copy_tree(report, os.path.join(record, 'reports'))
        meta_path = os.path.join(record, 'meta.json')
        meta = rr.load_json(meta_path, 'run meta') if os.path.isfile(meta_path) else {}
        log_path = C.DEFAULT_LOG_PATH
        if log_path and os.path.isfile(log_path):
            with open(log_path, 'rb') as handle:
                offset = meta.get('log_offset') if isinstance(meta.get('log_offset'), int) else 0
                handle.seek(offset if offset <= os.path.getsize(log_path) else 0)
                text = handle.read().decode('utf-8', 'replace')
            rr.write_atomic(os.path.join(record, 'ansible.log'), rr.redact_free_text(text))
        state = rr.finish(state, _now(), args['stopped_at_batch'])
        rr.write_atomic(state_path, rr.dump_json(state))
        # the launch kit of the hosts whose latest outcome is passed (the others left out, with their reasons), once the
        # rollout has ended or stopped: after a batch with hosts still to come it would read every host again each time
        kit = {'written': False, 'reason': 'the rollout has not ended: hosts remain that no batch reached', 'partial': False,
               'hosts': [], 'left_out_hosts': {}, 'dir': None}
        if state['outcome'] != 'interrupted':
            failed = dict((h, 'not reached by a batch of this run') for h in state['not_run_hosts'])
            for host, entry in rr.latest_outcomes(state).items():
                if entry.get('outcome') != 'passed':
                    failed[host] = '%s: %s' % (entry.get('outcome'), '; '.join(entry.get('reasons') or []) or 'no reason recorded')
            versions_path = os.path.join(record, 'versions.json')
            recorded = rr.load_json(versions_path, 'versions') if os.path.isfile(versions_path) else {}
            kit = self._write_kit(record, args['run_id'], list(state.get('hosts') or []), failed, task_vars,
                                  recorded if isinstance(recorded, dict) else {}, 'site')
        out = rr.progress(state)
        out.update(resumed=False, outcome=state['outcome'], stopped_at_batch=state['stopped_at_batch'],
                   not_run_hosts=state['not_run_hosts'], reports_copied=copied, launch_kit=kit)
        return out

    # ---- kit (validate.yml: after the report) ----

    def _kit(self, args, task_vars, run_dir, record, check):
        """The launch kit of a validation without a rollout: ``failed`` are the report's verdicts (the hosts the gate
        fails, and why); every other host of ``hosts`` passed."""
        _mkdir(run_dir)
        _mkdir(record)
        kit = self._write_kit(record, args['run_id'], args['hosts'], args['failed'], task_vars, {}, 'validate')
        return {'launch_kit': kit}

    def _write_kit(self, record, run_id, hosts, failed, task_vars, recorded, source):
        """Build the kit (``_launch_kit.build``) of ``hosts`` less ``failed`` and write it to ``launch-kit/`` of
        ``record`` (a new folder renamed into place: never half a kit), or remove the kit an earlier run of this run id wrote when no host
        passed; ``launch-kit.json`` says which and why. Reads each host that passed once."""
        hostvars = task_vars.get('hostvars') or {}
        nodes, secrets, extra_keys, settings = {}, [], [], None
        cache = _preflight.ProfileCache()
        for host in hosts:
            if host in failed:
                continue
            try:
                results = _node.host_values(hostvars, host, KIT_RESULTS)
                variables = self._kit_variables(hostvars, host)
            except Exception as err:  # pylint: disable=broad-except
                self._display.warning('launch kit: cannot read the results of %s: %s' % (host, err))
                continue   # build() leaves it out: its results could not be read
            keys = variables.get('xuanwu_redact_env_keys')
            keys = [str(k) for k in keys] if isinstance(keys, list) else []
            extra_keys.extend(keys)
            env = {}
            for name in ('xuanwu_nccl_env', 'xuanwu_torch_env'):
                if isinstance(variables.get(name), dict):
                    secrets.extend(_redact.secret_values(variables[name], keys))
                    env.update(variables[name])
            facts = results.get('xuanwu_facts') if isinstance(results.get('xuanwu_facts'), dict) else None
            # the GPUs the probe counted; a host that passed in an earlier run of a resumed rollout has no facts in this one:
            # its profile's, as the record's hostfile has them
            gpus = _dig(facts, 'gpu', 'count')
            if not facts:
                gpus = _dig(results.get('xuanwu_profile_resolved'), 'gpu', 'count') or _dig(self._profile(variables, cache), 'gpu', 'count')
            versions = dict(recorded.get(host) or {}) if isinstance(recorded.get(host), dict) else {}
            if facts:
                versions.update(rr.versions(facts))
            workloads = results.get('xuanwu_workloads') if isinstance(results.get('xuanwu_workloads'), list) else []
            versions.update(_launch_kit.torch_versions(workloads))
            nodes[host] = {'address': str(variables.get('ansible_host') or host), 'slots': rr.slots(variables.get('xuanwu_multinode_slots'), gpus),
                           'nproc': variables.get('xuanwu_torch_nproc'), 'versions': versions, 'env': env,
                           'stages': _launch_kit.stages(workloads)}
            if settings is None:
                # the launches of the validation ran from the first host that passed (the head): its settings
                settings = dict((key, variables.get(name)) for key, name in KIT_SETTINGS.items())
        kit = _launch_kit.build(run_id, hosts, failed, nodes, settings or {}, _now(), source, extra_keys, secrets)
        target = os.path.join(record, _launch_kit.KIT_DIR)
        if kit['written']:
            fresh = tempfile.mkdtemp(prefix='.%s.' % _launch_kit.KIT_DIR, dir=record)
            try:
                os.chmod(fresh, _paths.umask_mode(rr.DIR_MODE))
                for name, (text, mode) in kit['files'].items():
                    rr.write_atomic(os.path.join(fresh, name), text, mode)
                old = None
                if os.path.lexists(target):
                    old = tempfile.mkdtemp(prefix='.%s.old.' % _launch_kit.KIT_DIR, dir=record)
                    os.rename(target, os.path.join(old, 'kit'))
                os.rename(fresh, target)
            except BaseException:
                _remove(fresh)
                raise
            if old:
                _remove(old)
        elif os.path.lexists(target):
            _remove(target)   # the kit an earlier run of this run id wrote no longer says what passed
        rr.write_atomic(os.path.join(record, _launch_kit.NOTE), rr.dump_json(kit['note']))
        shown = kit['note']
        return {'written': shown['written'], 'reason': shown['reason'], 'partial': shown['partial'], 'hosts': shown['hosts'],
                'left_out_hosts': shown['left_out_hosts'], 'dir': target if kit['written'] else None}

    @staticmethod
    def _kit_variables(hostvars, host):
        """The variables of ``host`` the kit reads (``KIT_VARIABLES``), templated, as plain data."""
        hv = hostvars[host]
        variables = {}
        for name in KIT_VARIABLES:
            if name in hv:
                try:
                    variables[name] = rr.plain(hv[name])
                except Exception:  # pylint: disable=broad-except
                    variables[name] = None
        return variables
