# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run record ``runs/<run id>/`` of a rollout (docs/run-record.md): pure helpers of the action run_record.

Redaction of a host's inventory variables, the state of the rollout (batches and each host's outcomes), the
resume decision, the versions read from a host's facts, and atomic file writes. No Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re
import tempfile

from ansible_collections.xuanwu.cluster.plugins.module_utils import _redact
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _paths

STATE_SCHEMA_VERSION = 1
DIR_MODE = 0o750
FILE_MODE = 0o640
MASK = _redact.MASK
OUTCOMES = ('passed', 'failed', 'reboot_required', 'not_ours', 'unreachable')
# outcomes that count as failed (a host that needs a reboot, or is not ours, is neither done nor failed)
FAILED_OUTCOMES = ('failed', 'unreachable')
# an inventory variable whose name matches holds a secret (ansible_password, ansible_become_pass, a key's passphrase, ...)
SECRET_VARIABLE = _redact.SECRET_NAME   # one list of secret names for variables, nested keys and environments
# the inventory variables that hold environments of the jobs (their secret keys: _redact, xuanwu_redact_env_keys)
ENV_VARIABLES = ('xuanwu_nccl_env', 'xuanwu_torch_env')
# key=value or "key": "value" in free text (a command line, a log) whose key names a secret
_SECRET_ASSIGNMENT = re.compile(
    r'''(?P<key>["']?[A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd|_pw|secret|token|jwt|credential|api_?key|private_?key|munge'''
    r'''|_pass|_key)[A-Za-z0-9_]*["']?'''
    r'''\s*[=:]\s*)(?P<value>"[^"]*"|'[^']*'|[^\s,}]+)''', re.IGNORECASE)


class RecordError(Exception):
    """A run record (or an argument about it) that cannot be used; the message says what and where."""


def is_secret_variable(name):
    """Whether the inventory variable (or nested key) ``name`` holds a secret."""
    return _redact.is_secret_key(name)


def _encrypted(value):
    """Whether ``value`` is a vault-encrypted value (its text must never be read into a record)."""
    name = type(value).__name__
    return 'Vault' in name or 'Encrypted' in name or getattr(value, '__ENCRYPTED__', False) is True


def plain(value):
    """``value`` as plain JSON/YAML data (str, int, float, bool, None, dict, list); a vault value becomes ``MASK``."""
    if _encrypted(value):
        return MASK
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict) or hasattr(value, 'items'):
        return dict((str.__str__(str(k)), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    return str(value)


def _extra_env_keys(variables):
    keys = variables.get('xuanwu_redact_env_keys')
    return [str(k) for k in keys] if isinstance(keys, (list, tuple)) else []


def _mask_keys(data, secrets):
    """A copy of ``data`` whose values under a secret key (at any depth) are ``MASK``; their text added to ``secrets``."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if is_secret_variable(key) and value not in (None, ''):
                secrets.extend(_texts(value))
                out[key] = MASK
            else:
                out[key] = _mask_keys(value, secrets)
        return out
    if isinstance(data, list):
        return [_mask_keys(v, secrets) for v in data]
    if isinstance(data, str):
        # the password of a URL (masked by redact below) is a secret wherever else it appears
        secrets.extend(_redact.secret_values({'value': data}))
    return data


def _texts(value):
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def redact_variables(variables):
    """``(shown, secrets)``: one host's inventory variables made safe to write, and the secret values found.

    A variable or nested key matching ``SECRET_VARIABLE`` is ``MASK``; in ``xuanwu_nccl_env`` and
    ``xuanwu_torch_env`` the values of secret keys (``_redact``'s pattern and ``xuanwu_redact_env_keys``) are
    masked; the passwords of URLs are masked in every string; and every secret value found is masked wherever
    else it appears (a token copied into another variable).
    """
    variables = plain(variables or {})
    extra = _extra_env_keys(variables)
    secrets = []
    shown = {}
    for name, value in variables.items():
        if name in ENV_VARIABLES and isinstance(value, dict):
            secrets.extend(_redact.secret_values(value, extra))
            shown[name] = _mask_keys(_redact.redact_env(value, extra), secrets)
        elif is_secret_variable(name) and value not in (None, ''):
            secrets.extend(_texts(value))
            shown[name] = MASK
        else:
            shown[name] = _mask_keys(value, secrets)
    return _redact.redact(shown, secrets), secrets


def redact_free_text(text, secrets=()):
    """``text`` (a command line, a log) with ``key=value`` of secret keys, URL passwords and ``secrets`` masked."""
    text = _SECRET_ASSIGNMENT.sub(lambda m: m.group('key') + MASK, text)
    return _redact.redact_text(text, secrets)


# options of ansible-playbook whose value follows as the next argument (an inventory file is not a playbook)
OPTIONS_WITH_VALUE = frozenset(('-i', '--inventory', '--inventory-file', '-e', '--extra-vars', '-l', '--limit', '-t', '--tags',
                                '--skip-tags', '-u', '--user', '--vault-id', '--vault-password-file', '-M', '--module-path',
                                '-f', '--forks', '-c', '--connection', '-T', '--timeout', '--private-key', '--key-file',
                                '--start-at-task', '--become-user', '--become-method'))


def playbooks_of(argv):
    """The playbook files of an ansible-playbook command line (the value of an option, an inventory file, is not one)."""
    found, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in OPTIONS_WITH_VALUE:
            skip = True
        elif not arg.startswith('-') and arg.endswith(('.yml', '.yaml')):
            found.append(arg)
    return found or None


def env_text(envs):
    """``nccl-env.txt``: the hosts' (already redacted) environments, hosts with the same environment together.

    ``envs``: ``{host: {NAME: value}}``; a host without one is left out. Linear in the number of hosts.
    """
    groups = {}
    for host in sorted(envs):
        env = envs[host]
        if not isinstance(env, dict) or not env:
            continue
        key = json.dumps(env, sort_keys=True)
        groups.setdefault(key, (env, []))[1].append(host)
    if not groups:
        return '# no host sets xuanwu_nccl_env\n'
    lines = []
    for env, hosts in sorted(groups.values(), key=lambda item: item[1][0]):
        lines.append('# hosts: %s' % ', '.join(hosts))
        lines.extend('%s=%s' % (k, env[k]) for k in sorted(env))
        lines.append('')
    return '\n'.join(lines)


def slots(value, gpu_count):
    """The hostfile's slots of a host: ``xuanwu_multinode_slots``, else its GPU count, else 1."""
    for candidate in (value, gpu_count):
        if isinstance(candidate, bool):
            continue
        try:
            number = int(candidate)
        except (TypeError, ValueError):
            continue
        if number > 0:
            return number
    return 1


def hostfile_text(lines):
    """The hostfile of the inventory: ``lines`` are ``(address, slots)`` in the play's order."""
    return ''.join('%s slots=%d\n' % (address, count) for address, count in lines)


# ---- the state of the rollout (state.json) ----

def new_state(run_id, started, hosts, check_mode=False):
    """The state of a new run: no batch yet."""
    return {'schema_version': STATE_SCHEMA_VERSION, 'run_id': run_id, 'started': started, 'check_mode': bool(check_mode),
            'hosts': list(hosts), 'batches': [], 'finished': None, 'outcome': None, 'stopped_at_batch': None}


def check_state(state, where):
    """``state`` if it is a state.json of this schema, else ``RecordError`` naming ``where``."""
    if not isinstance(state, dict):
        raise RecordError('%s: not a run state (a JSON object is expected)' % where)
    if state.get('schema_version') != STATE_SCHEMA_VERSION:
        raise RecordError('%s: schema_version %r, expected %d' % (where, state.get('schema_version'), STATE_SCHEMA_VERSION))
    batches = state.get('batches')
    if not isinstance(batches, list) or not all(isinstance(b, dict) and isinstance(b.get('outcomes'), dict) for b in batches):
        raise RecordError('%s: batches must be a list of objects with outcomes' % where)
    return state


def check_outcomes(hosts, outcomes):
    """The batch's outcomes made regular, or ``RecordError`` naming the host and the problem.

    Every host of the batch needs an outcome: a host left out would later count neither as done nor failed
    silently, so it is an error (record it as ``unreachable`` or ``failed``).
    """
    if not isinstance(outcomes, dict):
        raise RecordError('outcomes must be a mapping of host to {outcome, reasons, failed_checks}')
    regular = {}
    for host, entry in outcomes.items():
        if isinstance(entry, str):
            entry = {'outcome': entry}
        if not isinstance(entry, dict):
            raise RecordError('outcome of %s must be a mapping with outcome, reasons, failed_checks' % host)
        outcome = entry.get('outcome')
        if outcome not in OUTCOMES:
            raise RecordError('outcome of %s is %r; expected one of %s' % (host, outcome, ', '.join(OUTCOMES)))
        reasons, failed = entry.get('reasons') or [], entry.get('failed_checks') or []
        if not isinstance(reasons, list) or not isinstance(failed, list):
            raise RecordError('reasons and failed_checks of %s must be lists' % host)
        regular[str(host)] = {'outcome': outcome, 'reasons': [str(r) for r in reasons], 'failed_checks': [str(c) for c in failed]}
    missing = [h for h in hosts if h not in regular]
    if missing:
        raise RecordError('no outcome for host(s) of the batch: %s' % ', '.join(missing))
    return regular


def begin_drain(state, index, hosts, at):
    """A copy of ``state`` that says the batch ``index`` is about to drain ``hosts``: written before the first drain
    command, so that a run killed at any moment after it (an orphaned worker may finish the drain seconds later) leaves a
    record naming every node this run may have drained (``draining``: host -> {batch, since}; the batch's outcome
    replaces a host's entry)."""
    if not isinstance(index, int) or isinstance(index, bool):
        raise RecordError('batch: the index of the batch is required')
    new = dict(state)
    draining = dict(state.get('draining') or {})
    for host in hosts:
        draining[str(host)] = {'batch': index, 'since': at}
    new['draining'] = draining
    return new


def add_batch(state, index, hosts, outcomes, started, finished):
    """A copy of ``state`` with the batch appended (a batch run again, on a resumed rollout, is appended too); its
    hosts are no longer ``draining``: their outcome says what became of them."""
    batch = {'index': index, 'hosts': list(hosts), 'started': started, 'finished': finished,
             'outcomes': check_outcomes(hosts, outcomes)}
    new = dict(state)
    new['batches'] = list(state.get('batches') or []) + [batch]
    draining = dict((h, e) for h, e in (state.get('draining') or {}).items() if h not in batch['outcomes'])
    new['draining'] = draining
    return new


def last_time(state):
    """When the run last moved: the latest batch's finish, else the resumption or the start of the run."""
    batches = state.get('batches') or []
    return (batches[-1].get('finished') if batches else None) or state.get('resumed_at') or state.get('started')


def latest_outcomes(state):
    """``{host: outcome entry}``: each host's latest outcome in this run (later batches win)."""
    latest = {}
    for batch in state.get('batches') or []:
        latest.update(batch.get('outcomes') or {})
    return latest


def progress(state):
    """``{done_hosts, failed_hosts, batches}`` of a state: hosts whose latest outcome is passed, or failed/unreachable."""
    latest = latest_outcomes(state)
    return {'done_hosts': sorted(h for h, e in latest.items() if e.get('outcome') == 'passed'),
            'failed_hosts': sorted(h for h, e in latest.items() if e.get('outcome') in FAILED_OUTCOMES),
            'batches': [dict(index=b.get('index'), hosts=b.get('hosts'), started=b.get('started'), finished=b.get('finished'),
                             counts=_counts(b)) for b in state.get('batches') or []]}


def _counts(batch):
    counts = {}
    for entry in (batch.get('outcomes') or {}).values():
        counts[entry.get('outcome')] = counts.get(entry.get('outcome'), 0) + 1
    return counts


def remaining(state, hosts, redo=False):
    """The hosts of ``hosts`` (in their order) a resumed rollout still works on.

    A host whose latest outcome in this run is ``passed`` is finished and skipped, unless ``redo``; every
    other host (failed, unreachable, needing a reboot, not yet in a batch) remains. No state: all remain.
    """
    if redo or not state:
        return list(hosts)
    done = set(progress(state)['done_hosts'])
    return [h for h in hosts if h not in done]


def finish(state, finished, stopped_at_batch=None):
    """A copy of ``state`` brought up to date; the rollout calls it after every batch, so that a run killed at any
    point leaves a record that says so.

    ``not_run_hosts``: the hosts of the run that no batch reached. ``held_drained``: the hosts this run leaves drained
    (latest outcome ``failed`` or ``reboot_required``), and those of a batch whose drain began and whose outcome was
    never written (``drain_in_progress``: the run was killed meanwhile; each may or may not be drained now, by this run).
    A run with such hosts is ``interrupted`` too. ``outcome``: ``stopped`` when ``stopped_at_batch`` says a
    batch's failures stopped the rollout; ``interrupted`` while hosts remain that no batch reached (the run has not
    ended: after a batch, and still so if the run is killed before the next one; a resume that reaches every host
    replaces it); else ``failed`` when a host's latest outcome is neither ``passed`` nor ``not_ours`` (someone else's
    drain, left as it was: no failure) or no batch ran (not measured is never a pass); else ``passed``.
    """
    latest = latest_outcomes(state)
    batches = state.get('batches') or []
    not_run = [h for h in state.get('hosts') or () if h not in latest]
    in_progress = sorted(state.get('draining') or {})
    if stopped_at_batch is not None:
        outcome = 'stopped'
    elif (not_run and batches) or in_progress:
        outcome = 'interrupted'
    elif not_run or any(e.get('outcome') not in ('passed', 'not_ours') for e in latest.values()):
        outcome = 'failed'
    else:
        outcome = 'passed'
    held = sorted(set(h for h, e in latest.items() if e.get('outcome') in ('failed', 'reboot_required'))
                  | set(in_progress))
    not_ours = sorted(h for h, e in latest.items() if e.get('outcome') == 'not_ours')
    return dict(state, finished=finished, stopped_at_batch=stopped_at_batch, outcome=outcome, not_run_hosts=not_run,
                held_drained=held, drain_in_progress=in_progress, not_ours_hosts=not_ours)


# ---- versions.json ----

def _get(data, path):
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _text_or_none(value):
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    value = str(value).strip()
    return value or None


def versions(facts):
    """The resolved versions of a host from its node facts (docs/facts.md); ``None`` where not known.

    ``ofed``: the facts hold no OFED/rdma-core version (the probes do not read one); kept as ``None`` rather
    than guessed. ``hca_firmware``: each InfiniBand/RoCE adapter's firmware (ibstat), when read.
    """
    facts = facts if isinstance(facts, dict) else {}
    software = facts.get('software') if isinstance(facts.get('software'), dict) else {}
    gpu = facts.get('gpu') if isinstance(facts.get('gpu'), dict) else {}
    cas = _get(facts, ('infiniband', 'cas'))
    firmware = None
    if isinstance(cas, dict) and cas:
        firmware = dict((str(name), _text_or_none(ca.get('firmware') if isinstance(ca, dict) else None)) for name, ca in sorted(cas.items()))
    return {
        'gpu_driver': _text_or_none(software.get('driver_version') or gpu.get('driver_version')),
        'gpu_kernel_module': _text_or_none(_get(gpu, ('kernel_module', 'version'))),
        'cuda_driver': _text_or_none(software.get('cuda_driver_version') or gpu.get('cuda_driver_version')),
        'cuda_toolkit': _text_or_none(software.get('cuda_toolkit_version')),
        'nccl': _text_or_none(software.get('nccl_version')),
        'ofed': _text_or_none(software.get('ofed_version')),
        'kernel': _text_or_none(_get(facts, ('host', 'kernel', 'release'))),
        'os': _text_or_none(_get(facts, ('host', 'os', 'pretty_name'))),
        'hca_firmware': firmware,
    }


def venv_locks(envs, read_file):
    """``{venv path: sha256 of its requirements file}`` of a host's ``python_venv_envs`` (None: no environments).

    The requirements file is the environment's lock (every pin ``==`` with ``--hash``); ``read_file(path)``
    returns its bytes, or raises ``IOError``/``OSError`` (the hash is then ``None``, never invented).
    """
    if not isinstance(envs, list) or not envs:
        return None
    locks = {}
    for env in envs:
        if not isinstance(env, dict) or not env.get('path'):
            continue
        digest = None
        if env.get('requirements'):
            try:
                digest = hashlib.sha256(read_file(str(env['requirements']))).hexdigest()
            except (IOError, OSError):
                digest = None
        locks[str(env['path']).rstrip('/') or '/'] = digest
    return locks or None


# ---- files ----

def write_atomic(path, text, mode=FILE_MODE):
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename: a reader (or a crash)
    sees the old file or the new one, never half of one."""
    folder = os.path.dirname(path) or '.'
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), suffix='.tmp', dir=folder)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as handle:
            os.fchmod(handle.fileno(), _paths.umask_mode(mode))
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def dump_json(data):
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + '\n'


def load_json(path, what):
    """The JSON document at ``path``; ``RecordError`` naming ``what`` and the problem (never a traceback)."""
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except (IOError, OSError) as err:
        raise RecordError('cannot read %s %s: %s' % (what, path, err.strerror or err))
    except ValueError as err:
        raise RecordError('%s %s is not valid JSON: %s' % (what, path, err))
