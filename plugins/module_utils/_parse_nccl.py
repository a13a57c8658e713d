# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the text that the nccl-tests binaries (``all_reduce_perf``, ``all_gather_perf``, ...)
print on stdout.

``parse_nccl_tests(text)`` returns::

    suite: "nccl-tests"          # "nccl-tests" or "rccl-tests" (from the version line), None when none was printed
    version: "2.19.6"            # "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809";
                                 # rccl-tests prints its git branch and commit instead: "rccl-tests: Version develop:a7809b3"
    nccl_version: "2.28.9"       # decoded from nccl-library=, else from an "NCCL version 2.28.9+cuda13.0" line,
                                 # else from rccl-tests' "RCCL version : 2.22.3-HEAD:7d8d67c" line (RCCL follows NCCL's numbers)
    rocm_version: "6.4.2.0-120-e7d83f5"   # rccl-tests' "ROCm version : ..." line, else None
    hip_version: "6.4.43484-123eb5128"    # rccl-tests' "HIP version  : ..." line, else None
    collective: all_reduce       # from "# Collective test starting: all_reduce_perf", else None
    config: {nthreads, ngpus, min_bytes, max_bytes, step_factor, step_bytes, warmup_iters, iters,
             agg_iters, validation, graph}     # the "# nThread ..." line; None where not printed
    devices: [{rank, group, pid, host, device, bus_id, name}]
    nranks: 4                    # len(devices), None when no device line was printed
    rows: [{size_bytes, count, type, redop, root,
            out_of_place: {time_us, algbw_gbps, busbw_gbps, wrong, invalid},
            in_place: {...} | None}]          # None when the binary prints only one block
                                 # every row printed, in order: with -N R (run cycles) each size appears R times
    cycles: 3                    # sweeps printed (-N 3; 1 for a plain run, 0 when no row was printed)
    partial_row: {size_bytes, count, type, redop, root} | None   # a size that was started, not finished
    avg_busbw_gbps: 122.457      # "# Avg bus bandwidth : ..." trailer, None when absent
    out_of_bounds: {count: 0, ok: true} | None
    warnings: ["<NCCL WARN line>", ...]
    errors: ["<error line>", ...]  # "Test NCCL failure", "Test CUDA failure", "Test failure", "Test timeout", ...
    transports: ["P2P/direct pointer", ...]   # from NCCL_DEBUG=INFO "Channel ... via X" lines
    network: "Socket" | "IB" | None          # from NCCL_DEBUG=INFO "Using network X"
    complete: true               # the "Avg bus bandwidth" trailer was printed

``#wrong`` is an int, or None where the binary printed ``N/A`` (``-c 0``, or in-place results that
are not checked). A value printed as ``nan``/``inf`` (or a ``#wrong`` that is negative) is None and
its printed text is kept in the block's ``invalid`` ({column: printed}, empty when every value was a
finite number): the checks report it (collectives.invalid_measurement, collectives.wrong_results).
Times are microseconds, bandwidths GB/s (10^9 bytes per second), as printed.
NCCL_DEBUG=INFO/TRACE lines are skipped (except for the version, transport and network they name).
Lines of the launcher (mpirun, srun, ssh) that are none of the above are ignored.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import MAX_INT, ParseError, float_from_text, int_from_text

SOURCE = 'nccl-tests'

_ANSI = re.compile(r'\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]')
_VERSION = re.compile(
    r'^#\s*nccl-tests\s+version\s+v?(?P<version>\d+(?:\.\d+)*)(?:\s*\([^)]*\))?'
    r'(?:\s+nccl-headers=(?P<headers>\d+))?(?:\s+nccl-library=(?P<library>\d+))?')
# rccl-tests (ROCm/rccl-tests src/common.cu) prints these without a leading '#':
# "rccl-tests: Version develop:a7809b3", "RCCL version : 2.22.3-HEAD:7d8d67c", "HIP version  : 6.4.43484-123eb5128",
# "ROCm version : 6.4.2.0-120-e7d83f5" (then "Hostname :" and "Librccl path :", which are not kept).
_RCCL_TESTS_VERSION = re.compile(r'^#?\s*rccl-tests:?\s+Version\s*(?P<version>\S*)', re.I)
_RCCL_INFO = re.compile(r'^(?P<key>RCCL|HIP|ROCm) version\s*:\s*(?P<value>\S+)')
_STARTING = re.compile(r'^#\s*Collective test (?:starting|concluded):\s*(?P<name>\S+)')
_CONFIG_KEYS = (
    ('nthreads', r'nThreads?:?\s+(\d+)'),
    ('ngpus', r'nGpus:?\s+(\d+)'),
    ('min_bytes', r'minBytes:?\s+(\d+)'),
    ('max_bytes', r'maxBytes:?\s+(\d+)'),
    ('warmup_iters', r'warmup\s*iters:?\s+(\d+)'),
    ('iters', r'(?<![A-Za-z])(?<!warmup )(?<!agg )iters:?\s+(\d+)'),
    ('agg_iters', r'agg\s*iters:?\s+(\d+)'),
    ('validation', r'validation:?\s+(\d+)'),
    ('graph', r'graph:?\s+(\d+)'),
)
_STEP = re.compile(r'step:?\s+(\d+)\s*\((factor|bytes)\)')
_DEVICE = re.compile(
    r'^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)'
    r'\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*)$')
_COLUMNS = re.compile(r'^#\s*size\s+count\s+type\s+redop\s+root\s+(?P<rest>.*)$')
_OOB = re.compile(r'^#?\s*Out of bounds values\s*:\s*(?P<count>\d+)\s*(?P<status>OK|FAILED)?', re.I)
_AVG = re.compile(r'^#?\s*Avg bus bandwidth\s*:\s*(?P<bw>\S+)', re.I)
# "host:pid:tid [dev] NCCL INFO ...", "host:pid:tid [dev] file.cc:123 NCCL WARN ..."
_NCCL_LOG = re.compile(r'(?P<log>\S+:\d+:\d+\s+\[\d+\]\s+(?:\S+\s+)?NCCL\s+(?P<level>INFO|WARN|TRACE|ERROR|ABORT)\b.*)$')
_NCCL_VERSION = re.compile(r'NCCL version\s+(?P<version>\d+\.\d+\.\d+)')
_TRANSPORT = re.compile(r'NCCL INFO Channel\s+\S+\s*:.*?\bvia\s+(?P<via>.+?)\s*$')
_NETWORK = re.compile(r'NCCL INFO Using network\s+(?P<net>\S+)')
_ERROR = re.compile(r'Test (?:NCCL|CUDA) failure|Test failure|Test timeout|\bNCCL error\b|^#\s*error:|Invalid number of GPUs', re.I)
# size count type [redop] root values...; older binaries print an empty redop for gather/scatter/alltoall
_ROW = re.compile(r'^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>[A-Za-z][A-Za-z0-9_]*)(?:\s+(?P<redop>[A-Za-z][A-Za-z0-9_]*))?\s+'
                  r'(?P<root>-?\d+)(?P<rest>(?:\s+\S+)*)\s*$')
_ROW_PREFIX = re.compile(r'^\s*\d+\s+\d+\s+[A-Za-z]\w*(?:\s+[A-Za-z]\w*)?\s+-?\d+\s*$')
_TIMESTAMP = re.compile(r'^\d{4}-\d{2}-\d{2}$|^\d{2}:\d{2}:\d{2}$')

# A result block is "time algbw busbw #wrong", optionally followed by "#bitdiff" and the per-iteration
# columns "i_min i_max i_p99 i_cv%" (newer nccl-tests, read from the column header).
_BASE_BLOCK = 4
# a #wrong above this is not a count of elements (no GPU holds 2**64 of them)
MAX_WRONG = 2 ** 64


def _clean(text):
    text = _ANSI.sub('', text)
    return text.replace('\r\n', '\n').replace('\r', '\n')


def _int(token, what, line, low=0):
    return int_from_text(token, SOURCE, what, line, low=low)


def _decode_nccl_code(code):
    """NCCL_VERSION_CODE -> "X.Y.Z" (X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before)."""
    code = _int(code, 'nccl-library code', code)
    if code <= 0:
        return None
    if code >= 20900:
        return '%d.%d.%d' % (code // 10000, (code % 10000) // 100, code % 100)
    return '%d.%d.%d' % (code // 1000, (code % 1000) // 100, code % 100)


def _number(token, what, line):
    """A printed measurement: a finite float, or None for nan/inf (the checks report those)."""
    try:
        value = float(token)
    except ValueError:
        raise ParseError(SOURCE, 'bad %s %r in result row' % (what, token[:40]), line)
    if math.isnan(value) or math.isinf(value):
        return None
    return value


def _wrong(token, line):
    """#wrong: (count, None), (None, None) for N/A, or (None, token) when not a count (nan, inf, -1)."""
    if token.upper() in ('N/A', 'NA', '-'):
        return None, None
    value = _number(token, '#wrong', line)
    if value is None or value < 0 or value > MAX_WRONG:
        return None, token[:20]
    if value != int(value):
        raise ParseError(SOURCE, 'bad #wrong %r in result row' % token[:40], line)
    return int(value), None


def _block_layout(rest):
    """From the column header after "root": the number of tokens of one result block."""
    names = rest.split()
    starts = [i for i, name in enumerate(names) if name in ('time', 'cputime')]
    if len(starts) >= 2:
        return max(_BASE_BLOCK, starts[1] - starts[0])
    if len(starts) == 1:
        width = len(names) - starts[0]
        if 'timestamp' in names:
            width -= 1
        return max(_BASE_BLOCK, width)
    return _BASE_BLOCK


def _parse_block(tokens, line):
    block = {'invalid': {}}
    for key, what, token in (('time_us', 'time', tokens[0]), ('algbw_gbps', 'algbw', tokens[1]), ('busbw_gbps', 'busbw', tokens[2])):
        block[key] = _number(token, what, line)
        if block[key] is None:
            block['invalid'][key] = token[:20]
    block['wrong'], printed = _wrong(tokens[3], line)
    if printed is not None:
        block['invalid']['wrong'] = printed
    return block


def _parse_row(match, block, line):
    rest = match.group('rest').split()
    # trailing "YYYY-MM-DD HH:MM:SS" timestamp (nccl-tests -Z / report_timestamps)
    while rest and _TIMESTAMP.match(rest[-1]):
        rest.pop()
    row = {
        'size_bytes': _int(match.group('size'), 'size', line),
        'count': _int(match.group('count'), 'count', line),
        'type': match.group('type'),
        'redop': match.group('redop'),
        'root': _int(match.group('root'), 'root', line, low=-MAX_INT),
    }
    if not rest:
        return row, 0
    if len(rest) % block == 0 and len(rest) // block in (1, 2):
        width = block
    elif len(rest) % _BASE_BLOCK == 0 and len(rest) // _BASE_BLOCK in (1, 2):
        width = _BASE_BLOCK
    else:
        raise ParseError(SOURCE, 'result row has %d value columns, expected %d or %d' % (len(rest), block, 2 * block), line)
    row['out_of_place'] = _parse_block(rest[:width], line)
    row['in_place'] = _parse_block(rest[width:2 * width], line) if len(rest) >= 2 * width else None
    return row, len(rest) // width


def _config(line):
    config = {}
    for key, pattern in _CONFIG_KEYS:
        found = re.search(pattern, line, re.I)
        config[key] = _int(found.group(1), key, line) if found else None
    step = _STEP.search(line)
    config['step_factor'] = _int(step.group(1), 'step', line) if step and step.group(2) == 'factor' else None
    config['step_bytes'] = _int(step.group(1), 'step', line) if step and step.group(2) == 'bytes' else None
    return config


def _empty_result():
    return {
        'suite': None,
        'version': None,
        'nccl_version': None,
        'rocm_version': None,
        'hip_version': None,
        'collective': None,
        'config': None,
        'devices': [],
        'nranks': None,
        'rows': [],
        'cycles': 0,
        'partial_row': None,
        'avg_busbw_gbps': None,
        'out_of_bounds': None,
        'warnings': [],
        'errors': [],
        'transports': [],
        'network': None,
        'complete': False,
    }


def _log_line(result, log, state):
    level = log.group('level')
    text = log.group('log').strip()
    if level in ('WARN', 'ERROR', 'ABORT'):
        result['warnings'].append(text)
    version = _NCCL_VERSION.search(text)
    if version and not state['info_version']:
        state['info_version'] = version.group('version')
    via = _TRANSPORT.search(text)
    if via and via.group('via') not in state['transports']:
        state['transports'].append(via.group('via'))
    net = _NETWORK.search(text)
    if net:
        result['network'] = net.group('net')


def _comment_line(result, line, state):
    """A line starting with '#': header, device list, columns, trailer. True when recognised."""
    version = _VERSION.match(line)
    if version:
        result['suite'] = 'nccl-tests'
        result['version'] = version.group('version')
        if version.group('library'):
            result['nccl_version'] = _decode_nccl_code(version.group('library'))
        return True
    starting = _STARTING.match(line)
    if starting:
        name = starting.group('name')
        result['collective'] = name[:-5] if name.endswith('_perf') else name
        return True
    if re.match(r'^#\s*nThreads?:?\s+\d+', line):
        result['config'] = _config(line)
        return True
    device = _DEVICE.match(line)
    if device:
        result['devices'].append({
            'rank': _int(device.group('rank'), 'rank', line),
            'group': _int(device.group('group'), 'group', line) if device.group('group') is not None else None,
            'pid': _int(device.group('pid'), 'pid', line),
            'host': device.group('host'),
            'device': _int(device.group('device'), 'device', line),
            'bus_id': device.group('bus').strip(),
            'name': device.group('name').strip() or None,
        })
        return True
    columns = _COLUMNS.match(line)
    if columns:
        state['block'] = _block_layout(columns.group('rest'))
        return True
    return bool(re.match(r'^#\s*Using devices', line))


def _rccl_line(result, line, state):
    """rccl-tests' version lines (printed without '#'). True when recognised."""
    tests = _RCCL_TESTS_VERSION.match(line)
    if tests:
        result['suite'] = 'rccl-tests'
        # a build outside a git checkout prints ":" or ":+" (no branch, no commit): no version
        result['version'] = tests.group('version') if tests.group('version').strip(':+') else None
        return True
    info = _RCCL_INFO.match(line)
    if not info:
        return False
    key, value = info.group('key').lower(), info.group('value')
    if key == 'rccl':
        number = re.match(r'\d+\.\d+\.\d+', value)
        state['rccl_version'] = number.group(0) if number else None
    else:
        result['%s_version' % key] = value[:80]
    return True


def _trailer_line(result, line):
    oob = _OOB.match(line)
    if oob:
        count = _int(oob.group('count'), 'out of bounds count', line)
        result['out_of_bounds'] = {'count': count, 'ok': count == 0 and (oob.group('status') or 'OK').upper() == 'OK'}
        return True
    avg = _AVG.match(line)
    if avg:
        result['avg_busbw_gbps'] = float_from_text(avg.group('bw'), SOURCE, 'average bus bandwidth', line)
        result['complete'] = True
        return True
    return False


def _row_line(result, line, state, last):
    """A result row (or the start of one). True when the line is a row."""
    match = _ROW.match(line)
    if not match:
        if last and re.match(r'^\s*\d+\s+\d+\s+[A-Za-z]', line):
            state['cut'] = True   # the text ends inside the parameters of a row
            return True
        return False
    try:
        row, blocks = _parse_row(match, state['block'], line)
    except ParseError:
        if not last:
            raise
        state['cut'] = True       # the text ends inside a row: keep its parameters only
        row = dict((k, _int(match.group(k), k, line, low=-MAX_INT) if k in ('size', 'count', 'root') else match.group(k))
                   for k in ('size', 'count', 'type', 'redop', 'root'))
        row['size_bytes'] = row.pop('size')
        blocks = 0
    state['row_blocks'].append(blocks)
    if blocks:
        result['rows'].append(row)
        state['pending'] = None
    else:
        state['pending'] = row
    return True


def parse_nccl_tests(text):
    """Parse the stdout of one nccl-tests binary run; see the module docstring for the result."""
    if not isinstance(text, str):
        raise ParseError(SOURCE, 'expected text, got %s' % type(text).__name__, text)
    try:
        return _parse(text)
    except ParseError:
        raise
    except (IndexError, KeyError, ValueError, TypeError, AttributeError, OverflowError) as exc:
        raise ParseError(SOURCE, 'unexpected content (%s)' % exc, text)


def _split_log(line, result, state):
    """Handle an NCCL log line; return what preceded it on the same line (a cut result row), or ''.

    The log line can start right after the root of a cut row ("... sum -1node1:2196:2234 [0] NCCL INFO"):
    of the places the log line could start, the first one that leaves a row prefix (or nothing) wins.
    """
    log = _NCCL_LOG.search(line)
    if not log:
        return None
    chosen = log
    first = line[log.start():].split(None, 1)[0]
    for start in range(log.start(), log.start() + len(first)):
        before = line[:start]
        if before.strip() and not _ROW_PREFIX.match(before):
            continue
        candidate = _NCCL_LOG.match(line, start)
        if candidate:
            chosen = candidate
            break
    _log_line(result, chosen, state)
    return line[:chosen.start()].strip()


def _parse(text):
    result = _empty_result()
    state = {'block': _BASE_BLOCK, 'pending': None, 'row_blocks': [], 'info_version': None,
             'transports': [], 'fragment': None, 'cut': False, 'rccl_version': None}
    recognised = False
    lines = [raw.rstrip() for raw in _clean(text).split('\n')]
    lines = [line for line in lines if line.strip()]
    for index, line in enumerate(lines):
        last = index == len(lines) - 1
        before = _split_log(line, result, state)
        if before is not None:
            if before and re.match(r'^\d+\s+\d+\s', before):
                if _ROW.match(before) and len(_ROW.match(before).group('rest').split()) >= _BASE_BLOCK:
                    recognised = _row_line(result, before, state, False) or recognised
                else:
                    # a result row that the log line cut in two: its values follow on a later line
                    state['fragment'] = before
            continue
        stripped = line.strip()
        if state['fragment'] is not None and not stripped.startswith('#'):
            joined = state['fragment'] + ' ' + stripped
            state['fragment'] = None
            if _ROW.match(joined):
                recognised = _row_line(result, joined, state, last) or recognised
                continue
        if _rccl_line(result, stripped, state):
            recognised = True
            continue
        if re.match(r'^NCCL version\s+\d', stripped):
            state['info_version'] = state['info_version'] or _NCCL_VERSION.search(stripped).group('version')
            continue
        if re.search(r'\bNCCL WARN\b', stripped):
            result['warnings'].append(stripped)
            continue
        if _trailer_line(result, stripped):
            recognised = True
            continue
        if stripped.startswith('#'):
            recognised = _comment_line(result, stripped, state) or recognised
            continue
        if _ERROR.search(stripped):
            result['errors'].append(stripped)
            recognised = True
            continue
        if _row_line(result, line, state, last):
            recognised = True
            continue
        # anything else: launcher noise (mpirun, srun, ssh banners); ignored
    if not recognised and not result['warnings']:
        raise ParseError(SOURCE, 'no nccl-tests header, result row or trailer found', text)
    _finish(result, state)
    return result


def _finish(result, state):
    result['transports'] = sorted(state['transports'])
    if result['nccl_version'] is None:
        result['nccl_version'] = state['info_version'] or state['rccl_version']
    if result['devices']:
        result['nranks'] = len(result['devices'])
    blocks = [b for b in state['row_blocks'] if b]
    if state['pending'] is not None:
        result['partial_row'] = state['pending']
    elif not result['complete'] and len(blocks) >= 2 and blocks[-1] < max(blocks):
        # the run stopped after the out-of-place half of the last size
        last = result['rows'].pop()
        result['partial_row'] = dict((k, last[k]) for k in ('size_bytes', 'count', 'type', 'redop', 'root'))
    # a cycle starts again where the size goes down (sizes can repeat within one: all_gather -b 8 -g 2 prints 0 twice)
    sizes = [row['size_bytes'] for row in result['rows']]
    result['cycles'] = (1 + sum(1 for prev, size in zip(sizes, sizes[1:]) if size < prev)) if sizes else 0
