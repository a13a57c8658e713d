# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for what the AMD ROCm tools print: ``amd-smi`` (``static --json``, ``metric --json``,
``topology --json``, ``xgmi --json``, ``bad-pages --json``, ``version``) and, where amd-smi is absent,
``rocm-smi`` (``--showallinfo --json``, ``--showtopo --json``).

All functions are pure: text in, dict out. Text that is not what the tool prints raises ``ParseError``;
nothing else escapes. The shapes are those of ``gpu`` in docs/facts.md (the NVIDIA keys where the meaning
is the same: ``index``, ``name``, ``bus_id``, ``memory_total_mib``, ``pcie_*``, ``ecc_mode``, ``ecc_errors``).
Each GPU is a section: a GPU whose entry is not understood keeps what was read and gets ``parse_error``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import (
    MAX_INT, guarded, ParseError, float_from_text, int_from_text, section_error,
)

# PCIe transfer rate (GT/s) -> generation.
PCIE_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}

_NA = frozenset(('', 'n/a', 'na', 'not supported', 'unknown', 'no bad pages found.', 'no bad pages found'))
# How far a parser goes into nested JSON (the tools print at most 5 levels).
_MAX_DEPTH = 12


_guarded = guarded


def _depth(value, limit=_MAX_DEPTH):
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return True


def _load(source, text):
    """The JSON document the tool printed. Lines before the document (warnings the tool mixes into its
    output) are skipped; anything else that is not JSON is a ParseError."""
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise ParseError(source, 'expected text, got %s' % type(text).__name__, text)
    stripped = text.strip()
    if not stripped:
        raise ParseError(source, 'empty output', text)
    start = min([i for i in (stripped.find('['), stripped.find('{')) if i >= 0] or [-1])
    if start < 0:
        raise ParseError(source, 'no JSON document in the output', text)
    try:
        data = json.loads(stripped[start:])
    except ValueError as exc:
        raise ParseError(source, 'not JSON: %s' % exc, text)
    if not _depth(data):
        raise ParseError(source, 'JSON nested deeper than %d levels' % _MAX_DEPTH, text)
    return data


def _gpu_entries(source, data, text):
    """The per-GPU entries of an amd-smi JSON document: a list of ``{"gpu": N, ...}`` (amd-smi 24.x) or
    the same list under ``gpu_data`` (later releases)."""
    if isinstance(data, dict) and isinstance(data.get('gpu_data'), list):
        data = data['gpu_data']
    if isinstance(data, dict) and 'gpu' in data:
        data = [data]
    if not isinstance(data, list):
        raise ParseError(source, 'expected a list of GPUs, got %s' % type(data).__name__, text)
    return data


def _index(source, entry, position, text):
    if not isinstance(entry, dict):
        raise ParseError(source, 'GPU entry %d is %s, not an object' % (position, type(entry).__name__), text)
    value = entry.get('gpu')
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ParseError(source, 'GPU entry %d has no "gpu" index' % position, text)
    return int_from_text(str(value), source, 'gpu index', text, high=4095)


def _is_na(value):
    return value is None or (isinstance(value, str) and value.strip().lower() in _NA)


def _value(value):
    """``{"value": v, "unit": u}`` (amd-smi JSON with units) -> (v, u); a plain value -> (v, None)."""
    if isinstance(value, dict) and 'value' in value:
        return value.get('value'), value.get('unit')
    return value, None


def _number(value, source, what, integer=True):
    """A number amd-smi printed (a JSON number, ``{"value": n, "unit": u}`` or ``"32 GT/s"``); None for N/A."""
    value, _unit = _value(value)
    if _is_na(value):
        return None
    if isinstance(value, bool):
        raise ParseError(source, '%s is not a number: %r' % (what, value))
    if isinstance(value, (int, float)):
        value = repr(value)
    if not isinstance(value, str):
        raise ParseError(source, '%s is not a number: %r' % (what, value))
    token = value.strip().split()[0] if value.strip() else value
    if integer:
        return int_from_text(token, source, what, high=MAX_INT)
    return float_from_text(token, source, what, low=0, high=1e12)


def _unit(value):
    _v, unit = _value(value)
    if unit is None and isinstance(value, str) and len(value.split()) == 2:
        unit = value.split()[1]
    return unit


def _mib(value, source, what):
    """A memory size in MiB (amd-smi prints ``MB`` for MiB: it divides bytes by 1024 * 1024)."""
    size = _number(value, source, what)
    if size is None:
        return None
    unit = (_unit(value) or 'MB').upper()
    factors = {'B': 1.0 / 1048576, 'KB': 1.0 / 1024, 'KIB': 1.0 / 1024, 'MB': 1, 'MIB': 1, 'GB': 1024, 'GIB': 1024}
    if unit not in factors:
        raise ParseError(source, '%s has an unknown unit %r' % (what, unit))
    return int(size * factors[unit])


def pcie_gen(gts):
    """PCIe generation of a transfer rate in GT/s (None when not a standard rate)."""
    if gts is None:
        return None
    return PCIE_GEN_BY_GTS.get(float(gts))


def _gts(value, source, what):
    """A PCIe rate in GT/s: amd-smi prints GT/s; the library value in MT/s (16000) is converted."""
    rate = _number(value, source, what, integer=False)
    if rate is None:
        return None
    unit = (_unit(value) or '').lower()
    if unit == 'mt/s' or rate >= 1000:
        rate = rate / 1000.0
    return rate


def _gen_text(value, source):
    """``"Gen 5"`` -> 5."""
    value, _unit = _value(value)
    if _is_na(value):
        return None
    match = re.match(r'^\s*Gen\s*([0-9]+)\s*$', str(value), re.IGNORECASE)
    if not match:
        raise ParseError(source, 'PCIe interface version %r is not "Gen <n>"' % excerpt_value(value))
    return int_from_text(match.group(1), source, 'PCIe generation', high=16)


def excerpt_value(value, limit=60):
    text = value if isinstance(value, str) else repr(value)
    return text[:limit]


def _enabled(value):
    value, _unit = _value(value)
    if _is_na(value):
        return None
    text = str(value).strip().upper()
    if text in ('ENABLED', 'TRUE', 'YES', 'ON'):
        return True
    if text in ('DISABLED', 'FALSE', 'NO', 'OFF'):
        return False
    return None


def _sections(source, text, data, read_one):
    """Run ``read_one(entry) -> dict`` per GPU entry; an entry not understood keeps its index and gets
    ``parse_error``. Returns ``{index: dict}``."""
    out = {}
    for position, entry in enumerate(_gpu_entries(source, data, text)):
        index = _index(source, entry, position, text)
        try:
            out[index] = read_one(entry)
        except ParseError as err:
            out[index] = {'parse_error': section_error('gpu%d' % index, err.reason, json.dumps(entry, sort_keys=True))}
    return out


# ---------------------------------------------------------------------------------------------
# amd-smi

@_guarded('amd-smi static --json')
def parse_amd_static(text):
    """``amd-smi static --json``: ``{"devices": [...], "driver_version": str|None}``; per GPU index, name
    (asic.market_name), bus_id (bus.bdf), memory_total_mib (vram.size), pcie_gen_max, pcie_width_max,
    ecc_mode (ras.ecc_block_state.UMC), driver_version, serial, vbios_version, partition."""
    source = 'amd-smi static --json'
    data = _load(source, text)

    def one(entry):
        asic = entry.get('asic') if isinstance(entry.get('asic'), dict) else {}
        bus = entry.get('bus') if isinstance(entry.get('bus'), dict) else {}
        vram = entry.get('vram') if isinstance(entry.get('vram'), dict) else {}
        driver = entry.get('driver') if isinstance(entry.get('driver'), dict) else {}
        ras = entry.get('ras') if isinstance(entry.get('ras'), dict) else {}
        vbios = entry.get('vbios') if isinstance(entry.get('vbios'), dict) else (
            entry.get('ifwi') if isinstance(entry.get('ifwi'), dict) else {})
        part = entry.get('partition') if isinstance(entry.get('partition'), dict) else {}
        blocks = ras.get('ecc_block_state') if isinstance(ras.get('ecc_block_state'), dict) else {}
        gen_max = _gen_text(bus.get('pcie_interface_version'), source)
        if gen_max is None:
            gen_max = pcie_gen(_gts(bus.get('max_pcie_speed'), source, 'max_pcie_speed'))
        name = asic.get('market_name')
        return {
            'name': None if _is_na(name) else str(name),
            'bus_id': None if _is_na(bus.get('bdf')) else str(bus['bdf']),
            'serial': None if _is_na(asic.get('asic_serial')) else str(asic['asic_serial']),
            'memory_total_mib': _mib(vram.get('size'), source, 'vram.size'),
            'pcie_gen_max': gen_max,
            'pcie_width_max': _number(bus.get('max_pcie_width'), source, 'max_pcie_width'),
            'ecc_mode': _enabled(blocks.get('UMC', blocks.get('umc'))),
            'driver_version': None if _is_na(driver.get('version')) else str(driver['version']),
            'vbios_version': None if _is_na(vbios.get('version')) else str(vbios['version']),
            'compute_partition': None if _is_na(part.get('compute_partition')) else str(part['compute_partition']),
            'memory_partition': None if _is_na(part.get('memory_partition')) else str(part['memory_partition']),
        }

    by_index = _sections(source, text, data, one)
    devices = []
    for index in sorted(by_index):
        device = {'index': index}
        device.update(by_index[index])
        devices.append(device)
    versions = sorted(set(d['driver_version'] for d in devices if d.get('driver_version')))
    return {'devices': devices, 'driver_version': versions[0] if versions else None}


def _ecc_block(value, source):
    block = value if isinstance(value, dict) else {}
    out = {}
    for key, name in (('total_correctable_count', 'correctable'), ('correctable_count', 'correctable'),
                      ('total_uncorrectable_count', 'uncorrectable'), ('uncorrectable_count', 'uncorrectable'),
                      ('total_deferred_count', 'deferred'), ('deferred_count', 'deferred')):
        if key in block and name not in out:
            out[name] = _number(block[key], source, 'ecc.%s' % key)
    return out


@_guarded('amd-smi metric --json')
def parse_amd_metric(text):
    """``amd-smi metric --json``: ``{index: {pcie_gen_current, pcie_width_current, pcie_replay_count,
    ecc_errors: {volatile: {correctable, uncorrectable, deferred}}, temperature_c: {edge, hotspot, vram}}}``
    (index as a string). amdgpu's RAS counters count since the driver loaded: ``volatile``."""
    source = 'amd-smi metric --json'
    data = _load(source, text)

    def one(entry):
        out = {}
        pcie = entry.get('pcie')
        if isinstance(pcie, dict):
            out['pcie_width_current'] = _number(pcie.get('width'), source, 'pcie.width')
            out['pcie_gen_current'] = pcie_gen(_gts(pcie.get('speed'), source, 'pcie.speed'))
            out['pcie_replay_count'] = _number(pcie.get('replay_count'), source, 'pcie.replay_count')
        ecc = entry.get('ecc')
        if isinstance(ecc, dict):
            out['ecc_errors'] = {'volatile': _ecc_block(ecc, source)}
        blocks = entry.get('ecc_blocks')
        if isinstance(blocks, dict):
            out['ecc_blocks'] = dict((str(name).lower(), _ecc_block(value, source)) for name, value in blocks.items()
                                     if isinstance(value, dict))
        temp = entry.get('temperature')
        if isinstance(temp, dict):
            out['temperature_c'] = dict((key, _number(temp.get(src), source, 'temperature.%s' % src, integer=False))
                                        for key, src in (('edge', 'edge'), ('hotspot', 'hotspot'), ('vram', 'mem')))
        return out

    return dict((str(k), v) for k, v in _sections(source, text, data, one).items())


@_guarded('amd-smi bad-pages --json')
def parse_amd_bad_pages(text):
    """``amd-smi bad-pages --json``: ``{index: {retired, pending, unreservable}}`` page counts (0 for
    "No bad pages found.", None for N/A: the GPU has no bad page table)."""
    source = 'amd-smi bad-pages --json'
    data = _load(source, text)

    def count(value):
        if isinstance(value, str) and value.strip().lower().startswith('no bad pages'):
            return 0
        if _is_na(value):
            return None
        if isinstance(value, dict):
            return 1
        if isinstance(value, list):
            if not all(isinstance(v, dict) for v in value):
                raise ParseError(source, 'bad page list holds something that is not a page')
            return len(value)
        raise ParseError(source, 'bad page entry %r is not a page, a list of pages or "No bad pages found."'
                         % excerpt_value(value))

    def one(entry):
        return dict((name, count(entry.get(key))) for name, key in
                    (('retired', 'retired'), ('pending', 'pending'), ('unreservable', 'un_res')) if key in entry)

    return dict((str(k), v) for k, v in _sections(source, text, data, one).items())


_LINK_STATES = {'ENABLED': True, 'DISABLED': False, 'UP': True, 'U': True, 'DOWN': False, 'D': False}


def _link_record(source, link_type=None, status=None, hops=None, weight=None, bandwidth=None):
    rec = {'link_type': None if _is_na(link_type) else str(link_type).upper(),
           'status': None if _is_na(status) else str(status).upper(),
           'hops': None if _is_na(hops) else _number(hops, source, 'hops'),
           'weight': None if _is_na(weight) else _number(weight, source, 'weight')}
    rec['up'] = _LINK_STATES.get(rec['status']) if rec['status'] is not None else None
    if bandwidth is not None and not _is_na(bandwidth):
        rec['bandwidth'] = str(_value(bandwidth)[0])
    return rec


def _pair_key(a, b):
    return '%d-%d' % (min(a, b), max(a, b))


def _peer(source, name, text):
    match = re.match(r'^gpu_?([0-9]+)$', str(name))
    if not match:
        raise ParseError(source, 'peer %r is not gpu_<n>' % excerpt_value(name), text)
    return int_from_text(match.group(1), source, 'peer gpu', text, high=4095)


@_guarded('amd-smi topology --json')
def parse_amd_topology(text):
    """``amd-smi topology --json``: ``{"links": {"A-B": {"A->B": {link_type, status, up, hops, weight}, ...}},
    "bdf": {index: bdf}}``: every GPU pair (A < B) as each side reports it. Reads the per-link format
    (``links: [{gpu, link_type, link_status, num_hops, weight}]``) and the older per-table one
    (``link_type: {gpu_1: XGMI}``, ``link_accessibility``, ``hops``, ``weight``)."""
    source = 'amd-smi topology --json'
    data = _load(source, text)
    links = {}
    bdf = {}

    def one(entry):
        src = _index(source, entry, 0, text)
        if not _is_na(entry.get('bdf')):
            bdf[str(src)] = str(entry['bdf'])
        rows = []
        if isinstance(entry.get('links'), list):
            for link in entry['links']:
                if not isinstance(link, dict):
                    raise ParseError(source, 'a link of gpu%d is not an object' % src)
                dst = _index(source, link, 0, text)
                rows.append((dst, _link_record(source, link.get('link_type'), link.get('link_status'),
                                               link.get('num_hops'), link.get('weight'), link.get('bandwidth'))))
        elif isinstance(entry.get('link_type'), dict):
            table = dict((k, entry.get(k) if isinstance(entry.get(k), dict) else {})
                         for k in ('link_type', 'link_accessibility', 'hops', 'weight', 'numa_bandwidth'))
            for name, kind in table['link_type'].items():
                dst = _peer(source, name, text)
                rows.append((dst, _link_record(source, kind, table['link_accessibility'].get(name), table['hops'].get(name),
                                               table['weight'].get(name), table['numa_bandwidth'].get(name))))
        else:
            raise ParseError(source, 'gpu%d has neither "links" nor "link_type"' % src)
        return dict((dst, rec) for dst, rec in rows)

    for src, result in _sections(source, text, data, one).items():
        if 'parse_error' in result:
            links.setdefault('gpu%d' % src, {})['parse_error'] = result['parse_error']
            continue
        for dst, rec in result.items():
            if dst == src or rec.get('link_type') == 'SELF':
                continue
            links.setdefault(_pair_key(src, dst), {})['%d->%d' % (src, dst)] = rec
    return {'links': links, 'bdf': bdf}


@_guarded('amd-smi xgmi --json')
def parse_amd_xgmi(text):
    """``amd-smi xgmi --json``: ``{index: {link_type, bit_rate_gbps, max_bandwidth_gbps, links: {peer:
    {status, up}}}}``. Per-link states (``link_status`` of a link, or ``status`` list ``U``/``D``/``X``)
    are read where the tool prints them; None otherwise."""
    source = 'amd-smi xgmi --json'
    data = _load(source, text)
    if isinstance(data, dict) and isinstance(data.get('xgmi_metric'), list):
        data = data['xgmi_metric']

    def one(entry):
        metrics = entry.get('link_metrics') if isinstance(entry.get('link_metrics'), dict) else entry
        out = {'link_type': None if _is_na(metrics.get('link_type')) else str(metrics['link_type']).upper(),
               'bit_rate_gbps': _number(metrics.get('bit_rate'), source, 'bit_rate', integer=False),
               'max_bandwidth_gbps': _number(metrics.get('max_bandwidth'), source, 'max_bandwidth', integer=False),
               'links': {}}
        for position, link in enumerate(metrics.get('links') or []):
            if not isinstance(link, dict):
                raise ParseError(source, 'link %d is not an object' % position)
            dst = _index(source, link, position, text)
            status = link.get('link_status', link.get('status'))
            status = None if _is_na(status) else str(status).upper()
            out['links'][str(dst)] = {'status': status, 'up': _LINK_STATES.get(status) if status else None}
        return out

    return dict((str(k), v) for k, v in _sections(source, text, data, one).items())


@_guarded('amd-smi version')
def parse_amd_version(text):
    """``amd-smi version``: ``{tool, library, rocm}`` from ``AMDSMI Tool: 23.4.2+505b858 | AMDSMI Library
    version: 24.2.0.0 | ROCm version: 6.1.0``."""
    source = 'amd-smi version'
    if not isinstance(text, str):
        raise ParseError(source, 'expected text, got %s' % type(text).__name__, text)
    out = {'tool': None, 'library': None, 'rocm': None}
    found = False
    for part in text.replace('\n', '|').split('|'):
        if ':' not in part:
            continue
        key, value = [p.strip() for p in part.split(':', 1)]
        key = key.lower()
        value = None if _is_na(value) else value
        if key == 'amdsmi tool':
            out['tool'], found = value, True
        elif key.startswith('amdsmi library'):
            out['library'], found = value, True
        elif key.startswith('rocm version'):
            out['rocm'], found = value, True
    if not found:
        raise ParseError(source, 'no "AMDSMI Tool:" / "ROCm version:" fields', text)
    return out


# ---------------------------------------------------------------------------------------------
# rocm-smi (the fallback where amd-smi is not installed)

_CARD = re.compile(r'^card([0-9]+)$')


def _cards(source, data, text):
    if not isinstance(data, dict):
        raise ParseError(source, 'expected an object of cards, got %s' % type(data).__name__, text)
    cards = {}
    for name, value in data.items():
        match = _CARD.match(str(name))
        if match and isinstance(value, dict):
            cards[int_from_text(match.group(1), source, 'card index', text, high=4095)] = value
    return cards


def _rocm_field(card, *names):
    lowered = dict((str(k).strip().lower(), v) for k, v in card.items())
    for name in names:
        value = lowered.get(name.lower())
        if not _is_na(value):
            return value
    return None


@_guarded('rocm-smi --showallinfo --json')
def parse_rocm_smi_allinfo(text):
    """``rocm-smi --showallinfo --json``: the same ``{"devices": [...], "driver_version"}`` as
    parse_amd_static (what rocm-smi reports: name, bus_id, memory_total_mib, temperature_c); rocm-smi
    prints no ECC counters, PCIe generation or ECC mode in JSON: those stay None."""
    source = 'rocm-smi --showallinfo --json'
    data = _load(source, text)
    cards = _cards(source, data, text)
    if not cards and not (isinstance(data, dict) and 'system' in data):
        raise ParseError(source, 'no card<N> entries', text)
    devices = []
    for index in sorted(cards):
        card = cards[index]
        device = {'index': index}
        try:
            vram = _rocm_field(card, 'VRAM Total Memory (B)')
            temps = {}
            for key, names in (('edge', ('Temperature (Sensor edge) (C)',)),
                               ('hotspot', ('Temperature (Sensor junction) (C)',)),
                               ('vram', ('Temperature (Sensor memory) (C)', 'Temperature (Sensor HBM 0) (C)'))):
                temps[key] = _number(_rocm_field(card, *names), source, key, integer=False)
            name = _rocm_field(card, 'Card Series', 'Device Name', 'Card series', 'Card model')
            bus = _rocm_field(card, 'PCI Bus')
            device.update({
                'name': None if name is None else str(name),
                'bus_id': None if bus is None else str(bus),
                'serial': None if _rocm_field(card, 'Serial Number') is None else str(_rocm_field(card, 'Serial Number')),
                'memory_total_mib': None if vram is None else _number(str(vram), source, 'VRAM Total Memory (B)') // 1048576,
                'pcie_gen_max': None, 'pcie_width_max': None, 'ecc_mode': None,
                'driver_version': None, 'temperature_c': temps,
                'pcie_replay_count': _number(_rocm_field(card, 'PCIe Replay Count'), source, 'PCIe Replay Count'),
            })
        except ParseError as err:
            device['parse_error'] = section_error('gpu%d' % index, err.reason, json.dumps(card, sort_keys=True))
        devices.append(device)
    system = data.get('system') if isinstance(data.get('system'), dict) else {}
    driver = _rocm_field(system, 'Driver version')
    return {'devices': devices, 'driver_version': None if driver is None else str(driver)}


_TOPO_KEY = re.compile(r'^\(Topology\)\s+(Weight|Hops|Link type)\s+between\s+(?:DRM devices|two GPUs)\s+'
                       r'([0-9]+)\s+and\s+([0-9]+)\s*$', re.IGNORECASE)


@_guarded('rocm-smi --showtopo --json')
def parse_rocm_smi_topo(text):
    """``rocm-smi --showtopo --json``: the same ``{"links": {...}}`` as parse_amd_topology, from the
    ``(Topology) Link type between DRM devices A and B`` keys (rocm-smi prints no link state: None)."""
    source = 'rocm-smi --showtopo --json'
    data = _load(source, text)
    cards = _cards(source, data, text)
    if not cards:
        raise ParseError(source, 'no card<N> entries', text)
    rows = {}
    for _index_, card in sorted(cards.items()):
        for key, value in card.items():
            match = _TOPO_KEY.match(str(key))
            if not match:
                continue
            a = int_from_text(match.group(2), source, 'gpu', text, high=4095)
            b = int_from_text(match.group(3), source, 'gpu', text, high=4095)
            rows.setdefault((a, b), {})[match.group(1).lower()] = value
    if not rows:
        raise ParseError(source, 'no "(Topology) ... between" entries', text)
    links = {}
    for (a, b), fields in sorted(rows.items()):
        if a == b:
            continue
        links.setdefault(_pair_key(a, b), {})['%d->%d' % (a, b)] = _link_record(
            source, fields.get('link type'), None, fields.get('hops'), fields.get('weight'))
    return {'links': links, 'bdf': {}}


# ---------------------------------------------------------------------------------------------
# Assembly (used by the probe engine): one list of devices in the NVIDIA shape.

def merge_devices(static, metric=None, bad_pages=None):
    """The devices of parse_amd_static / parse_rocm_smi_allinfo with the per-GPU values of
    parse_amd_metric and parse_amd_bad_pages merged in (matched by index)."""
    devices = []
    for device in (static or {}).get('devices') or []:
        merged = dict(device)
        key = str(device.get('index'))
        extra = (metric or {}).get(key)
        if isinstance(extra, dict):
            for name, value in extra.items():
                if name == 'parse_error':
                    merged.setdefault('parse_error', value)
                else:
                    merged[name] = value
        pages = (bad_pages or {}).get(key)
        if isinstance(pages, dict):
            merged['bad_pages'] = dict((k, v) for k, v in pages.items() if k != 'parse_error')
            if 'parse_error' in pages:
                merged.setdefault('parse_error', pages['parse_error'])
        devices.append(merged)
    return devices


def _combine_up(values):
    if any(v is False for v in values):
        return False
    if values and all(v is True for v in values):
        return True
    return None


def pair_links(topology, xgmi=None):
    """Every GPU pair ``"A-B"`` (A < B) as one record: ``{link_type, up, hops, status, bit_rate_gbps,
    sides}``. ``link_type`` is XGMI only when both sides say so (else the other type one side reports),
    ``up`` is False when either side (topology link_status or xgmi link state) says down, True when every
    side read says up, None when no side reports a state; ``hops`` is the larger of the two."""
    links = {}
    rates = {}
    for index, entry in (xgmi or {}).items():
        if isinstance(entry, dict):
            rates[str(index)] = entry
    for pair, sides in sorted(((topology or {}).get('links') or {}).items()):
        if not isinstance(sides, dict) or 'parse_error' in sides:
            continue
        records = [rec for rec in sides.values() if isinstance(rec, dict)]
        types = [rec.get('link_type') for rec in records if rec.get('link_type')]
        other = [t for t in types if t != 'XGMI']
        ups = [rec.get('up') for rec in records if rec.get('up') is not None]
        a, b = pair.split('-', 1)
        for src, dst in ((a, b), (b, a)):
            state = ((rates.get(src) or {}).get('links') or {}).get(dst) or {}
            if state.get('up') is not None:
                ups.append(state['up'])
        hops = [rec.get('hops') for rec in records if isinstance(rec.get('hops'), int)]
        bit_rates = [(rates.get(i) or {}).get('bit_rate_gbps') for i in (a, b)]
        bit_rates = [r for r in bit_rates if r is not None]
        statuses = sorted(set(rec.get('status') for rec in records if rec.get('status')))
        links[pair] = {
            'link_type': other[0] if other else (types[0] if types else None),
            'up': _combine_up(ups),
            'status': '/'.join(statuses) if statuses else None,
            'hops': max(hops) if hops else None,
            'bit_rate_gbps': min(bit_rates) if bit_rates else None,
            'sides': sides,
        }
    return links
