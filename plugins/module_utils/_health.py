# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``xuanwu-health``: the node's own health check between runs (docs/node-health.md).

Run by root on the node, by the cluster's scheduler (Slurm ``HealthCheckProgram``, ``Prolog``, ``Epilog``; a
Kubernetes node-problem-detector custom plugin; a systemd timer), with no Ansible on the node: the collection's
probes (_collect), parsers and facts (_probe), checks and judge (_judge) and the node's resolved profile with the
site's overrides, from one configuration file written by role ``health_watch``.

How one run goes, and why it never hangs:

- The **parent** reads the configuration and its state, arms a watchdog (``SIGALRM`` after ``watchdog_seconds``:
  it prints an UNKNOWN line and exits 2) and forks a **collector**. The parent touches only local files and waits
  only in interruptible calls, so the watchdog always fires.
- The **collector** (its own process group, niced, CPU-limited) runs the fast probes of the mode one after the other,
  each tool under its own timeout, and streams one JSON line per probe back through a pipe: ``step`` before a probe
  starts, its raw output after. A tool that does not answer in time is killed and never waited for (a process stuck
  in a hung NFS mount cannot be reaped); the other probes of the same tool are skipped.
- The parent reads the lines until the collection deadline, then kills the collector's group. A probe that did not
  answer is **unknown**, named in the line; it is never a pass and never a finding of the hardware.
- The facts are parsed and judged by the same code and profile as ``validate.yml``; Xid and link events are those
  since the last check (fatal Xids: since boot, until the node is rebooted); the checks of processes left on the
  GPUs and of job ports apply only where the scheduler says no job runs.
- The verdict: one line (root-cause finding first), the state as JSON, the Prometheus textfile, and with Slurm a
  drain of its own (reason ``xuanwu-health: ...``) or a resume of its own drain after ``resume_after`` passes in a
  row; a node drained by anyone else (a person, a rollout ``xuanwu <run id>: ...``) is never resumed.

Exit status: 0 healthy (pass or warnings), 1 unhealthy, 2 unknown, 3 invalid configuration or usage.
Python 3.8+, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect

FORMAT = 1
MODES = ('check', 'prolog', 'epilog', 'npd')
EXIT_HEALTHY, EXIT_UNHEALTHY, EXIT_UNKNOWN, EXIT_CONFIG = 0, 1, 2, 3
STATUS_EXIT = {'pass': EXIT_HEALTHY, 'warn': EXIT_HEALTHY, 'fail': EXIT_UNHEALTHY, 'unknown': EXIT_UNKNOWN}
STATUS_CODES = {'pass': 0, 'warn': 1, 'fail': 2, 'unknown': 3}
DEFAULT_CONFIG = '/etc/xuanwu/health.json'
REASON_PREFIX = 'xuanwu-health'     # _scheduler_node.HEALTH_REASON_PREFIX
SLURM_REASON_MAX_BYTES = 255
OUTPUT_MAX_BYTES = 32 << 20          # one probe's output kept by the collector
CONFIG_MAX_BYTES = 16 << 20
STATE_MAX_BYTES = 16 << 20
ACTIONS_LOG_MAX_BYTES = 1 << 20
KILL_GRACE_SECONDS = 1.0
DEFAULT_SEARCH_DIRS = ('/usr/sbin', '/sbin', '/usr/local/sbin', '/usr/local/cuda/bin', '/usr/local/nvidia/bin',
                       '/opt/mellanox/bin', '/usr/bin', '/bin', '/usr/local/bin')

# The fast probes of each mode (never a workload): keys of _collect.base_probes / amd_probes.
CHECK_PROBES = ('nvidia_query_gpu', 'nvidia_smi_xml', 'nvidia_nvlink', 'nvidia_topo', 'nvidia_proc_version', 'kernel_log',
                'ibstat', 'chrony', 'disks', 'meminfo', 'kernel_modules', 'processes', 'listening')
PROBES = {
    'check': CHECK_PROBES,
    'npd': CHECK_PROBES,
    'prolog': ('nvidia_query_gpu', 'nvidia_smi_xml', 'processes', 'ibstat'),
    'epilog': ('nvidia_query_gpu', 'nvidia_smi_xml', 'processes', 'listening'),
}
AMD_PROBES = ('amd_static', 'amd_metric', 'amd_bad_pages', 'amd_topology', 'amd_xgmi')
# What each mode judges (globs of check ids); the others' findings are left to the check that owns them.
JUDGED = {
    'check': ('*',), 'npd': ('*',), 'prolog': ('*',),
    'epilog': ('gpu.process', 'host.leftover_process', 'host.port_in_use', 'probe.*'),
}
# Checks of what a running job legitimately holds: judged only where no job runs (the scheduler says so).
JOB_CHECKS = ('gpu.process', 'host.leftover_process', 'host.port_in_use', 'host.memory_available')
HYGIENE_CHOICES = ('scheduler', 'always', 'never')
FAIL_ON = ('fail', 'warn')


class ConfigError(ValueError):
    """The configuration file is not what role health_watch writes; the message names the file and the field."""


# ------------------------------------------------------------------------------------------------ configuration

def _field(doc, name, kinds, where, required=True, default=None, check=None):
    if name not in doc or doc[name] is None:
        if required:
            raise ConfigError('%s: %s is required' % (where, name))
        return default
    value = doc[name]
    if isinstance(value, bool) and bool not in kinds:
        raise ConfigError('%s.%s: expected %s, got %r' % (where, name, '/'.join(k.__name__ for k in kinds), value))
    if not isinstance(value, kinds):
        raise ConfigError('%s.%s: expected %s, got %r' % (where, name, '/'.join(k.__name__ for k in kinds), value))
    if check is not None:
        problem = check(value)
        if problem:
            raise ConfigError('%s.%s: %s (got %r)' % (where, name, problem, value))
    return value


def _between(low, high):
    return lambda v: None if low <= v <= high else 'must be in [%s, %s]' % (low, high)


def _abs_path(value):
    if not value.startswith('/') or re.search(r'[\x00-\x1f\x7f]', value):
        return 'must be an absolute path without control characters'
    return None


def _command_name(value):
    if re.search(r'[\x00-\x1f\x7f\s]', value) or not value:
        return 'must be a command name or an absolute path, without spaces'
    return None


def _node_name(value):
    return None if re.match(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$', value) else 'is not a node name'


def _str_list(value, where, check=None):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError('%s: expected a list of text, got %r' % (where, value))
    for item in value:
        problem = check(item) if check else None
        if problem:
            raise ConfigError('%s: %r %s' % (where, item, problem))
    return value


def validate_config(doc, path='<config>'):
    """The configuration, checked field by field (types, bounds, paths), defaults filled; ConfigError names the
    file and field. The profile itself is validated by the judge (ProfileError)."""
    if not isinstance(doc, dict):
        raise ConfigError('%s: expected a JSON object, got %s' % (path, type(doc).__name__))
    fmt = _field(doc, 'format', (int,), path)
    if fmt != FORMAT:
        raise ConfigError('%s: format %r is not %d (written by another version of role health_watch?)' % (path, fmt, FORMAT))
    out = {'format': fmt}
    out['collection_version'] = _field(doc, 'collection_version', (str,), path, required=False, default='')
    out['host'] = _field(doc, 'host', (str,), path, check=lambda v: None if v and len(v) <= 253 and not re.search(
        r'[\x00-\x1f\x7f]', v) else 'must be a host name without control characters')
    out['profile'] = _field(doc, 'profile', (dict,), path)
    out['profile_path'] = _field(doc, 'profile_path', (str,), path, required=False, default='')
    out['fail_on'] = _field(doc, 'fail_on', (str,), path, required=False, default='fail',
                            check=lambda v: None if v in FAIL_ON else 'must be one of %s' % ', '.join(FAIL_ON))
    out['watchdog_seconds'] = _field(doc, 'watchdog_seconds', (int, float), path, required=False, default=30,
                                     check=_between(5, 600))
    out['hygiene'] = _field(doc, 'hygiene', (str,), path, required=False, default='scheduler',
                            check=lambda v: None if v in HYGIENE_CHOICES else 'must be one of %s' % ', '.join(HYGIENE_CHOICES))
    out['epilog_grace_seconds'] = _field(doc, 'epilog_grace_seconds', (int, float), path, required=False, default=3,
                                         check=_between(0, 60))
    out['state_dir'] = _field(doc, 'state_dir', (str,), path, required=False, default='/var/lib/xuanwu-health', check=_abs_path)
    textfile = doc.get('textfile_dir')
    out['textfile_dir'] = _field(doc, 'textfile_dir', (str,), path, required=False, default=None,
                                 check=_abs_path) if textfile not in ('', None) else None
    probe = _field(doc, 'probe', (dict,), path, required=False, default={})
    where = path + ': probe'
    p = {}
    p['timeout'] = _field(probe, 'timeout', (int, float), where, required=False, default=10,
                          check=_between(1, out['watchdog_seconds']))
    p['disk_paths'] = _str_list(_field(probe, 'disk_paths', (list,), where, required=False, default=['/']),
                                where + '.disk_paths', _abs_path) or ['/']
    p['interfaces'] = _str_list(_field(probe, 'interfaces', (list,), where, required=False, default=[]), where + '.interfaces')
    patterns = _field(probe, 'process_patterns', (list,), where, required=False, default=None)
    if patterns is not None:
        for item in _str_list(patterns, where + '.process_patterns'):
            try:
                re.compile(item)
            except re.error as err:
                raise ConfigError('%s.process_patterns: %r is not a regular expression: %s' % (where, item, err))
    p['process_patterns'] = patterns
    ports = _field(probe, 'job_ports', (list,), where, required=False, default=[])
    for item in ports:
        if isinstance(item, bool) or not (isinstance(item, int) and 1 <= item <= 65535 or isinstance(item, str) and re.match(
                r'^[0-9]{1,5}(-[0-9]{1,5})?(/(tcp|udp))?$', item)):
            raise ConfigError('%s.job_ports: %r is not a port (1-65535, "PORT/tcp", "LOW-HIGH")' % (where, item))
    p['job_ports'] = ports
    p['replay_dir'] = _field(probe, 'replay_dir', (str,), where, required=False, default=None, check=_abs_path) \
        if probe.get('replay_dir') not in ('', None) else None
    p['search_dirs'] = _str_list(_field(probe, 'search_dirs', (list,), where, required=False, default=list(DEFAULT_SEARCH_DIRS)),
                                 where + '.search_dirs', _abs_path)
    out['probe'] = p
    sched = _field(doc, 'scheduler', (dict,), path, required=False, default={})
    where = path + ': scheduler'
    s = {}
    s['backend'] = _field(sched, 'backend', (str,), where, required=False, default='none',
                          check=lambda v: None if v in ('slurm', 'none') else 'must be slurm or none')
    s['node'] = _field(sched, 'node', (str,), where, required=s['backend'] == 'slurm', default=None, check=_node_name)
    s['scontrol'] = _field(sched, 'scontrol', (str,), where, required=False, default='scontrol', check=_command_name)
    s['squeue'] = _field(sched, 'squeue', (str,), where, required=False, default='squeue', check=_command_name)
    s['drain'] = _field(sched, 'drain', (bool,), where, required=False, default=True)
    s['resume_after'] = _field(sched, 'resume_after', (int,), where, required=False, default=2, check=_between(1, 100))
    s['unknown_drain_after'] = _field(sched, 'unknown_drain_after', (int,), where, required=False, default=3,
                                      check=_between(0, 1000))
    s['timeout'] = _field(sched, 'timeout', (int, float), where, required=False, default=10, check=_between(1, 120))
    out['scheduler'] = s
    return out


def read_limited(path, limit, what):
    """The text of a local file of at most ``limit`` bytes; ConfigError names it."""
    try:
        with open(path, 'rb') as handle:
            data = handle.read(limit + 1)
    except (IOError, OSError) as err:
        raise ConfigError('%s: cannot read the %s: %s' % (path, what, err.strerror or err))
    if len(data) > limit:
        raise ConfigError('%s: the %s is larger than %d bytes' % (path, what, limit))
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as err:
        raise ConfigError('%s: the %s is not UTF-8: %s' % (path, what, err))


def check_owner(path, st=None):
    """None, or why a file that root acts on cannot be trusted (not ours, or writable by others)."""
    st = st or os.stat(path)
    if st.st_uid != os.geteuid():
        return '%s is owned by uid %d, not by uid %d that runs the check' % (path, st.st_uid, os.geteuid())
    if st.st_mode & 0o022:
        return '%s is writable by its group or by others (mode %04o)' % (path, st.st_mode & 0o7777)
    return None


def load_config(path, trust_check=True):
    try:
        st = os.stat(path)
    except OSError as err:
        raise ConfigError('%s: cannot read the configuration: %s' % (path, err.strerror or err))
    if trust_check:
        problem = check_owner(path, st)
        if problem:
            raise ConfigError('%s: not trusted: %s' % (path, problem))
    text = read_limited(path, CONFIG_MAX_BYTES, 'configuration')
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise ConfigError('%s: not JSON: %s' % (path, err))
    return validate_config(doc, path)


# ------------------------------------------------------------------------------------------------ bounded commands

def die_with_parent():
    """Ask Linux to SIGKILL this process when its parent dies (prctl PR_SET_PDEATHSIG): a killed check leaves no probe
    process behind. Elsewhere, or where it cannot be asked, nothing."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    except Exception:  # pylint: disable=broad-except
        pass


def run_bounded(argv, timeout, env=None, max_bytes=OUTPUT_MAX_BYTES, popen=subprocess.Popen, clock=time.monotonic,
                started=None):
    """``(rc, stdout, stderr, timed_out)`` of ``argv``, never longer than ``timeout`` (+ KILL_GRACE_SECONDS): on
    time out the process's group gets SIGKILL and is not waited for beyond the grace (a process stuck in the kernel
    on a hung mount cannot die; waiting for it would hang this one). Each output is kept to ``max_bytes``. The tool
    runs in a session of its own and dies with its caller; ``started`` is called with its pid."""
    try:
        proc = popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                     close_fds=True, start_new_session=True, preexec_fn=die_with_parent)
    except (OSError, ValueError) as err:
        return 127 if getattr(err, 'errno', None) == errno.ENOENT else 126, '', '%s: %s' % (argv[0], err), False
    if started is not None:
        started(proc.pid)
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks = {out_fd: [], err_fd: []}
    sizes = dict((fd, 0) for fd in chunks)
    open_fds = set(chunks)
    deadline = clock() + timeout
    timed_out = False
    while open_fds:
        left = deadline - clock()
        if left <= 0:
            timed_out = True
            break
        try:
            ready, _w, _x = select.select(list(open_fds), [], [], min(left, 1.0))
        except (OSError, ValueError):
            break
        for fd in ready:
            data = os.read(fd, 65536)
            if not data:
                open_fds.discard(fd)
                continue
            if sizes[fd] < max_bytes:
                chunks[fd].append(data[:max_bytes - sizes[fd]])
            sizes[fd] += len(data)
    rc = None
    if not timed_out:
        while rc is None and clock() < deadline:
            rc = proc.poll()
            if rc is None:
                time.sleep(0.01)
        timed_out = rc is None
    if timed_out:
        _kill_group(proc.pid)
        end = clock() + KILL_GRACE_SECONDS
        while rc is None and clock() < end:
            rc = proc.poll()
            if rc is None:
                time.sleep(0.02)
    for stream in (proc.stdout, proc.stderr):
        try:
            stream.close()
        except OSError:
            pass
    out = b''.join(chunks[out_fd]).decode('utf-8', 'replace')
    err = b''.join(chunks[err_fd]).decode('utf-8', 'replace')
    if timed_out:
        return 124, out, err, True
    return rc, out, err, False


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def which(name, search_dirs):
    """The executable ``name``: a path, or the first found in ``search_dirs`` (the configuration's: never the caller's
    PATH, which a root command does not trust), or None."""
    if '/' in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    for folder in search_dirs:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


# ------------------------------------------------------------------------------------------------ the collector

def mode_probes(mode, amd=False, disk_paths=('/',)):
    """The probes of ``mode`` in the order they run: _collect's own Probe objects (``df`` of ``disk_paths``)."""
    wanted = PROBES[mode] + (AMD_PROBES if amd and 'nvidia_query_gpu' in PROBES[mode] else ())
    table = dict((p.key, p) for p in _collect.base_probes(tuple(disk_paths)) + _collect.amd_probes())
    return [table[key] for key in wanted if key in table]


class CollectorRunner(_collect.LiveRunner):
    """Obtains a probe's raw output on the node with run_bounded, each tool under ``timeout`` but never past
    ``deadline``; a tool that timed out once is not started again in this run (``hung``)."""

    replay = False

    def __init__(self, timeout, deadline, search_dirs, clock=time.monotonic, run=run_bounded):  # pylint: disable=super-init-not-called
        self.timeout = timeout
        self.deadline = deadline
        self.search_dirs = search_dirs
        self.clock = clock
        self._run = run
        self.hung = {}
        self.started = None     # called with each tool's pid (the collector tells its parent)
        self.env = {'PATH': os.pathsep.join(list(DEFAULT_SEARCH_DIRS)), 'LC_ALL': 'C', 'TERM': 'dumb'}

    def has_tool(self, name):
        return bool(which(name, self.search_dirs)) or os.access(os.path.join(_collect.ROCM_BIN, name), os.X_OK)

    # obtain() is LiveRunner's: the probe's alternatives in order, the first that is not missing

    def _obtain_one(self, alt):
        Output = _collect.Output
        if alt.argv:
            tool = os.path.basename(alt.argv[0])
            if tool in self.hung:
                out = Output('failed', alt.command, rc=124, stderr='not started: %s did not answer earlier in this check (%s)'
                             % (tool, self.hung[tool]))
                out.unknown = True
                return out
            exe = which(alt.argv[0], self.search_dirs)
            if not exe:
                return Output('missing', alt.command, rc=127, stderr='%s: command not found' % alt.argv[0])
            budget = min(self.timeout, self.deadline - self.clock())
            if budget <= 0.2:
                out = Output('failed', alt.command, rc=124, stderr='not started: no time left in this check')
                out.unknown = True
                return out
            kw = {'started': self.started} if self.started is not None else {}
            rc, stdout, stderr, timed_out = self._run([exe] + list(alt.argv[1:]), budget, env=self.env, **kw)
            if timed_out:
                why = 'did not answer in %g s' % round(budget, 1)
                self.hung[tool] = why
                out = Output('failed', alt.command, rc=124, stdout='', stderr=why)
                out.unknown = True
                return out
            return Output('ok' if rc == 0 else ('missing' if rc == 127 and not stdout else 'failed'), alt.command, rc=rc,
                          stdout=stdout, stderr=stderr)
        if alt.path:
            # procfs and /etc: local, never on a network file system
            if not os.path.exists(alt.path):
                return Output('missing', alt.command, rc=1, stderr='%s: no such file' % alt.path)
            try:
                with open(alt.path, 'r') as handle:
                    return Output('ok', alt.command, rc=0, stdout=handle.read(OUTPUT_MAX_BYTES))
            except (IOError, OSError) as err:
                return Output('failed', alt.command, rc=1, stderr=str(err))
        if alt.internal == 'proc_net_listening':
            text = _collect.proc_net_listening_text()
            if text is None:
                return Output('missing', alt.command, rc=127, stderr='not found')
            return Output('ok', alt.command, rc=0, stdout=text)
        return Output('missing', alt.command, rc=127, stderr='not run by the health check')


def collector(config, mode, write, clock=time.monotonic, deadline=None, runner=None):
    """Run the probes of ``mode`` and ``write`` one JSON document per line: ``{"step": key}`` before a probe, then
    ``{"record": <_collect.answer record>, "unknown": bool, "seconds": s}`` after it. The collector's own process."""
    probe_cfg = config['probe']
    if runner is None:
        if probe_cfg['replay_dir']:
            runner = _collect.ReplayRunner(probe_cfg['replay_dir'])
        else:
            runner = CollectorRunner(probe_cfg['timeout'], deadline, probe_cfg['search_dirs'], clock=clock)
            runner.started = lambda pid: write({'tool_pid': pid})
    amd = any(runner.has_tool(name) for name in _collect.AMD_TOOLS)
    patterns = probe_cfg['process_patterns']
    if patterns is None:
        patterns = ((config['profile'].get('host') or {}).get('leftover_process_patterns'))
    done = []
    # a capture bundle's runner has the AMD tools where it holds AMD probes (HeldRunner.has_tool)
    for probe in mode_probes(mode, amd=amd, disk_paths=probe_cfg['disk_paths']):
        write({'step': probe.key})
        started = clock()
        out = runner.obtain(probe)
        if out.status == 'skipped':
            continue
        done.append((probe, out))
        record = _collect.answer(done, patterns)[-1]
        write({'record': record, 'unknown': bool(getattr(out, 'unknown', False)), 'seconds': round(clock() - started, 3)})
    write({'done': True})


# ------------------------------------------------------------------------------------------------ kernel log since the last check

def _digest(line):
    return hashlib.sha256(line.encode('utf-8', 'replace')).hexdigest()[:24]


def new_kernel_lines(text, mark):
    """``(new_text, mark)``: the kernel log lines after those of the last check (``mark``: the digest and position of
    the last line read then, on this boot), and the mark of this read. Without a mark every line is new."""
    lines = (text or '').splitlines()
    new = lines
    if mark and isinstance(mark, dict) and lines:
        digest, index = mark.get('digest'), mark.get('index')
        position = None
        if isinstance(index, int) and 0 < index <= len(lines) and _digest(lines[index - 1]) == digest:
            position = index
        else:
            for i in range(len(lines) - 1, -1, -1):
                if _digest(lines[i]) == digest:
                    position = i + 1
                    break
        if position is not None:
            new = lines[position:]
    out_mark = {'digest': _digest(lines[-1]), 'index': len(lines)} if lines else mark
    return '\n'.join(new) + ('\n' if new else ''), out_mark


def _fatal_xids(profile):
    fatal = ((profile.get('gpu') or {}).get('xid') or {}).get('fatal') or []
    return set(e.get('xid') for e in fatal if isinstance(e, dict))


def events_since(facts, new_text, profile, parser):
    """Facts whose Xid and link events are those of ``new_text`` (since the last check), but fatal Xids (the
    profile's ``gpu.xid.fatal``) since boot: a fatal Xid needs a GPU reset or a reboot, so it holds until then."""
    gpu = facts.get('gpu') or {}
    if isinstance(gpu.get('xid_events'), list):
        fatal = _fatal_xids(profile)
        try:
            recent = parser('nvidia.parse_xid_events')(new_text)
        except Exception:  # pylint: disable=broad-except
            recent = []
        gpu['xid_events'] = [e for e in gpu['xid_events'] if e.get('xid') in fatal] + \
            [e for e in recent if e.get('xid') not in fatal]
    network = facts.get('network') or {}
    if isinstance(network.get('link_events'), dict):
        try:
            network['link_events'] = parser('net.parse_link_events')(new_text)
        except Exception:  # pylint: disable=broad-except
            network['link_events'] = {}
    return facts


# ------------------------------------------------------------------------------------------------ judging

def _matches(check, patterns):
    import fnmatch
    return any(fnmatch.fnmatchcase(check or '', p) for p in patterns)


def job_checks_apply(config, mode, job_running):
    """``(applies, why not)``: whether the checks of what a job holds (JOB_CHECKS) are judged. ``job_running``: True (a
    job, or another job than the prolog's or epilog's, runs on the node), False (none), None (nobody said)."""
    if config['hygiene'] == 'never':
        return False, 'hygiene is never in the configuration'
    if config['hygiene'] == 'always' or job_running is False:
        return True, ''
    if job_running:
        return False, 'another job runs on the node' if mode in ('prolog', 'epilog') else 'a job runs on the node'
    if mode in ('prolog', 'epilog'):
        return True, ''     # the scheduler runs them between jobs; squeue is asked when a finding depends on it
    return False, 'no scheduler says whether a job runs on the node'


def judge(config, mode, records, unknown, kernel_mark=None, job_running=None):
    """``(verdict, kernel_mark)`` of one run's records: the findings the profile gives (through _judge, with the
    site's overrides), split into ``findings`` (judged), ``not_applicable`` (with why) and ``unknown`` (probes
    that did not answer); ``status`` pass, warn, fail or unknown. ``job_running``: True, False, or None (nobody
    said): the checks of what a job holds are judged only when it is False (or ``hygiene`` is ``always``)."""
    from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings, _hygiene, _judge, _probe
    profile = config['profile']
    host = config['host']
    probe_cfg = config['probe']
    answered = [r for r in records if r['probe'] not in unknown]
    facts = _probe.facts_from_answer(answered, source='live', disk_paths=tuple(probe_cfg['disk_paths']),
                                     process_patterns=probe_cfg['process_patterns'])
    mark = kernel_mark
    kernel = next((r for r in answered if r['probe'] == 'kernel_log' and r['status'] == 'ok'), None)
    if kernel is not None:
        new_text, mark = new_kernel_lines(kernel['stdout'], kernel_mark)
        facts = events_since(facts, new_text, profile, _probe.parser)
    ports = _hygiene.job_ports(extra=list(probe_cfg['job_ports']))
    judge_ = _judge.Judge(_hygiene.with_job_ports(profile, ports), config.get('profile_path') or '<profile>')
    raw = judge_.node(facts, host)
    ran = set(r['probe'] for r in records)
    findings, not_applicable = [], []
    for finding in raw:
        check = finding.get('check')
        if not _matches(check, JUDGED[mode]):
            continue
        if check == 'facts.not_collected':
            probe = str(finding.get('message', '')).rsplit('probe ', 1)[-1].split(' ')[0]
            if probe.split('/')[0] in unknown or any(p in unknown for p in probe.split('/')):
                continue    # named among the unknown probes
            not_applicable.append({'check': check, 'component': finding.get('component'),
                                   'why': 'not probed by the health check (%s); validate.yml judges it' % finding.get('expected')})
            continue
        if check in JOB_CHECKS:
            applies, why = job_checks_apply(config, mode, job_running)
            if not applies:
                not_applicable.append({'check': check, 'component': finding.get('component'),
                                       'why': '%s: %s is what it holds' % (why, finding.get('measured'))})
                continue
        findings.append(finding)
    findings.sort(key=_findings.root_cause_key)
    status = _findings.status_of(findings)
    failing = [f for f in findings if _findings.is_failing(f, config['fail_on'])]
    if failing:
        status = 'fail'
    elif unknown:
        status = 'unknown'
    # in the order the probes ran: the one that hung first, then those not started after it
    unknown_list = [{'probe': key, 'error': why} for key, why in unknown.items()]
    return {'status': status, 'findings': findings, 'failing': failing, 'not_applicable': not_applicable,
            'unknown': unknown_list, 'probes': sorted(ran)}, mark


def _finding_text(finding):
    measured = finding.get('measured')
    expected = finding.get('expected')
    text = '%s %s: %s' % (finding.get('check'), finding.get('component'), '-' if measured is None else measured)
    if expected not in (None, ''):
        text += ' (expected %s)' % expected
    return ' '.join(str(text).split())


def summary_line(verdict, host, mode, seconds):
    """The one line for the scheduler: the root-cause finding first."""
    status = verdict['status']
    if status == 'fail':
        first = verdict['failing'][0]
        more = len(verdict['failing']) - 1
        line = 'UNHEALTHY %s: %s%s' % (host, _finding_text(first), ' [+%d more]' % more if more else '')
        if verdict['unknown']:
            line += ' (unknown: %s)' % ', '.join(u['probe'] for u in verdict['unknown'])
        return line
    if status == 'unknown':
        first = verdict['unknown'][0]
        more = len(verdict['unknown']) - 1
        return 'UNKNOWN %s: probe %s %s%s' % (host, first['probe'], first['error'], ' [+%d more]' % more if more else '')
    warns = [f for f in verdict['findings'] if f.get('severity') == 'warn']
    if warns:
        return 'HEALTHY %s (%d warning(s)): %s (%s, %.1f s)' % (host, len(warns), _finding_text(warns[0]), mode, seconds)
    return 'HEALTHY %s: no finding (%s, %d probes, %.1f s)' % (host, mode, len(verdict['probes']), seconds)


def drain_reason(verdict, mode, unknown_streak=0):
    """``xuanwu-health: <check> <component>: <measured> (expected ...) [+N more]`` within Slurm's 255 bytes."""
    tag = REASON_PREFIX if mode in ('check', 'npd') else '%s %s' % (REASON_PREFIX, mode)
    if verdict['status'] == 'unknown':
        first = verdict['unknown'][0]
        text = 'unknown: probe %s %s (%d checks in a row)' % (first['probe'], first['error'], unknown_streak)
    else:
        first = verdict['failing'][0]
        more = len(verdict['failing']) - 1
        text = _finding_text(first) + (' [+%d more]' % more if more else '')
    return cut_bytes('%s: %s' % (tag, ' '.join(text.split())), SLURM_REASON_MAX_BYTES)


def cut_bytes(text, limit):
    data = text.encode('utf-8')
    if len(data) <= limit:
        return text
    return data[:limit - 3].decode('utf-8', 'ignore').rstrip() + '...'


def is_ours(reason):
    """A drain of the health check (_scheduler_node.is_health_reason: the rollout reads reasons the same way)."""
    from ansible_collections.xuanwu.cluster.plugins.module_utils import _scheduler_node
    return _scheduler_node.is_health_reason(reason)


# ------------------------------------------------------------------------------------------------ Slurm

class Slurm(object):
    """The node's view and changes through scontrol, each call bounded (``run``: run_bounded)."""

    def __init__(self, sched, search_dirs, deadline, clock=time.monotonic, run=run_bounded):
        self.s = sched
        self.search_dirs = search_dirs
        self.deadline = deadline
        self.clock = clock
        self._run = run

    def _call(self, tool, args):
        exe = which(self.s[tool], self.search_dirs)
        if not exe:
            return None, '%s not found' % self.s[tool]
        budget = min(self.s['timeout'], self.deadline - self.clock())
        if budget <= 0.2:
            return None, 'no time left in this check for %s' % self.s[tool]
        rc, out, err, timed_out = self._run([exe] + args, budget,
                                            env={'PATH': os.pathsep.join(DEFAULT_SEARCH_DIRS), 'LC_ALL': 'C'})
        if timed_out:
            return None, '%s %s did not answer in %g s' % (self.s[tool], args[0], round(budget, 1))
        if rc != 0:
            return None, '%s %s failed (exit code %s): %s' % (self.s[tool], ' '.join(args[:2]), rc,
                                                              ' '.join((err or out or '').split())[:200])
        return out, None

    def read(self):
        """``(node, error)``: parse_scontrol_node's record."""
        from ansible_collections.xuanwu.cluster.plugins.module_utils import _scheduler_node
        out, error = self._call('scontrol', ['--oneliner', 'show', 'node', self.s['node']])
        if error:
            return None, error
        try:
            return _scheduler_node.parse_scontrol_node(out, self.s['node']), None
        except Exception as err:  # pylint: disable=broad-except
            return None, 'scontrol show node: %s' % err

    def other_jobs(self, job_id):
        """``(bool, error)``: whether a job other than ``job_id`` runs on the node (squeue)."""
        out, error = self._call('squeue', ['--noheader', '--nodelist', self.s['node'], '--format', '%A',
                                           '--states', 'RUNNING,COMPLETING,CONFIGURING,SUSPENDED'])
        if error:
            return None, error
        jobs = [j for j in out.split() if j != str(job_id or '')]
        return bool(jobs), None

    def drain(self, reason):
        return self._call('scontrol', ['update', 'nodename=%s' % self.s['node'], 'state=drain', 'reason=%s' % reason])[1]

    def resume(self):
        return self._call('scontrol', ['update', 'nodename=%s' % self.s['node'], 'state=resume'])[1]


def slurm_busy(node):
    """Whether the Slurm record says a job holds the node: CPUs allocated, or an ALLOCATED/MIXED/COMPLETING state."""
    state = (node.get('state') or '').upper()
    words = set(re.split(r'[+]', state.rstrip('*~#%$@^!-')))
    if node.get('cpu_alloc'):
        return True
    return bool(words & set(('ALLOCATED', 'ALLOC', 'MIXED', 'COMPLETING', 'DRAINING')))


def decide(mode, verdict, node, state, sched):
    """``(action, why)``: what to do with the node in Slurm. ``action``: drain, relabel, resume or none.
    Passes and unknowns in a row are in ``state`` (this run already counted)."""
    from ansible_collections.xuanwu.cluster.plugins.module_utils import _scheduler_node
    condition = node['condition']
    reason = node.get('reason') or ''
    ours = condition in (_scheduler_node.DRAINED, _scheduler_node.DRAINING) and is_ours(reason)
    status = verdict['status']
    if condition == _scheduler_node.DOWN:
        return 'none', 'the node is %s (%s); left to Slurm' % (condition, node.get('state'))
    if status == 'fail' or (status == 'unknown' and mode in ('check', 'npd') and sched['unknown_drain_after']
                            and state.get('unknowns_in_row', 0) >= sched['unknown_drain_after']):
        if condition == _scheduler_node.AVAILABLE:
            return 'drain', 'drained: %s' % ('it failed' if status == 'fail' else 'unknown %d checks in a row' % state['unknowns_in_row'])
        if ours:
            return 'relabel', 'drained by the health check already; the reason is brought up to date'
        return 'none', 'already %s by someone else (reason "%s"); left as it is' % (condition, reason)
    if status in ('pass', 'warn') and ours and mode == 'check':
        needed = sched['resume_after']
        if state.get('passes_in_row', 0) >= needed:
            return 'resume', 'resumed: passed %d checks in a row' % state['passes_in_row']
        return 'none', 'drained by the health check; passed %d of %d checks in a row needed to resume' % (
            state.get('passes_in_row', 0), needed)
    if condition != _scheduler_node.AVAILABLE and not ours:
        return 'none', '%s by someone else (reason "%s"); never resumed by the health check' % (condition, reason)
    return 'none', ''


# ------------------------------------------------------------------------------------------------ state and outputs

def ensure_dir(path, mode=0o700):
    """Create ``path`` (0700) if absent; refuse one that root cannot trust."""
    try:
        os.makedirs(path, mode)
    except OSError as err:
        if err.errno != errno.EEXIST:
            raise
    st = os.lstat(path)
    import stat as stat_
    if not stat_.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, '%s is not a folder' % path)
    problem = check_owner(path, st)
    if problem:
        raise OSError(errno.EPERM, problem)


def read_state(path):
    """The state a mode left, or {} (none, unreadable, or not ours: said in ``state_error``)."""
    try:
        st = os.lstat(path)
    except OSError:
        return {}
    import stat as stat_
    if not stat_.S_ISREG(st.st_mode) or check_owner(path, st):
        return {'state_error': '%s is not a regular file of ours; started afresh' % path}
    try:
        doc = json.loads(read_limited(path, STATE_MAX_BYTES, 'state'))
    except (ConfigError, ValueError) as err:
        return {'state_error': '%s: %s; started afresh' % (path, err)}
    return doc if isinstance(doc, dict) else {'state_error': '%s is not a JSON object; started afresh' % path}


def write_json_atomic(path, doc, mode=0o600):
    from ansible_collections.xuanwu.cluster.plugins.module_utils import _prom
    _prom.write_atomic(path, json.dumps(doc, indent=1, sort_keys=True, default=str) + '\n', mode=mode)


def append_action(state_dir, entry):
    """Append one JSON line to actions.log (0600), rotated to actions.log.1 past ACTIONS_LOG_MAX_BYTES; and to syslog."""
    path = os.path.join(state_dir, 'actions.log')
    try:
        if os.path.getsize(path) > ACTIONS_LOG_MAX_BYTES:
            os.replace(path, path + '.1')
    except OSError:
        pass
    line = json.dumps(entry, sort_keys=True, default=str)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    try:
        os.write(fd, (line + '\n').encode('utf-8'))
    finally:
        os.close(fd)
    try:
        import syslog
        syslog.openlog('xuanwu-health', 0, syslog.LOG_DAEMON)
        syslog.syslog(syslog.LOG_WARNING, '%s %s: %s' % (entry.get('action'), entry.get('node'), entry.get('reason') or entry.get('why')))
    except Exception:  # pylint: disable=broad-except
        pass


def _label(value):
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def textfile(mode, doc):
    """The Prometheus textfile series of a run (docs/node-health.md, "Metrics")."""
    lines = []

    def metric(name, help_, kind, samples):
        lines.append('# HELP %s %s' % (name, help_))
        lines.append('# TYPE %s %s' % (name, kind))
        for labels, value in samples:
            text = ','.join('%s="%s"' % (k, _label(v)) for k, v in sorted(labels.items()))
            lines.append('%s{%s} %s' % (name, text, repr(float(value)) if isinstance(value, float) else value))

    base = {'mode': mode}
    metric('xuanwu_health_status', 'Node health at the last check: 0 pass, 1 warn, 2 fail, 3 unknown.', 'gauge',
           [(base, STATUS_CODES[doc['status']])])
    metric('xuanwu_health_last_check_timestamp_seconds', 'When the last check finished, Unix time.', 'gauge',
           [(base, round(doc['finished_epoch'], 3))])
    metric('xuanwu_health_check_duration_seconds', 'How long the last check took.', 'gauge', [(base, round(doc['seconds'], 3))])
    counts = {}
    for finding in doc['findings']:
        key = (finding.get('check'), finding.get('severity'))
        counts[key] = counts.get(key, 0) + 1
    metric('xuanwu_health_findings', 'Findings of the last check by check and severity.', 'gauge',
           [(dict(base, check=c, severity=s), n) for (c, s), n in sorted(counts.items())])
    metric('xuanwu_health_probe_unknown', 'A probe that did not answer in the last check (always 1).', 'gauge',
           [(dict(base, probe=u['probe']), 1) for u in doc['unknown']])
    if mode == 'check':
        metric('xuanwu_health_passes_in_row', 'Checks passed in a row (a drained node is resumed at resume_after).',
               'gauge', [(base, doc.get('passes_in_row', 0))])
        drained = doc.get('slurm', {}).get('drained_by_health')
        if drained is not None:
            metric('xuanwu_health_drained', 'The node is drained in Slurm by the health check (1) or not (0).', 'gauge',
                   [(base, 1 if drained else 0)])
    return '\n'.join(lines) + '\n'


# ------------------------------------------------------------------------------------------------ the run

class _Watchdog(Exception):
    pass


def _boot_id():
    try:
        with open('/proc/sys/kernel/random/boot_id') as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def gather(config, mode, deadline, clock=time.monotonic, fork=True, runner=None):
    """``(records, unknown, steps)``: the collector's records, the probes that did not answer (key -> why)."""
    records, unknown, timings = [], {}, {}
    current = [None]
    done = [False]

    tool = [None]

    def take(doc):
        if 'tool_pid' in doc:
            tool[0] = doc['tool_pid'] if isinstance(doc['tool_pid'], int) else None
        elif 'step' in doc:
            current[0] = doc['step']
        elif 'record' in doc:
            record = doc['record']
            records.append(record)
            timings[record['probe']] = doc.get('seconds')
            if doc.get('unknown'):
                unknown[record['probe']] = record.get('stderr') or 'did not answer'
            current[0] = None
        elif doc.get('done'):
            done[0] = True

    if not fork:
        collector(config, mode, take, clock=clock, deadline=deadline, runner=runner)
        return records, unknown, timings
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the collector
        try:
            os.close(read_fd)
            die_with_parent()
            if os.getppid() != parent:
                os._exit(71)
            # the lock and every other descriptor of the parent stay with it: a killed parent's lock is released
            os.closerange(3, write_fd)
            os.closerange(write_fd + 1, 4096)
            os.setpgid(0, 0)
            try:
                os.nice(10)
                import resource
                limit = int(config['watchdog_seconds']) + 5
                resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
            except (OSError, ValueError, ImportError):
                pass
            stream = os.fdopen(write_fd, 'w')

            def write(doc):
                stream.write(json.dumps(doc) + '\n')
                stream.flush()
            collector(config, mode, write, clock=clock, deadline=deadline)
            stream.close()
            os._exit(0)
        except BaseException:  # pylint: disable=broad-except
            os._exit(70)
    os.close(write_fd)
    buf = b''
    try:
        while not done[0]:
            left = deadline - clock()
            if left <= 0:
                break
            ready, _w, _x = select.select([read_fd], [], [], min(left, 1.0))
            if not ready:
                continue
            data = os.read(read_fd, 1 << 20)
            if not data:
                break
            buf += data
            while b'\n' in buf:
                line, buf = buf.split(b'\n', 1)
                try:
                    take(json.loads(line.decode('utf-8', 'replace')))
                except ValueError:
                    continue
    finally:
        os.close(read_fd)
        if not done[0]:
            _kill_group(pid)
            if tool[0]:
                _kill_group(tool[0])
        _reap(pid)
    if not done[0]:
        if current[0] is not None:
            unknown[current[0]] = 'did not answer before the check\'s deadline'
        elif not records:
            unknown['collector'] = 'the probe process ended without an answer'
    return records, unknown, timings


def _reap(pid, seconds=KILL_GRACE_SECONDS):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            got, _status = os.waitpid(pid, os.WNOHANG)
        except OSError:
            return
        if got:
            return
        time.sleep(0.02)


def _lock(state_dir, mode, seconds=2.0):
    """An exclusive lock of the mode (fcntl), or None when another run of it holds it for ``seconds``."""
    import fcntl
    path = os.path.join(state_dir, '%s.lock' % mode)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    end = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except (IOError, OSError):
            if time.monotonic() >= end:
                os.close(fd)
                return None
            time.sleep(0.1)


def capture_records(records, directory, meta):
    """Write what the probes read (the collector's records; the process list as filtered for the answer) as a capture
    bundle (docs/capture-format.md) that ``--replay`` and node_probe's ``replay_dir`` read back."""
    class _Key(object):
        def __init__(self, key):
            self.key = key

    class _Out(object):
        def __init__(self, record):
            self.command, self.rc, self.status = record['command'], record.get('rc'), record['status']
            self.stdout, self.stderr = record.get('stdout') or '', record.get('stderr') or ''

    writer = _collect.BundleWriter(directory)
    for record in records:
        writer(_Key(record['probe']), _Out(record))
    return writer.write(meta)


def run(config, mode, act=True, clock=time.monotonic, now=time.time, fork=True, runner=None, slurm=None, env=None,
        capture=None):
    """One check of ``mode``: ``(exit code, line, state document)``; ``capture``: a folder to write what the probes
    read as a capture bundle."""
    env = os.environ if env is None else env
    started, started_epoch = clock(), now()
    watchdog = float(config['watchdog_seconds'])
    sched = config['scheduler']
    use_slurm = sched['backend'] == 'slurm'
    # the collection's share of the watchdog: the rest is for judging and for Slurm's calls
    reserve = min(watchdog / 3.0, (2 * sched['timeout'] + 2) if use_slurm and act else 3.0)
    deadline = started + watchdog - reserve
    state_dir = config['state_dir']
    ensure_dir(state_dir)
    lock = _lock(state_dir, mode)
    state_path = os.path.join(state_dir, '%s.json' % mode)
    previous = read_state(state_path)
    if lock is None:
        doc = {'status': 'unknown', 'findings': [], 'unknown': [{'probe': 'lock', 'error': 'another xuanwu-health %s '
                                                                 'is still running' % mode}]}
        line = 'UNKNOWN %s: another xuanwu-health %s is still running (%s.lock)' % (config['host'], mode, mode)
        return EXIT_UNKNOWN, line, doc
    try:
        boot = _boot_id()
        mark = previous.get('kernel_mark') if previous.get('boot_id') == boot else None
        slurm = slurm or (Slurm(sched, config['probe']['search_dirs'], started + watchdog - 1, clock=clock)
                          if use_slurm else None)
        node, slurm_error = (slurm.read() if slurm is not None else (None, None))
        job_id = env.get('SLURM_JOB_ID')
        records, unknown, timings = gather(config, mode, deadline, clock=clock, fork=fork, runner=runner)
        capture_error = None
        if capture:
            try:
                capture_records(records, capture, {'host': config['host'], 'groups': ['health:%s' % mode],
                                                   'captured_at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now()))})
            except (_collect.BundleError, IOError, OSError) as err:
                capture_error = 'cannot write the capture bundle to %s: %s' % (capture, err)
        job_running = None
        if node is not None and mode in ('check', 'npd'):
            job_running = slurm_busy(node)
        if config['hygiene'] == 'always':
            job_running = False
        verdict, new_mark = judge(config, mode, records, unknown, mark, job_running)
        if mode in ('prolog', 'epilog') and slurm is not None and any(f['check'] in JOB_CHECKS for f in verdict['findings']):
            other, _error = slurm.other_jobs(job_id)
            if other:
                job_running = True
                verdict, new_mark = judge(config, mode, records, unknown, mark, job_running)
        if mode == 'epilog' and verdict['failing'] and config['epilog_grace_seconds'] and not runner:
            # a process of the job that just ended may still be exiting: look again after the grace
            time.sleep(min(config['epilog_grace_seconds'], max(0, deadline - clock() - 2)))
            again, unknown2, _t = gather(config, mode, deadline + reserve / 2, clock=clock, fork=fork, runner=runner)
            verdict2, _m = judge(config, mode, again, unknown2, mark, job_running)
            keep = set((f['check'], f['component']) for f in verdict2['failing'])
            if not verdict2['unknown']:
                verdict = _still(verdict, keep)
        passes = previous.get('passes_in_row', 0) if isinstance(previous.get('passes_in_row'), int) else 0
        unknowns = previous.get('unknowns_in_row', 0) if isinstance(previous.get('unknowns_in_row'), int) else 0
        status = verdict['status']
        passes = passes + 1 if status in ('pass', 'warn') else 0
        unknowns = unknowns + 1 if status == 'unknown' else 0
        drain_seen = None
        if node is not None and node['condition'] != 'available' and is_ours(node.get('reason')):
            drain_seen = node.get('reason')
            if previous.get('drain_seen') != drain_seen:
                # a drain this mode has not seen before (the prolog's, the epilog's, or one before a lost state): the
                # passes that count towards its resume are those from now on
                passes = 1 if status in ('pass', 'warn') else 0
        counters = {'passes_in_row': passes, 'unknowns_in_row': unknowns}
        slurm_doc = {}
        if use_slurm:
            slurm_doc = _act(mode, verdict, node, slurm_error, counters, sched, slurm, act, config, state_dir)
            if slurm_doc.get('reason_set') and not slurm_doc.get('error'):
                drain_seen = slurm_doc['reason_set']
            elif slurm_doc.get('action') == 'resume' and not slurm_doc.get('error'):
                drain_seen = None
        counters['drain_seen'] = drain_seen
        seconds = clock() - started
        line = summary_line(verdict, config['host'], mode, seconds)
        if slurm_doc.get('error'):
            line += ' (slurm: %s)' % slurm_doc['error']
        doc = dict(verdict, format=FORMAT, collection_version=config['collection_version'], mode=mode, host=config['host'],
                   started=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(started_epoch)),
                   finished_epoch=now(), seconds=round(seconds, 3), line=line, exit_code=STATUS_EXIT[status],
                   boot_id=boot, kernel_mark=new_mark if new_mark else mark, probe_seconds=timings, slurm=slurm_doc,
                   job_id=job_id, **counters)
        if capture_error:
            doc['capture_error'] = capture_error
        if previous.get('state_error'):
            doc['state_error'] = previous['state_error']
        try:
            write_json_atomic(state_path, doc)
        except (IOError, OSError) as err:
            # a full disk, say: the verdict stands; the old state goes (an unlink needs no space), so that its counters
            # never resume a node on a streak this run did not record
            try:
                os.unlink(state_path)
            except OSError:
                pass
            doc['state_write_error'] = str(err)
            line = doc['line'] = '%s (state not written: %s)' % (line, err)
        if config['textfile_dir']:
            try:
                from ansible_collections.xuanwu.cluster.plugins.module_utils import _prom
                _prom.write_atomic(os.path.join(config['textfile_dir'], 'xuanwu-health-%s.prom' % mode), textfile(mode, doc))
            except (IOError, OSError) as err:
                doc['textfile_error'] = str(err)
        return STATUS_EXIT[status], line, doc
    finally:
        os.close(lock)


def _still(verdict, keep):
    """The verdict with only the failing findings that are in ``keep`` (seen again after the epilog's grace)."""
    from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
    findings = [f for f in verdict['findings'] if not _findings.is_failing(f) or (f['check'], f['component']) in keep]
    failing = [f for f in verdict['failing'] if (f['check'], f['component']) in keep]
    out = dict(verdict, findings=findings, failing=failing)
    if not failing:
        out['status'] = 'unknown' if verdict['unknown'] else _findings.status_of(findings)
    return out


def _act(mode, verdict, node, slurm_error, counters, sched, slurm, act, config, state_dir):
    doc = {'node': sched['node']}
    if node is None:
        doc['error'] = slurm_error or 'the node was not read'
        return doc
    doc.update(state=node.get('state'), reason=node.get('reason') or '')
    action, why = decide(mode, verdict, node, counters, sched)
    ours = is_ours(node.get('reason')) and node['condition'] != 'available'
    doc.update(action=action, why=why, drained_by_health=ours)
    if action == 'none' or not sched['drain'] or not act:
        if action != 'none' and (not sched['drain'] or not act):
            doc['why'] = '%s (not done: %s)' % (why, 'drain is off' if not sched['drain'] else '--no-act')
            doc['action'] = 'none'
        return doc
    reason = drain_reason(verdict, mode, counters['unknowns_in_row']) if action in ('drain', 'relabel') else None
    if action == 'relabel' and reason == node.get('reason'):
        doc.update(action='none', why='drained by the health check with this reason already')
        return doc
    error = slurm.drain(reason) if action in ('drain', 'relabel') else slurm.resume()
    doc['reason_set'] = reason
    if error:
        doc['error'] = '%s failed: %s' % (action, error)
    else:
        doc['drained_by_health'] = action in ('drain', 'relabel')
    try:
        append_action(state_dir, {'time': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), 'mode': mode,
                                  'node': sched['node'], 'action': action, 'done': not error, 'error': error,
                                  'reason': reason, 'why': why, 'before': {'state': node.get('state'), 'reason': node.get('reason')},
                                  'status': verdict['status'], 'findings': verdict['failing'] or verdict['findings'],
                                  'unknown': verdict['unknown'], 'passes_in_row': counters['passes_in_row']})
    except (IOError, OSError) as err:
        doc['log_error'] = str(err)
    return doc


# ------------------------------------------------------------------------------------------------ command line

USAGE = """usage: xuanwu-health [check|prolog|epilog|npd] [--config PATH] [--no-act] [--json] [--replay DIR] [--capture DIR]
       xuanwu-health --check-config PATH

The node's health check between validation runs (docs/node-health.md). Exit status: 0 healthy, 1 unhealthy,
2 unknown (a probe did not answer), 3 invalid configuration or usage."""


def parse_args(argv):
    """``(options, error)`` of the command line (argv[0] included: its name may carry the mode)."""
    prog = os.path.basename(argv[0]) if argv else 'xuanwu-health'
    opts = {'mode': None, 'config': DEFAULT_CONFIG, 'act': True, 'json': False, 'replay': None, 'check_config': None,
            'capture': None}
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg in MODES and opts['mode'] is None:
            opts['mode'] = arg
        elif arg in ('--config', '-c', '--replay', '--check-config', '--capture') and args:
            opts[{'-c': 'config'}.get(arg, arg.lstrip('-').replace('-', '_'))] = args.pop(0)
        elif arg == '--no-act':
            opts['act'] = False
        elif arg == '--json':
            opts['json'] = True
        elif arg in ('-h', '--help'):
            return opts, 'help'
        else:
            return opts, 'unknown argument %r' % arg
    if opts['mode'] is None:
        for mode in ('prolog', 'epilog', 'npd'):
            if prog.endswith('-' + mode):
                opts['mode'] = mode
    if opts['mode'] is None:
        context = os.environ.get('SLURM_SCRIPT_CONTEXT', '')
        opts['mode'] = 'prolog' if context == 'prolog_slurmd' else 'epilog' if context == 'epilog_slurmd' else 'check'
    return opts, None


def main(argv=None, out=None):
    """The command: one line on ``out``; the exit status."""
    argv = list(sys.argv if argv is None else argv)
    out = out or sys.stdout
    opts, error = parse_args(argv)
    if error == 'help':
        out.write(USAGE + '\n')
        return EXIT_HEALTHY
    if error:
        out.write('UNKNOWN: xuanwu-health: %s\n%s\n' % (error, USAGE))
        return EXIT_CONFIG
    if opts['check_config']:
        try:
            config = load_config(opts['check_config'], trust_check=False)
            from ansible_collections.xuanwu.cluster.plugins.module_utils import _profile
            _profile.validate_profile(config['profile'], 'profile')
        except ConfigError as err:
            out.write('INVALID %s\n' % err)
            return EXIT_CONFIG
        except ValueError as err:    # ProfileError
            out.write('INVALID %s: profile: %s\n' % (opts['check_config'], err))
            return EXIT_CONFIG
        out.write('VALID %s: host %s, profile %s, scheduler %s\n' % (opts['check_config'], config['host'],
                                                                     config['profile_path'] or '-', config['scheduler']['backend']))
        return EXIT_HEALTHY
    try:
        config = load_config(opts['config'])
    except ConfigError as err:
        out.write('UNKNOWN: xuanwu-health: invalid configuration: %s\n' % err)
        return EXIT_CONFIG
    if opts['replay']:
        config['probe']['replay_dir'] = opts['replay']
    watchdog = int(config['watchdog_seconds'] + 0.999)

    def expired(_signum, _frame):
        raise _Watchdog()
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(watchdog)
    try:
        code, line, doc = run(config, opts['mode'], act=opts['act'], capture=opts['capture'])
    except _Watchdog:
        code, line, doc = EXIT_UNKNOWN, 'UNKNOWN %s: watchdog: the %s check did not finish in %d s' % (
            config['host'], opts['mode'], watchdog), None
    except ValueError as err:    # ProfileError: the profile in the configuration
        code, line, doc = EXIT_CONFIG, 'UNKNOWN %s: invalid profile in %s: %s' % (config['host'], opts['config'], err), None
    except (IOError, OSError) as err:
        code, line, doc = EXIT_UNKNOWN, 'UNKNOWN %s: %s' % (config['host'], err), None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    if opts['mode'] == 'npd':
        line = cut_bytes(line, 256)
    out.write(line + '\n')
    if opts['json'] and doc is not None:
        out.write(json.dumps(doc, indent=1, sort_keys=True, default=str) + '\n')
    out.flush()
    return code
