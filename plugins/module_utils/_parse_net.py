# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for network tool output (private to the collection).

* :func:`parse_ip_link` - ``ip -j -d link show`` (iproute2 JSON)
* :func:`parse_ethtool` - ``ethtool IF``
* :func:`parse_ethtool_driver` - ``ethtool -i IF``
* :func:`parse_roce_ecn` - ``grep -H . /sys/class/net/IF/ecn/roce_{np,rp}/enable/*`` (mlx5)
* :func:`parse_dcb_pfc` - ``dcb -j pfc show dev IF`` (iproute2 JSON)
* :func:`parse_mlnx_qos` - ``mlnx_qos -i IF`` (MLNX_OFED / DOCA)
* :func:`parse_link_events` - link up/down events in the kernel log (``journalctl -k``, ``dmesg``)
* :func:`parse_route_get` - ``ip -j route get ADDR`` (iproute2 JSON) or ``ip route get ADDR`` (text)
* :func:`parse_mtu` - ``/sys/class/net/IF/mtu``
* :func:`parse_ip_addr` - ``ip -j addr show [scope global]`` (iproute2 JSON)

Each raises :class:`ParseError` on text that is not what the tool prints and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import (
    MAX_INT, SECTION_ERROR_KEY, ParseError, int_from_text, section_error,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._text import split_lines as _lines


def _not_finite(name):
    raise ValueError('%s is not a number JSON allows' % name)


def _json(text, source):
    body = '\n'.join(_lines(text, source)).strip()
    if not body:
        return None
    try:
        return json.loads(body, parse_constant=_not_finite)
    except ValueError as exc:
        raise ParseError(source, 'invalid JSON: %s' % exc, text)
    except RecursionError:
        raise ParseError(source, 'JSON nested too deeply', text)


# ---------------------------------------------------------------------------------------------
# ip -j -d link show

def _opt_str(entry, key, source, text):
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParseError(source, '%s is not a string: %r' % (key, value), text)
    return value


def parse_ip_link(text):
    """Parse ``ip -j [-d] link show``.

    Returns ``{ifname: {mtu, operstate, flags, link_type, address, kind, slave_kind, master,
    altnames, parentbus, parentdev}}``. ``kind`` is ``linkinfo.info_kind`` (``veth``, ``bridge``,
    ``ipoib``, ``bond``...; only ``ip -d`` prints it, ``None`` otherwise or for a plain NIC);
    ``slave_kind`` is ``linkinfo.info_slave_kind``; ``parentbus``/``parentdev`` are what ``ip -d``
    prints for the device (``pci``/``0000:17:00.0``). Missing keys are ``None``; ``flags`` and
    ``altnames`` are lists. Empty output or ``[]`` is ``{}``. JSON that is not a list of link
    objects with an ``ifname`` raises ``ParseError``; a field of the wrong type spoils only its
    interface: it is ``None`` (``[]`` for the lists) and the interface gets ``parse_error``
    (``_errors.section_error``, section = the interface name, the object as read).
    """
    data = _json(text, 'ip link')
    if data is None:
        return {}
    if not isinstance(data, list):
        raise ParseError('ip link', 'expected a JSON list of links', text)
    result = {}
    for entry in data:
        if not isinstance(entry, dict):
            raise ParseError('ip link', 'link entry is not an object: %r' % (entry,), text)
        name = entry.get('ifname')
        if not isinstance(name, str) or not name:
            raise ParseError('ip link', 'link entry without ifname', text)
        result[name] = _link(entry, name)
    return result


def _link(entry, name):
    """One link object; a field of the wrong type is ``None`` (lists: ``[]``) and names itself in ``parse_error``."""
    problems = []

    def field(check, default=None):
        try:
            return check()
        except ParseError as err:
            problems.append(err.reason)
            return default

    def checked_list(key):
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ParseError('ip link', '%s: %s is not a list of strings' % (name, key))
        return list(value)

    def checked_mtu():
        mtu = entry.get('mtu')
        if mtu is not None and (isinstance(mtu, bool) or not isinstance(mtu, int)):
            raise ParseError('ip link', '%s: mtu is not an integer: %r' % (name, mtu))
        if mtu is not None and not 0 <= mtu <= MAX_INT:
            raise ParseError('ip link', '%s: mtu %s is outside 0..2**64' % (name, str(mtu)[:40]))
        return mtu

    def checked_linkinfo():
        if not isinstance(entry.get('linkinfo') or {}, dict):
            raise ParseError('ip link', '%s: linkinfo is not an object' % name)
        return entry.get('linkinfo') or {}

    linkinfo = field(checked_linkinfo, {})
    link = {
        'mtu': field(checked_mtu),
        'operstate': field(lambda: _opt_str(entry, 'operstate', 'ip link', None)),
        'flags': field(lambda: checked_list('flags'), []),
        'link_type': field(lambda: _opt_str(entry, 'link_type', 'ip link', None)),
        'address': field(lambda: _opt_str(entry, 'address', 'ip link', None)),
        'kind': field(lambda: _opt_str(linkinfo, 'info_kind', 'ip link', None)),
        'slave_kind': field(lambda: _opt_str(linkinfo, 'info_slave_kind', 'ip link', None)),
        'master': field(lambda: _opt_str(entry, 'master', 'ip link', None)),
        'altnames': field(lambda: checked_list('altnames'), []),
        'parentbus': field(lambda: _opt_str(entry, 'parentbus', 'ip link', None)),
        'parentdev': field(lambda: _opt_str(entry, 'parentdev', 'ip link', None)),
    }
    if problems:
        try:
            read = json.dumps(entry, sort_keys=True)
        except (TypeError, ValueError):
            read = repr(entry)
        link[SECTION_ERROR_KEY] = section_error(name, '; '.join(problems)[:300], read)
    return link


# ---------------------------------------------------------------------------------------------
# ethtool IF

_SETTINGS_RE = re.compile(r'^Settings for (\S+?):\s*$')
_ETHTOOL_KV_RE = re.compile(r'^\s*([A-Za-z][A-Za-z0-9 ./()-]*?):\s*(.*?)\s*$')
_SPEED_RE = re.compile(r'^([0-9]+)\s*([MG])b/s$')
# messages ethtool prints (on stderr, sometimes merged) when it lacks privileges or support
_ETHTOOL_NOISE = ('Cannot get ', 'Cannot set ', 'netlink error:', 'netlink warning:', 'No data available')
_YES_NO = {'yes': True, 'no': False, 'on': True, 'off': False}


def _speed(value, text):
    if value.lower().startswith('unknown'):
        return None
    match = _SPEED_RE.match(value)
    if not match:
        raise ParseError('ethtool', 'unexpected Speed: %r' % value, text)
    number = int_from_text(match.group(1), 'ethtool', 'Speed', text, high=MAX_INT // 1000)
    return number * 1000 if match.group(2) == 'G' else number


def _duplex(value):
    low = value.lower()
    if low in ('full', 'half'):
        return low
    return None  # "Unknown! (255)"


def parse_ethtool(text):
    """Parse ``ethtool IF``.

    Returns ``{ifname, speed_mbps, duplex, link_detected, autoneg, port, lanes}``:
    ``speed_mbps`` int or ``None`` ("Unknown!"), ``duplex`` ``full``/``half``/``None``,
    ``link_detected`` and ``autoneg`` booleans (``None`` when not printed), ``port`` as ethtool
    names it (``Direct Attach Copper``, ``FIBRE``, ``Other``...), ``lanes`` int or ``None``.
    """
    lines = _lines(text, 'ethtool')
    result = {'ifname': None, 'speed_mbps': None, 'duplex': None, 'link_detected': None,
              'autoneg': None, 'port': None, 'lanes': None}
    seen = False
    for raw in lines:
        if not raw.strip():
            continue
        stripped = raw.strip()
        match = _SETTINGS_RE.match(stripped)
        if match:
            if result['ifname'] is not None:
                raise ParseError('ethtool', 'output covers several interfaces', text)
            result['ifname'] = match.group(1)
            seen = True
            continue
        if stripped.startswith(_ETHTOOL_NOISE):
            continue
        match = _ETHTOOL_KV_RE.match(raw)
        if not match:
            if raw[:1] in (' ', '\t') and seen:
                continue  # continuation of a multi-line value (link modes, message level)
            raise ParseError('ethtool', 'unexpected line: %r' % stripped[:80], text)
        if not seen:
            raise ParseError('ethtool', 'missing "Settings for IF:" header', text)
        key, value = match.group(1).strip().lower(), match.group(2)
        if key == 'speed':
            result['speed_mbps'] = _speed(value, text)
        elif key == 'duplex':
            result['duplex'] = _duplex(value)
        elif key == 'link detected':
            result['link_detected'] = _YES_NO.get(value.lower())
        elif key == 'auto-negotiation':
            result['autoneg'] = _YES_NO.get(value.lower())
        elif key == 'port':
            result['port'] = value or None
        elif key == 'lanes':
            result['lanes'] = int_from_text(value, 'ethtool', 'Lanes', text) if re.match(r'[0-9]+\Z', value) else None
    if not seen:
        raise ParseError('ethtool', 'missing "Settings for IF:" header', text)
    return result


# ---------------------------------------------------------------------------------------------
# ethtool -i IF

_DRIVER_KV_RE = re.compile(r'^([a-z][a-z-]*):\s?(.*?)\s*$')
_FW_RE = re.compile(r'^(\S+)(?:\s+\(([^)]*)\))?(?:\s.*)?$')


def parse_ethtool_driver(text):
    """Parse ``ethtool -i IF``.

    Returns ``{driver, version, firmware, psid, expansion_rom_version, bus_info}``. An empty
    field is ``None``. mlx5 prints ``firmware-version: 28.39.1002 (MT_0000000838)``: ``firmware``
    is the version (``28.39.1002``) and ``psid`` the board id in parentheses (``MT_0000000838``).
    """
    lines = _lines(text, 'ethtool -i')
    fields = {}
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.startswith(_ETHTOOL_NOISE):
            continue
        match = _DRIVER_KV_RE.match(line)
        if not match:
            raise ParseError('ethtool -i', 'unexpected line: %r' % line[:80], text)
        fields[match.group(1)] = match.group(2).strip() or None
    if 'driver' not in fields:
        raise ParseError('ethtool -i', 'no "driver:" line', text)
    firmware = fields.get('firmware-version')
    psid = None
    if firmware:
        match = _FW_RE.match(firmware)
        if match:
            firmware, psid = match.group(1), match.group(2) or None
    return {
        'driver': fields.get('driver'),
        'version': fields.get('version'),
        'firmware': firmware,
        'psid': psid,
        'expansion_rom_version': fields.get('expansion-rom-version'),
        'bus_info': fields.get('bus-info'),
    }


# ---------------------------------------------------------------------------------------------
# RoCE ECN sysfs knobs (mlx5)

# the sysfs root is /sys on a node; a container or a test double may mount it elsewhere (<root>/class/net/...)
_ECN_RE = re.compile(r'^(?:/[^\s:]*?)?/class/net/([^/\s]+)/ecn/roce_(np|rp)/([^/:\s]+)(?:/([0-9]+))?:\s*(.*?)\s*$')
_GREP_MSG_RE = re.compile(r'^grep: .*: (No such file or directory|Permission denied|Invalid argument|'
                          r'Operation not supported|Input/output error|No data available|Is a directory)$')


def parse_roce_ecn(text):
    """Parse ``grep -H . /sys/class/net/IF/ecn/roce_np/enable/* /sys/class/net/IF/ecn/roce_rp/enable/*``
    (and any other knob of that tree, e.g. ``roce_np/cnp_dscp``).

    Returns ``{"np": {"0": False, ..., "3": True}, "rp": {...}, "params": {"np": {"cnp_dscp": 48}, "rp": {}}}``:
    ``np``/``rp`` hold the ECN enable flag per priority (string keys), ``params`` every other knob
    (an integer where the file holds one, else its text). ``np`` is the notification point (the
    receiver sends CNPs), ``rp`` the reaction point (the sender slows down). ``grep:`` messages for
    missing files are ignored, so a NIC without these knobs gives empty maps. The sysfs root may be
    other than ``/sys``. Lines for more than one interface raise :class:`ParseError`.
    """
    lines = _lines(text, 'roce ecn')
    result = {'np': {}, 'rp': {}, 'params': {'np': {}, 'rp': {}}}
    ifname = None
    for raw in lines:
        line = raw.strip()
        if not line or _GREP_MSG_RE.match(line):
            continue
        match = _ECN_RE.match(line)
        if not match:
            raise ParseError('roce ecn', 'not an ecn sysfs line: %r' % line[:120], text)
        name, point, knob, prio, value = match.groups()
        if ifname is None:
            ifname = name
        elif name != ifname:
            raise ParseError('roce ecn', 'output covers several interfaces (%s, %s)' % (ifname, name), text)
        if knob != 'enable':
            if prio is None:
                result['params'][point][knob] = (int_from_text(value, 'roce ecn', knob, text) if value.isdigit()
                                                 else value[:80])
            continue
        if prio is None:
            continue
        if value not in ('0', '1'):
            raise ParseError('roce ecn', 'enable value is not 0/1: %r' % value, text)
        result[point][str(int_from_text(prio, 'roce ecn', 'priority', text, high=7))] = value == '1'
    return result


# ---------------------------------------------------------------------------------------------
# dcb -j pfc show dev IF

_ON_OFF = {'on': True, 'off': False, 'true': True, 'false': False}


def _flag(value, what, text):
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _ON_OFF:
        return _ON_OFF[value.lower()]
    raise ParseError('dcb pfc', '%s is not a boolean: %r' % (what, value), text)


def _opt_int(data, key, text):
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
        raise ParseError('dcb pfc', '%s is not an integer in 0..2**64: %s' % (key, str(value)[:40]), text)
    return value


def parse_dcb_pfc(text):
    """Parse ``dcb -j pfc show dev IF`` (iproute2 >= 5.11).

    iproute2 prints ``{"pfc_cap":8,"macsec_bypass":false,"delay":0,"prio_pfc":[false,false,false,
    true,false,false,false,false]}`` (``prio_pfc`` is an array indexed by priority; see
    ``dcb/dcb_pfc.c``). A ``prio_pfc`` object keyed by priority and ``"on"``/``"off"`` strings are
    accepted too. Returns ``{enabled_priorities: [3], prio_pfc: {"0": False, ...}, pfc_cap,
    macsec_bypass, delay}``.
    """
    data = _json(text, 'dcb pfc')
    if data is None:
        raise ParseError('dcb pfc', 'empty output', text)
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        raise ParseError('dcb pfc', 'expected a JSON object', text)
    prio = data.get('prio_pfc')
    if isinstance(prio, list):
        items = [(str(i), v) for i, v in enumerate(prio)]
    elif isinstance(prio, dict):
        items = list(prio.items())
    else:
        raise ParseError('dcb pfc', 'no prio_pfc array', text)
    prio_pfc = {}
    for key, value in items:
        if not isinstance(key, str) or not key.isdigit() or not key.isascii():
            raise ParseError('dcb pfc', 'priority is not a number: %r' % (key,), text)
        prio_pfc[str(int_from_text(key, 'dcb pfc', 'priority', text, high=7))] = _flag(value, 'prio_pfc[%s]' % key[:40], text)
    macsec = data.get('macsec_bypass')
    return {
        'enabled_priorities': sorted(int(k) for k, v in prio_pfc.items() if v),
        'prio_pfc': prio_pfc,
        'pfc_cap': _opt_int(data, 'pfc_cap', text),
        'macsec_bypass': None if macsec is None else _flag(macsec, 'macsec_bypass', text),
        'delay': _opt_int(data, 'delay', text),
    }


# ---------------------------------------------------------------------------------------------
# dcb -j app show dev IF dscp-prio

def _dscp_pair(pair, text):
    if isinstance(pair, dict):
        pair = [pair.get('dscp'), pair.get('prio')]
    if not isinstance(pair, list) or len(pair) != 2:
        raise ParseError('dcb app', 'a dscp_prio entry is not a [dscp, prio] pair: %s' % str(pair)[:60], text)
    dscp, prio = pair
    if isinstance(dscp, bool) or isinstance(prio, bool) or not isinstance(dscp, int) or not isinstance(prio, int):
        raise ParseError('dcb app', 'a dscp_prio entry is not two integers: %s' % str(pair)[:60], text)
    if not 0 <= dscp <= 63 or not 0 <= prio <= 7:
        raise ParseError('dcb app', 'dscp %s or priority %s out of range (0..63, 0..7)' % (dscp, prio), text)
    return dscp, prio


def parse_dcb_app(text):
    """Parse ``dcb -j app show dev IF dscp-prio`` (iproute2 >= 5.11).

    iproute2 prints the DSCP entries of the APP table as ``{"dscp_prio":[[24,3],[26,3]]}`` (pairs of
    DSCP and priority; one DSCP may map to several priorities); ``{"dscp": 24, "prio": 3}`` objects are
    accepted too, and an empty table may print ``{}``. Returns ``{dscp_prio: {"24": [3], ...}}``
    (priorities sorted). On mlx5, a non-empty DSCP table means the port trusts DSCP.
    """
    data = _json(text, 'dcb app')
    if data is None:
        raise ParseError('dcb app', 'empty output', text)
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        raise ParseError('dcb app', 'expected a JSON object', text)
    pairs = data.get('dscp_prio', [])
    if not isinstance(pairs, list):
        raise ParseError('dcb app', 'dscp_prio is not a list', text)
    table = {}
    for pair in pairs:
        dscp, prio = _dscp_pair(pair, text)
        table[str(dscp)] = sorted(set(table.get(str(dscp), []) + [prio]))
    return {'dscp_prio': table}


# ---------------------------------------------------------------------------------------------
# mlnx_qos -i IF

_TRUST_RE = re.compile(r'^Priority trust (?:state|mode)\s*:\s*(\S+)\s*$', re.I)
_DCBX_RE = re.compile(r'^DCBX mode\s*:\s*(.+?)\s*$', re.I)
_PFC_ROW_RE = re.compile(r'^(priority|enabled|buffer)((?:\s+[0-9]+)+)\s*$')
_TC_RE = re.compile(r'^tc:\s*([0-9]+)\s+ratelimit:\s*([^,]+),\s*tsa:\s*([a-z_]+)(?:,\s*bw:\s*([0-9]+)%)?', re.I)
_TC_PRIO_RE = re.compile(r'^priority:\s*([0-9]+)\s*$')
_DSCP2PRIO_RE = re.compile(r'^prio:\s*([0-9]+)\s+dscp:\s*([0-9, ]*?),?\s*$')


def parse_mlnx_qos(text):
    """Parse ``mlnx_qos -i IF``.

    Returns ``{enabled_priorities: [3], trust: "dscp"|"pcp"|None, dcbx_mode: str|None,
    pfc: {"0": False, ...}, buffer: {"0": 0, ...}, tc: {"3": {tsa, bw_percent, priorities}},
    dscp2prio: {"24": 3, ...}}`` (``dscp2prio`` from the "dscp2prio mapping" lines, empty when absent).
    ``trust`` is ``None`` on old tool versions that do not print it. The PFC table (``priority``
    / ``enabled`` rows under "PFC configuration:") is required.
    """
    lines = _lines(text, 'mlnx_qos')
    trust = None
    dcbx = None
    rows = {}
    tcs = {}
    dscp2prio = {}
    current_tc = None
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        match = _TRUST_RE.match(line)
        if match:
            trust = match.group(1).lower()
            continue
        match = _DCBX_RE.match(line)
        if match:
            dcbx = match.group(1)
            continue
        match = _PFC_ROW_RE.match(line)
        if match:
            rows[match.group(1)] = [int_from_text(v, 'mlnx_qos', match.group(1), text) for v in match.group(2).split()]
            continue
        match = _TC_RE.match(line)
        if match:
            current_tc = {'tsa': match.group(3).lower(),
                          'bw_percent': int_from_text(match.group(4), 'mlnx_qos', 'bw', text, high=100) if match.group(4) else None,
                          'ratelimit': match.group(2).strip(),
                          'priorities': []}
            tcs[str(int_from_text(match.group(1), 'mlnx_qos', 'tc', text, high=7))] = current_tc
            continue
        match = _TC_PRIO_RE.match(line)
        if match and current_tc is not None:
            current_tc['priorities'].append(int_from_text(match.group(1), 'mlnx_qos', 'priority', text, high=7))
            continue
        match = _DSCP2PRIO_RE.match(line)
        if match:
            prio = int_from_text(match.group(1), 'mlnx_qos', 'dscp2prio priority', text, high=7)
            for dscp in match.group(2).split(','):
                if dscp.strip():
                    dscp2prio[str(int_from_text(dscp.strip(), 'mlnx_qos', 'dscp', text, high=63))] = prio
            continue
        # buffer sizes, cable length and other lines are not needed here
    if 'enabled' not in rows:
        if not lines or not any(line.strip() for line in lines):
            raise ParseError('mlnx_qos', 'empty output', text)
        raise ParseError('mlnx_qos', 'no PFC configuration table ("enabled" row)', text)
    priorities = rows.get('priority') or list(range(len(rows['enabled'])))
    if len(priorities) != len(rows['enabled']):
        raise ParseError('mlnx_qos', 'PFC table rows differ in length', text)
    pfc = {}
    for prio, enabled in zip(priorities, rows['enabled']):
        if enabled not in (0, 1):
            raise ParseError('mlnx_qos', 'PFC enabled value is not 0/1: %r' % enabled, text)
        pfc[str(prio)] = enabled == 1
    buffers = {}
    if 'buffer' in rows and len(rows['buffer']) == len(priorities):
        buffers = dict((str(p), b) for p, b in zip(priorities, rows['buffer']))
    return {
        'enabled_priorities': sorted(int(p) for p, on in pfc.items() if on),
        'trust': trust,
        'dcbx_mode': dcbx,
        'pfc': pfc,
        'buffer': buffers,
        'tc': tcs,
        'dscp2prio': dscp2prio,
    }


# ---------------------------------------------------------------------------------------------
# Link events in the kernel log (journalctl -k -o short-iso or dmesg)

_IFNAME = r'[A-Za-z][A-Za-z0-9_.@-]*'
# (regex, state) in the order they are tried; each names the interface ``ifname`` or a PCI ``pci``.
_LINK_EVENTS = (
    # Intel igb/igc/ixgbe/i40e/ice/e1000e: "igc 0000:05:00.0 eth5: NIC Link is Down",
    # "igb 0000:00:14.0 eth0: igb: eth0 NIC Link is Up 1000 Mbps ...", "e1000e: eth0 NIC Link is Down"
    (re.compile(r'(?:^|\s)(?P<ifname>' + _IFNAME + r'):?\s+NIC Link is (?P<state>Up|Down)\b'), None),
    # mlx5e / mlxsw ("<pci> ens1f0np0: Link down", "swp1: link up"), phylink ("lan: Link is Down"), r8125 ("eth2: link down")
    (re.compile(r'(?:^|\s)(?P<ifname>' + _IFNAME + r'): [Ll]ink (?:is )?(?P<state>[Uu]p|[Dd]own)\b'), None),
    # bonding: "bond0: link status definitely down for interface eno50, disabling it"
    (re.compile(r'link status (?:definitely )?(?P<state>down|up) for interface (?P<ifname>' + _IFNAME + r')'), None),
    # carrier: "ib0: carrier lost", "eno2: Lost carrier"
    (re.compile(r'(?:^|\s)(?P<ifname>' + _IFNAME + r'): (?:[Cc]arrier lost|[Ll]ost carrier)\b'), 'down'),
    # mlx5 cable / module: "mlx5_core 0004:01:00.0: Port module event: module 0, Cable unplugged"
    (re.compile(r'(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): Port module event(?:\[error\])?: '
                r'module \d+, Cable (?P<state>plugged|unplugged|error)'), None),
)
# Words before ": link down" that are not network interfaces (SATA, PCIe hot-plug, USB).
_NOT_IFACES = re.compile(r'^(?:ata\d+(?:\.\d+)?|usb\d*|Slot|pcieport|SATA|ADDRCONF)$')
LINK_EVENT_LINES_KEPT = 5


def _link_state(state):
    state = state.lower()
    return 'up' if state in ('up', 'plugged') else 'down'


def parse_link_events(text):
    """Find link state changes of network interfaces in kernel log text.

    Returns ``{name: {down, up, last, lines}}``: ``down``/``up`` count the events in the log
    (``journalctl -k -b``: since boot), ``last`` is the state of the latest event, ``lines`` the last
    LINK_EVENT_LINES_KEPT event lines. ``name`` is the interface, or ``pci:<address>`` for an mlx5
    module (cable) event, which names no interface. Events recognised: ``NIC Link is Up/Down``
    (Intel drivers), ``<if>: Link up/down`` and ``Link is Up/Down`` (mlx5e, mlxsw, phylink, r8125),
    bonding's ``link status (definitely) down/up for interface <if>``, ``<if>: carrier lost`` /
    ``Lost carrier`` and mlx5 ``Port module event ... Cable plugged/unplugged/error``. Other lines are
    ignored: log text is free-form, so no text is an error (bytes are decoded leniently).
    """
    if text is None:
        return {}
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise ParseError('kernel log', 'expected text, got %s' % type(text).__name__, text)
    events = {}
    for raw in text.splitlines():
        low = raw.lower()
        if 'link' not in low and 'carrier' not in low and 'cable' not in low:
            continue
        for regex, fixed in _LINK_EVENTS:
            match = regex.search(raw)
            if not match:
                continue
            groups = match.groupdict()
            if groups.get('pci'):
                name = 'pci:%s' % groups['pci'].lower()
            elif _NOT_IFACES.match(groups['ifname']):
                break
            else:
                name = groups['ifname']
            state = fixed or _link_state(groups['state'])
            entry = events.setdefault(name, {'down': 0, 'up': 0, 'last': None, 'lines': []})
            entry[state] += 1
            entry['last'] = state
            entry['lines'] = (entry['lines'] + [raw.strip()])[-LINK_EVENT_LINES_KEPT:]
            break
    return events


# ---------------------------------------------------------------------------------------------
# ip [-j] route get ADDR, /sys/class/net/IF/mtu

# The route types ``ip route get`` prints before the destination (``unicast`` is left out).
ROUTE_TYPES = ('local', 'broadcast', 'multicast', 'unreachable', 'prohibit', 'blackhole', 'throw', 'nat',
               'anycast', 'unicast')
# Keys of the text form followed by one value (``ip route get`` prints ``KEY VALUE`` pairs after the destination).
_ROUTE_PAIRS = {'from': 'from', 'via': 'via', 'dev': 'dev', 'src': 'src', 'table': 'table', 'uid': 'uid',
                'proto': 'proto', 'metric': 'metric', 'pref': 'pref', 'iif': 'iif', 'oif': 'oif', 'mark': 'mark',
                'realms': 'realms', 'tos': 'tos', 'mtu': 'mtu', 'rtt': 'rtt', 'expires': 'expires'}


_ADDRESS_RE = re.compile(r'^[0-9A-Fa-f:.]*[.:][0-9A-Fa-f:.]*(/[0-9]+)?$')


def _route(dst, kind, dev, via, src, source, text):
    if not dev:
        raise ParseError(source, 'no output device (dev) in the route', text)
    return {'dst': dst, 'type': kind, 'dev': dev, 'via': via, 'src': src}


def _route_json(text, source):
    data = _json(text, source)
    if not isinstance(data, list) or len(data) != 1 or not isinstance(data[0], dict):
        raise ParseError(source, 'expected a JSON list with one route', text)
    entry = data[0]
    values = [_opt_str(entry, key, source, text) for key in ('dst', 'type', 'dev', 'gateway', 'prefsrc')]
    return _route(values[0], values[1] or 'unicast', values[2], values[3], values[4], source, text)


def parse_route_get(text):
    """Parse ``ip -j route get ADDR`` or ``ip route get ADDR``: the route the kernel takes to ``ADDR``.

    Returns ``{dst, type, dev, via, src}`` (``type`` ``unicast`` unless the route says ``local``, ...;
    ``via`` the gateway or None on a directly connected route). An error of ``ip`` (``RTNETLINK answers:
    Network is unreachable``) or a route without a device raises ParseError quoting what was read.
    """
    source = 'ip route get'
    lines = [line for line in _lines(text, source) if line.strip()]
    if not lines:
        raise ParseError(source, 'empty output', text)
    if lines[0].lstrip()[:1] in ('[', '{'):
        return _route_json(text, source)
    words = lines[0].split()
    kind = 'unicast'
    if words[0] in ROUTE_TYPES:
        kind = words.pop(0)
    if not words or not _ADDRESS_RE.match(words[0]):
        # not a route: ip's own error (``RTNETLINK answers: ...``, ``Cannot find device "ib0"``)
        raise ParseError(source, 'not a route: %s' % lines[0].strip()[:200], text)
    dst = words.pop(0)
    found = {}
    while words:
        word = words.pop(0)
        if word in _ROUTE_PAIRS and words:
            found.setdefault(_ROUTE_PAIRS[word], words.pop(0))
    return _route(dst, kind, found.get('dev'), found.get('via'), found.get('src'), source, text)


def parse_mtu(text):
    """Parse ``/sys/class/net/IF/mtu``: one integer (68 to 65536 on Linux, 0 on some virtual devices)."""
    source = '/sys/class/net/IF/mtu'
    lines = [line for line in _lines(text, source) if line.strip()]
    if len(lines) != 1:
        raise ParseError(source, 'expected one line with the MTU', text)
    return int_from_text(lines[0], source, 'mtu', text, low=0, high=1 << 20)


def is_ip_address(value):
    """True for an IPv4 or IPv6 address as text (no zone, no prefix, no blank or control character around it)."""
    if not isinstance(value, str) or not value or value != value.strip() or '%' in value or '/' in value:
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def parse_ip_addr(text):
    """Parse ``ip -j addr show [scope global]``: ``[{ifname, family, address, prefixlen, scope}]``, one per address.

    The empty objects iproute2 prints for addresses its filter left out are skipped.
    """
    source = 'ip -j addr show'
    data = _json(text, source)
    if data is None:
        return []
    if not isinstance(data, list):
        raise ParseError(source, 'expected a JSON list of interfaces', text)
    out = []
    for link in data:
        if not isinstance(link, dict) or not isinstance(link.get('ifname'), str):
            raise ParseError(source, 'an interface without ifname', text)
        infos = link.get('addr_info') or []
        if not isinstance(infos, list):
            raise ParseError(source, '%s: addr_info is not a list' % link['ifname'], text)
        for info in infos:
            if not isinstance(info, dict) or 'local' not in info:
                continue
            address = _opt_str(info, 'local', source, text)
            if not is_ip_address(address):
                # what a node prints here ends up in files and lines of other nodes (known_hosts): an address or nothing
                raise ParseError(source, '%s: %r is not an IP address' % (link['ifname'], (address or '')[:60]), text)
            prefix = info.get('prefixlen')
            if not isinstance(prefix, int) or isinstance(prefix, bool) or not 0 <= prefix <= 128:
                raise ParseError(source, '%s: prefixlen of %s is not a number' % (link['ifname'], address), text)
            out.append({'ifname': link['ifname'], 'family': _opt_str(info, 'family', source, text), 'address': address,
                        'prefixlen': prefix, 'scope': _opt_str(info, 'scope', source, text)})
    return out
