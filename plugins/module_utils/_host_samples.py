# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's CPU sampled while a workload runs (field guide §5.5 and §8: ``sar -u 30 120``), and its checks.

:class:`Sampler` (``_host_sampler``, the node's half, whose names this module re-exports) runs in ``workload_run``
beside the workload and keeps one small record per interval; the ``host_cpu`` entry of ``workload_run``'s result is
``{command, interval_s, cores, samples: [record], core_busy_pct}`` or ``{command, not_measured: reason}``.

:func:`judge_run` (controller, pure) compares the records with the profile's ``workloads.host_cpu`` bounds
(``DEFAULT_BOUNDS``) and returns the findings and the run's ``host_cpu`` entry in the report:

* ``workload.host_cpu_iowait``: the median share of CPU time in iowait above ``iowait_max_pct``: the workload's
  processes (or another process) wait on storage;
* ``workload.host_cpu_steal``: the median share stolen by the hypervisor above ``steal_max_pct``;
* ``workload.host_cpu_bound``: a workload process pegged at ``pegged_pct`` of a core in at least
  ``cpu_bound_max_pct`` of the samples while the GPUs' median sm % (dmon, the same run) stayed below the profile's
  ``monitoring.load_sm_pct``: the job waits on its CPU side (a DataLoader, preprocessing), not on its GPUs. Opt-in.

A bound left unset is listed in the entry's ``not_judged``; no sample is ``not_measured`` (never a pass).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
from ansible_collections.xuanwu.cluster.plugins.module_utils._dmon_checks import downsample
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_dmon import parse_dmon
# The node's half (the sampler module workload_run carries); every name stays importable from this module.
from ansible_collections.xuanwu.cluster.plugins.module_utils._host_sampler import (  # noqa: F401 pylint: disable=unused-import
    BUSY_FIELDS, COMMAND, DEFAULT_INTERVAL_S, IDLE, IOWAIT, PEGGED_PCT, STEAL, Sampler, _read, _shares, core_busy, cpu_ticks,
    descendants, interval_record, load_one, process_ticks,
)

# Bounds (the profile's workloads.host_cpu, same keys). Medians over the samples: the first seconds of a workload read
# its libraries from disk (import torch reads about 1 GB of shared objects, cold after a reboot), so a few samples of
# iowait at its start are how a healthy node starts a job; a median ignores up to half the samples being such bursts.
DEFAULT_BOUNDS = {
    # the healthy 1x H200 runs of bench/gpu-host-validate.md read their data from memory: iowait is about 0 there; a
    # median of 20% means one CPU in five waits on storage during the whole run
    'iowait_max_pct': 20.0,
    # bare metal steals nothing; a GPU VM with dedicated cores a few %: 10% of the node's CPU time is lost
    'steal_max_pct': 10.0,
    # what counts as pegged: a process (or a core) at this share of one core
    'pegged_pct': PEGGED_PCT,
    # opt-in: a healthy rank's main thread busy-waits on the GPU (cudaDeviceSynchronize spins) and is pegged while its
    # GPU is busy; pegged while the GPUs idle is the bottleneck. No source yet for a share: None, not judged
    'cpu_bound_max_pct': None,
}

CHECKS = {
    'workload.host_cpu_iowait': _findings.entry(
        'Host CPU waiting on storage while a workload ran', _findings.FAIL,
        'The CPUs spent much of the workload in iowait: the job (or another process) waits on storage. Look at iostat -x 5 '
        'for the device at 100 %util, at what reads or writes (pidstat -d 5, iotop), at swapping (vmstat 5: si/so) and at '
        'the file system of the data and of the checkpoints (a network file system mounted on the node); training data '
        'belongs on local NVMe or in memory.',
        compares='the median share of CPU time in iowait over the samples vs workloads.host_cpu.iowait_max_pct'),
    'workload.host_cpu_steal': _findings.entry(
        'Host CPU time stolen by the hypervisor while a workload ran', _findings.FAIL,
        'The hypervisor gave the node\'s virtual CPUs to others for much of the workload: the instance shares its cores. '
        'Use an instance type with dedicated cores, pin the vCPUs (on your own hypervisor), or move the job to bare metal; '
        'steal slows every rank\'s launch of GPU work and the collectives\' proxy threads.',
        compares='the median share of CPU time stolen over the samples vs workloads.host_cpu.steal_max_pct'),
    'workload.host_cpu_bound': _findings.entry(
        'A workload process pegged its core while the GPUs waited', _findings.WARN,
        'One process of the job used a whole core while the GPUs were mostly idle: the job waits on its CPU side '
        '(data loading, preprocessing, a Python loop). Give the DataLoader more workers (num_workers), pin them '
        '(numactl / the GPU\'s NUMA node: nvidia-smi topo -m), check the CPU frequency governor (performance) and that '
        'no other job shares the cores (top -H).',
        compares='share of samples with a workload process at workloads.host_cpu.pegged_pct of a core vs cpu_bound_max_pct, '
                 'while the median sm % of the GPUs (dmon) is below monitoring.load_sm_pct'),
}


# --- judging (pure) ------------------------------------------------------------------------------------------------

def _median(values):
    values = sorted(v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool))
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def merged_bounds(bounds):
    out = dict(DEFAULT_BOUNDS)
    out.update(dict((k, v) for k, v in (bounds or {}).items() if k in DEFAULT_BOUNDS and v is not None))
    return out


def gpu_sm_median(dmon):
    """The median sm % of every GPU sample dmon took during the same workload, or (None, why)."""
    if not isinstance(dmon, dict) or dmon.get('not_measured') or not isinstance(dmon.get('stdout'), str):
        return None, 'no GPU samples (dmon) of the same run%s' % (
            ': %s' % dmon['not_measured'] if isinstance(dmon, dict) and dmon.get('not_measured') else '')
    try:
        parsed = parse_dmon(dmon['stdout'])
    except ParseError as err:
        return None, 'the GPU samples are unreadable: %s' % err.reason
    values = [s.get('sm') for gpu in parsed.get('gpus') or [] for s in gpu.get('samples') or []]
    middle = _median(values)
    return (middle, None) if middle is not None else (None, 'dmon printed no sm % sample')


def _series(samples, key):
    return [s.get(key) for s in samples if isinstance(s, dict)]


def _stats(values):
    values = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not values:
        return None
    return {'min': min(values), 'median': round(_median(values), 2), 'max': max(values)}


def judge_run(entry, bounds=None, host=None, workload=None, dmon=None, load_sm_pct=80):
    """Judge the ``host_cpu`` entry of a workload run -> ``(findings, report entry)``. ``bounds``: the profile's
    ``workloads.host_cpu`` (merged over ``DEFAULT_BOUNDS``); ``dmon``: the run's dmon entry (for
    ``workload.host_cpu_bound``); ``load_sm_pct``: the profile's ``monitoring.load_sm_pct``.

    The report entry: ``{command, interval_s, samples, cores, series: {busy, iowait, steal, core_max, load1, proc_cpu,
    proc_max: {min, median, max}}, values: {t, busy, iowait, steal, core_max, proc_max: [at most 120]}, busiest_cores, bounds,
    not_judged}`` or ``{command, not_measured}``."""
    bounds = merged_bounds(bounds)
    workload = workload or 'the workload'
    if not isinstance(entry, dict):
        raise ValueError('a host_cpu entry must be a mapping, got %s' % type(entry).__name__)
    out = {'command': entry.get('command')}
    samples = [s for s in entry.get('samples') or [] if isinstance(s, dict)]
    reason = entry.get('not_measured')
    if reason is None and not samples:
        reason = 'no sample: the workload ended within the first interval (%s s)' % entry.get('interval_s')
    if reason is not None:
        out['not_measured'] = reason
        return [], out
    out.update(interval_s=entry.get('interval_s'), samples=len(samples), cores=entry.get('cores'),
               series=dict((key, _stats(_series(samples, key)))
                           for key in ('busy', 'iowait', 'steal', 'core_max', 'pegged', 'load1', 'proc_cpu', 'proc_max')),
               bounds=dict((k, bounds[k]) for k in sorted(bounds)))
    # the samples themselves, at most SPARK_POINTS of each (the highest of a bucket): a burst stays visible
    out['values'] = dict((key, downsample(_series(samples, key))) for key in ('t', 'busy', 'iowait', 'steal', 'core_max', 'proc_max'))
    busy = entry.get('core_busy_pct')
    if isinstance(busy, dict) and busy:
        out['busiest_cores'] = dict(sorted(busy.items(), key=lambda pair: (-pair[1], pair[0]))[:4])
    found, not_judged = [], []

    def add(check, measured, expected, message):
        found.append(_findings.make(CHECKS, host, check, 'host cpu', measured, expected,
                                    'during %s: %s' % (workload, message)))

    for key, check, what in (('iowait', 'workload.host_cpu_iowait', 'in iowait'),
                             ('steal', 'workload.host_cpu_steal', 'stolen by the hypervisor')):
        bound = bounds['%s_max_pct' % key]
        stats = out['series'][key]
        if stats is None:
            not_judged.append('%s: no %s figure in the samples' % (check, key))
        elif stats['median'] > bound:
            add(check, 'median %s%% (max %s%%) of %d samples' % (stats['median'], stats['max'], len(samples)),
                '<= %s%% (workloads.host_cpu.%s_max_pct)' % (bound, key),
                'the CPUs spent a median %s%% of their time %s (%d samples every %s s; max %s%%)'
                % (stats['median'], what, len(samples), entry.get('interval_s'), stats['max']))
    _cpu_bound(samples, bounds, dmon, load_sm_pct, add, not_judged)
    if not_judged:
        out['not_judged'] = not_judged
    return found, out


def _cpu_bound(samples, bounds, dmon, load_sm_pct, add, not_judged):
    bound = bounds['cpu_bound_max_pct']
    if bound is None:
        not_judged.append('workload.host_cpu_bound: not judged: the profile sets no workloads.host_cpu.cpu_bound_max_pct '
                          '(a healthy rank busy-waits on its GPU: a pegged process alone says nothing)')
        return
    pegged = [s for s in samples if isinstance(s.get('proc_max'), (int, float)) and s['proc_max'] >= bounds['pegged_pct']]
    share = 100.0 * len(pegged) / len(samples)
    sm, why = gpu_sm_median(dmon)
    if sm is None:
        not_judged.append('workload.host_cpu_bound: not judged: %s' % why)
        return
    if share >= bound and sm < load_sm_pct:
        add('workload.host_cpu_bound', '%.0f%% of samples with a process at >= %s%% of a core; GPU sm median %s%%'
            % (share, bounds['pegged_pct'], sm),
            '< %s%% of samples (workloads.host_cpu.cpu_bound_max_pct) while the GPUs are below %s%% sm' % (bound, load_sm_pct),
            'a workload process used a whole core in %d of %d samples while the GPUs\' median sm was %s%%: the job waits '
            'on its CPU side' % (len(pegged), len(samples), sm))
