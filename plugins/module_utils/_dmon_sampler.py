# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sample ``nvidia-smi dmon`` while a workload runs (field guide §7: ``nvidia-smi dmon -s pucvmet -d 5``), and
beside it the clock event reasons (``nvidia-smi --query-gpu=index,clocks_event_reasons.active,... -lms``,
``_parse_clock_events``): the driver's own account of why the clocks are where they are.

:class:`Sampler` starts dmon in a session of its own with its output in an unnamed temporary file (a pipe
could fill up and stall it), and :meth:`Sampler.stop` ends it (SIGTERM, SIGKILL after a grace period) and
returns what it printed. The result is the ``dmon`` entry of ``workload_run``'s result: ``{command,
interval_s, stdout, exit_code}`` or ``{command, not_measured: reason}``; ``_dmon_checks`` judges it on the
controller. :class:`ClockEventsSampler` does the same for the clock event reasons; its entry also carries the
``fields`` of the query. No Ansible imports: the module passes ``get_bin_path``'s answer in.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import subprocess
import tempfile
import time

from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_clock_events import (
    LEGACY_REASONS_FIELD, QUERY_FIELDS, REASONS_FIELD,
)

DEFAULT_SELECT = 'pucvmet'
OUTPUT_LIMIT = 4 * 1024 * 1024      # bytes of dmon output kept (the end): ~20 h of 8 GPUs at 1 s
STOP_GRACE_S = 5


def command(nvidia_smi, select=DEFAULT_SELECT, interval=1):
    """The argv of the sampling."""
    return [nvidia_smi, 'dmon', '-s', select, '-d', str(interval)]


def clock_events_fields(reasons_field=REASONS_FIELD):
    """The fields of the clock event query, with the bitmask under the name the driver knows."""
    return [reasons_field if field == REASONS_FIELD else field for field in QUERY_FIELDS]


def clock_events_command(nvidia_smi, interval=1, reasons_field=REASONS_FIELD):
    """The argv of the clock event sampling (one line per GPU every ``interval`` seconds)."""
    return [nvidia_smi, '--query-gpu=' + ','.join(clock_events_fields(reasons_field)), '--format=csv,noheader,nounits',
            '-lms', str(int(interval) * 1000)]


def reasons_field(run_command, nvidia_smi):
    """``clocks_event_reasons.active`` where the driver knows the field (R535 and later), else the older
    ``clocks_throttle_reasons.active``; ``run_command(argv) -> (rc, stdout, stderr)``."""
    rc, _out, _err = run_command([nvidia_smi, '--query-gpu=' + REASONS_FIELD, '--format=csv,noheader'])
    return REASONS_FIELD if rc == 0 else LEGACY_REASONS_FIELD


class Sampler(object):
    """``nvidia-smi dmon`` running beside a workload; ``nvidia_smi``: its path, or None when it is not installed."""

    def __init__(self, nvidia_smi, select=DEFAULT_SELECT, interval=1):
        if not select or not select.isalpha():
            raise ValueError('dmon select must be letters of nvidia-smi dmon -s (for example pucvmet), got %r' % (select,))
        if int(interval) < 1:
            raise ValueError('dmon interval must be at least 1 second, got %r' % (interval,))
        self.interval = int(interval)
        self.argv = self._command(nvidia_smi or 'nvidia-smi', select)
        self.shown = ' '.join(['nvidia-smi'] + self.argv[1:])
        self.missing = nvidia_smi is None
        self.process = None
        self.output = self.errors = None
        self.error = None

    def _command(self, nvidia_smi, select):
        return command(nvidia_smi, select, self.interval)

    def start(self):
        if self.missing:
            return self
        self.output, self.errors = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self.output,
                                            stderr=self.errors, close_fds=True, start_new_session=True)
        except OSError as err:
            self.error = 'could not start %s: %s' % (self.shown, err)
            self.output.close()
            self.errors.close()
        return self

    def _end(self):
        process = self.process
        if process.poll() is not None:
            return process.returncode
        for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
            try:
                os.killpg(process.pid, sig)
            except OSError:
                pass
            deadline = time.time() + wait
            while process.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            if process.poll() is not None:
                break
        return process.returncode

    def stop(self):
        """End the sampling; the ``dmon`` entry of the workload's result."""
        if self.missing:
            return {'command': self.shown, 'not_measured': 'nvidia-smi is not installed on this node'}
        if self.process is None:
            return {'command': self.shown, 'not_measured': self.error or 'the sampling was not started'}
        exited_early = self.process.poll() is not None
        rc = self._end()
        self.output.seek(0, os.SEEK_END)
        size = self.output.tell()
        self.output.seek(max(0, size - OUTPUT_LIMIT))
        data = self.output.read()
        self.output.close()
        self.errors.seek(0)
        errors = self.errors.read(4096).decode('utf-8', 'replace')
        self.errors.close()
        text = data.decode('utf-8', 'replace')
        out = {'command': self.shown, 'interval_s': self.interval, 'stdout': text,
               'exit_code': rc, 'truncated_bytes': max(0, size - OUTPUT_LIMIT)}
        if exited_early and rc not in (0, None):
            # the sampling ended before the workload did: "No devices were found", a driver/library mismatch, ...
            out['not_measured'] = '%s exited %s before the workload ended: %s' % (
                self.shown, rc, ' '.join((text + '\n' + errors).strip().splitlines()[-3:])[:500] or 'no output')
        return out


class ClockEventsSampler(Sampler):
    """The clock event reasons sampled beside a workload (``reasons_field``: the bitmask's name, see
    :func:`reasons_field`); its entry also carries the query's ``fields``."""

    def __init__(self, nvidia_smi, interval=1, reasons_field=REASONS_FIELD):
        self.reasons_field = reasons_field
        super(ClockEventsSampler, self).__init__(nvidia_smi, DEFAULT_SELECT, interval)

    def _command(self, nvidia_smi, select):
        return clock_events_command(nvidia_smi, self.interval, self.reasons_field)

    def stop(self):
        out = super(ClockEventsSampler, self).stop()
        out['fields'] = clock_events_fields(self.reasons_field)
        return out


def replayed(entry_text, command_line, interval=None):
    """The ``dmon`` entry of a replayed workload from the capture bundle's dmon output."""
    out = {'command': command_line, 'stdout': entry_text, 'exit_code': 0, 'truncated_bytes': 0}
    if interval:
        out['interval_s'] = interval
    return out


def interval_of(command_line):
    """The ``-d`` of a dmon command line (1, dmon's default, when absent or unreadable)."""
    words = (command_line or '').split()
    for i, word in enumerate(words[:-1]):
        if word == '-d' and words[i + 1].isdigit():
            return int(words[i + 1])
    return 1


def fields_of(command_line):
    """The fields of a clock event query's command line (``--query-gpu=...``); ``QUERY_FIELDS`` when absent."""
    for word in (command_line or '').split():
        if word.startswith('--query-gpu='):
            return [f for f in word[len('--query-gpu='):].split(',') if f]
    return list(QUERY_FIELDS)
