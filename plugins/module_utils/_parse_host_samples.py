# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of the /proc files the host CPU sampler reads while a workload runs (``_host_samples``, private to the
collection): ``/proc/stat`` (every core's ticks), ``/proc/<pid>/stat`` (a process's ticks) and ``/proc/loadavg``.
Text in, a dict out; an unreadable text or anything but text is a ParseError, every count within 0..2**64.
``_host_samples`` reads them through ``cpu_ticks``, ``process_ticks`` and ``load_one``, which turn a ParseError into
"nothing read" (``{}``, None): a process that ends between the listing and the read is not an error there."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import MAX_INT, ParseError, float_from_text, int_from_text

PROC_STAT = '/proc/stat'
PROC_PID_STAT = '/proc/<pid>/stat'
PROC_LOADAVG = '/proc/loadavg'
# user, nice, system, idle, iowait, irq, softirq, steal: the ticks of a cpu line kept (guest and guest_nice are in user)
CPU_TICKS = 8


def _text(text, source):
    if not isinstance(text, str):
        raise ParseError(source, 'expected text, got %s' % type(text).__name__, text)
    return text


def parse_proc_stat_cpu(text):
    """``{'cpu': [ticks], 'cpu0': [ticks], ...}`` of the ``cpu`` lines of a ``/proc/stat`` text (ticks: user, nice,
    system, idle, iowait, irq, softirq, steal, padded with 0 on old kernels). A line it cannot read (fewer than four
    ticks, one that is not a whole number) is left out; ParseError when no cpu line reads."""
    out = {}
    for line in _text(text, PROC_STAT).splitlines():
        words = line.split()
        if not words or not words[0].startswith('cpu'):
            continue
        try:
            ticks = [int_from_text(word, PROC_STAT, '%s tick' % words[0], text) for word in words[1:CPU_TICKS + 1]]
        except ParseError:
            continue
        if len(ticks) >= 4:
            out[words[0]] = ticks + [0] * (CPU_TICKS - len(ticks))
    if not out:
        raise ParseError(PROC_STAT, 'no cpu line with four or more ticks', text)
    return out


def parse_proc_pid_stat(text):
    """``{pid, ppid, ticks}`` of a ``/proc/<pid>/stat`` text, ``ticks`` its utime + stime (the command name may hold
    spaces and parentheses: the fields follow its last ``)``)."""
    head, sep, rest = _text(text, PROC_PID_STAT).rpartition(')')
    fields = rest.split()
    if not sep or len(fields) < 13:
        raise ParseError(PROC_PID_STAT, 'not "pid (comm) state ppid ..." with utime and stime', text)
    return {'pid': int_from_text(head.split('(', 1)[0], PROC_PID_STAT, 'pid', text),
            'ppid': int_from_text(fields[1], PROC_PID_STAT, 'ppid', text),
            # each of the two at most 2**63, so that their sum is within 2**64
            'ticks': int_from_text(fields[11], PROC_PID_STAT, 'utime', text, high=MAX_INT // 2)
            + int_from_text(fields[12], PROC_PID_STAT, 'stime', text, high=MAX_INT // 2)}


def parse_loadavg(text):
    """``{load1, load5, load15}`` of a ``/proc/loadavg`` text (``1.72 1.91 2.01 4/130 20335``); the 5- and 15-minute
    loads None where the text stops after the first."""
    words = _text(text, PROC_LOADAVG).split()
    if not words:
        raise ParseError(PROC_LOADAVG, 'no load average', text)
    loads = [float_from_text(word, PROC_LOADAVG, 'load average', text, low=0) for word in words[:3]]
    loads += [None] * (3 - len(loads))
    return {'load1': loads[0], 'load5': loads[1], 'load15': loads[2]}
