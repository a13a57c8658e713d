# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host hygiene before a job (field guide 7.5): GPUs held by processes, GPU compute modes, processes of
an earlier job still running, and the ports the job will use.

The checks here are called by ``_checks.check_node`` with its run object (``add``, ``unknown``,
``not_measured``, ``status``); their ids are in ``_checks.CHECKS``. Pure: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re
import shlex

# DEFAULT_LEFTOVER_PATTERNS: the processes of a distributed job (field guide 7.5), in _commands (the node filters the
# process list with them)
from ansible_collections.xuanwu.cluster.plugins.module_utils._commands import DEFAULT_LEFTOVER_PATTERNS  # noqa: F401 pylint: disable=unused-import

# Characters of a command line quoted in a finding.
COMMAND_MAX = 240


def _short(command):
    command = ' '.join(str(command or '').split())
    return command if len(command) <= COMMAND_MAX else command[:COMMAND_MAX - 3] + '...'


def _seconds(value):
    if not isinstance(value, int):
        return 'for an unknown time'
    days, rest = divmod(value, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return 'for %dd %dh' % (days, hours)
    if hours:
        return 'for %dh %dm' % (hours, minutes)
    if minutes:
        return 'for %dm %ds' % (minutes, seconds)
    return 'for %ds' % seconds


def _gpu_label(dev, index):
    parts = [p for p in (dev.get('uuid'), dev.get('bus_id')) if p]
    return 'gpu%s%s' % (index, ' (%s)' % ', '.join(parts) if parts else '')


def _ignored(proc, globs):
    names = [proc.get('name'), proc.get('command')]
    return any(fnmatch.fnmatchcase(str(n), g) for n in names if n for g in globs)


def check_gpu_usage(run, want, devices):
    """``gpu.compute_mode`` and ``gpu.process`` for every GPU (facts from ``nvidia-smi -q -x``)."""
    modes = want.get('compute_modes') or []
    idle = want.get('idle_required')
    if not modes and not idle:
        return
    if run.status('nvidia_smi_xml') != 'ok':
        run.unknown(['nvidia_smi_xml'], 'gpu', 'GPU compute mode and the processes on the GPUs',
                    checks=(['gpu.compute_mode'] if modes else []) + (['gpu.process'] if idle else []))
        return
    for i, dev in enumerate(devices):
        if dev.get('parse_error') and dev.get('bus_id') is None and dev.get('name') is None:
            continue    # its row was not understood: probe.section_parse_error names it, nothing here is measured
        index = dev.get('index', i)
        name = 'gpu%s' % index
        label = _gpu_label(dev, index)
        if modes:
            mode = dev.get('compute_mode')
            if mode is None:
                run.not_measured(name, 'compute mode', 'nvidia-smi --query-gpu=index,compute_mode --format=csv',
                                 checks=('gpu.compute_mode',))
            elif mode not in modes:
                run.add('gpu.compute_mode', name, mode, ' or '.join(modes),
                        '%s is in compute mode %s, profile allows %s' % (label, mode, ', '.join(modes)), index=index)
        if idle:
            _check_gpu_processes(run, want, dev, index, name, label)


def _check_gpu_processes(run, want, dev, index, name, label):
    procs = dev.get('processes')
    if procs is None:
        how = 'nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv'
        run.not_measured(name, 'processes on the GPU', how, checks=('gpu.process',))
        return
    for proc in procs:
        if not isinstance(proc, dict) or _ignored(proc, want.get('idle_ignore_processes') or []):
            continue
        pid = proc.get('pid')
        command = _short(proc.get('command') or proc.get('name') or 'unknown process')
        memory = proc.get('used_memory_mib')
        used = '%s MiB' % memory if memory is not None else 'memory not reported'
        detail = []
        if proc.get('user'):
            detail.append('user %s, running %s' % (proc['user'], _seconds(proc.get('etimes'))))
        detail.append(used)
        if proc.get('parent_command'):
            detail.append('started by pid %s: %s' % (proc.get('ppid'), _short(proc['parent_command'])))
        run.add('gpu.process', name, 'pid %s %s (%s)' % (pid, command, used), 'no process',
                '%s is in use by pid %s: %s (%s)' % (label, pid, command, '; '.join(detail)),
                pid=pid if pid is not None else '<pid>', index=index)


def check_leftover_processes(run, want, host, devices):
    """``host.leftover_process``: processes of a job (profile patterns) already running on the node."""
    patterns = want.get('leftover_process_patterns') or []
    if not patterns:
        run.skip(['host.leftover_process'], 'the profile sets no host.leftover_process_patterns')
        return
    procs = host.get('processes')
    if not isinstance(procs, dict):
        run.unknown(['processes'], 'processes', 'processes of an earlier job (ps)', checks=('host.leftover_process',))
        return
    read = procs.get('patterns') or []
    unread = [p for p in patterns if p not in read]
    if unread:
        run.not_measured('processes', 'processes matching %s (the probe kept only those matching %s)'
                         % (', '.join(unread), ', '.join(read) or 'nothing'),
                         'ps -e -ww -o pid,ppid,user,etimes,args | grep -E \'%s\'' % '|'.join(unread))
    gpus = {}
    for i, dev in enumerate(devices):
        for proc in (dev.get('processes') or []) if isinstance(dev, dict) else []:
            if isinstance(proc, dict) and proc.get('pid') is not None:
                gpus.setdefault(proc['pid'], []).append('gpu%s' % dev.get('index', i))
    compiled = [(p, re.compile(p)) for p in patterns]
    for row in procs.get('matched') or []:
        if not isinstance(row, dict):
            continue
        args = str(row.get('args') or '')
        hit = next((p for p, regex in compiled if regex.search(args)), None)
        if hit is None:
            continue
        pid = row.get('pid')
        held = gpus.get(pid)
        message = 'pid %s (user %s, parent pid %s, running %s) is a process of a distributed job: %s' % (
            pid, row.get('user'), row.get('ppid'), _seconds(row.get('etimes')), _short(args))
        if held:
            message += '; it holds %s' % ', '.join(held)
        run.add('host.leftover_process', 'pid %s' % pid, _short(args), 'no process matching %s' % hit,
                message + ' (matches %s)' % hit, pid=pid)
    total = procs.get('matched_total')
    listed = len(procs.get('matched') or [])
    if isinstance(total, int) and total > listed:
        run.add('host.leftover_process', 'processes', '%d job processes' % total, 'none',
                '%d job processes are running; the facts list the first %d' % (total, listed), pid='<pid>')


# ---------------------------------------------------------------------------------------------
# The ports a job will use.

_MCA_PORTS = re.compile(r'^(?:OMPI_MCA_)?(oob_tcp_static_ipv4_ports|oob_tcp_static_ipv6_ports|btl_tcp_port_min_v4|'
                        r'btl_tcp_port_min_v6)$')


def _port_list(value):
    """'29500' -> [29500]; '30000-30002,30010' -> [30000, 30001, 30002, 30010] (ranges up to 64 ports)."""
    ports = []
    for part in str(value).replace(' ', '').split(','):
        match = re.match(r'^([0-9]{1,5})(?:-([0-9]{1,5}))?$', part)
        if not match:
            continue
        first = int(match.group(1))
        last = int(match.group(2) or first)
        ports.extend(p for p in range(first, min(last, first + 63) + 1) if 1 <= p <= 65535)
    return ports


def job_ports(master_port=None, env=None, mpirun_args=None, extra=None):
    """The TCP ports a job will listen on, as ``"PORT/tcp"`` strings, sorted and without repeats.

    ``master_port``: the torchrun rendezvous / MASTER_PORT; ``env``: job environment (``MASTER_PORT``,
    the port of ``NCCL_COMM_ID=host:port``, Open MPI's ``OMPI_MCA_oob_tcp_static_ipv4_ports`` and
    ``OMPI_MCA_btl_tcp_port_min_v4``); ``mpirun_args``: mpirun arguments (``--mca <those names> <ports>``);
    ``extra``: more ports (numbers or ``"PORT/tcp|udp"``). Values that are not ports are ignored.
    """
    found = []
    for value in [master_port] + list(extra or []):
        if isinstance(value, str) and re.match(r'^\s*[0-9]+\s*/\s*(tcp|udp)\s*$', value, re.I):
            number, proto = value.replace(' ', '').lower().split('/')
            found.extend('%d/%s' % (p, proto) for p in _port_list(number))
        elif value is not None and not isinstance(value, bool):
            found.extend('%d/tcp' % p for p in _port_list(value))
    for key, value in sorted((env or {}).items()):
        if key == 'MASTER_PORT' or _MCA_PORTS.match(key):
            found.extend('%d/tcp' % p for p in _port_list(value))
        elif key == 'NCCL_COMM_ID' and ':' in str(value):
            found.extend('%d/tcp' % p for p in _port_list(str(value).rsplit(':', 1)[1]))
    args = list(mpirun_args or [])
    if len(args) == 1 and ' ' in str(args[0]):
        args = shlex.split(str(args[0]))
    for i, arg in enumerate(args[:-2]):
        if arg in ('--mca', '-mca') and _MCA_PORTS.match(str(args[i + 1])):
            found.extend('%d/tcp' % p for p in _port_list(args[i + 2]))
    return sorted(set(found), key=lambda s: (int(s.split('/')[0]), s))


def with_job_ports(profile, ports):
    """A copy of a (raw or normalised) profile whose ``host.ports_must_be_free`` also lists ``ports``."""
    if not ports or not isinstance(profile, dict):
        return profile
    profile = dict(profile)
    host = dict(profile.get('host') or {})
    host['ports_must_be_free'] = list(host.get('ports_must_be_free') or []) + list(ports)
    profile['host'] = host
    return profile


def port_users(users, host):
    """Describe the processes ``ss -p`` names for a port: name, pid and, where the facts have it, the
    full command line (job processes and GPU processes)."""
    commands = {}
    procs = host.get('processes') if isinstance(host.get('processes'), dict) else {}
    for row in procs.get('matched') or []:
        if isinstance(row, dict) and row.get('pid') is not None:
            commands[row['pid']] = row.get('args')
    parts = []
    for entry in users:
        name = entry.get('process') or 'unknown process (run ss -p as root to see it)'
        pid = entry.get('pid')
        who = '%s (pid %s)' % (name, pid) if pid is not None else name
        if commands.get(pid):
            who += ': %s' % _short(commands[pid])
        parts.append('%s on %s' % (who, entry.get('address')))
    return ', '.join(parts)
