# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Collective-communication checks: nccl-tests (or the torch all-reduce benchmark) results against a
bandwidth curve from the hardware profile.

Pure functions, no I/O.

A *curve* is a list of points ``{min_bytes: int, busbw_gbps_min: float}``. Each point is a floor that
holds from its ``min_bytes`` upwards: a result row of size S is held to the **highest**
``busbw_gbps_min`` among the points whose ``min_bytes <= S``. For the usual rising curve this is the
point with the largest ``min_bytes <= S`` ("from this size up to the next point"); for a curve that
is not monotonic a larger message is never allowed less bandwidth than a smaller one was promised.
Rows smaller than the smallest ``min_bytes`` are not checked (latency-bound sizes). Only the
out-of-place busbw is compared (the in-place half is not printed by every binary).

Findings have the shape used across the collection::

    {host, check, component, severity, measured, expected, message, remediation}

``severity`` is ``fail`` (the node is not fit) or ``warn`` (the result cannot be trusted as a pass).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError


GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10

DEFAULT_POINTS = (1 << 30, 128 << 20, 16 << 20)

# Bus-bandwidth correction factors of nccl-tests (doc/PERFORMANCE.md and src/*.cu getBw):
# busbw = algbw * factor(n), algbw = size / time.
_FACTORS = {
    'all_reduce': lambda n: 2.0 * (n - 1) / n,
    'reduce_scatter': lambda n: (n - 1.0) / n,
    'all_gather': lambda n: (n - 1.0) / n,
    'alltoall': lambda n: (n - 1.0) / n,
    'gather': lambda n: (n - 1.0) / n,
    'scatter': lambda n: (n - 1.0) / n,
    'hypercube': lambda n: (n - 1.0) / n,
    'broadcast': lambda n: 1.0,
    'reduce': lambda n: 1.0,
    'sendrecv': lambda n: 1.0,
}
_ALIASES = {
    'allreduce': 'all_reduce', 'all-reduce': 'all_reduce',
    'reducescatter': 'reduce_scatter', 'reduce-scatter': 'reduce_scatter',
    'allgather': 'all_gather', 'all-gather': 'all_gather',
    'all_to_all': 'alltoall', 'all-to-all': 'alltoall',
    'send_recv': 'sendrecv', 'send-recv': 'sendrecv',
}

REMEDIATION_BUSBW = (
    'Check the GPU interconnect and network path that NCCL uses: nvidia-smi topo -m and nvidia-smi nvlink --status '
    '(every NVLink up at full speed), ibstat / ibv_devinfo (InfiniBand or RoCE ports Active/LinkUp at the expected rate), '
    'PCIe link width and generation (nvidia-smi -q), and the PCIe ACS / IOMMU settings that force peer traffic through the '
    'root complex. Make sure NCCL picks the right devices (NCCL_IB_HCA, NCCL_SOCKET_IFNAME, NCCL_NET_GDR_LEVEL) and rerun '
    'with NCCL_DEBUG=INFO to see the chosen transport ("via P2P/...", "via NET/IB/...", "Using network Socket" means no '
    'RDMA). Also check GPU clocks and throttling (nvidia-smi -q -d PERFORMANCE) and that no other job shares the GPUs.')
REMEDIATION_WRONG = (
    'Wrong results mean data corruption on the path of the collective: a faulty GPU, GPU memory (check ECC errors and '
    'remapped rows in nvidia-smi -q -d ECC,ROW_REMAPPER and Xid events in the kernel log) or a faulty link. Run the '
    'test per GPU pair and per single GPU (nccl-tests -g 1/-g 2 on each device, a GPU memory test) to isolate the device, '
    'then drain the node and replace the part.')
REMEDIATION_INCOMPLETE = (
    'The benchmark did not finish: it hung, was killed by the time limit, or crashed before the summary. Look at the '
    'kernel log (Xid events), rerun with NCCL_DEBUG=INFO and a smaller size range to see where it stops, check that '
    'every GPU and NIC it uses is healthy, and that the time limit fits the sizes tested.')
REMEDIATION_NCCL_ERROR = (
    'NCCL reported warnings or the test reported an error. Read the quoted lines: "Cuda failure \'out of memory\'" means '
    'the GPU memory is taken (other processes, MIG, too large -e size); "unhandled system error" or NET/IB messages point '
    'to the network (link state, NCCL_IB_HCA, NCCL_SOCKET_IFNAME, firewall); rerun with NCCL_DEBUG=INFO for the cause.')
REMEDIATION_OOB = (
    'nccl-tests counted result blocks with wrong values (out of bounds). Treat as data corruption: check ECC, remapped rows '
    'and Xid events, and run the test per GPU to find the faulty device.')
REMEDIATION_INVALID = (
    'A time or bandwidth of nan, inf, zero or below zero is not a measurement: the timer, the benchmark build or the '
    'GPU misbehaved (a kernel that did not run, a clock that did not advance), so the size proves nothing. Rerun the '
    'benchmark with NCCL_DEBUG=INFO, check the kernel log for Xid events and the GPU state (nvidia-smi -q), and rebuild '
    'nccl-tests against the installed CUDA and NCCL if it repeats.')
REMEDIATION_COVERAGE = (
    'Run the benchmark up to the largest size the profile checks (nccl-tests -e, allreduce_bench --max-bytes).')


_e = _findings.entry
# The checks of evaluate_curve (the catalogue of every check: plugins/module_utils/_catalogue.py).
CHECKS = {
    'collectives.busbw_low': _e('Bus bandwidth below the profile curve', 'fail', REMEDIATION_BUSBW),
    'collectives.wrong_results': _e('Collective returned wrong results', 'fail', REMEDIATION_WRONG),
    'collectives.out_of_bounds': _e('Out-of-bounds result blocks', 'fail', REMEDIATION_OOB),
    'collectives.nccl_error': _e('NCCL errors, or NCCL warnings in a run that did not finish', 'fail',
                                 REMEDIATION_NCCL_ERROR),
    'collectives.nccl_warn': _e('NCCL warnings in a run that finished', 'warn', REMEDIATION_NCCL_ERROR),
    'collectives.incomplete': _e('Benchmark output incomplete', 'fail', REMEDIATION_INCOMPLETE),
    'collectives.invalid_measurement': _e(
        'Benchmark printed a time or bandwidth that is not a measurement (nan, inf, zero time)', 'fail',
        REMEDIATION_INVALID),
    'collectives.coverage': _e('Benchmark stopped below a curve point', 'warn', REMEDIATION_COVERAGE),
    'collectives.implausible': _e(
        'Bus bandwidth above what the links of the profile can carry', 'fail',
        'No link of the node carries this: the figure is not a measurement of the links. Check the rank count and the '
        'GPUs the job used (nccl-tests -g, CUDA_VISIBLE_DEVICES: ranks on one GPU copy within its memory), that the '
        'binary and NCCL are the ones expected, and the gpu.nvlink, gpu.pcie and infiniband sections of the profile; '
        'then re-run the benchmark.'),
}

# GB/s per lane and direction of each PCIe generation, after line encoding (8b/10b for 1-2, 128b/130b for 3-5;
# 6 and 7 as PCI-SIG states them, 64 and 128 GT/s PAM4 with FLIT)
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563, 7: 15.125}
# The margin of the plausibility bound over the links' own rate: NVLink SHARP (NVLS) reduces inside the NVSwitch,
# so all_reduce's busbw can pass the rate of a GPU's links; a healthy node is never near 1.5 x its links.
PLAUSIBLE_MARGIN = 1.5
# lanes of an AMD xGMI link (MI300X: x16 links, 64 GB/s per direction at 32 Gb/s; AMD ROCm blog "MI300X RCCL xGMI")
XGMI_LANES = 16


def link_bound(profile):
    """``(GB/s, how)``: the most a GPU's links in ``profile`` can carry per direction, with ``PLAUSIBLE_MARGIN``: the
    largest of NVLink (links_per_gpu x speed_gbps_min), xGMI (a link to each other GPU, x16 at bit_rate_gbps_min),
    PCIe (a generation above gen_min, so a faster slot than the floor stays plausible, x width, at least x16) and the
    HCAs (ports_min x rate_gbps_min / 8). ``(None, why)``
    when the profile names no link, or a GPU interconnect without its rate (never judged on a guess)."""
    profile = profile or {}
    gpu = profile.get('gpu') or {}
    parts = []
    nvlink = gpu.get('nvlink') or {}
    if nvlink.get('links_per_gpu') and not nvlink.get('speed_gbps_min'):
        return None, 'the profile has NVLinks without their speed (gpu.nvlink.speed_gbps_min)'
    if nvlink.get('links_per_gpu'):
        parts.append((nvlink['links_per_gpu'] * float(nvlink['speed_gbps_min']),
                      'NVLink %d x %s GB/s' % (nvlink['links_per_gpu'], nvlink['speed_gbps_min'])))
    xgmi = gpu.get('xgmi') or {}
    if xgmi:
        # a fully connected mesh: a link to each of the other GPUs, XGMI_LANES lanes at bit_rate_gbps_min each
        if not xgmi.get('bit_rate_gbps_min') or not gpu.get('count'):
            return None, 'the profile has xGMI links without their bit rate (gpu.xgmi.bit_rate_gbps_min)'
        links = max(gpu['count'] - 1, 1)
        parts.append((links * float(xgmi['bit_rate_gbps_min']) * XGMI_LANES / 8.0,
                      'xGMI %d link(s) x %d lanes x %s Gb/s' % (links, XGMI_LANES, xgmi['bit_rate_gbps_min'])))
    pcie = gpu.get('pcie') or {}
    if pcie.get('gen_min') in PCIE_LANE_GBPS:
        gen = min(pcie['gen_min'] + 1, max(PCIE_LANE_GBPS))
        width = max(pcie.get('width_min') or 16, 16)
        parts.append((PCIE_LANE_GBPS[gen] * width, 'PCIe gen%d x%d (a generation above gen_min %d)' % (gen, width, pcie['gen_min'])))
    ib = profile.get('infiniband') or {}
    if ib.get('ports_min') and ib.get('rate_gbps_min'):
        parts.append((ib['ports_min'] * float(ib['rate_gbps_min']) / 8.0,
                      '%d HCA port(s) x %s Gb/s' % (ib['ports_min'], ib['rate_gbps_min'])))
    if not parts:
        return None, 'the profile names no link (gpu.nvlink, gpu.pcie, infiniband)'
    rate, how = max(parts)
    return rate * PLAUSIBLE_MARGIN, '%s = %.1f GB/s, x %s' % (how, rate, PLAUSIBLE_MARGIN)


def implausible_findings(parsed, profile, host, component):
    """``collectives.implausible``: one finding listing every size whose busbw the profile's links cannot carry."""
    bound, how = link_bound(profile)
    if bound is None:
        return []
    over = [(size, busbw) for size, busbw, _row in _rows(parsed) if busbw is not None and busbw > bound]
    if not over:
        return []
    size, busbw = max(over, key=lambda pair: (pair[1], pair[0]))
    sizes = ', '.join(human_bytes(s) for s, _b in over)
    return [_finding(host, 'collectives.implausible', component,
                     'busbw %.1f GB/s at %s (%d size(s) above the bound: %s)' % (busbw, human_bytes(size), len(over), sizes),
                     'busbw <= %.1f GB/s (%s)' % (bound, how),
                     '%s reported %.1f GB/s at %s, more than the links of the profile can carry (%.1f GB/s): not a measurement '
                     'of the links' % (component, busbw, human_bytes(size), bound))]


def human_bytes(size):
    """1073741824 -> '1 GiB', 134217728 -> '128 MiB', 1000 -> '1000 B'."""
    size = int(size)
    for unit, name in ((GIB, 'GiB'), (MIB, 'MiB'), (KIB, 'KiB')):
        if size >= unit and size % unit == 0:
            return '%d %s' % (size // unit, name)
    return '%d B' % size


def normalise_collective(name):
    """'all_reduce_perf' / 'allreduce' / 'all-reduce' -> 'all_reduce'; unknown names are returned lowercased."""
    if name is None:
        return None
    key = str(name).strip().lower()
    if key.endswith('_perf'):
        key = key[:-5]
    return _ALIASES.get(key, key)


def busbw_factor(collective, nranks):
    """The nccl-tests bus-bandwidth factor for ``collective`` with ``nranks`` ranks."""
    key = normalise_collective(collective)
    if key not in _FACTORS:
        raise ValueError('unknown collective %r (known: %s)' % (collective, ', '.join(sorted(_FACTORS))))
    nranks = int(nranks)
    if nranks < 1:
        raise ValueError('nranks must be >= 1, got %r' % (nranks,))
    return _FACTORS[key](nranks)


def algbw_from_time(size_bytes, time_us):
    """Algorithm bandwidth in GB/s (10^9 bytes/s), as nccl-tests prints it: size / time."""
    if time_us is None or time_us <= 0:
        return None
    return float(size_bytes) / (float(time_us) * 1e-6) / 1e9


def busbw_from_time(size_bytes, time_us, collective, nranks):
    """Bus bandwidth in GB/s from a message size (bytes, as nccl-tests' size column), the time per
    operation (microseconds), the collective and the number of ranks; None when time is not positive."""
    algbw = algbw_from_time(size_bytes, time_us)
    if algbw is None:
        return None
    return algbw * busbw_factor(collective, nranks)


def _validate_curve(curve):
    points = []
    for i, point in enumerate(curve or []):
        try:
            min_bytes = int(point['min_bytes'])
            floor = float(point['busbw_gbps_min'])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise ProfileError('curve', 'curve[%d]' % i, 'needs integer min_bytes and numeric busbw_gbps_min, got %r' % (point,))
        if not math.isfinite(floor):
            raise ProfileError('curve', 'curve[%d]' % i, 'busbw_gbps_min must be a finite number, got %r' % (point,))
        if min_bytes < 0 or floor < 0:
            raise ProfileError('curve', 'curve[%d]' % i, 'min_bytes and busbw_gbps_min must not be negative, got %r' % (point,))
        points.append({'min_bytes': min_bytes, 'busbw_gbps_min': floor})
    return sorted(points, key=lambda p: p['min_bytes'])


def threshold_for(curve, size_bytes):
    """The curve point that governs a row of ``size_bytes``: the highest floor among the points with
    ``min_bytes <= size_bytes`` (the smaller ``min_bytes`` on ties), or None when no point applies."""
    best = None
    for point in _validate_curve(curve):
        if point['min_bytes'] <= size_bytes and (best is None or point['busbw_gbps_min'] > best['busbw_gbps_min']):
            best = point
    return best


def _finding(host, check, component, measured, expected, message):
    return _findings.make(CHECKS, host, check, component, measured, expected, message)


def _rows(parsed):
    """[(size, busbw, first row of that size)] in size order, one entry per size. A run with several cycles
    (nccl-tests -N R prints every size R times) is judged on the median busbw of each size over its cycles."""
    sizes = {}
    for row in parsed.get('rows') or []:
        block = row.get('out_of_place') or row.get('in_place') or {}
        entry = sizes.setdefault(int(row['size_bytes']), ([], row))
        if block.get('busbw_gbps') is not None:
            entry[0].append(float(block['busbw_gbps']))
    return [(size, _median(values) if values else None, row) for size, (values, row) in sorted(sizes.items())]


def busbw_by_size(parsed):
    """{size_bytes: busbw} as the checks judge it: the median over a run's cycles of each size."""
    return dict((size, busbw) for size, busbw, _row in _rows(parsed))


def _curve_findings(parsed, curve, host, component, tolerance):
    findings = []
    points = _validate_curve(curve)
    if not points:
        return findings
    slack = 1.0 - float(tolerance or 0.0)
    below = {}   # min_bytes of the governing point -> [(busbw, size)] of the rows under its floor
    checked = set()
    for size, busbw, _row in _rows(parsed):
        point = threshold_for(points, size)
        if point is None or busbw is None:
            continue
        checked.add(point['min_bytes'])
        if busbw < point['busbw_gbps_min'] * slack:
            below.setdefault(point['min_bytes'], []).append((busbw, size))
    for key in sorted(below, reverse=True):
        nominal = [p['busbw_gbps_min'] for p in points if p['min_bytes'] == key][0]
        floor = nominal * slack
        busbw, size = min(below[key])
        sizes = ', '.join(human_bytes(s) for _b, s in sorted(below[key], key=lambda item: item[1]))
        message = ('%s bus bandwidth %.2f GB/s at %s is below the %.2f GB/s expected for messages of %s and up '
                   '(%d size(s) below: %s)' % (component, busbw, human_bytes(size), floor, human_bytes(key), len(below[key]), sizes))
        if (parsed.get('cycles') or 1) > 1:
            message += '; each size judged on the median of its %d cycles' % parsed['cycles']
        if tolerance:
            message += '; profile floor %.2f GB/s with %.0f %% tolerance' % (nominal, float(tolerance) * 100)
        findings.append(_finding(host, 'collectives.busbw_low', component,
                                 round(busbw, 2), round(floor, 2), message))
    largest = max(size for size, _b, _r in _rows(parsed)) if parsed.get('rows') else None
    unchecked = [p['min_bytes'] for p in points if p['min_bytes'] not in checked and (largest is None or p['min_bytes'] > largest)]
    if parsed.get('complete', True) and unchecked:
        findings.append(_finding(
            host, 'collectives.coverage', component,
            human_bytes(largest) if largest is not None else 'no result rows',
            '>= %s' % human_bytes(max(unchecked)),
            '%s ran up to %s only: the profile floors for %s were not checked'
            % (component, human_bytes(largest) if largest is not None else 'no size',
               ', '.join(human_bytes(s) + ' and up' for s in sorted(unchecked)))))
    return findings


def _halves(parsed):
    """(size, 'out-of-place' / 'in-place', block) for every result block of every row."""
    for row in parsed.get('rows') or []:
        for half in ('out_of_place', 'in_place'):
            if row.get(half):
                yield int(row['size_bytes']), half.replace('_', '-'), row[half]


def _wrong_findings(parsed, host, component):
    wrong_rows = []
    for size, half, block in _halves(parsed):
        printed = (block.get('invalid') or {}).get('wrong')
        if block.get('wrong') or printed is not None:
            wrong_rows.append((size, half, block.get('wrong') or 0, printed))
    if not wrong_rows:
        return []
    total = sum(w for _s, _h, w, _p in wrong_rows)
    unreadable = sum(1 for _s, _h, _w, p in wrong_rows if p is not None)
    measured = total if not unreadable else '%d wrong element(s), %d #wrong value(s) not a count' % (total, unreadable)
    return [_finding(
        host, 'collectives.wrong_results', component, measured, 0,
        '%s returned %d wrong element(s)%s: %s' % (
            component, total, ' and %d #wrong value(s) that are not a count' % unreadable if unreadable else '',
            ', '.join('%s %s: %s' % (human_bytes(s), h, w if p is None else '%s (not a count)' % p)
                      for s, h, w, p in wrong_rows)))]


_MEASURES = (('time_us', 'time'), ('algbw_gbps', 'algbw'), ('busbw_gbps', 'busbw'))


def _invalid_findings(parsed, host, component):
    """collectives.invalid_measurement: a time or bandwidth printed as nan/inf, below zero, or a zero time."""
    bad = []
    for size, half, block in _halves(parsed):
        printed = block.get('invalid') or {}
        for key, label in _MEASURES:
            value = block.get(key)
            if key in printed:
                bad.append('%s %s %s %s' % (human_bytes(size), half, label, printed[key]))
            elif value is not None and (not math.isfinite(value) or value < 0 or (key == 'time_us' and value == 0 and size > 0)):
                bad.append('%s %s %s %s' % (human_bytes(size), half, label, value))
    if not bad:
        return []
    shown = bad[:10]
    return [_finding(
        host, 'collectives.invalid_measurement', component, shown,
        'a finite, positive time and a finite bandwidth for every size',
        '%s printed %d value(s) that are not a measurement: %s%s'
        % (component, len(bad), ', '.join(shown), ' (and %d more)' % (len(bad) - len(shown)) if len(bad) > len(shown) else ''))]


def evaluate_curve(parsed, curve, host, collective, tolerance=None):
    """Check one parsed nccl-tests run (``_parse_nccl.parse_nccl_tests``) or an allreduce_bench result
    (see ``rows_from_bench``) against ``curve``; return a list of findings (empty when fit).

    ``tolerance`` (a fraction, e.g. 0.05) lowers every floor by that share, for profiles that keep the
    nominal numbers but accept noise. Checks: collectives.busbw_low (one finding per curve point that
    some row misses: the worst row), collectives.wrong_results (also a #wrong printed as nan or below
    zero), collectives.invalid_measurement (a time or bandwidth that is nan, inf or below zero, or a zero
    time for a size above zero), collectives.out_of_bounds,
    collectives.nccl_error (an error line, or NCCL warnings in a run that did not finish),
    collectives.nccl_warn (warn: NCCL warnings in a run that finished), collectives.incomplete,
    collectives.coverage (warn: the run stopped below a curve point).
    """
    if tolerance is not None:
        tolerance = float(tolerance)
        if not 0.0 <= tolerance < 1.0:
            raise ValueError('tolerance must be a fraction in [0, 1), got %r' % (tolerance,))
    name = normalise_collective(collective or parsed.get('collective')) or 'collective'
    component = '%s_perf' % name
    findings = []

    findings.extend(_wrong_findings(parsed, host, component))
    findings.extend(_invalid_findings(parsed, host, component))

    oob = parsed.get('out_of_bounds')
    if oob and not oob.get('ok', True):
        findings.append(_finding(
            host, 'collectives.out_of_bounds', component, oob.get('count'), 0,
            '%s reported %s out-of-bounds result block(s) (Out of bounds values: FAILED)' % (component, oob.get('count'))))

    quoted = list(parsed.get('warnings') or []) + list(parsed.get('errors') or [])
    if quoted:
        # NCCL WARN lines in a run that failed (an error line, or no summary) explain the failure: fail;
        # in a run that finished they are a warning only.
        failed = bool(parsed.get('errors')) or not parsed.get('complete', False)
        shown = quoted[:10]
        more = len(quoted) - len(shown)
        findings.append(_finding(
            host, 'collectives.nccl_error' if failed else 'collectives.nccl_warn', component, shown, 'no NCCL WARN or test error lines',
            '%s printed %d NCCL warning(s) and %d error line(s)%s: %s%s'
            % (component, len(parsed.get('warnings') or []), len(parsed.get('errors') or []),
               '' if failed else ' in a run that finished',
               ' | '.join(shown), ' (and %d more)' % more if more > 0 else '')))

    if not parsed.get('complete', False):
        rows = parsed.get('rows') or []
        partial = parsed.get('partial_row')
        if partial:
            where = 'while measuring %s' % human_bytes(partial['size_bytes'])
        elif rows:
            where = 'after %s (the last size reported)' % human_bytes(rows[-1]['size_bytes'])
        else:
            where = 'before reporting any size'
        findings.append(_finding(
            host, 'collectives.incomplete', component, 'stopped %s' % where,
            'the run reaches its "Avg bus bandwidth" summary',
            '%s did not finish: it stopped %s (hung, timed out or crashed)' % (component, where)))

    findings.extend(_curve_findings(parsed, curve, host, component, tolerance))
    return findings


def _bench_value(entry, key, invalid, count=False):
    """One figure of an allreduce_bench size entry: a finite number (an int for ``count``), None where
    absent; anything else (nan, inf, text, a negative count) is None and kept in ``invalid``."""
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        if not count:
            return value
        if 0 <= value <= 2 ** 64 and value == int(value):
            return int(value)
    invalid[key] = str(value)[:20]
    return None


def rows_from_bench(result, collective='all_reduce'):
    """Turn an allreduce_bench.py result ({sizes: [{size_bytes, time_us, algbw_gbps, busbw_gbps, wrong}], ...})
    into the parsed shape that evaluate_curve and derive_curve read (nan/inf figures in ``invalid``)."""
    rows = []
    for entry in result.get('sizes') or []:
        block = {'invalid': {}}
        for key in ('time_us', 'algbw_gbps', 'busbw_gbps'):
            block[key] = _bench_value(entry, key, block['invalid'])
        block['wrong'] = _bench_value(entry, 'wrong', block['invalid'], count=True)
        rows.append({'size_bytes': int(entry['size_bytes']), 'out_of_place': block, 'in_place': None})
    return {
        'collective': normalise_collective(collective),
        'rows': rows,
        'nranks': result.get('world_size'),
        'warnings': [],
        'errors': [] if result.get('ok', True) else [str(result.get('error') or 'benchmark failed')],
        'out_of_bounds': None,
        'partial_row': None,
        'complete': bool(rows) and result.get('ok', True),
    }


def _median(values):
    values = sorted(values)
    mid = len(values) // 2
    if len(values) % 2:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2.0


def derive_curve(parsed_runs, fraction=0.85, points=DEFAULT_POINTS):
    """Build a curve from captured runs of a known-good node, to write profile thresholds.

    For each point P (sizes ascending), take every run's lowest out-of-place busbw over its rows in
    [P, next point) -- the band that point will govern --, the median over runs, times ``fraction``.
    Runs that have no row in a band do not vote for it; a point no run reaches is left out. The
    result is rounded down to 0.1 GB/s and sorted by min_bytes.
    """
    fraction = float(fraction)
    if not 0.0 < fraction <= 1.0:
        raise ValueError('fraction must be in (0, 1], got %r' % (fraction,))
    ordered = sorted(set(int(p) for p in points))
    curve = []
    for i, start in enumerate(ordered):
        end = ordered[i + 1] if i + 1 < len(ordered) else None
        lows = []
        for parsed in parsed_runs:
            band = [b for s, b, _r in _rows(parsed) if b is not None and s >= start and (end is None or s < end)]
            if band:
                lows.append(min(band))
        if lows:
            floor = int(_median(lows) * fraction * 10) / 10.0
            curve.append({'min_bytes': start, 'busbw_gbps_min': floor})
    return curve
