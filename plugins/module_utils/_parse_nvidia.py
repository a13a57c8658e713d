# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for what the NVIDIA tools print: ``nvidia-smi`` (``--query-gpu``, ``-q -x``, ``topo -m``,
``nvlink --status``), the NVRM Xid lines of the kernel log, and ``nvcc --version``.

All functions are pure: text in, dict/list out. Text that is not what the tool prints raises
``ParseError``; nothing else escapes. The shapes are those of ``gpu`` in docs/facts.md.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re
import xml.etree.ElementTree as ET

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import (
    MAX_INT, guarded, SECTION_ERROR_KEY, ParseError, float_from_text, int_from_text, section_error,
)

# nvidia-smi topo -m connection kinds, best first; NV<n> (n bonded NVLinks) beats all of them.
PCIE_LINK_RANK = ('PIX', 'PXB', 'PHB', 'NODE', 'SYS')


_ANSI = re.compile(r'\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]')

# Values nvidia-smi prints where it has no value (with or without brackets).
_NA_VALUES = frozenset((
    '', 'n/a', 'na', 'not supported', 'unknown error', 'unknown', 'insufficient permissions',
    'gpu is lost', 'requires pro', 'not available', 'not found', 'no permission',
))


def _text(source, text):
    """Return ``text`` as str with ANSI escape sequences removed and CRLF/CR made LF."""
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise ParseError(source, 'expected text, got %s' % type(text).__name__, text)
    text = _ANSI.sub('', text)
    return text.replace('\r\n', '\n').replace('\r', '\n')


_guarded = guarded


# Messages nvidia-smi mixes into its output (stderr merged into stdout) while still printing the GPUs
# it can reach: a GPU that fell off the bus, a corrupted infoROM. They are not rows; they are skipped.
_NOISE = re.compile(r'^\s*(?:Unable to determine the device handle for\b|WARNING:|Warning:)')


def _is_na(value):
    if value is None:
        return True
    value = value.strip()
    if value.startswith('[') and value.endswith(']'):
        value = value[1:-1].strip()
    return value.lower() in _NA_VALUES


# --------------------------------------------------------------------------------------------
# PCI bus ids
# --------------------------------------------------------------------------------------------

_BUS_ID = re.compile(
    r'^(?:PCI:)?(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<dev>[0-9a-fA-F]{1,2})'
    r'(?:\.(?P<fn>[0-7]))?$')


@_guarded('pci bus id')
def normalise_bus_id(bus_id):
    """Return the canonical ``dddd:bb:dd.f`` lower-case form of a PCI address.

    Accepts what nvidia-smi prints (``00000000:00:06.0``, an 8-hex-digit domain), the kernel's form
    (``0000:18:00.0``), the Xid form without function (``0000:18:00`` or ``PCI:0000:18:00``, taken
    as function 0) and no domain (``18:00.0``, domain 0). A domain above 0xffff keeps its digits.
    ``None`` gives ``None``; anything else raises ``ParseError``.
    """
    if bus_id is None:
        return None
    if not isinstance(bus_id, str):
        raise ParseError('pci bus id', 'expected text, got %s' % type(bus_id).__name__, bus_id)
    match = _BUS_ID.match(bus_id.strip())
    if not match:
        raise ParseError('pci bus id', 'not a PCI address: %r' % bus_id[:40], bus_id)
    domain = int(match.group('domain') or '0', 16)
    return '%04x:%02x:%02x.%s' % (domain, int(match.group('bus'), 16), int(match.group('dev'), 16),
                                  match.group('fn') or '0')


# --------------------------------------------------------------------------------------------
# nvidia-smi --query-gpu=... --format=csv
# --------------------------------------------------------------------------------------------

_QUERY_SOURCE = 'nvidia-smi --query-gpu'
_HEADER_TOKEN = re.compile(r'^[a-z][a-z0-9_.]*(?:\s*\[[^\]]*\])?$')
# Field names nvidia-smi accepts for one value; it prints the first (canonical) one as header.
_FIELD_ALIASES = {
    'gpu_name': 'name', 'gpu_uuid': 'uuid', 'gpu_bus_id': 'pci.bus_id',
    'pcie.link.gen.gpucurrent': 'pcie.link.gen.current', 'pcie.link.gen.gpumax': 'pcie.link.gen.max',
    'clocks.max.sm_clock': 'clocks.max.sm', 'clocks.max.gr': 'clocks.max.graphics',
    'ecc.mode.current': 'ecc.mode.current', 'persistence_mode': 'persistence_mode',
}
# fact key -> (csv fields in order of preference, converter)
_QUERY_KEYS = (
    ('index', ('index',), 'int'),
    ('name', ('name',), 'str'),
    ('uuid', ('uuid',), 'str'),
    ('bus_id', ('pci.bus_id',), 'str'),
    ('driver_version', ('driver_version',), 'str'),
    ('memory_total_mib', ('memory.total',), 'int'),
    ('pcie_gen_current', ('pcie.link.gen.current',), 'int'),
    ('pcie_gen_max', ('pcie.link.gen.max',), 'int'),
    ('pcie_width_current', ('pcie.link.width.current',), 'int'),
    ('pcie_width_max', ('pcie.link.width.max',), 'int'),
    ('persistence_mode', ('persistence_mode',), 'bool'),
    ('ecc_mode', ('ecc.mode.current',), 'bool'),
    ('clocks_max_sm_mhz', ('clocks.max.sm',), 'int'),
)
_IDENTITY_FIELDS = ('index', 'pci.bus_id', 'uuid')
_INT_WITH_UNIT = re.compile(r'^([+-]?\d+)(?:\s*(?:MiB|MHz|x|W|%|KB/s))?$')
_TRUE_WORDS = frozenset(('enabled', 'yes', 'on', 'active', 'true'))
_FALSE_WORDS = frozenset(('disabled', 'no', 'off', 'not active', 'false'))


def _field_name(token):
    name = re.sub(r'\s*\[[^\]]*\]\s*$', '', token.strip()).strip().lower()
    return _FIELD_ALIASES.get(name, name)


def _convert(source, kind, value, what, text):
    if _is_na(value):
        return None
    value = value.strip()
    if kind == 'str':
        return value
    if kind == 'int':
        match = _INT_WITH_UNIT.match(value)
        if not match:
            raise ParseError(source, '%s is not a number: %r' % (what, value[:40]), text)
        return int_from_text(match.group(1), source, what, text, low=-MAX_INT)
    low = value.lower()
    if low in _TRUE_WORDS:
        return True
    if low in _FALSE_WORDS:
        return False
    raise ParseError(source, '%s is not a flag: %r' % (what, value[:40]), text)


def _query_row(source, columns, number, row):
    """One csv row -> a device dict; a value or row not understood spoils only this GPU (``parse_error``)."""
    cells = [cell.strip() for cell in row.split(',')]
    device = dict((key, None) for key, _names, _kind in _QUERY_KEYS)
    if len(cells) != len(columns):
        if columns[0] == 'index' and re.match(r'^\d+$', cells[0]):
            device['index'] = int(cells[0]) if len(cells[0]) <= 6 else None
        reason = 'row %d has %d values for %d columns' % (number, len(cells), len(columns))
    else:
        reason = None
        values = dict(zip(columns, cells))
        for key, names, kind in _QUERY_KEYS:
            raw = None
            for name in names:
                if name in values:
                    raw = values[name]
                    break
            try:
                device[key] = _convert(source, kind, raw, key, row)
            except ParseError as err:
                reason = reason or err.reason
    if reason:
        section = 'gpu%s' % device['index'] if device['index'] is not None else 'row %d' % number
        device[SECTION_ERROR_KEY] = section_error(section, reason, row)
    return device


@_guarded(_QUERY_SOURCE)
def parse_query_gpu(text, fields=None):
    """Parse ``nvidia-smi --query-gpu=<fields> --format=csv`` (units and ``nounits`` both accepted).

    Columns are mapped by the header names (``memory.total [MiB]`` -> ``memory.total``), so their
    order does not matter and extra or missing columns are tolerated (a missing one gives ``None``).
    For ``--format=csv,noheader`` pass the queried field list as ``fields`` (a list or a
    comma-separated string). ``[N/A]``, ``[Not Supported]``, ``[Unknown Error]``... give ``None``.

    Returns a list of device dicts ordered by index: index, name, uuid, bus_id (as printed),
    driver_version, memory_total_mib, pcie_gen_current, pcie_gen_max, pcie_width_current,
    pcie_width_max, persistence_mode (bool), ecc_mode (bool), clocks_max_sm_mhz.
    ``No devices were found`` (and empty text) gives ``[]``. A row that does not have one value per
    column, or a value that is not what its column holds, spoils only that GPU: its unreadable
    values are ``None`` and it gets ``parse_error`` (``_errors.section_error``, section ``gpu<index>``,
    the row as read). Lines such as ``Unable to determine the
    device handle for GPU3: 0000:04:00.0: Unknown Error`` (a GPU that fell off the bus, printed
    among the rows of the GPUs that still answer) are skipped: that GPU is not in the list.
    """
    source = _QUERY_SOURCE
    text = _text(source, text)
    lines = [line.strip() for line in text.split('\n') if line.strip() and not _NOISE.match(line)]
    if not lines or (len(lines) == 1 and lines[0].lower().startswith('no devices were found')):
        return []
    first = [tok.strip() for tok in lines[0].split(',')]
    if all(_HEADER_TOKEN.match(tok) for tok in first):
        columns = [_field_name(tok) for tok in first]
        rows = lines[1:]
    elif fields:
        if isinstance(fields, str):
            fields = fields.split(',')
        try:
            columns = [_field_name(str(f)) for f in fields]
        except (TypeError, AttributeError):
            raise ParseError(source, 'fields must be a list of field names', text)
        rows = lines
    else:
        raise ParseError(source, 'no csv header line (pass fields for --format=csv,noheader)', text)
    if not any(field in columns for field in _IDENTITY_FIELDS):
        raise ParseError(source, 'header names none of %s: %s' % ('/'.join(_IDENTITY_FIELDS), ', '.join(columns)[:200]),
                         text)
    devices = []
    for number, row in enumerate(rows, 1):
        devices.append(_query_row(source, columns, number, row))
    if all(d['index'] is not None for d in devices):
        devices.sort(key=lambda d: d['index'])
    return devices


# --------------------------------------------------------------------------------------------
# nvidia-smi -q -x
# --------------------------------------------------------------------------------------------

_XML_SOURCE = 'nvidia-smi -q -x'
_NORMAL_CLOCK_REASONS = frozenset(('gpu_idle', 'applications_clocks_setting', 'display_clocks_setting'))
_LEGACY_DRAM = ('device_memory', 'dram')


def _child_text(element, path):
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip()


def _xml_int(value, what, text):
    if _is_na(value):
        return None
    match = _INT_WITH_UNIT.match(value.strip())
    if not match:
        raise ParseError(_XML_SOURCE, '%s is not a number: %r' % (what, value[:40]), text)
    return int_from_text(match.group(1), _XML_SOURCE, what, text, low=-MAX_INT)


def _xml_bool(value, what, text):
    if _is_na(value):
        return None
    low = value.strip().lower()
    if low in _TRUE_WORDS:
        return True
    if low in _FALSE_WORDS:
        return False
    raise ParseError(_XML_SOURCE, '%s is not a flag: %r' % (what, value[:40]), text)


def _sum_known(values):
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _ecc_block(block, what, text):
    """One ``<volatile>`` or ``<aggregate>`` block -> {sram_correctable, sram_uncorrectable, ...}."""
    result = {'sram_correctable': None, 'sram_uncorrectable': None,
              'dram_correctable': None, 'dram_uncorrectable': None}
    if block is None:
        return result
    single, double = block.find('single_bit'), block.find('double_bit')
    if single is not None or double is not None:
        for kind, element in (('correctable', single), ('uncorrectable', double)):
            if element is None:
                continue
            counts = {}
            for child in element:
                counts[child.tag] = _xml_int(child.text, '%s %s %s' % (what, element.tag, child.tag), text)
            total = counts.pop('total', None)
            dram = _sum_known([counts.pop(tag, None) for tag in _LEGACY_DRAM])
            sram = _sum_known(counts.values())
            if dram is None and total is not None:
                # No per-location split: the total is all we know, counted as device memory.
                dram = total
            elif total is not None and dram is not None:
                sram = total - dram if total >= dram else sram
            result['dram_' + kind] = dram
            result['sram_' + kind] = sram
        return result
    result['sram_correctable'] = _xml_int(_child_text(block, 'sram_correctable'), what + ' sram_correctable', text)
    result['dram_correctable'] = _xml_int(_child_text(block, 'dram_correctable'), what + ' dram_correctable', text)
    result['dram_uncorrectable'] = _xml_int(_child_text(block, 'dram_uncorrectable'), what + ' dram_uncorrectable', text)
    if block.find('sram_uncorrectable_parity') is not None or block.find('sram_uncorrectable_secded') is not None:
        result['sram_uncorrectable'] = _sum_known([
            _xml_int(_child_text(block, 'sram_uncorrectable_parity'), what + ' sram_uncorrectable_parity', text),
            _xml_int(_child_text(block, 'sram_uncorrectable_secded'), what + ' sram_uncorrectable_secded', text)])
    else:
        result['sram_uncorrectable'] = _xml_int(_child_text(block, 'sram_uncorrectable'), what + ' sram_uncorrectable', text)
    return result


def _retired_pages(gpu, text):
    block = gpu.find('retired_pages')
    result = {'single_bit': None, 'double_bit': None, 'pending': None}
    if block is None:
        return result
    result['single_bit'] = _xml_int(_child_text(block, 'multiple_single_bit_retirement/retired_count'),
                                    'retired_pages single_bit', text)
    result['double_bit'] = _xml_int(_child_text(block, 'double_bit_retirement/retired_count'),
                                    'retired_pages double_bit', text)
    for tag in ('pending_retirement', 'pending_blacklist'):
        value = _xml_bool(_child_text(block, tag), 'retired_pages ' + tag, text)
        if value is not None:
            result['pending'] = value if result['pending'] is None else (result['pending'] or value)
    return result


def _remapped_rows(gpu, text):
    block = gpu.find('remapped_rows')
    result = {'correctable': None, 'uncorrectable': None, 'pending': None, 'failure': None}
    if block is None:
        return result
    result['correctable'] = _xml_int(_child_text(block, 'remapped_row_corr'), 'remapped_row_corr', text)
    result['uncorrectable'] = _xml_int(_child_text(block, 'remapped_row_unc'), 'remapped_row_unc', text)
    result['pending'] = _xml_bool(_child_text(block, 'remapped_row_pending'), 'remapped_row_pending', text)
    result['failure'] = _xml_bool(_child_text(block, 'remapped_row_failure'), 'remapped_row_failure', text)
    return result


def _clock_reasons(gpu, text):
    active = []
    for container, prefix in (('clocks_event_reasons', 'clocks_event_reason_'),
                              ('clocks_throttle_reasons', 'clocks_throttle_reason_')):
        block = gpu.find(container)
        if block is None:
            continue
        for child in block:
            name = child.tag[len(prefix):] if child.tag.startswith(prefix) else child.tag
            if name in _NORMAL_CLOCK_REASONS or name in active:
                continue
            if _xml_bool(child.text, container + ' ' + name, text):
                active.append(name)
    return active


@_guarded(_XML_SOURCE)
def parse_smi_xml(text):
    """Parse ``nvidia-smi -q -x``.

    Returns::

        driver_version: "580.159.04"
        cuda_driver_version: "13.0"          # <cuda_version>
        gpus:
          "0000:00:06.0":                    # normalise_bus_id(<gpu id=...>)
            product_name, uuid,
            ecc_errors: {volatile: {sram_correctable, sram_uncorrectable, dram_correctable,
                                    dram_uncorrectable}, aggregate: {...}},
            retired_pages: {single_bit, double_bit, pending},
            remapped_rows: {correctable, uncorrectable, pending, failure},
            clocks_event_reasons_active: [hw_slowdown, ...]
            max_operating_temp_c: 87         # the driver's maximum operating temperature (_max_operating_temp)

    ``N/A`` (and a whole ``<remapped_rows>N/A</remapped_rows>``) gives ``None``.

    ECC layouts: current drivers print ``sram_correctable``, ``sram_uncorrectable`` (split as
    ``sram_uncorrectable_parity`` + ``sram_uncorrectable_secded`` since R550: summed here),
    ``dram_correctable`` and ``dram_uncorrectable``. Older drivers (Pascal/Volta/early Ampere era)
    print per-location counts under ``<single_bit>`` and ``<double_bit>``: ``device_memory``,
    ``register_file``, ``l1_cache``, ``l2_cache``, ``texture_memory``, ``texture_shm``, ``cbu``,
    ``total``. These map as: single bit = correctable, double bit = uncorrectable;
    ``device_memory`` (and ``dram`` where printed) -> ``dram_*``; the on-chip rest
    (``total`` - ``device_memory``, else the sum of the on-chip locations) -> ``sram_*``. Where only
    ``total`` is a number, all of it is counted as ``dram_*`` and ``sram_*`` is ``None``.

    Retired pages: ``multiple_single_bit_retirement/retired_count`` -> single_bit,
    ``double_bit_retirement/retired_count`` -> double_bit, ``pending_retirement`` (or the older
    ``pending_blacklist``) -> pending. Clock event reasons are read from ``<clocks_event_reasons>``
    (R535+) or ``<clocks_throttle_reasons>`` (older); ``gpu_idle``, ``applications_clocks_setting``
    and ``display_clocks_setting`` are normal states and left out.

    Who uses the GPU: ``compute_mode`` (``Default``, ``Exclusive_Process``, ``Prohibited``, ...) and
    ``processes``: ``[{pid, type, name, used_memory_mib}]`` from ``<processes>`` (``[]`` when the
    element is empty, ``None`` when the XML has no such element), the same rows as
    ``nvidia-smi --query-compute-apps`` (plus graphics processes, type ``G``).
    """
    source = _XML_SOURCE
    text = _text(source, text)
    if not text.strip():
        raise ParseError(source, 'empty output', text)
    start = text.find('<?xml')
    if start < 0:
        start = text.find('<nvidia_smi_log')
    if start < 0:
        raise ParseError(source, 'no <nvidia_smi_log> document', text)
    body = text[start:]
    end = body.rfind('</nvidia_smi_log>')
    if end >= 0:
        body = body[:end + len('</nvidia_smi_log>')]
    if '<!ENTITY' in body:
        raise ParseError(source, 'entity declarations are not accepted', text)
    try:
        root = ET.fromstring(body.encode('utf-8', 'replace'))
    except (ET.ParseError, ValueError, TypeError) as exc:
        raise ParseError(source, 'malformed XML: %s' % exc, text)
    if root.tag != 'nvidia_smi_log':
        raise ParseError(source, 'root element is <%s>, not <nvidia_smi_log>' % root.tag, text)
    driver = _child_text(root, 'driver_version')
    cuda = _child_text(root, 'cuda_version')
    result = {'driver_version': None if _is_na(driver) else driver,
              'cuda_driver_version': None if _is_na(cuda) else cuda,
              'gpus': {}}
    for number, gpu in enumerate(root.findall('gpu')):
        raw_id = gpu.get('id') or _child_text(gpu, 'pci/pci_bus_id')
        try:
            bus_id = normalise_bus_id(raw_id) if raw_id else None
        except ParseError:
            bus_id = None
        if bus_id is None:
            # Not a GPU this parser can name by bus id: kept under its position, with the problem.
            key = '<gpu %d>' % number
            result['gpus'][key] = {SECTION_ERROR_KEY: section_error(
                key, '<gpu> without a PCI bus id (id=%r)' % (raw_id or '')[:40], ET.tostring(gpu, 'unicode')[:400])}
            continue
        if bus_id in result['gpus']:
            repeated = section_error('gpu %s' % bus_id, 'two <gpu> elements for %s' % bus_id, ET.tostring(gpu, 'unicode')[:400])
            result['gpus'][bus_id].setdefault(SECTION_ERROR_KEY, repeated)
            continue
        result['gpus'][bus_id] = _gpu_details(gpu, bus_id)
    return result


def _gpu_details(gpu, bus_id):
    """One ``<gpu>`` element; a part that is not understood is ``None`` and names itself in ``parse_error``."""
    ecc = gpu.find('ecc_errors')
    name = _child_text(gpu, 'product_name')
    uuid = _child_text(gpu, 'uuid')
    problems = []

    def part(func, *args):
        try:
            return func(*args)
        except ParseError as err:
            problems.append(err)
            return None

    details = {
        'product_name': None if _is_na(name) else name,
        'uuid': None if _is_na(uuid) else uuid,
        'ecc_errors': {
            'volatile': part(_ecc_block, None if ecc is None else ecc.find('volatile'), 'volatile', None),
            'aggregate': part(_ecc_block, None if ecc is None else ecc.find('aggregate'), 'aggregate', None),
        },
        'retired_pages': part(_retired_pages, gpu, None),
        'remapped_rows': part(_remapped_rows, gpu, None),
        'clocks_event_reasons_active': part(_clock_reasons, gpu, None),
        'max_operating_temp_c': _max_operating_temp(gpu),
    }
    usage = part(_gpu_usage, gpu, None)
    details.update(usage or {'compute_mode': None, 'processes': None})
    if problems:
        details[SECTION_ERROR_KEY] = section_error('gpu %s' % bus_id, '; '.join(err.reason for err in problems)[:300],
                                                   '\n'.join(err.reason for err in problems))
    return details


_MERGED_KEYS = ('ecc_errors', 'retired_pages', 'remapped_rows', 'clocks_event_reasons_active', 'compute_mode', 'processes',
                'max_operating_temp_c')


def _celsius(gpu, name):
    """``<temperature><name>`` as a whole number of degrees C (``"87 C"``, ``"-2 C"``), ``None`` when absent or N/A."""
    value = _child_text(gpu, 'temperature/' + name)
    match = re.match(r'^\s*(-?\d{1,3})\s*C\s*$', value or '')     # a GPU's temperatures are 3 digits at most
    return int(match.group(1)) if match else None


def _max_operating_temp(gpu):
    """The GPU's maximum operating temperature as the driver reports it, C, or ``None``.

    Drivers print it as ``gpu_temp_max_gpu_threshold`` (e.g. ``85 C`` on Ampere); GPUs that report temperatures
    relative to T.Limit (Hopper and newer: ``gpu_temp_tlimit``, the headroom to T.Limit, and
    ``gpu_temp_max_gpu_tlimit_threshold``, the maximum operating temperature as headroom below T.Limit, ``0 C``; the
    slowdown threshold is ``-2 C``, 2 C above T.Limit) give it as ``gpu_temp + gpu_temp_tlimit -
    gpu_temp_max_gpu_tlimit_threshold`` (87 C on every H200 captured at rest; the two
    readings are not taken at the same instant, so a GPU heating up under load can read a few degrees off)."""
    absolute = _celsius(gpu, 'gpu_temp_max_gpu_threshold')
    if absolute is None:
        current, headroom, relative = (_celsius(gpu, name) for name in ('gpu_temp', 'gpu_temp_tlimit', 'gpu_temp_max_gpu_tlimit_threshold'))
        if current is None or headroom is None or relative is None:
            return None
        absolute = current + headroom - relative
    return absolute if 0 < absolute < 200 else None     # anything else is no temperature a GPU runs at


@_guarded('merge_gpu_details')
def merge_gpu_details(devices, xml_result):
    """Return copies of ``devices`` (from ``parse_query_gpu``) with the ``parse_smi_xml`` details of
    each merged in, matched by normalised bus id: ecc_errors, retired_pages, remapped_rows,
    clocks_event_reasons_active (``None`` where the XML has no such GPU), and name/uuid where the
    csv lacked them.
    """
    gpus = (xml_result or {}).get('gpus') or {}
    merged = []
    for device in devices or []:
        device = dict(device)
        try:
            key = normalise_bus_id(device.get('bus_id'))
        except ParseError:
            key = None
        details = gpus.get(key) if key else None
        for name in _MERGED_KEYS:
            device[name] = details.get(name) if details else None
        if details:
            if device.get('name') is None:
                device['name'] = details.get('product_name')
            if device.get('uuid') is None:
                device['uuid'] = details.get('uuid')
        merged.append(device)
    return merged


# --------------------------------------------------------------------------------------------
# nvidia-smi topo -m / topo -mp
# --------------------------------------------------------------------------------------------

_TOPO_SOURCE = 'nvidia-smi topo -m'
_AFFINITY_NAMES = re.compile(r'CPU Affinity|NUMA Affinity|GPU NUMA ID')
_AFFINITY_KEYS = {'CPU Affinity': 'cpu', 'NUMA Affinity': 'numa', 'GPU NUMA ID': 'gpu_numa_id'}
_TOPO_CELL = re.compile(r'^[A-Za-z][A-Za-z0-9#]*$')
_NIC_LEGEND = re.compile(r'^\s*(NIC\d+)\s*:\s*(\S+)\s*$')
_DEVICE_LABEL = re.compile(r'^[A-Za-z][A-Za-z0-9_.-]*\d$')


@_guarded(_TOPO_SOURCE)
def parse_topo_matrix(text):
    """Parse ``nvidia-smi topo -m`` (or ``topo -mp``).

    Returns ``{devices, matrix, affinity, nic_names}``: ``devices`` are the column labels in order
    (``GPU0``.., ``NIC0``.., or ``mlx5_0`` on drivers that named NICs directly); ``matrix[a][b]`` is
    the cell as printed (``NV18``, ``SYS``, ``NODE``, ``PHB``, ``PXB``, ``PIX``...), without the
    ``X`` self entries and made symmetric where only one side was printed; ``affinity[dev]`` has
    ``cpu``, ``numa`` and ``gpu_numa_id`` (``N/A`` -> ``None``) for the rows that print them;
    ``nic_names`` maps ``NIC0`` to ``mlx5_0`` from the ``NIC Legend:`` block. Tab- or
    space-separated text, ANSI escapes (the underlined header) and CRLF are accepted.

    A row with a cell that is not a link type, or with too few cells, keeps the cells that were read
    (its pairs are still filled from the other rows' columns) and the result gets ``parse_error``
    (``_errors.section_error``, section ``row GPU1[, ...]``, the rows as read).
    """
    source = _TOPO_SOURCE
    text = _text(source, text)
    lines = text.split('\n')
    result = {'devices': [], 'matrix': {}, 'affinity': {}, 'nic_names': {}}
    if not text.strip():
        return result
    header_at = None
    for number, line in enumerate(lines):
        if not line.strip() or _NOISE.match(line):
            continue
        tokens = line.split()
        if tokens[0] in ('GPU0', 'NIC0') or (line[:1] in ' \t' and tokens[0].startswith('GPU')):
            header_at = number
            break
        raise ParseError(source, 'expected the matrix header, got %r' % line.strip()[:60], text)
    if header_at is None:
        raise ParseError(source, 'no matrix header', text)
    header = lines[header_at]
    names_at = _AFFINITY_NAMES.search(header)
    device_part = header[:names_at.start()] if names_at else header
    affinity_names = _AFFINITY_NAMES.findall(header[names_at.start():]) if names_at else []
    devices = device_part.split()
    if not devices or len(set(devices)) != len(devices) or not all(_DEVICE_LABEL.match(d) for d in devices):
        raise ParseError(source, 'bad matrix header %r' % header.strip()[:80], text)
    result['devices'] = devices
    matrix = dict((dev, {}) for dev in devices)
    seen = set()
    bad_rows = []
    in_nic_legend = False
    for line in lines[header_at + 1:]:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == 'Legend:':
            in_nic_legend = False
            continue
        if stripped == 'NIC Legend:':
            in_nic_legend = True
            continue
        legend = _NIC_LEGEND.match(line)
        if legend and (in_nic_legend or legend.group(1) not in matrix or legend.group(1) in seen):
            result['nic_names'][legend.group(1)] = legend.group(2)
            continue
        label = stripped.split()[0]
        if label in matrix and label not in seen and not in_nic_legend:
            if '\t' in line:
                cells = [cell.strip() for cell in line.split('\t')]
                while cells and not cells[0]:
                    cells.pop(0)
                cells = cells[1:]
            else:
                cells = stripped.split()[1:]
            problems = []
            if len(cells) < len(devices):
                problems.append('row %s has %d cells for %d columns' % (label, len(cells), len(devices)))
            for col, cell in zip(devices, cells[:len(devices)]):
                if not _TOPO_CELL.match(cell):
                    problems.append('row %s column %s: %r is not a link type' % (label, col, cell[:20]))
                elif col != label:
                    matrix[label][col] = cell
            if problems:
                bad_rows.append((label, problems[0], stripped))
            values = [cell for cell in cells[len(devices):] if cell]
            if values and affinity_names and len(cells) >= len(devices):
                entry = {'cpu': None, 'numa': None, 'gpu_numa_id': None}
                for index, name in enumerate(affinity_names):
                    raw = values[index] if index < len(values) else None
                    entry[_AFFINITY_KEYS[name]] = None if _is_na(raw) else raw
                result['affinity'][label] = entry
            seen.add(label)
            continue
        if re.match(r'^\s*(?:[A-Z]+#?|NV#)\s+=\s', line) or in_nic_legend:
            continue
        if not seen:
            raise ParseError(source, 'unexpected line %r' % stripped[:60], text)
        # Anything else after the matrix (a trailing note of a newer driver) is ignored.
    if not seen:
        raise ParseError(source, 'matrix has no rows', text)
    for row in devices:
        for col in devices:
            if row != col and col not in matrix[row] and row in matrix.get(col, {}):
                matrix[row][col] = matrix[col][row]
    result['matrix'] = matrix
    if bad_rows:
        result[SECTION_ERROR_KEY] = section_error(
            'row %s' % ', '.join(label for label, _reason, _line in bad_rows),
            '; '.join(reason for _label, reason, _line in bad_rows)[:300], '\n'.join(line for _label, _reason, line in bad_rows))
    return result


# --------------------------------------------------------------------------------------------
# nvidia-smi nvlink --status
# --------------------------------------------------------------------------------------------

_NVLINK_SOURCE = 'nvidia-smi nvlink --status'
_NVLINK_GPU = re.compile(r'^GPU\s+(\d+)\s*:\s*(.*)$')
_NVLINK_LINK = re.compile(r'^Link\s+(\d+)\s*:\s*(.*)$')
_NVLINK_SPEED = re.compile(r'^([0-9]+(?:\.[0-9]*)?)\s*([GMT])B/s\b', re.IGNORECASE)
_NVLINK_DOWN = re.compile(r'inactive|link is down|\bdown\b|disabled|not active', re.IGNORECASE)
_SPEED_SCALE = {'M': 0.001, 'G': 1.0, 'T': 1000.0}


# Printed instead of the link lines for a GPU whose links are all down (at column 0 on current
# drivers, indented on some older ones; "inActive" or "inactive").
_NVLINK_ALL_INACTIVE = re.compile(r'^NVML:\s*Unable to retrieve NVLink information as all links are inactive\b', re.IGNORECASE)


@_guarded(_NVLINK_SOURCE)
def parse_nvlink_status(text):
    """Parse ``nvidia-smi nvlink --status`` (``-s``), one section per GPU.

    Returns ``{"0": {"links": [{link, speed_gbps, active}], "all_inactive": false}}`` keyed by GPU
    index as a string; speed in GB/s as printed (any decimals), ``None`` for ``<inactive>`` links
    (``active: false``). A GPU for which nvidia-smi prints ``NVML: Unable to retrieve NVLink
    information as all links are inActive`` has ``all_inactive: true`` and no links; a GPU that
    lists nothing has ``links: []``. GPU lines with or without ``(UUID: ...)`` are accepted; empty
    output (no NVLink) gives ``{}``.

    A line inside a GPU's section that is not understood (an unreadable link state, a second
    section for the same GPU, any other text) does not spoil the other GPUs: the links read so far
    are kept and the GPU's dict gets ``parse_error`` (``_errors.section_error``: section ``gpu<N>``,
    the reason and the lines read). Only text before the first GPU line raises ``ParseError``.
    """
    source = _NVLINK_SOURCE
    text = _text(source, text)
    result = {}
    current = None
    header = None

    def problem(reason, line):
        if SECTION_ERROR_KEY not in current:
            current[SECTION_ERROR_KEY] = section_error('gpu%s' % key, reason, '%s\n%s' % (header, line))

    for line in text.split('\n'):
        stripped = line.strip()
        if not stripped or _NOISE.match(line):
            continue
        gpu = _NVLINK_GPU.match(stripped)
        if gpu:
            key = str(int_from_text(gpu.group(1), source, 'GPU index', text, high=1 << 16))
            header = stripped
            if key in result:
                current = result[key]
                problem('GPU %s listed twice' % key, stripped)
                continue
            current = result[key] = {'links': [], 'all_inactive': False}
            continue
        if current is None:
            if _NVLINK_LINK.match(stripped):
                raise ParseError(source, 'link line before any GPU line', text)
            raise ParseError(source, 'unexpected line %r' % stripped[:60], text)
        if _NVLINK_ALL_INACTIVE.match(stripped):
            current['all_inactive'] = True
            continue
        link = _NVLINK_LINK.match(stripped)
        if not link:
            problem('unexpected line %r' % stripped[:60], stripped)
            continue
        value = link.group(2).strip()
        speed = _NVLINK_SPEED.match(value)
        try:
            number = int_from_text(link.group(1), source, 'link number', text, high=1 << 16)
            gbps = float_from_text(speed.group(1), source, 'link speed', text) * _SPEED_SCALE[speed.group(2).upper()] if speed else None
        except ParseError as err:
            problem(err.reason, stripped)
            continue
        if gbps is not None and math.isfinite(gbps):
            current['links'].append({'link': number, 'speed_gbps': round(gbps, 6), 'active': True})
        elif _NVLINK_DOWN.search(value):
            current['links'].append({'link': number, 'speed_gbps': None, 'active': False})
        else:
            problem('cannot read the state of link %s: %r' % (link.group(1), value[:40]), stripped)
    return result


# --------------------------------------------------------------------------------------------
# nvidia-smi nvlink -e (--errorcounters)
# --------------------------------------------------------------------------------------------

_NVLINK_ERRORS_SOURCE = 'nvidia-smi nvlink -e'
_NVLINK_ERRORS_GPU = re.compile(r'^GPU\s+(\S+)')
_NVLINK_ERRORS_LINE = re.compile(r'^Link\s+(\d+)\s*:\s*(.+?)\s*:\s*(\S+)\s*$')


def counter_key(name):
    """``Replay Errors`` -> ``replay_errors``, ``FEC Errors - 3`` -> ``fec_errors_3``: the key of a counter name."""
    return '_'.join(re.findall(r'[a-z0-9]+', name.lower()))


@_guarded(_NVLINK_ERRORS_SOURCE)
def parse_nvlink_errors(text):
    """Parse ``nvidia-smi nvlink -e``: the error counters of every NVLink, one section per GPU.

    Returns ``{"0": {"links": {"0": {"replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}}}}`` keyed by GPU
    index and link number as strings, each counter under ``counter_key`` of its printed name, so both the counter
    sets drivers print are read: ``Replay Errors`` / ``Recovery Errors`` / ``CRC Errors`` (Ampere, Hopper) and
    ``Rx Errors``, ``Symbol Errors``, ``Link recovery successful events``, ``FEC Errors - N`` ... (newer drivers and
    GPUs). A GPU line naming a bus id instead of an index (``GPU 00000008:06:00.0``) counts the GPUs in order. A
    value nvidia-smi does not report (``N/A``) is ``None``. Empty output (no NVLink) gives ``{}``.

    A line inside a GPU's section that is not a counter does not spoil the other GPUs: the GPU's dict gets
    ``parse_error`` (``_errors.section_error``). Text before the first GPU line raises ``ParseError``.
    """
    source = _NVLINK_ERRORS_SOURCE
    text = _text(source, text)
    result = {}
    current = None
    header = None
    key = None
    for line in text.split('\n'):
        stripped = line.strip()
        if not stripped or _NOISE.match(line):
            continue
        link = _NVLINK_ERRORS_LINE.match(stripped)
        gpu = None if link else _NVLINK_ERRORS_GPU.match(stripped)
        if gpu:
            label = gpu.group(1)[:-1] if gpu.group(1).endswith(':') else gpu.group(1)
            key = str(int_from_text(label, source, 'GPU index', text, high=1 << 16)) if label.isdigit() else str(len(result))
            header = stripped
            if key in result:
                current = result[key]
                if SECTION_ERROR_KEY not in current:
                    current[SECTION_ERROR_KEY] = section_error('gpu%s' % key, 'GPU %s listed twice' % key, stripped)
                continue
            current = result[key] = {'links': {}}
            continue
        if current is None:
            raise ParseError(source, 'unexpected line before any GPU line: %r' % stripped[:60], text)
        value = link.group(3) if link else None
        if not link or not (value.isdigit() or value.upper().strip('[]') in ('N/A', 'NOT SUPPORTED')):
            if SECTION_ERROR_KEY not in current:
                current[SECTION_ERROR_KEY] = section_error('gpu%s' % key, 'not a counter line: %r' % stripped[:60],
                                                           '%s\n%s' % (header, stripped))
            continue
        counters = current['links'].setdefault(str(int(link.group(1))), {})
        counters[counter_key(link.group(2))] = int_from_text(value, source, 'counter', text, high=MAX_INT) if value.isdigit() else None
    return result


# --------------------------------------------------------------------------------------------
# Kernel log: NVRM Xid lines
# --------------------------------------------------------------------------------------------

_XID = re.compile(r'NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\):\s*'
                  r'(?P<xid>\d+)\s*(?:,\s*(?P<rest>.*))?$')
_XID_PID = re.compile(r"^pid\s*=\s*'?(?P<pid>[^,']*)'?\s*(?:,\s*|$)")
_XID_NAME = re.compile(r'^name\s*=\s*(?P<name>[^,]*?)\s*(?:,\s*|$)')


@_guarded('kernel log')
def parse_xid_events(text):
    """Find the NVRM Xid lines in kernel log text (``journalctl -k -o short-iso`` or ``dmesg``).

    Returns ``[{xid, pci, pid, name, message, line}]`` in log order: ``xid`` an int, ``pci`` as
    printed (``0000:18:00``), ``pid`` an int or ``None`` (absent or ``'<unknown>'``), ``name`` the
    process name or ``None``, ``message`` the rest of the line, ``line`` the raw line. Other lines
    are ignored: log text is free-form, so no text is an error (bytes are decoded leniently).
    """
    if text is None:
        return []
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise ParseError('kernel log', 'expected text, got %s' % type(text).__name__, text)
    events = []
    for raw in text.splitlines():
        if 'Xid' not in raw:
            continue
        line = _ANSI.sub('', raw).rstrip()
        match = _XID.search(line)
        if not match:
            continue
        rest = (match.group('rest') or '').strip()
        pid = name = None
        found = _XID_PID.match(rest)
        if found:
            value = found.group('pid').strip()
            pid = int(value) if re.match(r'[0-9]{1,20}\Z', value) and int(value) <= MAX_INT else None
            rest = rest[found.end():]
            found = _XID_NAME.match(rest)
            if found:
                value = found.group('name').strip().strip("'")
                name = None if value in ('', '<unknown>') else value
                rest = rest[found.end():]
        xid = match.group('xid')
        if len(xid) > 20 or int(xid) > MAX_INT:
            continue   # not an Xid number the driver prints
        events.append({'xid': int(xid), 'pci': match.group('pci'), 'pid': pid,
                       'name': name, 'message': rest.strip(), 'line': line.strip()})
    return events


# --------------------------------------------------------------------------------------------
# /proc/driver/nvidia/version and NVML's initialisation error
# --------------------------------------------------------------------------------------------

_PROC_SOURCE = '/proc/driver/nvidia/version'
_PROC_NVRM = re.compile(r'^NVRM version:\s*(?P<desc>.*?Kernel Module.*?)\s+(?P<version>\d+(?:\.\d+)+)(?=\s|$)')
_PROC_ARCH = re.compile(r'(?:\bfor\s+(?P<for>\S+)$|(?<!\S)(?P<unix>(?!Open\b|UNIX\b)\S+)\s+Kernel Module$)')
_PROC_GCC = re.compile(r'^GCC version:\s*(?:gcc version\s+)?(?P<gcc>\S+)')
_NVML_INIT = re.compile(r'Failed to initialize NVML:\s*(?P<message>[^\n]*?)\s*$', re.MULTILINE)
_NVML_LIBRARY = re.compile(r'NVML library version:\s*(?P<version>\d+(?:\.\d+)*)')


@_guarded(_PROC_SOURCE)
def parse_proc_driver_version(text):
    """Parse ``/proc/driver/nvidia/version``: the loaded kernel module's own version.

    Reads the ``NVRM version:`` line as the open modules print it (``NVIDIA UNIX Open Kernel Module
    for x86_64  580.159.04  Release Build  (builder@host)  <date>``) and as the proprietary ones do
    (``NVIDIA UNIX x86_64 Kernel Module  580.173.02  <date>``). Returns ``{version, flavour, arch,
    gcc_version}``: flavour ``open`` or ``proprietary``; ``arch`` and ``gcc_version`` ``None`` where
    not printed.
    """
    source = _PROC_SOURCE
    text = _text(source, text)
    result = None
    gcc = None
    for line in text.split('\n'):
        stripped = line.strip()
        match = _PROC_NVRM.match(stripped)
        if match and result is None:
            desc = match.group('desc').strip()
            arch = _PROC_ARCH.search(desc)
            result = {'version': match.group('version'),
                      'flavour': 'open' if re.search(r'\bOpen Kernel\b', desc) else 'proprietary',
                      'arch': (arch.group('for') or arch.group('unix')) if arch else None}
            continue
        found = _PROC_GCC.match(stripped)
        if found and gcc is None:
            gcc = found.group('gcc')
    if result is None:
        raise ParseError(source, 'no "NVRM version: ... Kernel Module <version>" line', text)
    result['gcc_version'] = gcc
    return result


def nvml_init_error(text):
    """What nvidia-smi printed when NVML could not start, or ``None``.

    ``Failed to initialize NVML: Driver/library version mismatch`` (an upgrade that replaced the
    user-space library while the old kernel module is still loaded) gives ``{message: "Driver/library
    version mismatch", nvml_library_version: "580.178"}``, the version from the ``NVML library
    version:`` line newer drivers add (``None`` when absent). Never raises.
    """
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        return None
    match = _NVML_INIT.search(_ANSI.sub('', text).replace('\r', '\n'))
    if not match:
        return None
    library = _NVML_LIBRARY.search(text)
    return {'message': match.group('message')[:200] or None, 'nvml_library_version': library.group('version') if library else None}


# --------------------------------------------------------------------------------------------
# nvcc --version
# --------------------------------------------------------------------------------------------

_NVCC_RELEASE = re.compile(r'Cuda compilation tools,\s*release\s+(\d+\.\d+)', re.IGNORECASE)


@_guarded('nvcc --version')
def parse_nvcc_version(text):
    """Return the CUDA toolkit release (``"13.0"``) from ``nvcc --version``."""
    source = 'nvcc --version'
    text = _text(source, text)
    match = _NVCC_RELEASE.search(text)
    if not match:
        raise ParseError(source, 'no "Cuda compilation tools, release X.Y" line', text)
    return match.group(1)


# --------------------------------------------------------------------------------------------
# nvidia-smi -q -x: who uses the GPU
# --------------------------------------------------------------------------------------------

def _gpu_usage(gpu, text):
    """``compute_mode`` and ``processes`` of one ``<gpu>`` element (see parse_smi_xml)."""
    mode = _child_text(gpu, 'compute_mode')
    block = gpu.find('processes')
    processes = None
    if block is not None:
        processes = []
        for info in block.findall('process_info'):
            name = _child_text(info, 'process_name')
            kind = _child_text(info, 'type')
            processes.append({
                'pid': _xml_int(_child_text(info, 'pid'), 'process pid', text),
                'type': None if _is_na(kind) else kind,
                'name': None if _is_na(name) else name,
                'used_memory_mib': _xml_int(_child_text(info, 'used_memory'), 'process used_memory', text),
            })
    return {'compute_mode': None if _is_na(mode) else mode, 'processes': processes}


# nvidia-smi -L (the container smoke lists the GPUs a container sees with it)
# an index of up to 4 digits: a GPU or MIG index a node can have (a longer run is not nvidia-smi's)
_GPU_LINE = re.compile(r'^GPU (\d{1,4}): (.*?)(?: \(UUID: ([^)\s]*)\))?\s*$')
_MIG_LINE = re.compile(r'^\s+MIG (\S+)\s+Device\s+(\d{1,4}): \(UUID: ([^)\s]*)\)\s*$')


def parse_gpu_list(text):
    """``nvidia-smi -L`` -> ``{'gpus': [{'index', 'name', 'uuid', 'mig': [{'profile', 'index', 'uuid'}]}]}``.

    Raises ParseError when no GPU line is there or a line is not one nvidia-smi -L prints (quoting it)."""
    gpus, unknown = [], []
    if not isinstance(text, str):
        raise ParseError('nvidia-smi -L', 'expected text, got %s' % type(text).__name__, text)
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _GPU_LINE.match(line)
        if match:
            gpus.append({'index': int(match.group(1)), 'name': match.group(2).strip(),
                         'uuid': match.group(3) if match.group(3) not in (None, '', 'N/A') else None, 'mig': []})
            continue
        mig = _MIG_LINE.match(line)
        if mig and gpus:
            gpus[-1]['mig'].append({'profile': mig.group(1), 'index': int(mig.group(2)), 'uuid': mig.group(3)})
            continue
        unknown.append(line)
    if unknown:
        raise ParseError('nvidia-smi -L', '%d line(s) that nvidia-smi -L does not print' % len(unknown), '\n'.join(unknown))
    if not gpus:
        raise ParseError('nvidia-smi -L', 'no "GPU <n>: <name> (UUID: ...)" line', text)
    return {'gpus': gpus}
