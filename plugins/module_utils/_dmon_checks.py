# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the GPU samples that ``nvidia-smi dmon`` took during a workload (docs/metrics.md).

:func:`summarise` turns :func:`_parse_dmon.parse_dmon`'s result into a small per-GPU summary (min, median
and max of each figure, the samples under load); :func:`findings` compares a summary with bounds
(``DEFAULT_BOUNDS``; the profile's ``monitoring`` section, validated by ``_profile``, has the same keys and
defaults) and returns findings in the one shape of ``_findings``:

* ``dmon.throttle``: under load (sm % at or above ``load_sm_pct``) the SM clock fell below
  ``clock_min_fraction`` of the reference clock (``sm_clock_mhz``, else the highest SM clock any GPU of
  the run reached), or the power/thermal violation counters (pviol, tviol) were above ``violation_max_pct``;
* ``dmon.temperature``: gtemp above ``gtemp_max_c`` or mtemp above ``mtemp_max_c`` (only when set);
* ``dmon.memory_growth``: fb rose in every step across the samples under load, by more than
  ``fb_growth_max_mb`` from the first to the last;
* ``dmon.not_measured``: a check whose column was not in the output, or whose GPU had too few samples
  under load (never a pass); ``dmon.unparsable``: a line of a GPU's samples that could not be read.

The check ids are in ``CHECKS``, not yet in ``_catalogue``: they join it (and the report's stage areas, so
that a run without dmon samples does not list them as passed) when a playbook runs the sampling.

Pure: no I/O, no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
from ansible_collections.xuanwu.cluster.plugins.module_utils._collectives import _median
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import SECTION_ERROR_KEY, ParseError, ProfileError, excerpt
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_dmon import parse_dmon

SUMMARY_COLUMNS = ('pwr', 'sm', 'mem', 'gtemp', 'mtemp', 'pclk', 'mclk', 'fb')
VIOLATION_COLUMNS = ('pviol', 'tviol')
ECC_COLUMNS = ('sbecc', 'dbecc')      # ECC errors dmon counted in each interval (-s e)
DEFAULT_BOUNDS = {
    'load_sm_pct': 80,            # a sample is under load when its sm % is at least this
    'min_load_samples': 3,        # fewer samples under load: throttling and memory growth are not measured
    'clock_min_fraction': 0.9,    # under load, pclk >= this x the reference clock
    'sm_clock_mhz': None,         # the reference clock; None: the highest pclk of any GPU in the run
    'violation_max_pct': 0,       # pviol / tviol above this is throttling
    'gtemp_max_c': None,          # None: the GPU temperature is not checked
    'mtemp_max_c': None,          # None: the memory temperature is not checked
    'fb_growth_max_mb': 1024,     # fb rising in every step under load by more than this is a leak
    'dbecc_max': 0,               # double-bit (uncorrectable) ECC errors during a workload above this fail
    'sbecc_max': None,            # None: single-bit (corrected) ECC errors are counted, not checked
}
_FRACTIONS = ('clock_min_fraction',)

CHECKS = {
    'dmon.throttle': _findings.entry(
        'GPU throttled under load', _findings.FAIL,
        'look at the clock event reasons of {component} (nvidia-smi -q -d PERFORMANCE): power cap, HW slowdown '
        'or thermal slowdown; check the cooling, the power limit (nvidia-smi -q -d POWER) and the power supply, '
        'then re-run the workload',
        kind='gpu<N>', compares='under load (sm % >= load_sm_pct): pclk vs clock_min_fraction x the reference '
        'clock; pviol and tviol vs violation_max_pct'),
    'dmon.temperature': _findings.entry(
        'GPU or GPU memory too hot', _findings.FAIL,
        'check the airflow, fans and inlet temperature of {component}\'s chassis and the GPU\'s seating and '
        'heatsink; re-run the workload after the fix',
        kind='gpu<N>', compares='max gtemp vs gtemp_max_c, max mtemp vs mtemp_max_c'),
    'dmon.memory_growth': _findings.entry(
        'GPU memory grew all through the run', _findings.WARN,
        'the framebuffer memory of {component} kept growing under steady load: look for a leak in the workload '
        '(caching allocator, tensors kept across steps) or another process on the GPU (nvidia-smi '
        '--query-compute-apps=pid,used_memory --format=csv)',
        kind='gpu<N>', compares='fb rising in every step under load, last - first vs fb_growth_max_mb'),
    'dmon.ecc': _findings.entry(
        'ECC errors while the workload ran', _findings.FAIL,
        'read nvidia-smi -q -d ECC,ROW_REMAPPER for {component}: uncorrectable errors under load mean the GPU memory is '
        'failing; drain the node, reset the GPU, and open an RMA with the node serial if they come back',
        kind='gpu<N>', compares='dbecc summed over the samples vs dbecc_max (fail); sbecc vs sbecc_max (warn, when set)'),
    'dmon.not_measured': _findings.entry(
        'A dmon check could not see its inputs', _findings.WARN,
        'sample with nvidia-smi dmon -s pucvmet while the workload loads every GPU ({how})',
        kind='gpu<N>', compares='the columns and samples under load a check needs vs what dmon printed'),
    'dmon.unparsable': _findings.entry(
        'A line of dmon output could not be read', _findings.WARN,
        'look at the quoted line: a driver whose dmon output this version does not know, or output that was '
        'interleaved with other text; re-run the sampling',
        kind='gpu<N>', compares='the samples of one GPU vs the columns of the header'),
}


def _stats(values):
    values = [v for v in values if v is not None and not isinstance(v, str)]
    if not values:
        return None
    return {'min': min(values), 'median': _median(values), 'max': max(values), 'n': len(values)}


def _total(values):
    values = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(values) if values else None


def _column(samples, name):
    return [sample.get(name) for sample in samples]


def _rising(values):
    """True when ``values`` never fall and rise at least once."""
    return len(values) >= 2 and all(b >= a for a, b in zip(values, values[1:])) and values[-1] > values[0]


def _load_summary(samples, names, load_sm_pct):
    if 'sm' not in names:
        return None
    loaded = [s for s in samples if s.get('sm') is not None and s['sm'] >= load_sm_pct]
    fb = [s['fb'] for s in loaded if s.get('fb') is not None]
    pclk = _stats(_column(loaded, 'pclk'))
    return {'sm_pct_min': load_sm_pct, 'samples': len(loaded),
            'pclk_min': pclk['min'] if pclk else None, 'pclk_median': pclk['median'] if pclk else None,
            'fb_first': fb[0] if fb else None, 'fb_last': fb[-1] if fb else None, 'fb_rising': _rising(fb)}


def summarise(parsed, load_sm_pct=DEFAULT_BOUNDS['load_sm_pct']):
    """Per-GPU summary of a ``parse_dmon`` result: ``{columns, truncated, samples, gpus: {gpuN: {...}}}``.

    Each GPU: ``index``, ``samples``, ``series`` (column -> ``{min, median, max, n}`` of the columns of
    ``SUMMARY_COLUMNS`` and ``VIOLATION_COLUMNS`` that were printed, ``None`` when every value was ``-``),
    ``fb_first``/``fb_last``, ``load`` (the samples with sm % >= ``load_sm_pct``: their count, min and median
    pclk, first and last fb, whether fb rose in every step; ``None`` without an sm column) and, when a line
    of it could not be read, ``parse_error``. ``parse_error`` at the top: a line that named no GPU.
    """
    if not isinstance(parsed, dict):
        raise ValueError('summarise takes the result of parse_dmon, got %s' % type(parsed).__name__)
    names = [c.get('name') for c in parsed.get('columns') or [] if isinstance(c, dict)]
    out = {'columns': names, 'load_sm_pct': load_sm_pct, 'truncated': bool(parsed.get('truncated')), 'samples': parsed.get('samples', 0),
           'gpus': {}}
    if isinstance(parsed.get(SECTION_ERROR_KEY), dict):
        out[SECTION_ERROR_KEY] = parsed[SECTION_ERROR_KEY]
    for gpu in parsed.get('gpus') or []:
        samples = gpu.get('samples') or []
        fb = [v for v in _column(samples, 'fb') if v is not None]
        entry = {
            'index': gpu.get('index'),
            'samples': len(samples),
            'series': dict((name, _stats(_column(samples, name)))
                           for name in SUMMARY_COLUMNS + VIOLATION_COLUMNS if name in names),
            # the errors counted in each interval, summed over the run (None: the GPU printed "-")
            'ecc': dict((name, _total(_column(samples, name))) for name in ECC_COLUMNS if name in names),
            'fb_first': fb[0] if fb else None,
            'fb_last': fb[-1] if fb else None,
            'load': _load_summary(samples, names, load_sm_pct),
        }
        if isinstance(gpu.get(SECTION_ERROR_KEY), dict):
            entry[SECTION_ERROR_KEY] = gpu[SECTION_ERROR_KEY]
        out['gpus']['gpu%s' % gpu.get('index')] = entry
    return out


def _bound(value, key):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ProfileError('dmon bounds', key, 'must be a finite number >= 0, got %r' % (value,))
    if key in _FRACTIONS and not 0 < value <= 1:
        raise ProfileError('dmon bounds', key, 'must be a fraction in (0, 1], got %r' % (value,))
    return value


def merged_bounds(bounds):
    """``DEFAULT_BOUNDS`` with ``bounds`` over them, checked; an unknown key or a bad value is a ProfileError."""
    if bounds is None:
        bounds = {}
    if not isinstance(bounds, dict):
        raise ProfileError('dmon bounds', None, 'must be a mapping, got %s' % type(bounds).__name__)
    unknown = sorted(str(k) for k in bounds if k not in DEFAULT_BOUNDS)
    if unknown:
        raise ProfileError('dmon bounds', unknown[0], 'unknown key (known: %s)' % ', '.join(sorted(DEFAULT_BOUNDS)))
    out = dict(DEFAULT_BOUNDS)
    out.update(bounds)
    for key in out:
        out[key] = _bound(out[key], key)
    return out


def _g(value):
    return ('%g' % value) if isinstance(value, float) else str(value)


class _Out(object):
    def __init__(self, host):
        self.host = host
        self.found = []

    def add(self, check, component, measured, expected, message, **context):
        context.setdefault('component', component)
        self.found.append(_findings.make(CHECKS, self.host, check, component, measured, expected, message,
                                         context=context))

    def not_measured(self, component, check, what, how):
        self.add('dmon.not_measured', component, 'not measured', '%s (%s)' % (what, check),
                 '%s: %s not checked: %s' % (component, check, how), how=how)


def _reference_clock(summary, bounds):
    if bounds['sm_clock_mhz']:
        return bounds['sm_clock_mhz'], 'sm_clock_mhz'
    highest = [gpu['series']['pclk']['max'] for gpu in summary['gpus'].values()
               if (gpu.get('series') or {}).get('pclk')]
    return (max(highest), 'the highest pclk of the run') if highest else (None, None)


def _throttle(out, component, gpu, bounds, reference):
    load = gpu.get('load')
    series = gpu.get('series') or {}
    if load is None:
        out.not_measured(component, 'dmon.throttle', 'sm %', 'dmon printed no sm column (-s u)')
        return
    if load['samples'] < max(1, bounds['min_load_samples']):
        out.not_measured(component, 'dmon.throttle, dmon.memory_growth', 'samples under load',
                         '%d sample(s) with sm >= %s %% < min_load_samples %d' % (
                             load['samples'], _g(bounds['load_sm_pct']), bounds['min_load_samples']))
        return
    causes = []
    clock, source = reference
    if load['pclk_min'] is None or clock is None:
        out.not_measured(component, 'dmon.throttle', 'pclk', 'dmon printed no SM clock (-s c)')
    elif load['pclk_min'] < bounds['clock_min_fraction'] * clock:
        causes.append('pclk %s MHz under load (median %s MHz)' % (_g(load['pclk_min']), _g(load['pclk_median'])))
    violations = [name for name in VIOLATION_COLUMNS if series.get(name)]
    if not violations:
        out.not_measured(component, 'dmon.throttle', 'pviol/tviol', 'dmon printed no violation counters (-s v)')
    for name in violations:
        if series[name]['max'] > bounds['violation_max_pct']:
            causes.append('%s %s' % (name, _g(series[name]['max'])))
    if causes:
        expected = 'pclk >= %s MHz (%s x %s MHz, %s), pviol/tviol <= %s' % (
            _g(bounds['clock_min_fraction'] * clock) if clock else '?', _g(bounds['clock_min_fraction']),
            _g(clock) if clock else '?', source, _g(bounds['violation_max_pct']))
        out.add('dmon.throttle', component, ', '.join(causes), expected,
                '%s throttled under load: %s' % (component, ', '.join(causes)))


def _temperature(out, component, gpu, bounds):
    series = gpu.get('series') or {}
    for name, key, what in (('gtemp', 'gtemp_max_c', 'GPU temperature'), ('mtemp', 'mtemp_max_c', 'memory temperature')):
        if bounds[key] is None:
            continue
        if not series.get(name):
            out.not_measured(component, 'dmon.temperature', name, 'dmon printed no %s (-s p; "-" on GPUs '
                             'without the sensor)' % what)
        elif series[name]['max'] > bounds[key]:
            out.add('dmon.temperature', component, '%s max %s C' % (name, _g(series[name]['max'])),
                    '%s <= %s C' % (name, _g(bounds[key])),
                    '%s: %s reached %s C (bound %s C)' % (component, what, _g(series[name]['max']), _g(bounds[key])))


def _memory_growth(out, component, gpu, bounds):
    load = gpu.get('load')
    if bounds['fb_growth_max_mb'] is None:
        return
    if load is None or load['samples'] < max(1, bounds['min_load_samples']):
        return      # said once by _throttle, which needs the same samples
    if load['fb_first'] is None:
        out.not_measured(component, 'dmon.memory_growth', 'fb', 'dmon printed no framebuffer memory (-s m)')
        return
    growth = load['fb_last'] - load['fb_first']
    if load['fb_rising'] and growth > bounds['fb_growth_max_mb']:
        out.add('dmon.memory_growth', component,
                'fb %s -> %s MB (+%s MB) over %d samples under load' % (
                    _g(load['fb_first']), _g(load['fb_last']), _g(growth), load['samples']),
                'growth <= %s MB' % _g(bounds['fb_growth_max_mb']),
                '%s: GPU memory grew in every sample under load, by %s MB' % (component, _g(growth)))


def _ecc(out, component, gpu, bounds):
    ecc = gpu.get('ecc') or {}
    for name, key, severity, what in (('dbecc', 'dbecc_max', _findings.FAIL, 'double-bit (uncorrectable)'),
                                      ('sbecc', 'sbecc_max', _findings.WARN, 'single-bit (corrected)')):
        if bounds[key] is None:
            continue
        if ecc.get(name) is None:
            out.not_measured(component, 'dmon.ecc', name, 'dmon printed no %s ECC count (-s e; "-" where ECC is off)' % what)
        elif ecc[name] > bounds[key]:
            out.found.append(_findings.make(
                CHECKS, out.host, 'dmon.ecc', component, '%s %s' % (name, _g(ecc[name])), '%s <= %s' % (name, _g(bounds[key])),
                '%s: %s %s ECC error(s) while the workload ran' % (component, _g(ecc[name]), what), severity=severity,
                context={'component': component}))


def findings(summary, bounds=None, host=None):
    """The findings of a :func:`summarise` result under ``bounds`` (merged over ``DEFAULT_BOUNDS``).

    Every GPU gets each check or a ``dmon.not_measured`` saying why not; a run with no GPU sample at all is
    one ``dmon.not_measured`` of component ``dmon``. Bad bounds are a ProfileError.
    """
    bounds = merged_bounds(bounds)
    out = _Out(host)
    if not isinstance(summary, dict):
        raise ValueError('a dmon summary must be a mapping, got %s' % type(summary).__name__)
    if summary.get('load_sm_pct', bounds['load_sm_pct']) != bounds['load_sm_pct']:
        raise ValueError('the summary counted samples under load at sm >= %s %%, the bounds say %s %%: summarise with '
                         'load_sm_pct=bounds["load_sm_pct"]' % (summary['load_sm_pct'], bounds['load_sm_pct']))
    gpus = summary.get('gpus') or {}
    top = summary.get(SECTION_ERROR_KEY)
    if isinstance(top, dict):
        out.add('dmon.unparsable', 'dmon', top.get('excerpt'), 'a sample line of a GPU', 'dmon: %s' % top.get('error'))
    if not any(gpu.get('samples') for gpu in gpus.values()):
        out.not_measured('dmon', 'dmon.*', 'GPU samples', 'dmon printed no sample')
    reference = _reference_clock(summary, bounds) if gpus else (None, None)
    for component in sorted(gpus, key=lambda name: (len(name), name)):
        gpu = gpus[component]
        error = gpu.get(SECTION_ERROR_KEY)
        if isinstance(error, dict):
            out.add('dmon.unparsable', component, error.get('excerpt'), 'a sample line of %s' % component,
                    '%s: %s' % (component, error.get('error')))
        if not gpu.get('samples'):
            out.not_measured(component, 'dmon.*', 'samples', 'no sample of %s could be read' % component)
            continue
        _throttle(out, component, gpu, bounds, reference)
        _temperature(out, component, gpu, bounds)
        _memory_growth(out, component, gpu, bounds)
        _ecc(out, component, gpu, bounds)
    return sorted(out.found, key=_findings.sort_key)


# the per-sample values kept in the report for sparklines, and how a bucket of samples becomes one point: the
# SM clock keeps its lowest value (a dip is what throttling looks like), the others their highest
SPARK_COLUMNS = (('pwr', max), ('sm', max), ('gtemp', max), ('fb', max), ('pclk', min))
SPARK_POINTS = 120


def downsample(values, points=SPARK_POINTS, pick=max):
    """At most ``points`` values: consecutive buckets of ``values``, each reduced by ``pick`` (``None``s skipped; a
    bucket of ``None`` only stays ``None``)."""
    values = list(values)
    if len(values) <= points:
        return values
    out = []
    for i in range(points):
        bucket = [v for v in values[i * len(values) // points:(i + 1) * len(values) // points] if v is not None]
        out.append(pick(bucket) if bucket else None)
    return out


def _sparklines(parsed):
    out = {}
    for gpu in parsed.get('gpus') or []:
        samples = gpu.get('samples') or []
        values = {}
        for name, pick in SPARK_COLUMNS:
            column = [s.get(name) if isinstance(s.get(name), (int, float)) else None for s in samples]
            if any(v is not None for v in column):
                values[name] = downsample(column, pick=pick)
        out['gpu%s' % gpu.get('index')] = values
    return out


def _during(found, workload):
    for finding in found:
        finding['message'] = 'during %s: %s' % (workload, finding['message'])
    return found


def judge_run(dmon, bounds=None, host=None, workload=None, required=False):
    """Judge the ``dmon`` entry of a workload run (``workload_run``'s result: ``{command, interval_s, stdout}`` or
    ``{command, not_measured}``) -> ``(findings, entry)``; ``entry`` is the run's ``dmon`` in the report:
    ``{command, interval_s, samples, gpus: {gpuN: summary + values}, not_judged}`` (docs/metrics.md).

    ``required`` false (sampling is on by default wherever nvidia-smi is): what could not be measured is listed in
    ``not_judged`` and is no finding; true (``xuanwu_dmon_required``): it is a ``dmon.not_measured`` finding.
    Throttling, temperature, memory growth and unreadable output are findings either way. Bad bounds: ProfileError.
    """
    bounds = merged_bounds(bounds)
    workload = workload or 'the workload'
    out = _Out(host)
    if not isinstance(dmon, dict):
        raise ValueError('a dmon run must be a mapping, got %s' % type(dmon).__name__)
    entry = {'command': dmon.get('command')}
    if dmon.get('interval_s') is not None:
        entry['interval_s'] = dmon['interval_s']
    if dmon.get('truncated_bytes'):
        entry['truncated_bytes'] = dmon['truncated_bytes']
    reason = dmon.get('not_measured')
    if reason is None and not isinstance(dmon.get('stdout'), str):
        reason = 'no dmon output came back'
    elif reason is None and not dmon['stdout'].strip():
        reason = 'dmon printed nothing (the workload ended before its first sample)'
    if reason is not None:
        entry['not_measured'] = reason
        if required:
            out.not_measured('dmon', 'dmon.*', 'GPU samples', reason)
        return _during(out.found, workload), entry
    try:
        parsed = parse_dmon(dmon['stdout'])
    except ParseError as err:
        entry['unparsable'] = err.reason
        out.add('dmon.unparsable', 'dmon', err.excerpt or excerpt(dmon['stdout']), 'nvidia-smi dmon output',
                'dmon: %s' % err.reason)
        return _during(out.found, workload), entry
    summary = summarise(parsed, bounds['load_sm_pct'])
    found = findings(summary, bounds, host)
    kept = [f for f in found if required or f['check'] != 'dmon.not_measured']
    not_judged = [f['message'] for f in found if f not in kept]
    sparks = _sparklines(parsed)
    entry.update(samples=summary['samples'], columns=summary['columns'], load_sm_pct=summary['load_sm_pct'],
                 gpus=dict((name, dict(gpu, values=sparks.get(name, {}))) for name, gpu in summary['gpus'].items()))
    if summary['truncated']:
        entry['truncated'] = True
    if not_judged:
        entry['not_judged'] = not_judged
    return _during(kept, workload), entry
