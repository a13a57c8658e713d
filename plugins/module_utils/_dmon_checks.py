# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the GPU samples that ``nvidia-smi dmon`` took during a workload (docs/metrics.md).

:func:`summarise` turns :func:`_parse_dmon.parse_dmon`'s result into a small per-GPU summary (min, median
and max of each figure, the samples under load); :func:`findings` compares a summary with bounds
(``DEFAULT_BOUNDS``; the profile's ``monitoring`` section, validated by ``_profile``, has the same keys and
defaults) and returns findings in the one shape of ``_findings``:

* ``dmon.throttle``: the driver held a GPU's clocks down for a reason the profile classes as a fault
  (``gpu.clock_event_reasons.fail``: HW slowdown, HW thermal slowdown, HW power brake) in at least
  ``clock_event_min_samples`` samples of the clock event reasons taken beside dmon (``_parse_clock_events``);
  ``dmon.throttle_warn`` the same for the warn class (SW thermal slowdown). The SW power cap is how a healthy
  GPU runs at full load and is never a finding. A site that sets ``violation_max_pct`` also fails pviol/tviol
  above it. Where no clock event reasons were sampled (a dmon-only capture), dmon's own ``tviol`` is the evidence of a
  thermal cause: set in ``clock_event_min_samples`` or more samples under load with the SM clock then at least
  ``THERMAL_FALL`` under the reference clock is ``dmon.throttle`` (thermal slowdown), set without such a fall
  ``dmon.throttle_warn``; ``pviol`` (the power limit) is named as the cause of a low clock, never a finding itself;
* ``dmon.sustained_clock``: the median SM clock under load (sm % at or above ``load_sm_pct``) below the
  profile's ``sustained_sm_clock_min_mhz`` (a value measured on healthy GPUs of the SKU at their power limit;
  unset: not judged, and the run says so); a site that sets ``clock_min_fraction`` also fails a lowest clock
  under load below that share of the reference clock (``sm_clock_mhz``, else the highest of the run);
* ``dmon.temperature``: gtemp above ``gtemp_max_c`` or mtemp above ``mtemp_max_c`` (only when set; where the
  profile sets no ``gtemp_max_c``, the maximum operating temperature the GPUs report of themselves, ``device`` of
  :func:`judge_run`);
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
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_clock_events import parse_clock_events
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_dmon import parse_dmon

SUMMARY_COLUMNS = ('pwr', 'sm', 'mem', 'gtemp', 'mtemp', 'pclk', 'mclk', 'fb')
VIOLATION_COLUMNS = ('pviol', 'tviol')
# Without clock event reasons, tviol with the SM clock this share under the reference clock is a thermal slowdown.
THERMAL_FALL = 0.10
ECC_COLUMNS = ('sbecc', 'dbecc')      # ECC errors dmon counted in each interval (-s e)
DEFAULT_BOUNDS = {
    'load_sm_pct': 80,            # a sample is under load when its sm % is at least this
    'min_load_samples': 3,        # fewer samples under load: throttling and memory growth are not measured
    'sustained_sm_clock_min_mhz': None,   # median pclk under load below this fails; None: not judged (no source)
    # NVML reports HW slowdown "also during PState or clock change" (nvmlClocksEventReasonHwSlowdown): a reason
    # seen in fewer samples than this is a transition, not a fault
    'clock_event_min_samples': 2,
    'clock_min_fraction': None,   # opt-in: under load, lowest pclk >= this x the reference clock
    'sm_clock_mhz': None,         # the reference clock of clock_min_fraction; None: the highest pclk of the run
    'violation_max_pct': None,    # opt-in: pviol / tviol above this fail (pviol is 100 at a healthy power cap)
    'gtemp_max_c': None,          # None: the GPU temperature is not checked
    'mtemp_max_c': None,          # None: the memory temperature is not checked
    'fb_growth_max_mb': 1024,     # fb growing steadily under load by more than this is a leak
    'dbecc_max': 0,               # double-bit (uncorrectable) ECC errors during a workload above this fail
    'sbecc_max': None,            # None: single-bit (corrected) ECC errors are counted, not checked
}
# the profile's gpu.clock_event_reasons defaults (_profile): the classes of the reasons sampled under load
DEFAULT_REASON_CLASSES = {'fail': ['hw_slowdown', 'hw_thermal_slowdown', 'hw_power_brake_slowdown'],
                          'warn': ['sw_thermal_slowdown']}
_FRACTIONS = ('clock_min_fraction',)

CHECKS = {
    'dmon.throttle': _findings.entry(
        'GPU clocks held down for a hardware reason under load', _findings.FAIL,
        'the driver slowed {component} for a hardware reason (nvidia-smi -q -d PERFORMANCE lists the clock event '
        'reasons): HW thermal slowdown: check the cooling, fans and inlet temperature; HW power brake or HW slowdown: '
        'check the power supplies and the power cabling of the baseboard (nvidia-smi -q -d POWER); drain the node '
        'until a re-run of the workload shows none',
        kind='gpu<N>', compares='clock event reasons sampled during the workload (nvidia-smi --query-gpu='
        'clocks_event_reasons.active) vs gpu.clock_event_reasons.fail, in at least clock_event_min_samples samples; '
        'pviol and tviol vs violation_max_pct when set'),
    'dmon.throttle_warn': _findings.entry(
        'GPU clocks held down by the software thermal limit under load', _findings.WARN,
        'the driver lowered the clocks of {component} to stay under its software thermal limit: check the airflow '
        'and inlet temperature of the chassis before it becomes a HW thermal slowdown',
        kind='gpu<N>', compares='clock event reasons sampled during the workload vs gpu.clock_event_reasons.warn'),
    'dmon.sustained_clock': _findings.entry(
        'GPU SM clock under load below what the SKU sustains', _findings.FAIL,
        'the SM clock of {component} under full load stayed below what healthy GPUs of this model sustain at their '
        'power limit: read the clock event reasons (nvidia-smi -q -d PERFORMANCE), the power limit and enforced limit '
        '(nvidia-smi -q -d POWER; a lowered limit is a site setting) and the temperatures; then re-run the workload',
        kind='gpu<N>', compares='median pclk under load vs monitoring.sustained_sm_clock_min_mhz; lowest pclk under load '
                                'vs clock_min_fraction x the reference clock when set'),
    'dmon.temperature': _findings.entry(
        'GPU or GPU memory too hot', _findings.FAIL,
        'check the airflow, fans and inlet temperature of {component}\'s chassis and the GPU\'s seating and '
        'heatsink; re-run the workload after the fix',
        kind='gpu<N>', compares="max gtemp vs gtemp_max_c (unset: the GPU's own maximum operating temperature), max mtemp vs mtemp_max_c"),
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


def _steady_growth(values):
    """How framebuffer memory under load grew after the warm-up: ``{from, to, samples, skipped, steady}``, None with
    fewer than 2 values. The warm-up (the first quarter of the samples, at least one) is skipped: a workload that
    allocates at its start and then stays flat is no leak. ``steady``: it ends higher than it starts, still grows
    in the second half of what is left, and falls at most once per ten steps (at least one dip allowed), the
    dips together less than a quarter of the growth: a leak with a small dip is still a leak."""
    if len(values) < 2:
        return None
    skipped = max(1, len(values) // 4) if len(values) >= 3 else 0
    window = values[skipped:]
    growth = window[-1] - window[0]
    steps = list(zip(window, window[1:]))
    dips = [a - b for a, b in steps if b < a]
    steady = (growth > 0 and window[-1] > window[(len(window) - 1) // 2] and len(dips) <= max(1, len(steps) // 10)
              and sum(dips) * 4 < growth)
    return {'from': window[0], 'to': window[-1], 'samples': len(window), 'skipped': skipped, 'steady': steady}


def _load_summary(samples, names, load_sm_pct):
    if 'sm' not in names:
        return None
    loaded = [s for s in samples if s.get('sm') is not None and s['sm'] >= load_sm_pct]
    fb = [s['fb'] for s in loaded if s.get('fb') is not None]
    pclk = _stats(_column(loaded, 'pclk'))
    out = {'sm_pct_min': load_sm_pct, 'samples': len(loaded),
           'pclk_min': pclk['min'] if pclk else None, 'pclk_median': pclk['median'] if pclk else None,
           'fb_first': fb[0] if fb else None, 'fb_last': fb[-1] if fb else None, 'fb_growth': _steady_growth(fb)}
    if 'tviol' in names:
        hot = [s for s in loaded if isinstance(s.get('tviol'), (int, float)) and s['tviol'] > 0]
        held = _stats(_column(hot, 'pclk'))
        out.update(tviol_samples=len(hot), pclk_tviol_median=held['median'] if held else None)
    if 'pviol' in names:
        pviol = _stats(_column(loaded, 'pviol'))
        out['pviol_median'] = pviol['median'] if pviol else None
    return out


def summarise(parsed, load_sm_pct=DEFAULT_BOUNDS['load_sm_pct']):
    """Per-GPU summary of a ``parse_dmon`` result: ``{columns, truncated, samples, gpus: {gpuN: {...}}}``.

    Each GPU: ``index``, ``samples``, ``series`` (column -> ``{min, median, max, n}`` of the columns of
    ``SUMMARY_COLUMNS`` and ``VIOLATION_COLUMNS`` that were printed, ``None`` when every value was ``-``),
    ``fb_first``/``fb_last``, ``load`` (the samples with sm % >= ``load_sm_pct``: their count, min and median
    pclk, first and last fb, how fb grew after the warm-up (``_steady_growth``); ``None`` without an sm column) and, when a line
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


def _loaded(out, component, gpu, bounds):
    """The GPU's load summary when it has enough samples under load, else None (said once, for every check that
    needs them)."""
    load = gpu.get('load')
    if load is None:
        out.not_measured(component, 'dmon.sustained_clock, dmon.memory_growth', 'sm %', 'dmon printed no sm column (-s u)')
        return None
    if load['samples'] < max(1, bounds['min_load_samples']):
        out.not_measured(component, 'dmon.sustained_clock, dmon.memory_growth', 'samples under load',
                         '%d sample(s) with sm >= %s %% < min_load_samples %d' % (
                             load['samples'], _g(bounds['load_sm_pct']), bounds['min_load_samples']))
        return None
    return load


def _violation_cause(load):
    """What dmon's violation counters say held the clock down under load (for a run without clock event reasons):
    thermal (tviol), the power limit (pviol), or None."""
    if load.get('tviol_samples'):
        return "dmon's tviol (thermal violation) was set in %d of %d samples under load" % (
            load['tviol_samples'], load['samples'])
    if load.get('pviol_median'):
        return "dmon's pviol was %s %% (median under load): the power limit held the clock" % _g(load['pviol_median'])
    return None


def _thermal_violation(out, component, load, bounds, reference):
    """Without clock event reasons (not sampled), dmon's tviol as the evidence of a thermal slowdown: set in
    ``clock_event_min_samples`` or more samples under load, with the SM clock then ``THERMAL_FALL`` or more under the
    reference clock: ``dmon.throttle``; set without such a fall: ``dmon.throttle_warn``. pviol is never a finding here:
    a healthy GPU at full load runs at its power limit."""
    count = load.get('tviol_samples')
    if not count or count < max(1, bounds['clock_event_min_samples']):
        return
    held = load.get('pclk_tviol_median')
    clock, source = reference
    measured = 'tviol set in %d of %d samples under load' % (count, load['samples'])
    if held is not None:
        measured += ' (SM clock %s MHz then' % _g(held)
        measured += ', %d %% under %s MHz, %s)' % (round(100.0 * (1 - float(held) / clock)), _g(clock), source) \
            if clock else ')'
    expected = 'no thermal violation under load (dmon tviol; the clock event reasons were not sampled)'
    if held is not None and clock and held <= (1 - THERMAL_FALL) * clock:
        out.add('dmon.throttle', component, measured, expected,
                '%s: thermal slowdown under load: %s' % (component, measured))
    else:
        out.add('dmon.throttle_warn', component, measured, expected,
                '%s: reached its thermal limit under load (the clock held): %s' % (component, measured))


def _sustained_clock(out, component, load, bounds, reference, cause=None):
    floor = bounds['sustained_sm_clock_min_mhz']
    fraction = bounds['clock_min_fraction']
    if floor is None and fraction is None:
        return
    if load['pclk_median'] is None:
        out.not_measured(component, 'dmon.sustained_clock', 'pclk', 'dmon printed no SM clock (-s c)')
        return
    if floor is not None and load['pclk_median'] < floor:
        out.add('dmon.sustained_clock', component,
                'median pclk %s MHz under load (lowest %s MHz)' % (_g(load['pclk_median']), _g(load['pclk_min'])),
                'median pclk >= %s MHz (sustained_sm_clock_min_mhz)' % _g(floor),
                '%s ran at a median SM clock of %s MHz under load, below the %s MHz the profile says healthy GPUs of this '
                'model sustain%s' % (component, _g(load['pclk_median']), _g(floor), '; %s' % cause if cause else ''))
    clock, source = reference
    if fraction is not None and clock is not None and load['pclk_min'] < fraction * clock:
        out.add('dmon.sustained_clock', component,
                'pclk %s MHz under load (median %s MHz)' % (_g(load['pclk_min']), _g(load['pclk_median'])),
                'pclk >= %s MHz (%s x %s MHz, %s)' % (_g(fraction * clock), _g(fraction), _g(clock), source),
                '%s: SM clock under load fell to %s MHz%s' % (component, _g(load['pclk_min']),
                                                              '; %s' % cause if cause else ''))


def _violations(out, component, gpu, bounds):
    """pviol/tviol, judged only where the site asked for it (``violation_max_pct``): pviol is the share of time
    at the power limit, 100 on a healthy GPU under full load."""
    bound = bounds['violation_max_pct']
    if bound is None:
        return
    series = gpu.get('series') or {}
    names = [name for name in VIOLATION_COLUMNS if series.get(name)]
    if not names:
        out.not_measured(component, 'dmon.throttle', 'pviol/tviol', 'dmon printed no violation counters (-s v)')
    causes = ['%s %s' % (name, _g(series[name]['max'])) for name in names if series[name]['max'] > bound]
    if causes:
        out.add('dmon.throttle', component, ', '.join(causes), 'pviol/tviol <= %s (violation_max_pct)' % _g(bound),
                '%s: violation counters under load: %s' % (component, ', '.join(causes)))


def _clock_events(out, parsed, bounds, classes):
    """``dmon.throttle`` / ``dmon.throttle_warn`` from the clock event reasons; the report's per-GPU summary."""
    gpus = {}
    least = max(1, bounds['clock_event_min_samples'])
    for gpu in parsed.get('gpus') or []:
        component = 'gpu%s' % gpu['index']
        samples = gpu['samples']
        counts = {}
        for sample in samples:
            for reason in sample.get('reasons') or []:
                counts[reason] = counts.get(reason, 0) + 1
        clocks = _stats([s.get('sm_clock_mhz') for s in samples])
        gpus[component] = {'samples': len(samples), 'reasons': counts, 'sm_clock_mhz': clocks,
                           'power_w': _stats([s.get('power_w') for s in samples]),
                           'power_limit_w': _stats([s.get('power_limit_w') for s in samples]),
                           'gtemp_c': _stats([s.get('gtemp_c') for s in samples])}
        for check, klass in (('dmon.throttle', 'fail'), ('dmon.throttle_warn', 'warn')):
            seen = [r for r in classes[klass] if counts.get(r, 0) >= least]
            if check == 'dmon.throttle_warn' and any(counts.get(r, 0) >= least for r in classes['fail']):
                seen = []       # said by dmon.throttle, which names every reason
            if not seen:
                continue
            named = sorted((r for r in counts if r in classes['fail'] + classes['warn'] and counts[r] >= least),
                           key=lambda r: (-counts[r], r))
            measured = ', '.join('%s in %d of %d samples' % (r, counts[r], len(samples)) for r in named)
            held = _stats([x.get('sm_clock_mhz') for x in samples if set(x.get('reasons') or []) & set(named)])
            if held:
                measured += ' (SM clock %s MHz then)' % (
                    _g(held['min']) if held['min'] == held['max'] else '%s-%s' % (_g(held['min']), _g(held['max'])))
            out.add(check, component, measured, 'none of %s in %d or more samples' % (', '.join(classes[klass]), least),
                    '%s: the driver held the clocks down during the workload: %s' % (component, measured))
    return gpus


def _temperature(out, component, gpu, bounds, notes=None):
    series = gpu.get('series') or {}
    for name, key, what in (('gtemp', 'gtemp_max_c', 'GPU temperature'), ('mtemp', 'mtemp_max_c', 'memory temperature')):
        if bounds[key] is None:
            continue
        if not series.get(name):
            out.not_measured(component, 'dmon.temperature', name, 'dmon printed no %s (-s p; "-" on GPUs '
                             'without the sensor)' % what)
        elif series[name]['max'] > bounds[key]:
            out.add('dmon.temperature', component, '%s max %s C' % (name, _g(series[name]['max'])),
                    '%s <= %s C%s' % (name, _g(bounds[key]), ' (%s)' % notes[key] if key in (notes or {}) else ''),
                    '%s: %s reached %s C (bound %s C)' % (component, what, _g(series[name]['max']), _g(bounds[key])))


def _memory_growth(out, component, load, bounds):
    if bounds['fb_growth_max_mb'] is None:
        return
    if load['fb_first'] is None:
        out.not_measured(component, 'dmon.memory_growth', 'fb', 'dmon printed no framebuffer memory (-s m)')
        return
    growth = load.get('fb_growth')
    if not growth:
        return
    grew = growth['to'] - growth['from']
    if growth['steady'] and grew > bounds['fb_growth_max_mb']:
        out.add('dmon.memory_growth', component,
                'fb %s -> %s MB (+%s MB) over %d samples under load after the warm-up (%d skipped)' % (
                    _g(growth['from']), _g(growth['to']), _g(grew), growth['samples'], growth['skipped']),
                'growth <= %s MB' % _g(bounds['fb_growth_max_mb']),
                '%s: GPU memory kept growing under load, by %s MB' % (component, _g(grew)))


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


def _classes(classes):
    """The reason classes (``gpu.clock_event_reasons`` of the profile) over the defaults; a bad value is a ProfileError."""
    out = dict(DEFAULT_REASON_CLASSES)
    for key, value in (classes or {}).items():
        if key not in out:
            raise ProfileError('gpu.clock_event_reasons', key, 'unknown key (known: fail, warn)')
        if value is None:
            continue
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ProfileError('gpu.clock_event_reasons', key, 'must be a list of reason names, got %r' % (value,))
        out[key] = list(value)
    return out


def findings(summary, bounds=None, host=None, events=None, classes=None):
    """The findings of a :func:`summarise` result under ``bounds`` (merged over ``DEFAULT_BOUNDS``), and of the clock
    event reasons sampled beside it (``events``: a ``parse_clock_events`` result, None when not sampled) under the
    reason ``classes`` (``{fail, warn}``, default ``DEFAULT_REASON_CLASSES``).

    Every GPU gets each check or a ``dmon.not_measured`` saying why not; a run with no GPU sample at all is
    one ``dmon.not_measured`` of component ``dmon``. Bad bounds are a ProfileError.
    """
    return _judge(summary, bounds, host, events, classes)[0]


def _judge(summary, bounds, host, events=None, classes=None, notes=None):
    bounds = merged_bounds(bounds)
    classes = _classes(classes)
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
        load = _loaded(out, component, gpu, bounds)
        if load is not None:
            # without clock event reasons dmon's violation counters are the evidence of the cause
            _sustained_clock(out, component, load, bounds, reference, _violation_cause(load) if events is None else None)
            _memory_growth(out, component, load, bounds)
            if events is None:
                _thermal_violation(out, component, load, bounds, reference)
        _violations(out, component, gpu, bounds)
        _temperature(out, component, gpu, bounds, notes)
        _ecc(out, component, gpu, bounds)
    reasons = None
    if events is not None:
        for error in events.get('errors') or []:
            out.add('dmon.unparsable', 'clock events', error['line'], 'a sample line of the clock event reasons',
                    'clock event reasons: %s' % error['error'])
        reasons = _clock_events(out, events, bounds, classes)
    return sorted(out.found, key=_findings.sort_key), reasons


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


def _events_of(entry, out):
    """The parsed clock event sampling of a dmon run (``entry``: its ``clock_events``), or None with the reason."""
    if not isinstance(entry, dict):
        return None, 'the clock event reasons were not sampled (workload_run dmon.clock_events)'
    reason = entry.get('not_measured')
    if reason is None and not isinstance(entry.get('stdout'), str):
        reason = 'no clock event output came back'
    elif reason is None and not entry['stdout'].strip():
        reason = 'the clock event sampling printed nothing (the workload ended before its first sample)'
    if reason is not None:
        return None, reason
    try:
        return parse_clock_events(entry['stdout'], entry.get('fields')), None
    except ParseError as err:
        out.add('dmon.unparsable', 'clock events', err.excerpt or excerpt(entry['stdout']),
                'nvidia-smi --query-gpu clock event reasons', 'clock event reasons: %s' % err.reason)
        return None, 'unparsable: %s' % err.reason


# Bounds a GPU reports of itself, used where the profile sets none: the maximum operating temperature the driver
# prints (_parse_nvidia: max_operating_temp_c) for gtemp_max_c.
DEVICE_BOUND_NOTE = {'gtemp_max_c': "the GPU's maximum operating temperature, as its driver reports it; the profile sets no "
                                    "monitoring.gtemp_max_c"}


def judged_without(judge, bounds, unjudged, judged=None):
    """``judge(bounds)`` (a ``judge_run``) with the bounds of ``unjudged`` (``{bound: why}``) switched off, each reason
    added to the entry's ``not_judged``; ``judged`` (the site overrides) applied to the findings."""
    bounds = dict(bounds or {})
    for key in unjudged or {}:
        bounds[key] = None
    found, entry = judge(bounds)
    if unjudged and 'not_measured' not in entry:
        entry['not_judged'] = list(entry.get('not_judged') or []) + [unjudged[k] for k in sorted(unjudged)]
    return (judged(found) if judged else found), entry


def judge_run(dmon, bounds=None, host=None, workload=None, required=False, classes=None, device=None):
    """Judge the ``dmon`` entry of a workload run (``workload_run``'s result: ``{command, interval_s, stdout,
    clock_events}`` or ``{command, not_measured}``) -> ``(findings, entry)``; ``entry`` is the run's ``dmon`` in the
    report: ``{command, interval_s, samples, gpus: {gpuN: summary + values}, clock_events, not_judged}``
    (docs/metrics.md). ``classes``: the profile's ``gpu.clock_event_reasons``.

    ``required`` false (sampling is on by default wherever nvidia-smi is): what could not be measured is listed in
    ``not_judged`` and is no finding; true (``xuanwu_dmon_required``): it is a ``dmon.not_measured`` finding.
    Throttling, temperature, memory growth and unreadable output are findings either way. Bad bounds: ProfileError.

    ``device``: bounds the GPUs report of themselves (``{'gtemp_max_c': 87}``); each applies only where the profile
    sets none, says so in its finding's expected value, and is listed in the entry as ``bounds_from_device``.
    """
    bounds = merged_bounds(bounds)
    from_device = dict((key, value) for key, value in (device or {}).items()
                       if key in DEVICE_BOUND_NOTE and bounds.get(key) is None and isinstance(value, (int, float))
                       and not isinstance(value, bool) and value > 0)
    bounds.update(from_device)
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
    events, events_missing = _events_of(dmon.get('clock_events'), out)
    if events_missing is not None:
        out.not_measured('dmon', 'dmon.throttle, dmon.throttle_warn', 'clock event reasons', events_missing)
    # a bound the GPUs gave says so in the finding's expected value
    found, reasons = _judge(summary, bounds, host, events, classes, dict((k, DEVICE_BOUND_NOTE[k]) for k in from_device))
    found = sorted(out.found + found, key=_findings.sort_key)
    kept = [f for f in found if required or f['check'] != 'dmon.not_measured']
    not_judged = [f['message'] for f in found if f not in kept]
    if bounds['sustained_sm_clock_min_mhz'] is None and bounds['clock_min_fraction'] is None:
        not_judged.append('dmon: dmon.sustained_clock not checked: the profile sets no monitoring.sustained_sm_clock_min_mhz '
                          '(the SM clock healthy GPUs of this model sustain at their power limit)')
    sparks = _sparklines(parsed)
    entry.update(samples=summary['samples'], columns=summary['columns'], load_sm_pct=summary['load_sm_pct'],
                 gpus=dict((name, dict(gpu, values=sparks.get(name, {}))) for name, gpu in summary['gpus'].items()))
    if isinstance(dmon.get('clock_events'), dict):
        clock = {'command': dmon['clock_events'].get('command')}
        if events is not None:
            clock.update(samples=events['samples'], gpus=reasons)
        else:
            clock['not_measured'] = events_missing
        entry['clock_events'] = clock
    if summary['truncated']:
        entry['truncated'] = True
    if from_device:
        entry['bounds_from_device'] = from_device
    if not_judged:
        entry['not_judged'] = not_judged
    return _during(kept, workload), entry
