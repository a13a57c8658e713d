# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run report as Prometheus metrics, for node_exporter's textfile collector (docs/metrics.md).

:func:`render` turns a report (``report.json``'s dict, docs/report-format.md) into the Prometheus text
exposition format: one ``# HELP`` and ``# TYPE`` line per metric, every metric a gauge named ``xuanwu_...``,
label values escaped (backslash, double quote, newline), no sample twice. :func:`render_exports` splits a run
between the textfile exports (each node's file, the controller's) so that no series is in two of them.
:func:`write_atomic` writes a text where the collector reads (``*.prom``): a temporary file in the same folder,
fsync, mode 0644, rename over the old file (never an append), so that the collector never reads half a file.

``render`` and ``render_exports`` take no Ansible imports and do no I/O; ``write_atomic`` writes one file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import math
import os
import re
import tempfile
import time

from ansible_collections.xuanwu.cluster.plugins.module_utils import _check_status

_NAME_RE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*$')
_LABEL_RE = re.compile(r'^[a-zA-Z_][a-zA-Z0-9_]*$')
_SURROGATE_RE = re.compile('[\ud800-\udfff]')
TIME_FORMAT = '%Y-%m-%dT%H:%M:%SZ'

# Host and run status as a number: higher is worse; a status this table does not know is an error.
STATUS_CODES = {'pass': 0, 'warn': 1, 'fail': 2, 'error': 3}
SEVERITY_CODES = {'info': 0, 'warn': 1, 'fail': 2}

# (name, help, labels): every metric render writes, in this order (docs/metrics.md lists the same). A metric with a
# ``host`` label is a host series (its host's result in one run: ``host``, then ``run_id``, first); the others are the
# run's series (``run_id``, no host). render_exports puts each series in exactly one export.
METRICS = (
    ('xuanwu_run_info', 'A validation run: its playbook, collection and ansible-core versions and result '
     '(always 1).', ('run_id', 'playbook', 'collection_version', 'ansible_version', 'result')),
    ('xuanwu_run_timestamp_seconds', 'When the run finished, Unix time.', ('run_id',)),
    ('xuanwu_run_duration_seconds', 'How long the run took, from its start to its end.', ('run_id',)),
    ('xuanwu_run_result', 'Result of the run: 0 pass, 1 warn, 2 fail, 3 error (the run itself failed).', ('run_id',)),
    ('xuanwu_run_hosts', 'Hosts of the run by status (pass, warn, fail, error).', ('run_id', 'status')),
    ('xuanwu_host_status', 'Status of a host: 0 pass, 1 warn, 2 fail, 3 error (not probed, or a status this '
     'version does not know).', ('host', 'run_id')),
    ('xuanwu_host_last_validated_timestamp_seconds', 'When the host\'s latest validation finished, Unix time (the '
     'run\'s end; no sample for a host the run could not probe).', ('host', 'run_id')),
    ('xuanwu_host_findings', 'Findings of a host by severity.', ('host', 'run_id', 'severity')),
    ('xuanwu_check_outcome', 'The worst finding of a check on a component: 0 info, 1 warn, 2 fail; a check '
     'without findings has no sample.', ('host', 'run_id', 'check', 'component')),
    ('xuanwu_host_not_judged', 'A measurement of a host that was not compared with the profile (always 1).',
     ('host', 'run_id', 'component')),
    ('xuanwu_host_checks', 'Checks of a host by status (fail, warn, info: its worst finding; pass; not_measured; '
     'not_applicable).', ('host', 'run_id', 'status')),
    ('xuanwu_check_not_measured', 'A check of a host whose input was not measured (always 1); a check of a probed host '
     'with neither this, xuanwu_check_not_applicable nor xuanwu_check_outcome passed.', ('host', 'run_id', 'check')),
    ('xuanwu_check_not_applicable', 'A check that does not apply to a host (always 1).', ('host', 'run_id', 'check')),
    ('xuanwu_workload_seconds', 'Wall time of a workload run.', ('host', 'run_id', 'kind', 'component')),
    ('xuanwu_workload_exit_code', 'Exit code of a workload run.', ('host', 'run_id', 'kind', 'component')),
    ('xuanwu_workload_timed_out', 'A workload run hit its time limit (1) or not (0).', ('host', 'run_id', 'kind', 'component')),
    ('xuanwu_workload_ok', 'A torch workload reported success (1) or failure (0).', ('host', 'run_id', 'kind', 'component')),
    ('xuanwu_workload_tokens_per_second', 'Training throughput of the DDP smoke run.', ('host', 'run_id', 'kind', 'component')),
    ('xuanwu_workload_step_time_median_seconds', 'Median training step time of the DDP smoke run.',
     ('host', 'run_id', 'kind', 'component')),
    ('xuanwu_workload_gpu_memory_growth_percent', 'GPU memory growth over the soak run.',
     ('host', 'run_id', 'kind', 'component')),
    ('xuanwu_workload_rss_growth_percent', 'Host memory (RSS) growth over the soak run.',
     ('host', 'run_id', 'kind', 'component')),
    ('xuanwu_gpu_single_bf16_tflops', 'Dense bf16 matmul of one GPU alone, TFLOP/s (median of its timed batches).',
     ('host', 'run_id', 'gpu')),
    ('xuanwu_gpu_single_membw_gbytes', 'Device-to-device copy of one GPU alone, GB/s (10^9 bytes/s, read and write counted).',
     ('host', 'run_id', 'gpu')),
    ('xuanwu_gpu_single_bf16_tflops_floor', 'The profile\'s floor for a GPU alone\'s bf16 matmul, TFLOP/s.', ('host', 'run_id')),
    ('xuanwu_gpu_single_membw_floor_gbytes', 'The profile\'s floor for a GPU alone\'s device memory copy, GB/s.', ('host', 'run_id')),
    ('xuanwu_collective_avg_busbw_gbytes', 'Average bus bandwidth of an nccl-tests run, GB/s (10^9 bytes/s).',
     ('host', 'run_id', 'collective')),
    ('xuanwu_collective_busbw_gbytes', 'Bus bandwidth of a collective at one message size, GB/s (10^9 bytes/s): '
     'out-of-place, median over the cycles of the run.', ('host', 'run_id', 'collective', 'size_bytes')),
    ('xuanwu_collective_busbw_floor_gbytes', 'The profile\'s floor for the bus bandwidth of a collective at one message '
     'size, GB/s (only sizes the profile governs).', ('host', 'run_id', 'collective', 'size_bytes')),
    ('xuanwu_gpu_dmon_samples', 'Samples nvidia-smi dmon took of a GPU during a workload (component: the workload).',
     ('host', 'run_id', 'component', 'gpu')),
    ('xuanwu_gpu_dmon_load_samples', 'Samples of a GPU under load (sm % at or above the load bound).',
     ('host', 'run_id', 'component', 'gpu')),
    ('xuanwu_gpu_power_watts', 'GPU power draw over the samples (stat: min, median, max).',
     ('host', 'run_id', 'component', 'gpu', 'stat')),
    ('xuanwu_gpu_utilization_percent', 'GPU utilisation over the samples (engine: sm, mem; stat: min, median, max).',
     ('host', 'run_id', 'component', 'gpu', 'engine', 'stat')),
    ('xuanwu_gpu_temperature_celsius', 'GPU temperature over the samples (sensor: gpu, memory; stat: min, median, '
     'max).', ('host', 'run_id', 'component', 'gpu', 'sensor', 'stat')),
    ('xuanwu_gpu_clock_mhz', 'GPU clocks over the samples (clock: sm, memory; stat: min, median, max).',
     ('host', 'run_id', 'component', 'gpu', 'clock', 'stat')),
    ('xuanwu_gpu_sm_clock_under_load_min_mhz', 'Lowest SM clock of a GPU while under load.',
     ('host', 'run_id', 'component', 'gpu')),
    ('xuanwu_gpu_framebuffer_used_mebibytes', 'GPU framebuffer memory in use (dmon fb, MiB; stat: min, median, max, '
     'first, last over all samples, idle ones included).', ('host', 'run_id', 'component', 'gpu', 'stat')),
    ('xuanwu_gpu_framebuffer_growth_under_load_mebibytes', 'How GPU framebuffer memory grew under load after the '
     'warm-up, MiB: the last minus the first sample under load once the warm-up is skipped (what dmon.memory_growth '
     'judges).', ('host', 'run_id', 'component', 'gpu')),
    ('xuanwu_gpu_ecc_errors', 'ECC errors dmon counted on a GPU during a workload (counter: sbecc single-bit, dbecc '
     'double-bit), summed over its samples.', ('host', 'run_id', 'component', 'gpu', 'counter')),
    ('xuanwu_gpu_violation_max', 'Highest power (pviol, %) and thermal (tviol) violation value of a GPU.',
     ('host', 'run_id', 'component', 'gpu', 'counter')),
)
_LABELS = dict((name, labels) for name, _help, labels in METRICS)
# the host series (a host's result in one run) and the run's series: render_exports gives each one export
HOST_METRICS = frozenset(name for name, _help, labels in METRICS if 'host' in labels)
RUN_METRICS = frozenset(name for name, _help, labels in METRICS if 'host' not in labels)
# result fields of torch workloads -> (metric, divisor)
_RESULT_FIGURES = (
    ('tokens_per_s', 'xuanwu_workload_tokens_per_second', 1),
    ('step_time_ms_median', 'xuanwu_workload_step_time_median_seconds', 1000),
    ('gpu_mem_growth_pct', 'xuanwu_workload_gpu_memory_growth_percent', 1),
    ('rss_growth_pct', 'xuanwu_workload_rss_growth_percent', 1),
)


def escape_label_value(value):
    """A label value as the text format writes it: ``\\`` -> ``\\\\``, ``"`` -> ``\\"``, newline -> ``\\n``;
    text that is not valid Unicode (a lone surrogate) becomes U+FFFD."""
    text = _SURROGATE_RE.sub('\ufffd', value if isinstance(value, str) else str(value))
    return text.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _escape_help(text):
    return text.replace('\\', '\\\\').replace('\n', '\\n')


def format_value(value):
    """A sample value: integers as integers, floats as Python writes them, ``NaN``, ``+Inf``, ``-Inf``."""
    if isinstance(value, bool):
        return '1' if value else '0'
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return 'NaN'
    if math.isinf(value):
        return '+Inf' if value > 0 else '-Inf'
    return repr(float(value))


def _number(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    return None


def _epoch(text):
    if not isinstance(text, str):
        return None
    try:
        return calendar.timegm(time.strptime(text, TIME_FORMAT))
    except (ValueError, OverflowError):
        return None


class _Metrics(object):
    """Samples by metric; a label set given twice keeps the worse (``keep='max'``) or the last value."""

    def __init__(self):
        self.samples = dict((name, {}) for name in _LABELS)

    def add(self, name, labels, value, keep=None):
        value = _number(value)
        if value is None:
            return
        key = tuple(str(labels[label]) if labels.get(label) is not None else '' for label in _LABELS[name])
        have = self.samples[name].get(key)
        if keep == 'max' and have is not None and have >= value:
            return
        self.samples[name][key] = value

    def text(self):
        out = []
        for name, help_text, labels in METRICS:
            samples = self.samples[name]
            if not samples:
                continue
            out.append('# HELP %s %s' % (name, _escape_help(help_text)))
            out.append('# TYPE %s gauge' % name)
            for key in sorted(samples):
                pairs = ','.join('%s="%s"' % (label, escape_label_value(value)) for label, value in zip(labels, key))
                out.append('%s{%s} %s' % (name, pairs, format_value(samples[key])))
        return '\n'.join(out) + '\n' if out else ''


def _run(metrics, report):
    run_id = report.get('run_id')
    summary = report.get('summary') if isinstance(report.get('summary'), dict) else {}
    collection = report.get('collection') if isinstance(report.get('collection'), dict) else {}
    result = summary.get('result')
    metrics.add('xuanwu_run_info', {'run_id': run_id, 'playbook': report.get('playbook'),
                                    'collection_version': collection.get('version'),
                                    'ansible_version': report.get('ansible_version'), 'result': result}, 1)
    started, finished = _epoch(report.get('started_at')), _epoch(report.get('finished_at'))
    metrics.add('xuanwu_run_timestamp_seconds', {'run_id': run_id}, finished)
    if started is not None and finished is not None:
        metrics.add('xuanwu_run_duration_seconds', {'run_id': run_id}, finished - started)
    if result is not None:
        metrics.add('xuanwu_run_result', {'run_id': run_id}, STATUS_CODES.get(result, STATUS_CODES['fail']))
    status = summary.get('status')
    for name in sorted(STATUS_CODES) if isinstance(status, dict) else []:
        metrics.add('xuanwu_run_hosts', {'run_id': run_id, 'status': name}, status.get(name, 0))


def _workloads(metrics, host, run_id, runs):
    for run in runs if isinstance(runs, list) else []:
        if not isinstance(run, dict):
            continue
        labels = {'host': host, 'run_id': run_id, 'kind': run.get('kind'), 'component': run.get('component')}
        metrics.add('xuanwu_workload_seconds', labels, run.get('seconds'))
        metrics.add('xuanwu_workload_exit_code', labels, run.get('exit_code'))
        metrics.add('xuanwu_workload_timed_out', labels, run.get('timed_out'))
        result = run.get('result') if isinstance(run.get('result'), dict) else {}
        metrics.add('xuanwu_workload_ok', labels, result.get('ok'))
        for field, metric, divisor in _RESULT_FIGURES:
            value = _number(result.get(field))
            metrics.add(metric, labels, round(value / divisor, 9) if value is not None and divisor != 1 else value)
        collective = {'host': host, 'run_id': run_id, 'collective': run.get('component')}
        metrics.add('xuanwu_collective_avg_busbw_gbytes', collective, run.get('avg_busbw_gbps'))
        busbw = run.get('busbw_gbps') if isinstance(run.get('busbw_gbps'), dict) else {}
        for size, value in busbw.items():
            metrics.add('xuanwu_collective_busbw_gbytes', dict(collective, size_bytes=size), value)
            metrics.add('xuanwu_collective_busbw_floor_gbytes', dict(collective, size_bytes=size),
                        floor_at(run.get('curve'), size))
        if run.get('kind') == 'gpu_single':
            _gpu_single(metrics, host, run_id, run, result)
        if isinstance(run.get('dmon'), dict):
            _dmon(metrics, dict(labels, component=run.get('component')), run['dmon'])


def _gpu_single(metrics, host, run_id, run, result):
    """Each GPU alone: its figures, and the profile's floors where it sets them."""
    for gpu in result.get('gpus') if isinstance(result.get('gpus'), list) else []:
        if isinstance(gpu, dict) and gpu.get('index') is not None:
            labels = {'host': host, 'run_id': run_id, 'gpu': str(gpu['index'])}
            metrics.add('xuanwu_gpu_single_bf16_tflops', labels, _number(gpu.get('bf16_tflops')))
            metrics.add('xuanwu_gpu_single_membw_gbytes', labels, _number(gpu.get('membw_gbps')))
    floors = run.get('floors') if isinstance(run.get('floors'), dict) else {}
    metrics.add('xuanwu_gpu_single_bf16_tflops_floor', {'host': host, 'run_id': run_id}, _number(floors.get('min_bf16_tflops')))
    metrics.add('xuanwu_gpu_single_membw_floor_gbytes', {'host': host, 'run_id': run_id}, _number(floors.get('min_membw_gbps')))


def floor_at(curve, size):
    """The floor a profile curve (``[{min_bytes, busbw_gbps_min}]``, each point holding from min_bytes up) sets at
    ``size`` bytes; None below its first point or without a curve."""
    try:
        size = int(size)        # the report's keys are strings
    except (TypeError, ValueError):
        return None
    if not isinstance(curve, list):
        return None
    floor = None
    for point in sorted((p for p in curve if isinstance(p, dict) and _number(p.get('min_bytes')) is not None),
                        key=lambda p: _number(p['min_bytes'])):
        if _number(point['min_bytes']) <= size:
            floor = _number(point.get('busbw_gbps_min'))
    return floor


def _host(metrics, host, entry, run_id, finished):
    """The host series of ``host`` (its report ``entry``) in the run ``run_id`` that finished at ``finished``."""
    status = STATUS_CODES.get(entry.get('status'), STATUS_CODES['error'])
    metrics.add('xuanwu_host_status', {'host': host, 'run_id': run_id}, status)
    if status != STATUS_CODES['error'] and not entry.get('error'):
        # validated: probed and judged (a host that could not be probed keeps the age of its last validation)
        metrics.add('xuanwu_host_last_validated_timestamp_seconds', {'host': host, 'run_id': run_id}, finished)
    findings = [f for f in entry.get('findings') or [] if isinstance(f, dict)]
    for severity in sorted(SEVERITY_CODES):
        metrics.add('xuanwu_host_findings', {'host': host, 'run_id': run_id, 'severity': severity},
                    sum(1 for f in findings if f.get('severity') == severity))
    for finding in findings:
        if finding.get('severity') in SEVERITY_CODES:
            metrics.add('xuanwu_check_outcome', {'host': host, 'run_id': run_id, 'check': finding.get('check'),
                                                 'component': finding.get('component')},
                        SEVERITY_CODES[finding['severity']], keep='max')
    not_judged = entry.get('not_judged') if isinstance(entry.get('not_judged'), dict) else {}
    for component in not_judged:
        metrics.add('xuanwu_host_not_judged', {'host': host, 'run_id': run_id, 'component': component}, 1)
    # the status of every check (_check_status.host_checks, the one every format of the report states)
    checks = _check_status.host_checks(entry)
    for status, count in sorted(_check_status.counts(checks).items()):
        metrics.add('xuanwu_host_checks', {'host': host, 'run_id': run_id, 'status': status}, count)
    for check in sorted(checks):
        status = checks[check]['status']
        if status in _check_status.SKIPPED:
            metrics.add('xuanwu_check_%s' % status, {'host': host, 'run_id': run_id, 'check': check}, 1)
    _workloads(metrics, host, run_id, entry.get('workloads'))


# dmon summary column -> (metric, extra labels)
_DMON_SERIES = (
    ('pwr', 'xuanwu_gpu_power_watts', {}),
    ('sm', 'xuanwu_gpu_utilization_percent', {'engine': 'sm'}),
    ('mem', 'xuanwu_gpu_utilization_percent', {'engine': 'mem'}),
    ('gtemp', 'xuanwu_gpu_temperature_celsius', {'sensor': 'gpu'}),
    ('mtemp', 'xuanwu_gpu_temperature_celsius', {'sensor': 'memory'}),
    ('pclk', 'xuanwu_gpu_clock_mhz', {'clock': 'sm'}),
    ('mclk', 'xuanwu_gpu_clock_mhz', {'clock': 'memory'}),
    ('fb', 'xuanwu_gpu_framebuffer_used_mebibytes', {}),
)


def _dmon(metrics, workload, summary):
    """The GPU series of a workload's dmon ``summary``; ``workload``: its labels (host, run_id, component)."""
    gpus = summary.get('gpus') if isinstance(summary, dict) and isinstance(summary.get('gpus'), dict) else {}
    for gpu, entry in gpus.items():
        if not isinstance(entry, dict):
            continue
        labels = {'host': workload['host'], 'run_id': workload['run_id'], 'component': workload['component'], 'gpu': gpu}
        metrics.add('xuanwu_gpu_dmon_samples', labels, entry.get('samples'))
        series = entry.get('series') if isinstance(entry.get('series'), dict) else {}
        for column, metric, extra in _DMON_SERIES:
            stats = series.get(column) if isinstance(series.get(column), dict) else {}
            for stat in ('min', 'median', 'max'):
                metrics.add(metric, dict(labels, stat=stat, **extra), stats.get(stat))
        metrics.add('xuanwu_gpu_framebuffer_used_mebibytes', dict(labels, stat='first'), entry.get('fb_first'))
        metrics.add('xuanwu_gpu_framebuffer_used_mebibytes', dict(labels, stat='last'), entry.get('fb_last'))
        for counter in ('pviol', 'tviol'):
            stats = series.get(counter) if isinstance(series.get(counter), dict) else {}
            metrics.add('xuanwu_gpu_violation_max', dict(labels, counter=counter), stats.get('max'))
        ecc = entry.get('ecc') if isinstance(entry.get('ecc'), dict) else {}
        for counter in ('sbecc', 'dbecc'):
            metrics.add('xuanwu_gpu_ecc_errors', dict(labels, counter=counter), ecc.get(counter))
        load = entry.get('load') if isinstance(entry.get('load'), dict) else {}
        metrics.add('xuanwu_gpu_dmon_load_samples', labels, load.get('samples'))
        metrics.add('xuanwu_gpu_sm_clock_under_load_min_mhz', labels, load.get('pclk_min'))
        growth = load.get('fb_growth') if isinstance(load.get('fb_growth'), dict) else {}
        start, end = _number(growth.get('from')), _number(growth.get('to'))
        if start is not None and end is not None:
            metrics.add('xuanwu_gpu_framebuffer_growth_under_load_mebibytes', labels, end - start)


def _check(report):
    if not isinstance(report, dict) or not isinstance(report.get('hosts'), dict):
        raise ValueError('not a run report (a mapping with hosts): %s' % type(report).__name__)


def _collect(report, hosts):
    """The run's series and the host series of ``hosts`` (None: every host of the report), in one _Metrics."""
    metrics = _Metrics()
    _run(metrics, report)
    finished = _epoch(report.get('finished_at'))
    hosts = None if hosts is None else set(hosts)
    for host in sorted(report['hosts']):
        entry = report['hosts'][host]
        if isinstance(entry, dict) and (hosts is None or host in hosts):
            _host(metrics, host, entry, report.get('run_id'), finished)
    return metrics


def render(report, hosts=None):
    """The text exposition of ``report`` (a report.json dict, with the GPU figures dmon sampled during each workload):
    the run's series and every host's (the report folder's ``xuanwu.prom``); ``hosts``: only these hosts' series (the
    run's always). Raises ValueError when ``report`` is not a report."""
    _check(report)
    return _collect(report, hosts).text()


def render_exports(report, node_hosts=(), controller=False):
    """What each textfile export of a run holds, so that every series is in exactly one of them (docs/metrics.md,
    "Which export carries what"): ``{'nodes': {host: text}, 'controller': text or None}``.

    ``node_hosts``: the hosts that get their own node export. Each node's text holds its host series; the run's series
    too where there is no ``controller`` export (then every node of the run carries the same run series). The
    controller's text (``controller`` true) holds the run's series and the host series of every host of the report
    that gets no node export (not probed, or no textfile folder), never a host series that a node export carries.
    One pass over the report, whatever the number of hosts."""
    _check(report)
    run_id, finished = report.get('run_id'), _epoch(report.get('finished_at'))
    exported = set(h for h in node_hosts if isinstance(report['hosts'].get(h), dict))
    run = ''
    if not controller:
        metrics = _Metrics()
        _run(metrics, report)
        run = metrics.text()
    nodes = {}
    for host in sorted(exported):
        metrics = _Metrics()
        _host(metrics, host, report['hosts'][host], run_id, finished)
        nodes[host] = run + metrics.text()
    rest = set(report['hosts']) - exported
    return {'nodes': nodes, 'controller': _collect(report, rest).text() if controller else None}


def write_atomic(path, text, mode=0o644):
    """Write ``text`` to ``path`` so that a reader sees the old file or the new one, never a part: a temporary
    file in the same folder (a hidden name that does not end in ``.prom``), fsync, ``mode``, rename, fsync of
    the folder."""
    if not isinstance(text, str):
        raise ValueError('write_atomic writes text, got %s' % type(text).__name__)
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), suffix='.tmp', dir=directory)
    try:
        with os.fdopen(handle, 'wb') as stream:
            stream.write(text.encode('utf-8'))
            stream.flush()
            os.fsync(stream.fileno())
            os.fchmod(stream.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    try:
        folder = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(folder)
    except OSError:
        pass
    finally:
        os.close(folder)


def valid_names():
    """True when every metric and label name of ``METRICS`` is one Prometheus accepts."""
    return all(_NAME_RE.match(name) and all(_LABEL_RE.match(label) for label in labels)
               for name, _help, labels in METRICS)
