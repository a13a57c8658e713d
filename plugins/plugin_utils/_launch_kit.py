# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch kit of a validation that passed (docs/run-record.md, "The launch kit"): pure functions, data in, the
text of the kit's files out. The action run_record writes them into ``runs/<run id>/launch-kit/``.

The kit keeps one minimal runnable configuration: the hosts that passed (``hostfile``, slots = GPUs per host), the
NCCL/torch environment they passed with (``env.sh``), their versions (``versions.json``), ``launch-mpirun.sh`` and
``launch-torchrun.sh`` for the site's own training script, and the manifest ``kit.json``. A run in which no host
passed gets no kit; the note (``launch-kit.json`` beside it) says why. Nothing secret is written: a variable whose
name or value looks secret is left out of the kit and named in the manifest (its value never).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re
import unicodedata

from ansible_collections.xuanwu.cluster.plugins.module_utils import _redact
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _paths
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _runrecord as rr

SCHEMA_VERSION = 1
KIT_DIR = 'launch-kit'
NOTE = 'launch-kit.json'
FILE_MODE = 0o644
SCRIPT_MODE = 0o755
FILES = ('hostfile', 'env.sh', 'versions.json', 'launch-mpirun.sh', 'launch-torchrun.sh', 'kit.json')
# the names env.sh exports (NCCL_*, TORCH_*, CUDA_*...): upper case, so that a name is one word of the shell and of mpirun's -x
ENV_NAME = re.compile(r'\A[A-Z_][A-Z0-9_]*\Z')
ENV_NAME_WORDS = 'not an environment variable name of the kit (^[A-Z_][A-Z0-9_]*$)'
# a hostfile line's host: a host name or an IPv4/IPv6 address (as the preflight's grammar, plugin_utils/_collection.py)
HOST_ADDRESS = re.compile(r'\A[A-Za-z0-9._:%\[\]-]{1,253}\Z')
# what the validation's launches use where the inventory sets nothing (the roles' defaults; the action reads them there)
DEFAULT_SETTINGS = {'mpirun': 'mpirun', 'mpirun_args': [], 'master_port': 29500, 'python': 'python3'}
# set by the launch scripts themselves: an inventory environment that sets them would be overridden, so it is left out
# a shell word that needs no quotes anywhere (shlex.quote's set less '=', which starts an assignment after export NAME=)
_BARE_WORD = re.compile(r'\A[A-Za-z0-9_@%+:,./-]+\Z')
LAUNCH_NAMES = frozenset(('MASTER_ADDR', 'MASTER_PORT', 'RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'NODE_RANK'))


class KitError(Exception):
    """A launch setting the kit cannot hold (the message names it); no kit is written."""


def unsafe_characters(text):
    """Whether ``text`` holds a character a shell file must not carry: control (newline, NUL, escape, C1), format
    (a right-to-left override that shows a reader other text than the shell runs) or a line/paragraph separator."""
    return any(unicodedata.category(ch) in ('Cc', 'Cf', 'Zl', 'Zp', 'Cs') for ch in text)


def quote(text):
    """``text`` as one shell word (single-quoted where needed); ``KitError`` for a character no file should carry."""
    text = str(text)
    if unsafe_characters(text):
        raise KitError('%s holds a control character' % json.dumps(text))
    if _BARE_WORD.match(text):
        return text
    return "'%s'" % text.replace("'", "'\"'\"'")


def comment(text, limit=200):
    """``text`` made safe for a ``#`` comment of a shell file or a hostfile: one line, unsafe characters as ``?``."""
    text = ''.join('?' if unicodedata.category(ch)[0] in ('C', 'Z') and ch != ' ' else ch for ch in str(text))
    return text if len(text) <= limit else text[:limit - 3] + '...'


def one_line(text, limit=400):
    """``text`` (a verdict, a reason) as one line of at most ``limit`` characters (``comment``)."""
    return comment(' '.join(str(text).split()), limit)


def _text(value):
    """An environment value as the workloads received it (``str(value)``: workload_run); None for one that is not a
    string or a number."""
    if value is None or isinstance(value, (dict, list, tuple, set)):
        return None
    return str(value)


def classify_env(env, extra_secret_keys=(), secrets=()):
    """``(kept, left_out)`` of one host's environment: ``kept`` ``{NAME: value}`` that env.sh may export;
    ``left_out`` ``{NAME: reason}``.

    Left out: a name that is not ``ENV_NAME`` (mpirun's ``-x NAME`` and the shell read one word), one the launch
    scripts set (``LAUNCH_NAMES``), a secret name (``_redact``'s pattern, ``extra_secret_keys``), a value that is
    not a string or a number, one with a control character, and a value that looks secret (the password of a URL,
    an Authorization header's credential, or one of ``secrets``, the secret values found anywhere in the run).
    """
    kept, left_out = {}, {}
    secret_values = set(str(s) for s in secrets or () if s)
    for name in sorted(env or {}, key=str):
        value = _text(env[name])
        shown = str(name)
        if not isinstance(name, str) or not ENV_NAME.match(name):
            left_out[comment(shown, 80)] = ENV_NAME_WORDS
        elif name in LAUNCH_NAMES:
            left_out[name] = 'set by the launch scripts'
        elif _redact.is_secret_key(name, extra_secret_keys):
            left_out[name] = 'secret name'
        elif value is None:
            left_out[name] = 'not a string or a number'
        elif value == rr.MASK:
            left_out[name] = 'secret value (vault)'
        elif unsafe_characters(value):
            left_out[name] = 'control character in the value'
        elif _redact.secret_values({'value': value}) or _redact.redact_text(value, secret_values) != value:
            left_out[name] = 'value looks secret'
        else:
            kept[name] = value
    return kept, left_out


def common_env(envs, hosts, extra_secret_keys=(), secrets=()):
    """``(env, per_host, left_out)`` of the hosts that passed.

    ``envs``: ``{host: {NAME: value}}`` (each host's ``xuanwu_nccl_env`` combined with its ``xuanwu_torch_env``, as
    the node checks read them). ``env``: the variables every host sets to the same value (env.sh exports them, mpirun
    passes them with ``-x``); ``per_host``: ``{NAME: {host: value}}`` of the others (not exported: each node must set
    its own); ``left_out``: ``{NAME: reason}`` (``classify_env``; a name left out on one host is left out for all).
    """
    kept, left_out = {}, {}
    for host in hosts:
        one, out = classify_env(envs.get(host) or {}, extra_secret_keys, secrets)
        kept[host] = one
        for name, reason in out.items():
            left_out.setdefault(name, reason)
    names = sorted(set(n for host in hosts for n in kept[host]) - set(left_out))
    env, per_host = {}, {}
    for name in names:
        values = dict((host, kept[host].get(name)) for host in hosts)
        if len(set(values.values())) == 1:
            env[name] = values[hosts[0]]
        else:
            per_host[name] = dict((h, v) for h, v in values.items() if v is not None)
    return env, per_host, left_out


def _flat(value, prefix=''):
    if isinstance(value, dict):
        out = {}
        for key in sorted(value, key=str):
            out.update(_flat(value[key], '%s%s.' % (prefix, key)))
        return out
    return {prefix[:-1]: value}


def versions_document(versions, hosts):
    """``versions.json`` of the kit: ``{schema_version, hosts: {host: versions}, differ: {key: [{value, hosts}]}}``;
    ``differ`` names each version (dotted: ``hca_firmware.mlx5_0``) that is not the same on every host."""
    per_host = dict((h, dict((k, v) for k, v in (versions.get(h) or {}).items() if k != 'batch')) for h in hosts)
    flat = dict((h, _flat(per_host[h])) for h in hosts)
    keys = sorted(set(k for h in hosts for k in flat[h]))
    differ = {}
    for key in keys:
        groups = {}
        for host in hosts:
            value = flat[host].get(key)
            groups.setdefault(json.dumps(value, sort_keys=True), (value, []))[1].append(host)
        if len(groups) > 1:
            differ[key] = [{'value': value, 'hosts': members} for value, members in sorted(groups.values(), key=lambda g: g[1][0])]
    return {'schema_version': SCHEMA_VERSION, 'hosts': per_host, 'differ': differ}


def torch_versions(workloads):
    """``{torch, torch_nccl}`` a host's torch workloads reported (their result's ``torch_version``,
    ``torch_nccl_version``); None where none said."""
    found = {'torch': None, 'torch_nccl': None}
    for run in workloads or []:
        result = run.get('result') if isinstance(run, dict) else None
        if not isinstance(result, dict):
            continue
        for key, name in (('torch', 'torch_version'), ('torch_nccl', 'torch_nccl_version')):
            if found[key] is None and result.get(name) not in (None, ''):
                found[key] = str(result[name])
    return found


def stages(workloads):
    """What ran and passed on a host besides the node checks: ``kind: component`` of each run that was measured and
    exited 0 (a run not measured, not applicable or not judged proves nothing of the environment)."""
    out = []
    for run in workloads or []:
        if not isinstance(run, dict) or run.get('exit_code') != 0:
            continue
        if any(run.get(k) for k in ('not_measured', 'not_applicable', 'not_judged', 'implausible')):
            continue
        label = '%s: %s' % (run.get('kind'), run.get('component')) if run.get('component') else str(run.get('kind'))
        if label not in out:
            out.append(label)
    return out


def check_settings(settings):
    """The launch settings of the kit made regular; ``KitError`` naming the one that cannot be used."""
    merged = dict(DEFAULT_SETTINGS)
    merged.update(dict((k, v) for k, v in (settings or {}).items() if v is not None))
    for name in ('mpirun', 'python'):
        value = merged[name]
        if not isinstance(value, str) or not value.strip() or unsafe_characters(value):
            raise KitError('%s %s: a command name or path is expected (no control character)' % (name, json.dumps(_text(value))))
    args = merged['mpirun_args']
    if not isinstance(args, (list, tuple)) or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in args):
        raise KitError('mpirun_args: a list of arguments is expected, got %s' % type(args).__name__)
    if any(unsafe_characters(str(a)) for a in args):
        raise KitError('mpirun_args: an argument holds a control character')
    try:
        port = int(merged['master_port'])
    except (TypeError, ValueError):
        port = 0
    if isinstance(merged['master_port'], bool) or not 0 < port < 65536:
        raise KitError('master_port %s: a TCP port (1-65535) is expected' % json.dumps(_text(merged['master_port'])))
    return {'mpirun': merged['mpirun'], 'mpirun_args': [str(a) for a in args], 'master_port': port, 'python': merged['python']}


def _default(name, value):
    """A script line that sets ``name`` to ``value`` unless the caller's environment sets it."""
    return 'if [ -z "${%s:-}" ]; then %s=%s; fi' % (name, name, quote(value))


_HEAD = '''#!/usr/bin/env bash
# {title}
# Launch kit of validation run {run_id} (xuanwu.cluster, docs/run-record.md): {hosts}.
{usage}
set -euo pipefail

KIT_DIR="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
if [ "$#" -lt 1 ]; then
    echo "usage: $0 TRAIN_SCRIPT [ARGS...]" >&2
    exit 2
fi
# the NCCL/torch environment that passed
# shellcheck source=env.sh
. "$KIT_DIR/env.sh"
'''


def _hosts_comment(hosts, partial):
    shown = ', '.join(hosts[:8]) + (' and %d more' % (len(hosts) - 8) if len(hosts) > 8 else '')
    return comment('%d host(s) passed%s: %s' % (len(hosts), ' (a partial pass: the hosts that failed are left out)' if partial else '', shown), 400)


def _script_head(name, title, where, overrides, run_id, hosts, partial):
    """The first lines of a launch script: what it is, how to call it, ``set -euo pipefail``, env.sh sourced."""
    usage = ('# Usage (%s; TRAIN_SCRIPT at the same path on every host):\n#   ./%s TRAIN_SCRIPT [ARGS...]\n'
             '# Overrides: %s.' % (where, name, overrides))
    return _HEAD.format(title=title, run_id=comment(run_id), hosts=_hosts_comment(hosts, partial), usage=usage).rstrip('\n')


def mpirun_script(run_id, env_names, np, master_addr, settings, hosts, partial):
    """``launch-mpirun.sh``: ``mpirun`` over the kit's hostfile, one rank per slot, the environment passed with ``-x``
    as the validation's collectives passed it; each rank takes torch's RANK, WORLD_SIZE and LOCAL_RANK from Open MPI's
    and runs ``PYTHON TRAIN_SCRIPT ARGS...``."""
    lines = [_script_head('launch-mpirun.sh', 'mpirun across the hosts that passed, with the environment that passed.',
                          'on the first host of the hostfile', 'MPIRUN, PYTHON, NP (ranks), MASTER_ADDR, MASTER_PORT', run_id, hosts, partial),
             _default('MPIRUN', settings['mpirun']),
             _default('PYTHON', settings['python']),
             _default('NP', str(np)),
             _default('MASTER_ADDR', master_addr),
             _default('MASTER_PORT', str(settings['master_port'])),
             'export MASTER_ADDR MASTER_PORT',
             '# as root, Open MPI needs to be told (the validation ran as the user Ansible became)',
             'as_root=()',
             'if [ "$(id -u)" = 0 ]; then as_root=(--allow-run-as-root); fi',
             '',
             '# torch reads its rank from RANK, WORLD_SIZE and LOCAL_RANK (init_method env://): each rank sets them from',
             "# Open MPI's before the training script starts",
             '# shellcheck disable=SC2016',
             'exec "$MPIRUN" ${as_root[@]+"${as_root[@]}"} --hostfile "$KIT_DIR/hostfile" -np "$NP" --bind-to none \\']
    if settings['mpirun_args']:
        lines.append('    %s \\' % ' '.join(quote(a) for a in settings['mpirun_args']))
    exports = list(env_names) + ['MASTER_ADDR', 'MASTER_PORT']
    for start in range(0, len(exports), 6):
        lines.append('    %s \\' % ' '.join('-x %s' % n for n in exports[start:start + 6]))
    lines.append('    bash -c \'export RANK="${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}" WORLD_SIZE="${OMPI_COMM_WORLD_SIZE:-1}" '
                 'LOCAL_RANK="${OMPI_COMM_WORLD_LOCAL_RANK:-0}"; exec "$@"\' \\')
    lines.append('    bash "$PYTHON" "$@"')
    return '\n'.join(lines) + '\n'


def torchrun_script(run_id, nnodes, nproc, endpoint, rdzv_id, settings, hosts, partial):
    """``launch-torchrun.sh``: ``python -m torch.distributed.run`` (torchrun) on this node, as the validation's
    torch workloads ran: ``--nnodes``/``--nproc-per-node`` of the hosts that passed, the c10d rendezvous on the first
    of them (one host: ``--standalone``)."""
    lines = [_script_head('launch-torchrun.sh', 'torchrun on this host, with the environment that passed.',
                          'the same command on every host of the hostfile', 'PYTHON, NNODES, NPROC_PER_NODE, RDZV_ENDPOINT, RDZV_ID',
                          run_id, hosts, partial),
             _default('PYTHON', settings['python']),
             _default('NNODES', str(nnodes))]
    if nproc is None:
        lines += ['# the hosts that passed ran different numbers of processes (GPUs, hostfile): say how many this one runs',
                  'if [ -z "${NPROC_PER_NODE:-}" ]; then',
                  '    echo "$0: set NPROC_PER_NODE (the hosts of this kit have different numbers of GPUs; see hostfile)" >&2',
                  '    exit 2',
                  'fi']
    else:
        lines.append(_default('NPROC_PER_NODE', str(nproc)))
    lines += [_default('RDZV_ENDPOINT', endpoint),
              _default('RDZV_ID', rdzv_id),
              '',
              'if [ "$NNODES" = 1 ]; then',
              '    exec "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$NPROC_PER_NODE" "$@"',
              'fi',
              'exec "$PYTHON" -m torch.distributed.run --nnodes "$NNODES" --nproc-per-node "$NPROC_PER_NODE" \\',
              '    --rdzv-backend c10d --rdzv-endpoint "$RDZV_ENDPOINT" --rdzv-id "$RDZV_ID" "$@"']
    return '\n'.join(lines) + '\n'


def env_script(run_id, env, per_host, left_out, hosts, partial):
    """``env.sh``: the variables that passed, exported, each value one shell word."""
    # the values are single-quoted on purpose: nothing in them expands (SC2016)
    lines = ['# shellcheck shell=bash disable=SC2016',
             '# The NCCL/torch environment of validation run %s that passed (xuanwu.cluster launch kit).' % comment(run_id),
             '# %s' % _hosts_comment(hosts, partial),
             '# Sourced by launch-mpirun.sh and launch-torchrun.sh; mpirun passes each name to every rank (-x NAME).']
    for name in sorted(per_host):
        lines.append('# not exported, differs between the hosts (set it on each): %s' % name)
    for name in sorted(left_out):
        lines.append('# left out: %s (%s)' % (comment(name, 80), left_out[name]))
    if not env:
        lines.append('# the hosts set no variable (xuanwu_nccl_env, xuanwu_torch_env): NCCL chose its own defaults')
    lines.extend('export %s=%s' % (name, quote(env[name])) for name in sorted(env))
    return '\n'.join(lines) + '\n'


def hostfile(run_id, nodes):
    """``hostfile``: ``<address> slots=<GPUs>`` per host that passed (the form mpirun reads; ``#`` starts a comment)."""
    return ('# the hosts that passed validation run %s, slots = GPUs per host\n' % comment(run_id)
            + rr.hostfile_text([(n['address'], n['slots']) for n in nodes]))


def _digest(text):
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def note(run_id, written_at, written, reason, passed, left_out_hosts, source):
    """The run record's note about the kit (``launch-kit.json`` beside ``launch-kit/``): written or not, and why."""
    return {'schema_version': SCHEMA_VERSION, 'run_id': run_id, 'written_at': written_at, 'source': source,
            'written': bool(written), 'reason': reason, 'partial': bool(written and left_out_hosts),
            'hosts': list(passed) if written else [], 'left_out_hosts': dict(left_out_hosts),
            'kit': KIT_DIR if written else None}


def build(run_id, hosts, failed, nodes, settings, written_at, source='validate', extra_secret_keys=(), secrets=()):
    """The launch kit of a run: ``{'written', 'reason', 'files': {name: (text, mode)}, 'note', 'manifest'}``.

    ``hosts``: the run's hosts in the play's order. ``failed``: ``{host: reason}`` of the hosts that did not pass.
    ``nodes``: ``{host: {address, slots, nproc, versions, env, stages}}`` of the hosts that passed (``nproc``: their
    ``xuanwu_torch_nproc``, None for the slots; ``env``: their ``xuanwu_nccl_env`` combined with ``xuanwu_torch_env``;
    a host missing here is left out). ``settings``: the
    launch settings of the first host that passed (``check_settings``). ``extra_secret_keys``: the run's
    ``xuanwu_redact_env_keys``; ``secrets``: every secret value of the run (left out wherever it appears).

    No host passed: no file, ``written`` false and ``reason`` says why. Some hosts failed: the kit of the hosts that
    passed, ``note['partial']`` true and the others in ``left_out_hosts`` with their reasons.
    """
    left_out_hosts = dict((str(h), one_line(_redact.redact_text(str(r or 'failed'), secrets))) for h, r in (failed or {}).items() if h in hosts)
    passed = []
    for host in hosts:
        if host in left_out_hosts:
            continue
        node = (nodes or {}).get(host)
        if not isinstance(node, dict):
            left_out_hosts[host] = 'its results could not be read'
        elif not isinstance(node.get('address'), str) or not HOST_ADDRESS.match(node['address']):
            left_out_hosts[host] = 'its address %s is not a host name or address of a hostfile line' % json.dumps(_text(node.get('address')))
        else:
            passed.append(host)

    def nothing(reason):
        return {'written': False, 'reason': reason, 'files': {}, 'manifest': None,
                'note': note(run_id, written_at, False, reason, [], left_out_hosts, source)}

    if not hosts:
        return nothing('the run has no host')
    if not passed:
        return nothing('no host passed the validation (%d host(s) left out: see left_out_hosts)' % len(left_out_hosts))
    try:
        settings = check_settings(settings)
    except KitError as err:
        return nothing('the launch settings of %s cannot be written: %s' % (passed[0], err))
    chosen = [dict(nodes[h], host=h, slots=rr.slots(nodes[h].get('slots'), None)) for h in passed]
    env, per_host, env_left_out = common_env(dict((h, nodes[h].get('env') or {}) for h in passed), passed, extra_secret_keys, secrets)
    partial = bool(left_out_hosts)
    # torchrun's processes per node: what the torch workloads ran (xuanwu_torch_nproc), else the GPUs
    nprocs = sorted(set(rr.slots(n.get('nproc'), n['slots']) for n in chosen))
    head = chosen[0]['address']
    rdzv_id = 'xuanwu-%s' % _paths.safe_name(str(run_id))
    launch = {'nnodes': len(chosen), 'nproc_per_node': nprocs[0] if len(nprocs) == 1 else None, 'np': sum(n['slots'] for n in chosen),
              'master_addr': head, 'master_port': settings['master_port'], 'rdzv_backend': 'c10d',
              'rdzv_endpoint': '%s:%d' % ('[%s]' % head if ':' in head and not head.startswith('[') else head, settings['master_port']),
              'rdzv_id': rdzv_id, 'python': settings['python'], 'mpirun': settings['mpirun'], 'mpirun_args': settings['mpirun_args']}
    versions = versions_document(dict((h, nodes[h].get('versions') or {}) for h in passed), passed)
    files = {
        'hostfile': (hostfile(run_id, chosen), FILE_MODE),
        'env.sh': (env_script(run_id, env, per_host, env_left_out, passed, partial), FILE_MODE),
        'versions.json': (rr.dump_json(versions), FILE_MODE),
        'launch-mpirun.sh': (mpirun_script(run_id, sorted(env), launch['np'], head, settings, passed, partial), SCRIPT_MODE),
        'launch-torchrun.sh': (torchrun_script(run_id, launch['nnodes'], launch['nproc_per_node'], launch['rdzv_endpoint'], rdzv_id,
                                               settings, passed, partial), SCRIPT_MODE),
    }
    manifest = {
        'schema_version': SCHEMA_VERSION, 'run_id': run_id, 'written_at': written_at, 'source': source, 'partial': partial,
        'hosts': [{'host': n['host'], 'address': n['address'], 'slots': n['slots']} for n in chosen],
        'left_out_hosts': left_out_hosts, 'env': env, 'env_per_host': per_host, 'env_left_out': env_left_out,
        'launch': launch, 'versions_differ': sorted(versions['differ']),
        'stages': dict((n['host'], list(n.get('stages') or [])) for n in chosen),
        'files': dict((name, {'mode': '%04o' % mode, 'sha256': _digest(text)}) for name, (text, mode) in sorted(files.items())),
    }
    files['kit.json'] = (rr.dump_json(manifest), FILE_MODE)
    return {'written': True, 'reason': None, 'files': files, 'manifest': manifest,
            'note': note(run_id, written_at, True, None, passed, left_out_hosts, source)}
