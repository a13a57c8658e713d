# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parser for the clock event reasons sampled while a workload runs (private to the collection).

The sampling is ``nvidia-smi --query-gpu=index,clocks_event_reasons.active,clocks.sm,power.draw,power.limit,
temperature.gpu --format=csv,noheader,nounits -lms 1000`` (``QUERY_FIELDS``; drivers before R535 call the
bitmask ``clocks_throttle_reasons.active``): one line per GPU and sample, the values separated by ``, ``, the
bitmask in hexadecimal (``0x0000000000000004``), ``[N/A]`` or ``[Not Supported]`` for a value the GPU does not
report. The bits are NVML's ``nvmlClocksEventReason*`` constants (NVML API reference, "NvmlClocksEventReasons":
GpuIdle 0x1, ApplicationsClocksSetting 0x2, SwPowerCap 0x4, HwSlowdown 0x8, SyncBoost 0x10,
SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80, DisplayClockSetting 0x100); the
names are those of ``nvidia-smi -q -x`` (``_parse_nvidia``) and of the profile's ``gpu.clock_event_reasons``.

Only :class:`ParseError` leaves it, for text of which no line is a sample; a line that cannot be read is
kept in ``errors`` (``{line, error}``) and spoils nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError, excerpt, guarded
from ansible_collections.xuanwu.cluster.plugins.module_utils._text import split_lines

SOURCE = 'nvidia-smi --query-gpu (clock event reasons)'
REASONS_FIELD = 'clocks_event_reasons.active'
LEGACY_REASONS_FIELD = 'clocks_throttle_reasons.active'      # drivers before R535
QUERY_FIELDS = ('index', REASONS_FIELD, 'clocks.sm', 'power.draw', 'power.limit', 'temperature.gpu')
# field of the query -> key of a sample
KEYS = {'index': 'index', REASONS_FIELD: 'reasons_mask', LEGACY_REASONS_FIELD: 'reasons_mask', 'clocks.sm': 'sm_clock_mhz',
        'power.draw': 'power_w', 'power.limit': 'power_limit_w', 'temperature.gpu': 'gtemp_c'}
REASON_BITS = (
    (0x1, 'gpu_idle'), (0x2, 'applications_clocks_setting'), (0x4, 'sw_power_cap'), (0x8, 'hw_slowdown'),
    (0x10, 'sync_boost'), (0x20, 'sw_thermal_slowdown'), (0x40, 'hw_thermal_slowdown'), (0x80, 'hw_power_brake_slowdown'),
    (0x100, 'display_clocks_setting'),
)
NOT_AVAILABLE = ('[N/A]', 'N/A', '[Not Supported]', '[Unknown Error]', '')
MAX_GPU_INDEX = 4095
_MASK_RE = re.compile(r'^0x[0-9A-Fa-f]{1,16}$')
_NUMBER_RE = re.compile(r'^[0-9]{1,9}(?:\.[0-9]{1,6})?$')


def reasons_of(mask):
    """The names of the reasons set in ``mask`` (an int); bits NVML has not named are ``unknown_0x...``."""
    names = [name for bit, name in REASON_BITS if mask & bit]
    rest = mask & ~sum(bit for bit, _name in REASON_BITS)
    if rest:
        names.append('unknown_0x%x' % rest)
    return names


def _value(field, token):
    token = token.strip()
    if token in NOT_AVAILABLE:
        return None
    if field in (REASONS_FIELD, LEGACY_REASONS_FIELD):
        if not _MASK_RE.match(token):
            raise ValueError('%s is not a hexadecimal bitmask: %r' % (field, excerpt(token, 40)))
        return int(token, 16)
    if field == 'index':
        if not token.isdigit() or int(token) > MAX_GPU_INDEX:
            raise ValueError('index is not a GPU index: %r' % excerpt(token, 40))
        return int(token)
    if not _NUMBER_RE.match(token):
        raise ValueError('%s is not a number: %r' % (field, excerpt(token, 40)))
    return float(token) if '.' in token else int(token)


def _fields(fields):
    fields = tuple(fields or QUERY_FIELDS)
    if 'index' not in fields:
        raise ValueError('the query has no index field: %s' % ','.join(fields))
    if REASONS_FIELD not in fields and LEGACY_REASONS_FIELD not in fields:
        raise ValueError('the query has no %s (or %s) field: %s' % (REASONS_FIELD, LEGACY_REASONS_FIELD, ','.join(fields)))
    unknown = [f for f in fields if f not in KEYS]
    if unknown:
        raise ValueError('unknown field %s (known: %s)' % (unknown[0], ', '.join(sorted(KEYS))))
    return fields


@guarded(SOURCE)
def parse_clock_events(text, fields=None):
    """Parse the sampling's output (the fields of the query in ``fields``, default ``QUERY_FIELDS``).

    Returns::

        fields: [index, clocks_event_reasons.active, ...]
        samples: 30                       # lines read
        gpus:                             # in order of index
          - index: 0
            samples:
              - {index: 0, reasons_mask: 4, reasons: [sw_power_cap], sm_clock_mhz: 1500, power_w: 690.12,
                 power_limit_w: 700.0, gtemp_c: 45}
        errors: [{line: "...", error: "..."}]    # lines that could not be read

    A header line (``index, clocks_event_reasons.active [bitmask], ...``, the query without ``noheader``) is
    skipped; a value the GPU does not report is ``None``. Raises ParseError when no line is a sample.
    """
    if not isinstance(text, str):
        raise ParseError(SOURCE, 'expected text, got %s' % type(text).__name__)
    try:
        fields = _fields(fields)
    except ValueError as err:
        raise ParseError(SOURCE, str(err))
    gpus, errors, count = {}, [], 0
    for line in split_lines(text, SOURCE):
        stripped = line.strip()
        if not stripped or stripped.lower().startswith('index'):
            continue
        tokens = [t.strip() for t in stripped.split(',')]
        try:
            if len(tokens) != len(fields):
                raise ValueError('%d value(s), the query has %d field(s)' % (len(tokens), len(fields)))
            sample = dict((KEYS[f], _value(f, t)) for f, t in zip(fields, tokens))
            if sample['index'] is None:
                raise ValueError('no GPU index')
        except ValueError as err:
            errors.append({'line': excerpt(stripped, 200), 'error': str(err)})
            continue
        mask = sample['reasons_mask']
        sample['reasons'] = reasons_of(mask) if mask is not None else None
        gpus.setdefault(sample['index'], []).append(sample)
        count += 1
    if not count and errors:
        raise ParseError(SOURCE, 'no line is a sample: %s' % errors[0]['error'], errors[0]['line'])
    if not count and text.strip():
        raise ParseError(SOURCE, 'no sample line', text)
    return {'fields': list(fields), 'samples': count, 'errors': errors,
            'gpus': [{'index': index, 'samples': gpus[index]} for index in sorted(gpus)]}
