# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's CPU sampled on the node while a workload runs (field guide §5.5 and §8: ``sar -u 30 120``): the node's
half of ``_host_samples``, what module ``workload_run`` carries; no check, no remediation text (those are judged on the
controller, ``_host_samples.judge_run``).

:class:`Sampler` runs in ``workload_run`` beside the workload (as ``_dmon_sampler`` does for the GPUs): every
``interval`` seconds it reads ``/proc/stat`` (every core's ticks), ``/proc/loadavg`` and ``/proc/<pid>/stat`` of the
processes the module started (the launched process tree, its samplers left out) and keeps one small record per
interval (:func:`interval_record`): the share of CPU time busy, in iowait and stolen by the hypervisor, the busiest
core, the cores pegged, the 1-minute load, the CPU the workload's processes used (in cores) and its busiest process.
The ``host_cpu`` entry of ``workload_run``'s result is ``{command, interval_s, cores, samples: [record], core_busy_pct}``
or ``{command, not_measured: reason}``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import threading
import time

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_host_samples import (
    parse_loadavg, parse_proc_pid_stat, parse_proc_stat_cpu,
)

DEFAULT_INTERVAL_S = 2
# what counts as pegged: a process (or a core) at this share of one core (the default of workloads.host_cpu.pegged_pct)
PEGGED_PCT = 95.0
BUSY_FIELDS = (0, 1, 2, 5, 6)       # user, nice, system, irq, softirq of a /proc/stat cpu line (guest is in user)
IDLE, IOWAIT, STEAL = 3, 4, 7
COMMAND = 'read /proc/stat, /proc/loadavg and /proc/<pid>/stat of the workload\'s processes every %s s'


# --- reading /proc (pure: text in; the parsers are _parse_host_samples') ----------------------------------------------

def cpu_ticks(text):
    """``{'cpu': [ticks], 'cpu0': [ticks], ...}`` of a ``/proc/stat`` text (``parse_proc_stat_cpu``); ``{}`` when no cpu
    line reads."""
    try:
        return parse_proc_stat_cpu(text)
    except ParseError:
        return {}


def process_ticks(text):
    """``(pid, ppid, utime + stime in ticks)`` of a ``/proc/<pid>/stat`` text (``parse_proc_pid_stat``), None when
    unreadable (None: the process ended before its file was read)."""
    try:
        parsed = parse_proc_pid_stat(text)
    except ParseError:
        return None
    return parsed['pid'], parsed['ppid'], parsed['ticks']


def load_one(text):
    """The 1-minute load average of a ``/proc/loadavg`` text (``parse_loadavg``), None when unreadable."""
    try:
        return parse_loadavg(text)['load1']
    except ParseError:
        return None


def _shares(before, after):
    """(busy %, iowait %, steal %) of the ticks between two readings of one cpu line (None when no tick passed)."""
    delta = [max(0, b - a) for a, b in zip(before, after)]
    total = sum(delta)
    if total <= 0:
        return None
    return (100.0 * sum(delta[i] for i in BUSY_FIELDS) / total, 100.0 * delta[IOWAIT] / total, 100.0 * delta[STEAL] / total)


def interval_record(before, after, seconds, hz=100):
    """One sample: what happened between two readings ``{'cpu': cpu_ticks, 'procs': {pid: ticks}, 'load1': float}``
    ``seconds`` apart (``hz``: clock ticks per second). None when no tick passed."""
    overall = _shares(before['cpu'].get('cpu', []), after['cpu'].get('cpu', []))
    if overall is None or seconds <= 0:
        return None
    cores = []
    for name, ticks in after['cpu'].items():
        if name != 'cpu' and name in before['cpu']:
            shares = _shares(before['cpu'][name], ticks)
            if shares is not None:
                cores.append((shares[0], name))
    busiest = max(cores) if cores else (None, None)
    # a process first seen now started within the interval: all its ticks are of the interval
    procs = dict((pid, ticks - before['procs'].get(pid, 0)) for pid, ticks in after['procs'].items())
    used = [100.0 * ticks / hz / seconds for ticks in procs.values()]
    record = {'busy': round(overall[0], 1), 'iowait': round(overall[1], 1), 'steal': round(overall[2], 1),
              'core_max': None if busiest[0] is None else round(busiest[0], 1),
              'core': busiest[1], 'pegged': sum(1 for share, _name in cores if share >= PEGGED_PCT),
              'load1': after.get('load1'), 'procs': len(procs),
              'proc_cpu': round(sum(used) / 100.0, 2), 'proc_max': round(max(used), 1) if used else None}
    return record


def core_busy(first, last):
    """``{core: busy %}`` of every core between the first and the last reading of a run."""
    out = {}
    for name, ticks in last.items():
        if name != 'cpu' and name in first:
            shares = _shares(first[name], ticks)
            if shares is not None:
                out[name] = round(shares[0], 1)
    return out


def descendants(parents, root, leave_out=()):
    """The pids below ``root`` in ``parents`` (``{pid: ppid}``), the subtrees of ``leave_out`` (samplers) left out."""
    children = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child not in leave_out:
                found.add(child)
                todo.append(child)
    return found


# --- sampling on the node ------------------------------------------------------------------------------------------

def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


class Sampler(object):
    """The host CPU sampled every ``interval`` seconds in a thread of the module, while the workload runs; ``root``:
    the pid whose process tree is the workload (the module's own), ``leave_out``: a callable giving the pids of the
    samplers started beside it (their trees are not the workload's)."""

    def __init__(self, interval=DEFAULT_INTERVAL_S, root=None, leave_out=None, proc='/proc'):
        if int(interval) < 1:
            raise ValueError('host_cpu interval must be at least 1 second, got %r' % (interval,))
        self.interval = int(interval)
        self.root = os.getpid() if root is None else root
        self.leave_out = leave_out or (lambda: ())
        self.proc = proc
        self.samples = []
        self.first = None
        self.error = None
        self._stop = threading.Event()
        self._thread = None
        try:
            self.hz = os.sysconf('SC_CLK_TCK')
        except (AttributeError, ValueError, OSError):
            self.hz = 100

    def reading(self):
        stat = _read(os.path.join(self.proc, 'stat'))
        if stat is None:
            raise OSError('%s/stat cannot be read' % self.proc)
        parents, ticks = {}, {}
        for name in os.listdir(self.proc):
            if name.isdigit():
                parsed = process_ticks(_read(os.path.join(self.proc, name, 'stat')))
                if parsed is not None:
                    parents[parsed[0]] = parsed[1]
                    ticks[parsed[0]] = parsed[2]
        tree = descendants(parents, self.root, set(self.leave_out()))
        return {'cpu': cpu_ticks(stat), 'procs': dict((pid, ticks[pid]) for pid in tree),
                'load1': load_one(_read(os.path.join(self.proc, 'loadavg'))), 'at': time.time()}

    def _loop(self):
        try:
            before = self.first = self.reading()
            while not self._stop.wait(self.interval):
                after = self.reading()
                record = interval_record(before, after, after['at'] - before['at'], self.hz)
                if record is not None:
                    record['t'] = round(after['at'] - self.first['at'], 1)
                    self.samples.append(record)
                before = after
            self.last = before
        except Exception as err:  # pylint: disable=broad-except
            self.error = '%s: %s' % (type(err).__name__, err)

    def start(self):
        self.last = None
        self._thread = threading.Thread(target=self._loop, name='xuanwu-host-cpu')
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self):
        """End the sampling; the ``host_cpu`` entry of the workload's result."""
        shown = COMMAND % self.interval
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if self.error and not self.samples:
            return {'command': shown, 'not_measured': 'the sampling failed: %s' % self.error}
        out = {'command': shown, 'interval_s': self.interval, 'samples': self.samples,
               'cores': len([name for name in (self.first or {}).get('cpu', {}) if name != 'cpu'])}
        if self.first is not None and self.last is not None:
            out['core_busy_pct'] = core_busy(self.first['cpu'], self.last['cpu'])
        if self.error:
            out['error'] = self.error
        return out
