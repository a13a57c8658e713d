# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for InfiniBand / RDMA tool output (private to the collection).

* :func:`parse_ibstat` reads ``ibstat`` (infiniband-diags).
* :func:`parse_ib_counters` reads ``grep -H . /sys/class/infiniband/*/ports/*/counters/*
  /sys/class/infiniband/*/ports/*/hw_counters/*``.
* :func:`parse_ib_write_bw` reads the report of ``ib_write_bw`` (perftest), server or client side.

All raise :class:`ParseError` on text that is not what the tool prints and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import (
    SECTION_ERROR_KEY, ParseError, float_from_text, int_from_text, section_error,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._text import split_lines as _lines


_CA_RE = re.compile(r"^CA\s+'([^']+)'\s*$")
_PORT_RE = re.compile(r'^Port\s+([0-9]+)\s*:\s*$')
_KV_RE = re.compile(r'^([A-Za-z][A-Za-z ]*?)\s*:\s*(.*)$')
_RATE_RE = re.compile(r'^([0-9]+(?:\.[0-9]+)?)(?:\s.*)?$')

_CA_KEYS = {
    'ca type': 'ca_type',
    'number of ports': 'number_of_ports',
    'firmware version': 'firmware',
    'hardware version': 'hardware_version',
    'node guid': 'node_guid',
    'system image guid': 'system_image_guid',
}

_PORT_KEYS = {
    'state': 'state',
    'physical state': 'physical_state',
    'rate': 'rate_gbps',
    'base lid': 'base_lid',
    'lmc': 'lmc',
    'sm lid': 'sm_lid',
    'capability mask': 'capability_mask',
    'port guid': 'port_guid',
    'link layer': 'link_layer',
}

_INT_PORT_KEYS = ('base_lid', 'lmc', 'sm_lid')


def _int(value, source, what, text):
    value = value.strip()
    if value.lower().startswith('0x'):
        return int_from_text(value, source, what, text, base=16)
    return int_from_text(value, source, what, text)


def _rate(value, source, text):
    """``400`` -> 400, ``2.5`` -> 2.5, ``400 Gb/sec (4X NDR)`` -> 400."""
    match = _RATE_RE.match(value.strip())
    if not match:
        raise ParseError(source, 'rate is not a number: %r' % value, text)
    number = float_from_text(match.group(1), source, 'rate', text, high=1e6)
    return int(number) if number == int(number) else number


def _new_ca():
    ca = dict((key, None) for key in _CA_KEYS.values())
    ca['ports'] = {}
    return ca


def _new_port():
    return dict((key, None) for key in _PORT_KEYS.values())


def _set_ca_value(ca, key, value, text):
    if key == 'number_of_ports':
        ca[key] = _int(value, 'ibstat', 'Number of ports', text)
    else:
        ca[key] = value or None


def _set_port_value(port, key, value, text):
    if key == 'rate_gbps':
        port[key] = _rate(value, 'ibstat', text)
    elif key in _INT_PORT_KEYS:
        port[key] = _int(value, 'ibstat', key, text)
    else:
        port[key] = value or None


def parse_ibstat(text):
    """Parse ``ibstat`` output.

    Returns ``{ca_name: {ca_type, number_of_ports, firmware, hardware_version, node_guid,
    system_image_guid, ports: {"1": {state, physical_state, rate_gbps, link_layer, base_lid,
    sm_lid, lmc, capability_mask, port_guid}}}}``. A field that ibstat did not print is ``None``.
    ``rate_gbps`` is an int (``400``) or a float for fractional rates (``2.5``).

    Empty output (no HCA) is ``{}``. ``ibwarn:`` lines are ignored. An ``ibpanic:`` line
    (ibstat aborted) raises :class:`ParseError` when no CA was printed before it; when some CAs
    were printed first, those are returned (the probe's exit status records the failure).

    Text before the first CA raises :class:`ParseError`. After it, a line that is not understood
    (a value that is not a number, a field out of place, a CA or port printed twice, any other
    text) spoils only its CA or port: the value is ``None`` and that port (``mlx5_0/1``) or CA
    (``mlx5_0``) gets ``parse_error`` (``_errors.section_error``, with the lines read); the other
    CAs and ports are read as usual.
    """
    lines = _lines(text, 'ibstat')
    cas = {}
    ca = None
    port = None
    panic = None
    where = {}

    def problem(reason, line):
        target, section = (port, '%s/%s' % (where['ca'], where['port'])) if port is not None else (ca, where['ca'])
        if SECTION_ERROR_KEY not in target:
            target[SECTION_ERROR_KEY] = section_error(section, reason, line)

    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.startswith('ibwarn:'):
            continue
        if line.startswith('ibpanic:'):
            panic = line
            break
        match = _CA_RE.match(line)
        if match:
            name = match.group(1)
            port = None
            where['ca'] = name
            if name in cas:
                ca = cas[name]
                problem('CA %r printed twice' % name, line)
                continue
            ca = _new_ca()
            cas[name] = ca
            continue
        if ca is None:
            raise ParseError('ibstat', 'unexpected line before the first CA: %r' % line[:80], text)
        match = _PORT_RE.match(line)
        if match:
            number = str(int_from_text(match.group(1), 'ibstat', 'port number', text, high=255))
            twice = number in ca['ports']
            port = ca['ports'].setdefault(number, _new_port())
            where['port'] = number
            if twice:
                problem('port %s printed twice' % number, line)
            continue
        match = _KV_RE.match(line)
        if not match:
            problem('unexpected line: %r' % line[:80], line)
            continue
        key = match.group(1).strip().lower()
        value = match.group(2).strip()
        try:
            if port is not None and key in _PORT_KEYS:
                _set_port_value(port, _PORT_KEYS[key], value, line)
            elif port is None and key in _CA_KEYS:
                _set_ca_value(ca, _CA_KEYS[key], value, line)
            elif key in _CA_KEYS or key in _PORT_KEYS:
                problem('%r is out of place' % line[:80], line)
        except ParseError as err:
            problem(err.reason, line)
        # other "Key: value" lines (newer infiniband-diags) are ignored
    if panic is not None and not cas:
        raise ParseError('ibstat', 'ibstat failed: %s' % panic[:200], text)
    return cas


_COUNTER_RE = re.compile(
    r'^/sys/class/infiniband/([^/\s]+)/ports/([0-9]+)/(?:hw_)?counters/([^/:\s]+):\s*(.*?)\s*$')
_GREP_MSG_RE = re.compile(r'^grep: .*: (No such file or directory|Permission denied|Invalid argument|'
                          r'Operation not supported|Input/output error|No data available|Is a directory)$')


def parse_ib_counters(text):
    """Parse ``grep -H . /sys/class/infiniband/*/ports/*/{counters,hw_counters}/*``.

    Returns ``{ca: {port: {counter: int}}}``; ``counters`` and ``hw_counters`` share one namespace
    per port (the kernel never uses the same name in both). Counters are raw sysfs values
    (``port_rcv_data``/``port_xmit_data`` count 4-byte words). ``grep:`` error messages for files
    that cannot be read are ignored; so are values that are not integers. Empty output is ``{}``.
    """
    lines = _lines(text, 'ib counters')
    result = {}
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if _GREP_MSG_RE.match(line):
            continue
        match = _COUNTER_RE.match(line)
        if not match:
            raise ParseError('ib counters', 'not a sysfs counter line: %r' % line[:120], text)
        ca_name, port, counter, value = match.groups()
        if not re.match(r'[0-9]+\Z', value.strip()):
            continue
        number = int_from_text(value, 'ib counters', '%s/%s counter %s' % (ca_name, port, counter), text)
        port = str(int_from_text(port, 'ib counters', 'port number', text, high=255))
        result.setdefault(ca_name, {}).setdefault(port, {})[counter] = number
    return result


_BW_HEADER_RE = re.compile(r'^#bytes\s+#iterations\s+BW peak\[(Gb|MB)/sec\]\s+BW average\[(Gb|MB)/sec\]\s+MsgRate\[Mpps\]')
_BW_ROW_RE = re.compile(r'^([0-9]+)\s+([0-9]+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$')
_BW_INFO_RE = re.compile(r'([A-Za-z][A-Za-z .*/]*?)\s*:\s*(\S[^\t]*?)\s*(?=\t|$)')
_BW_INFO_KEYS = {'device': 'device', 'link type': 'link_type', 'transport type': 'transport_type',
                 'connection type': 'connection_type', 'number of qps': 'qps', 'mtu': 'mtu'}
# perftest reports MB/sec in 2^20 bytes per second, Gb/sec (--report_gbits) in 10^9 bits per second
_MB_TO_GBITS = 1048576 * 8 / 1e9


def parse_ib_write_bw(text):
    """Parse the report of ``ib_write_bw`` (perftest; server or client, one size or ``-a``).

    Returns ``{test, device, link_type, transport_type, connection_type, qps, mtu, unit: 'Gb/sec' |
    'MB/sec', rows: [{size_bytes, iterations, bw_peak, bw_average, msg_rate_mpps}],
    bw_average_gbps}``. ``bw_peak``/``bw_average`` are in ``unit``; ``bw_average_gbps`` is the average
    of the largest size in Gb/s (MB/sec is 2^20 bytes/s in perftest). A field not printed is None.

    Text without the result table (the run failed before measuring: "Couldn't connect", "Unable to
    open file", ...) or with a row that is not numbers raises :class:`ParseError` that quotes it.
    """
    lines = _lines(text, 'ib_write_bw')
    result = dict((key, None) for key in _BW_INFO_KEYS.values())
    result.update(test=None, unit=None, rows=[], bw_average_gbps=None)
    in_table = False
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.endswith('BW Test') and result['test'] is None:
            result['test'] = line
            continue
        match = _BW_HEADER_RE.match(line)
        if match:
            result['unit'] = match.group(2) + '/sec'
            in_table = True
            continue
        if in_table:
            if line.startswith('---'):
                in_table = False
                continue
            match = _BW_ROW_RE.match(line)
            if not match:
                raise ParseError('ib_write_bw', 'not a result row: %r' % line[:120], text)
            size, iterations, peak, average, rate = match.groups()
            result['rows'].append({
                'size_bytes': int_from_text(size, 'ib_write_bw', '#bytes', text),
                'iterations': int_from_text(iterations, 'ib_write_bw', '#iterations', text),
                'bw_peak': float_from_text(peak, 'ib_write_bw', 'BW peak', text, low=0),
                'bw_average': float_from_text(average, 'ib_write_bw', 'BW average', text, low=0),
                'msg_rate_mpps': float_from_text(rate, 'ib_write_bw', 'MsgRate', text, low=0),
            })
            continue
        for key, value in _BW_INFO_RE.findall(line):
            name = _BW_INFO_KEYS.get(key.strip().lower())
            if name and result[name] is None:
                result[name] = int_from_text(value, 'ib_write_bw', key, text) if name == 'qps' else value
    if not result['rows']:
        raise ParseError('ib_write_bw', 'no result table (#bytes #iterations BW peak ...): the run did not measure', text)
    largest = max(result['rows'], key=lambda row: row['size_bytes'])
    factor = 1.0 if result['unit'] == 'Gb/sec' else _MB_TO_GBITS
    result['bw_average_gbps'] = round(largest['bw_average'] * factor, 2)
    return result
