# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for host tool output (private to the collection).

* :func:`parse_os_release` - ``/etc/os-release``
* :func:`parse_uname` - ``uname -a``
* :func:`parse_proc_modules` - ``/proc/modules`` or ``lsmod``
* :func:`parse_chronyc_tracking` - ``chronyc tracking`` and ``chronyc -c tracking``
* :func:`parse_ss_listening` - ``ss -H -l -n -t -u -p``
* :func:`parse_df` - ``df -P -B1 PATH...``
* :func:`parse_ulimit_memlock` - ``ulimit -l``
* :func:`parse_lspci_acs` - ``lspci -vvv`` (PCIe Access Control Services)
* :func:`parse_nccl_version` - ``ncclGetVersion`` code or an NCCL version banner
* :func:`parse_nccl_library` - which ``libnccl.so.2`` the node probe judged and how it was found
* :func:`parse_ps` - ``ps -e -ww -o pid=,ppid=,user:32=,etimes=,args=`` (the process list)
* :func:`parse_modprobe_config` - modprobe.d files as ``grep -H -a -e '' FILE...`` prints them
* :func:`parse_kernel_cmdline` - ``/proc/cmdline``
* :func:`parse_modinfo` - ``modinfo MODULE``
* :func:`parse_meminfo` - ``/proc/meminfo`` (memory headroom, swap, huge pages)
* :func:`parse_proc_mounts` - ``/proc/mounts`` (which file system holds a path, local or shared)
* :func:`parse_storage_read` - the bounded read of a dataset path (the node probe's internal ``storage_read:<path>``)

Each raises :class:`ParseError` on text that is not what the tool prints and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import re
import time

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import (
    MAX_INT, SECTION_ERROR_KEY, ParseError, float_from_text, int_from_text, section_error,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._commands import HEADER_RE as _PS_HEADER_RE, ROW_RE as _PS_ROW_RE, is_kernel_thread
from ansible_collections.xuanwu.cluster.plugins.module_utils._text import split_lines as _lines


def _nonblank(text, source):
    return [line for line in _lines(text, source) if line.strip()]


# ---------------------------------------------------------------------------------------------
# /etc/os-release

_OS_KV_RE = re.compile(r'^([A-Z][A-Z0-9_]*)=(.*)$')


def _unquote(value, text):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
        inner = value[1:-1]
        if value[0] == '"':
            inner = re.sub(r'\\([\\"$`])', r'\1', inner)
        return inner
    if value[:1] in ('"', "'"):
        raise ParseError('os-release', 'unterminated quote: %r' % value[:80], text)
    return value


def parse_os_release(text):
    """Parse ``/etc/os-release`` (or ``/usr/lib/os-release``).

    Returns ``{id, id_like: [..], version_id, pretty_name, name, version, version_codename}``;
    a key the file does not set is ``None`` (``id_like`` ``[]``). ``id`` and ``id_like`` are
    lower-cased.
    """
    fields = {}
    for raw in _nonblank(text, 'os-release'):
        line = raw.strip()
        if line.startswith('#'):
            continue
        match = _OS_KV_RE.match(line)
        if not match:
            raise ParseError('os-release', 'not a KEY=value line: %r' % line[:80], text)
        fields[match.group(1)] = _unquote(match.group(2), text)
    if not fields:
        raise ParseError('os-release', 'no KEY=value lines', text)
    if not any(key in fields for key in ('ID', 'NAME', 'PRETTY_NAME', 'VERSION_ID')):
        raise ParseError('os-release', 'none of ID, NAME, PRETTY_NAME, VERSION_ID is set', text)

    def get(key):
        return fields.get(key) or None

    return {
        'id': get('ID').lower() if get('ID') else None,
        'id_like': [item.lower() for item in (fields.get('ID_LIKE') or '').split()],
        'version_id': get('VERSION_ID'),
        'pretty_name': get('PRETTY_NAME'),
        'name': get('NAME'),
        'version': get('VERSION'),
        'version_codename': get('VERSION_CODENAME'),
    }


# ---------------------------------------------------------------------------------------------
# uname -a

_ARCH_RE = re.compile(r'^(x86_64|amd64|i[3-6]86|aarch64|aarch64_be|arm64|armv[0-9][a-z0-9]*|ppc64le|ppc64|ppc|'
                      r's390x|s390|riscv64|riscv32|mips[a-z0-9]*|loongarch64|sparc64|sparc|ia64|alpha|'
                      r'sh4|m68k|parisc64|parisc|unknown)$')
_OS_NAMES = ('GNU/Linux', 'Linux', 'Android', 'GNU', 'GNU/kFreeBSD', 'Toybox')


def parse_uname(text):
    """Parse ``uname -a``.

    GNU ``uname -a`` prints kernel-name, nodename, kernel-release, kernel-version (several words),
    machine, processor and hardware-platform (both left out when "unknown") and operating-system:
    ``Linux vm 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0 x86_64 GNU/Linux``. Returns
    ``{kernel_name, hostname, release, version, machine, operating_system}``; ``machine`` is
    ``None`` when uname printed ``unknown`` or no architecture word could be found.
    """
    lines = _nonblank(text, 'uname')
    if len(lines) != 1:
        raise ParseError('uname', 'expected one line, got %d' % len(lines), text)
    tokens = lines[0].split()
    if len(tokens) < 4:
        raise ParseError('uname', 'too few fields', text)
    if not re.match(r'^[A-Za-z][A-Za-z0-9_/.-]*$', tokens[0]) or not re.search(r'[0-9]', tokens[2]):
        raise ParseError('uname', 'not uname -a output', text)
    tail = tokens[3:]
    operating_system = None
    if tail and (tail[-1] in _OS_NAMES or '/' in tail[-1]) and not _ARCH_RE.match(tail[-1]):
        operating_system = tail.pop()
    arch = []
    while tail and len(arch) < 3 and _ARCH_RE.match(tail[-1]):
        arch.insert(0, tail.pop())
    machine = arch[0] if arch else None
    if machine == 'unknown':
        machine = None
    return {
        'kernel_name': tokens[0],
        'hostname': tokens[1],
        'release': tokens[2],
        'version': ' '.join(tail) or None,
        'machine': machine,
        'operating_system': operating_system,
    }


# ---------------------------------------------------------------------------------------------
# /proc/modules, lsmod

_MODULE_RE = re.compile(r'^([A-Za-z0-9_-]+)\s+([0-9]+)(?:\s+(?:[0-9]+|-)(?:\s.*)?)?$')
_LSMOD_HEADER_RE = re.compile(r'^Module\s+Size\s+Used\s+by\s*$')


def parse_proc_modules(text):
    """Parse ``/proc/modules`` (``name size refcount deps state address [taint]``) or ``lsmod``.

    Returns the sorted list of loaded module names (``-`` normalised to ``_`` as the kernel
    does). Empty output is ``[]``.
    """
    names = set()
    for raw in _nonblank(text, 'modules'):
        line = raw.strip()
        if _LSMOD_HEADER_RE.match(line):
            continue
        match = _MODULE_RE.match(line)
        if not match:
            raise ParseError('modules', 'not a module line: %r' % line[:80], text)
        names.add(match.group(1).replace('-', '_'))
    return sorted(names)


# ---------------------------------------------------------------------------------------------
# chronyc tracking

_CHRONY_LEAP = ('Normal', 'Insert second', 'Delete second', 'Not synchronised', 'Invalid')
_SYNCED_LEAP = ('Normal', 'Insert second', 'Delete second')
# chronyd's own clock when the `local` directive serves time without a source (127.127.1.1)
_LOCAL_REFIDS = ('00000000', '7F7F0101')
_CHRONY_ERROR_RE = re.compile(r'^5[0-9][0-9] [A-Za-z].*$')
_CHRONY_KV_RE = re.compile(r'^([A-Za-z][A-Za-z ()]*?)\s*:\s*(.*?)\s*$')
_REFID_RE = re.compile(r'^([0-9A-Fa-f]{8})(?:\s+\((.*)\))?$')
_NUM = r'[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?'
_SYSTIME_RE = re.compile(r'^(' + _NUM + r') seconds (fast|slow) of NTP time$')
_FREQ_RE = re.compile(r'^(' + _NUM + r') ppm (fast|slow)$')
_SECONDS_RE = re.compile(r'^(' + _NUM + r') seconds$')
_PPM_RE = re.compile(r'^(' + _NUM + r') ppm$')
_FLOAT_RE = re.compile(_NUM + r'\Z')
_UINT_RE = re.compile(r'[0-9]+\Z')


def _chrony_float(value, what, text):
    if not _FLOAT_RE.match(value):
        raise ParseError('chronyc tracking', '%s is not a number: %r' % (what, value[:40]), text)
    return float_from_text(value, 'chronyc tracking', what, text)


def _match_num(regex, value, what, text):
    match = regex.match(value)
    if not match:
        raise ParseError('chronyc tracking', 'unexpected %s: %r' % (what, value[:60]), text)
    return float_from_text(match.group(1), 'chronyc tracking', what, text), (match.group(2) if regex.groups > 1 else None)


def _tracking_result(refid, name, stratum, ref_time, offset, last, rms, freq, resid, skew,
                     delay, dispersion, interval, leap):
    refid = refid.upper()
    return {
        'synchronised': leap in _SYNCED_LEAP and 1 <= stratum <= 15 and refid not in _LOCAL_REFIDS,
        'leap_status': leap,
        'stratum': stratum,
        'reference': refid,
        'reference_name': name or None,
        'ref_time_epoch': ref_time,
        'offset_seconds': offset + 0.0,
        'last_offset_seconds': last,
        'rms_offset_seconds': rms,
        'frequency_ppm': None if freq is None else freq + 0.0,
        'residual_frequency_ppm': resid,
        'skew_ppm': skew,
        'root_delay_seconds': delay,
        'root_dispersion_seconds': dispersion,
        'update_interval_seconds': interval,
    }


def _parse_tracking_csv(line, text):
    fields = line.split(',')
    if len(fields) != 14:
        raise ParseError('chronyc tracking', 'CSV line has %d fields, expected 14' % len(fields), text)
    refid, name, stratum = fields[0], fields[1], fields[2]
    if not _REFID_RE.match(refid) or ' ' in refid:
        raise ParseError('chronyc tracking', 'bad reference id %r' % refid, text)
    if not _UINT_RE.match(stratum):
        raise ParseError('chronyc tracking', 'bad stratum %r' % stratum, text)
    nums = [_chrony_float(v, 'field %d' % (i + 3), text) for i, v in enumerate(fields[3:13])]
    leap = fields[13].strip()
    if leap not in _CHRONY_LEAP:
        raise ParseError('chronyc tracking', 'unknown leap status %r' % leap, text)
    # CSV prints chronyd's "current correction": positive means the system clock is *slow*
    # (client.c prints "%.9O" as "slow" when the value is > 0), hence the sign flip.
    return _tracking_result(refid, name, int_from_text(stratum, 'chronyc tracking', 'stratum', text), nums[0], -nums[1], nums[2], nums[3], nums[4],
                            nums[5], nums[6], nums[7], nums[8], nums[9], leap)


def _ref_time(value):
    try:
        return float(calendar.timegm(time.strptime(value, '%a %b %d %H:%M:%S %Y')))
    except (ValueError, OverflowError):
        return None


def _parse_tracking_text(lines, text):
    fields = {}
    for raw in lines:
        match = _CHRONY_KV_RE.match(raw.strip())
        if not match:
            raise ParseError('chronyc tracking', 'unexpected line: %r' % raw.strip()[:80], text)
        fields[match.group(1).lower()] = match.group(2)
    required = ('reference id', 'stratum', 'system time', 'leap status')
    missing = [key for key in required if key not in fields]
    if missing:
        raise ParseError('chronyc tracking', 'missing %s' % ', '.join(missing), text)
    match = _REFID_RE.match(fields['reference id'])
    if not match:
        raise ParseError('chronyc tracking', 'bad Reference ID %r' % fields['reference id'], text)
    refid, name = match.group(1), match.group(2)
    if not _UINT_RE.match(fields['stratum']):
        raise ParseError('chronyc tracking', 'bad Stratum %r' % fields['stratum'], text)
    leap = fields['leap status']
    if leap not in _CHRONY_LEAP:
        raise ParseError('chronyc tracking', 'unknown leap status %r' % leap, text)
    value, word = _match_num(_SYSTIME_RE, fields['system time'], 'System time', text)
    offset = value if word == 'fast' else -value

    def opt(key, regex):
        if key not in fields:
            return None, None
        return _match_num(regex, fields[key], key, text)

    freq, freq_word = opt('frequency', _FREQ_RE)
    if freq is not None and freq_word == 'slow':
        freq = -freq
    return _tracking_result(
        refid, name, int_from_text(fields['stratum'], 'chronyc tracking', 'Stratum', text),
        _ref_time(fields['ref time (utc)']) if 'ref time (utc)' in fields else None,
        offset,
        opt('last offset', _SECONDS_RE)[0],
        opt('rms offset', _SECONDS_RE)[0],
        freq,
        opt('residual freq', _PPM_RE)[0],
        opt('skew', _PPM_RE)[0],
        opt('root delay', _SECONDS_RE)[0],
        opt('root dispersion', _SECONDS_RE)[0],
        opt('update interval', _SECONDS_RE)[0],
        leap)


def parse_chronyc_tracking(text):
    """Parse ``chronyc tracking`` or ``chronyc -c tracking`` (CSV).

    Returns ``{synchronised, leap_status, stratum, reference, reference_name, ref_time_epoch,
    offset_seconds, last_offset_seconds, rms_offset_seconds, frequency_ppm,
    residual_frequency_ppm, skew_ppm, root_delay_seconds, root_dispersion_seconds,
    update_interval_seconds}``.

    Sign convention: ``offset_seconds > 0`` means the system clock is ahead of NTP time ("fast").
    The text form says so in words ("0.000012 seconds fast of NTP time"); the CSV form prints
    chronyd's correction, which is positive when the clock is slow, so its sign is flipped.
    ``last_offset_seconds`` keeps chronyc's sign (positive = local clock was ahead).
    ``frequency_ppm > 0`` means the clock would run fast without correction ("ppm fast").

    ``synchronised`` is true when the leap status is Normal (or a pending leap second), the
    stratum is 1..15 and the reference id is neither ``00000000`` (no reference) nor
    ``7F7F0101`` (chronyd's ``local`` directive: it serves its own unsynchronised clock).

    ``5xx`` replies (``506 Cannot talk to daemon``) raise :class:`ParseError`.
    """
    lines = _nonblank(text, 'chronyc tracking')
    if not lines:
        raise ParseError('chronyc tracking', 'empty output', text)
    for line in lines:
        if _CHRONY_ERROR_RE.match(line.strip()):
            raise ParseError('chronyc tracking', 'chronyc error: %s' % line.strip()[:120], text)
    if len(lines) == 1 and ',' in lines[0] and ' : ' not in lines[0]:
        return _parse_tracking_csv(lines[0].strip(), text)
    return _parse_tracking_text(lines, text)


# ---------------------------------------------------------------------------------------------
# ss -H -l -n -t -u -p

_NETIDS = ('tcp', 'udp', 'raw', 'sctp', 'mptcp', 'dccp', 'u_str', 'u_dgr', 'u_seq', 'p_raw', 'p_dgr',
           'nl', 'tipc', 'v_str', 'v_dgr', 'xdp', 'icmp6', 'u_stream', 'u_dgram', 'u_seqpacket')
_SS_STATES = ('LISTEN', 'UNCONN', 'ESTAB', 'SYN-SENT', 'SYN-RECV', 'FIN-WAIT-1', 'FIN-WAIT-2',
              'TIME-WAIT', 'CLOSE-WAIT', 'LAST-ACK', 'CLOSING', 'CLOSED', 'UNKNOWN', 'BOUND')
_SS_HEADER_RE = re.compile(r'^(Netid\s+)?State\s+Recv-Q\s+Send-Q\s+Local\s+Address:Port')
_SS_USER_RE = re.compile(r'\("((?:[^"\\]|\\.)*)",pid=([0-9]+)')


def _split_endpoint(endpoint, text):
    """``0.0.0.0:22`` / ``[::]:22`` / ``*:22`` / ``127.0.0.53%lo:53`` / ``[fe80::1]%eth0:546``."""
    if ':' not in endpoint:
        raise ParseError('ss', 'address without port: %r' % endpoint, text)
    address, port = endpoint.rsplit(':', 1)
    interface = None
    if '%' in address:
        address, interface = address.split('%', 1)
    if address.startswith('[') and address.endswith(']'):
        address = address[1:-1]
    if not address:
        raise ParseError('ss', 'empty address in %r' % endpoint, text)
    if port == '*':
        port = None
    elif port.isdigit() and port.isascii():
        port = int_from_text(port, 'ss', 'port', text, high=65535)
    else:
        raise ParseError('ss', 'port is not numeric (run ss with -n): %r' % endpoint, text)
    return address, port, interface or None


def parse_ss_listening(text):
    """Parse ``ss -H -l -n -t -u -p`` (a header line, as printed without ``-H``, is skipped).

    Returns ``[{proto, state, address, port, interface, process, pid, recv_q, send_q}]`` in output
    order. ``address`` is without brackets (``::``, ``0.0.0.0``, ``*``); ``interface`` is the
    ``%dev`` scope (``127.0.0.53%lo`` -> ``lo``); ``port`` is ``None`` for ``*``. ``process`` and
    ``pid`` come from the first entry of ``users:((...))`` (``None`` without ``-p`` or when not
    root). ``proto`` is ``None`` when ss leaves out the Netid column (only one protocol asked for).
    """
    result = []
    for raw in _nonblank(text, 'ss'):
        line = raw.strip()
        if _SS_HEADER_RE.match(line):
            continue
        tokens = line.split()
        proto = None
        if tokens and tokens[0] in _NETIDS:
            proto = tokens.pop(0)
        if len(tokens) < 5 or tokens[0] not in _SS_STATES:
            raise ParseError('ss', 'unexpected line: %r' % line[:100], text)
        state, recv_q, send_q, local = tokens[0], tokens[1], tokens[2], tokens[3]
        if not (recv_q.isdigit() and send_q.isdigit() and recv_q.isascii() and send_q.isascii()):
            raise ParseError('ss', 'queue sizes are not numbers: %r' % line[:100], text)
        address, port, interface = _split_endpoint(local, text)
        rest = ' '.join(tokens[5:])
        users = _SS_USER_RE.findall(rest)
        process, pid = None, None
        if users:
            process, pid = users[0][0], int_from_text(users[0][1], 'ss', 'pid', text)
        result.append({
            'proto': proto,
            'state': state,
            'address': address,
            'port': port,
            'interface': interface,
            'process': process,
            'pid': pid,
            'recv_q': int_from_text(recv_q, 'ss', 'Recv-Q', text),
            'send_q': int_from_text(send_q, 'ss', 'Send-Q', text),
        })
    return result


# ---------------------------------------------------------------------------------------------
# df -P -B1

_DF_HEADER_RE = re.compile(r'^Filesystem\s+([0-9]+)([KMGTPE]i?B?|B)?-blocks\s+Used\s+Avail(?:able)?\s+'
                           r'(?:Capacity|Use%)\s+Mounted on\s*$')
_DF_ROW_RE = re.compile(r'^(\S.*?)\s+([0-9]+|-)\s+([0-9]+|-)\s+([0-9]+|-)\s+([0-9]+%|-)\s+(/.*?)\s*$')
_DF_UNITS = {'': 1, 'B': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3, 'T': 1024 ** 4, 'P': 1024 ** 5,
             'E': 1024 ** 6}


# ---------------------------------------------------------------------------------------------
# /proc/net/{tcp,tcp6,udp,udp6}: the listening sockets where ss is not installed

_PROC_NET_SECTION = re.compile(r'^== /proc/net/(tcp6?|udp6?)$')
_PROC_NET_STATES = {'tcp': {'0A': 'LISTEN'}, 'udp': {'07': 'UNCONN'}}


def _proc_net_address(hexaddr, text):
    """``0100007F`` -> ``127.0.0.1``, 32 hex digits -> an IPv6 address: the kernel prints each 32-bit word in the
    host's byte order (little-endian on x86_64 and aarch64)."""
    import ipaddress
    if len(hexaddr) not in (8, 32) or not re.match(r'^[0-9A-Fa-f]+$', hexaddr):
        raise ParseError('/proc/net', 'local_address is not 8 or 32 hex digits: %r' % hexaddr, text)
    raw = bytearray.fromhex(hexaddr)
    words = b''.join(bytes(raw[i:i + 4][::-1]) for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def parse_proc_net_listening(text):
    """Parse ``/proc/net/tcp``, ``tcp6``, ``udp`` and ``udp6`` as the probe reads them (each file after a line
    ``== /proc/net/<name>``) into the shape of ``parse_ss_listening``: the TCP sockets in state LISTEN (``0A``) and the
    UDP sockets that are bound but not connected (``07``, ss's UNCONN), ``proto`` tcp or udp, ``process`` and ``pid``
    ``None`` (the files do not name them), ``recv_q``/``send_q`` from ``rx_queue``/``tx_queue``. Empty text (no such
    file) gives ``[]``.
    """
    result = []
    proto = None
    for raw in _lines(text, '/proc/net'):
        line = raw.strip()
        if not line:
            continue
        section = _PROC_NET_SECTION.match(line)
        if section:
            proto = section.group(1).rstrip('6')
            continue
        if line.startswith('sl ') or line.startswith('sl\t'):
            continue
        if proto is None:
            raise ParseError('/proc/net', 'a line before any "== /proc/net/<name>" line: %r' % line[:80], text)
        fields = line.split()
        if len(fields) < 5 or not fields[0].endswith(':') or ':' not in fields[1] or ':' not in fields[4]:
            raise ParseError('/proc/net', 'unexpected line: %r' % line[:100], text)
        state = _PROC_NET_STATES[proto].get(fields[3].upper())
        if state is None:
            continue
        hexaddr, hexport = fields[1].split(':', 1)
        tx_queue, rx_queue = fields[4].split(':', 1)
        try:
            port, recv_q, send_q = int(hexport, 16), int(rx_queue, 16), int(tx_queue, 16)
        except ValueError:
            raise ParseError('/proc/net', 'port or queue is not hexadecimal: %r' % line[:100], text)
        if not 0 <= port <= 65535:
            raise ParseError('/proc/net', 'port out of range: %r' % line[:100], text)
        if recv_q > MAX_INT or send_q > MAX_INT:
            raise ParseError('/proc/net', 'queue size out of range: %r' % line[:100], text)
        result.append({'proto': proto, 'state': state, 'address': _proc_net_address(hexaddr, text), 'port': port,
                       'interface': None, 'process': None, 'pid': None, 'recv_q': recv_q, 'send_q': send_q})
    return result


def parse_df(text):
    """Parse ``df -P -B1 PATH...`` (POSIX format).

    Returns ``[{filesystem, size_bytes, used_bytes, free_bytes, use_percent, mount}]`` in output
    order. The block size is read from the header (``1-blocks``, ``1024-blocks``, ``1K-blocks``)
    so plain ``df -P`` works as well; ``-`` values are ``None``. ``df: PATH: ...`` error messages
    are skipped. Empty output is ``[]``.
    """
    factor = 1
    result = []
    for raw in _nonblank(text, 'df'):
        line = raw.strip()
        if line.startswith('df: '):
            continue
        header = _DF_HEADER_RE.match(line)
        if header:
            unit = (header.group(2) or '').replace('iB', '').replace('B', '') or ''
            factor = int_from_text(header.group(1), 'df', 'block size', text, low=1) * _DF_UNITS.get(unit, 1)
            continue
        match = _DF_ROW_RE.match(line)
        if not match:
            raise ParseError('df', 'unexpected line: %r' % line[:100], text)
        fs, size, used, avail, percent, mount = match.groups()

        def num(value):
            return None if value == '-' else int_from_text(value, 'df', 'block count', text, high=MAX_INT // factor) * factor

        result.append({
            'filesystem': fs,
            'size_bytes': num(size),
            'used_bytes': num(used),
            'free_bytes': num(avail),
            'use_percent': None if percent == '-' else int_from_text(percent[:-1], 'df', 'use%', text),
            'mount': mount,
        })
    return result


# ---------------------------------------------------------------------------------------------
# ulimit -l

def parse_ulimit_memlock(text):
    """Parse ``ulimit -l``: ``unlimited`` -> ``{"unlimited": True, "kib": None}``, ``8192`` ->
    ``{"unlimited": False, "kib": 8192}`` (bash reports the locked-memory limit in KiB)."""
    lines = _nonblank(text, 'ulimit -l')
    if len(lines) != 1:
        raise ParseError('ulimit -l', 'expected one line, got %d' % len(lines), text)
    value = lines[0].strip()
    if value == 'unlimited':
        return {'unlimited': True, 'kib': None}
    if value.isdigit() and value.isascii():
        return {'unlimited': False, 'kib': int_from_text(value, 'ulimit -l', 'locked-memory limit', text)}
    raise ParseError('ulimit -l', 'not a number or "unlimited": %r' % value[:80], text)


# ---------------------------------------------------------------------------------------------
# lspci -vvv (ACS)

_PCI_DEV_RE = re.compile(r'^((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.*)$')
_ACS_CAP_RE = re.compile(r'^Capabilities:\s*\[[0-9a-fA-F]+(?:\s+v[0-9]+)?\]\s+Access Control Services\s*$')
_ACS_LINE_RE = re.compile(r'^ACS(Cap|Ctl):\s*(.*)$')
_ACS_FLAG_RE = re.compile(r'([A-Za-z]+)([+-])')
_ACS_FLAGS = ('SrcValid', 'TransBlk', 'ReqRedir', 'CmpltRedir', 'UpstreamFwd', 'EgressCtrl', 'DirectTrans')
_ACS_P2P_BREAKERS = ('SrcValid', 'ReqRedir', 'CmpltRedir', 'UpstreamFwd')


def _acs_flags(value):
    found = dict(_ACS_FLAG_RE.findall(value))
    return dict((flag, None if flag not in found else found[flag] == '+') for flag in _ACS_FLAGS)


def parse_lspci_acs(text):
    """Read the PCIe Access Control Services state from ``lspci -vvv`` (run as root).

    Returns ``{checked, access_denied, devices: {bdf: {SrcValid, TransBlk, ReqRedir, CmpltRedir,
    UpstreamFwd, EgressCtrl, DirectTrans}}, names: {bdf: description}, enabled: [bdf, ...]}``.
    ``devices`` holds the ``ACSCtl`` (control, i.e. what is switched on) flags of every function
    that has the ACS capability; a flag lspci did not print is ``None``. ``enabled`` lists, in
    output order, the functions where any of SrcValid/ReqRedir/CmpltRedir/UpstreamFwd is on: those
    redirect peer-to-peer traffic to the root complex and break GPUDirect P2P/RDMA through a PCIe
    switch. BDFs are lower-case with a domain (``00:01.0`` -> ``0000:00:01.0``).

    ``checked`` is true when lspci listed devices and could read their capabilities;
    ``access_denied`` is true when lspci printed ``Capabilities: <access denied>`` (not root), in
    which case ``checked`` is false. ``lspci:``/``pcilib:`` warnings are ignored. Text before the
    first device raises ``ParseError``; after it, a line at column 0 that is not a device header
    (and the indented lines under it) is skipped and recorded as ``parse_error``
    (``_errors.section_error``, section ``after <bdf of the device before it>``), the other devices
    are read as usual.
    """
    devices = {}
    names = {}
    enabled = []
    current = None
    in_acs = False
    seen_device = False
    denied = False
    odd, last = [], None
    for raw in _lines(text, 'lspci'):
        if not raw.strip():
            current, in_acs = None, False
            continue
        if raw[:1] not in (' ', '\t'):
            line = raw.strip()
            if line.startswith(('lspci:', 'pcilib:')):
                continue
            match = _PCI_DEV_RE.match(line)
            if not match and not seen_device:
                raise ParseError('lspci', 'unexpected line: %r' % line[:100], text)
            if not match:
                # Not a device header: what follows, up to the next device, cannot be attributed.
                odd.append((current[0] if current else last, line))
                current, in_acs = None, False
                continue
            bdf = match.group(1).lower()
            if bdf.count(':') == 1:
                bdf = '0000:' + bdf
            current = (bdf, match.group(2).strip())
            last = bdf
            in_acs = False
            seen_device = True
            continue
        if current is None and not seen_device:
            raise ParseError('lspci', 'indented line outside a device: %r' % raw.strip()[:100], text)
        if current is None:
            continue
        line = raw.strip()
        if line.startswith('Capabilities:'):
            if '<access denied>' in line:
                denied = True
            in_acs = bool(_ACS_CAP_RE.match(line))
            continue
        if not in_acs:
            continue
        match = _ACS_LINE_RE.match(line)
        if match and match.group(1) == 'Ctl':
            bdf = current[0]
            flags = _acs_flags(match.group(2))
            devices[bdf] = flags
            names[bdf] = current[1]
            if any(flags[flag] for flag in _ACS_P2P_BREAKERS) and bdf not in enabled:
                enabled.append(bdf)
    result = {
        'checked': seen_device and not denied,
        'access_denied': denied,
        'devices': devices,
        'names': names,
        'enabled': enabled,
    }
    if odd:
        result[SECTION_ERROR_KEY] = section_error('after %s' % odd[0][0], 'unexpected line: %r' % odd[0][1][:100],
                                                  '\n'.join(line for _after, line in odd))
    return result


# ---------------------------------------------------------------------------------------------
# NCCL version

_NCCL_BANNER_RE = re.compile(r'NCCL version ([0-9]+)\.([0-9]+)\.([0-9]+)')
_NCCL_DOTTED_RE = re.compile(r'^v?([0-9]+)\.([0-9]+)\.([0-9]+)(?:[-+][0-9A-Za-z.+-]*)?$')
_NCCL_CODE_RE = re.compile(r'^[0-9]{4,6}$')
_NCCL_TUPLE_RE = re.compile(r'\(([0-9]+), ?([0-9]+), ?([0-9]+)\)')


def _nccl_dotted(parts, text):
    return '%d.%d.%d' % tuple(int_from_text(part, 'nccl version', 'version component', text, high=1 << 31) for part in parts)


_NCCL_LIBRARY_PREFIX = 'library\t'


def _nccl_library_lines(text):
    """The node probe's ``library<TAB>code<TAB>path<TAB>found by`` lines as dicts (``version`` dotted or None), or None
    when the text has none (a bare code or banner, e.g. a bundle of an older probe)."""
    rows = [line for line in _nonblank(text, 'nccl version') if line.startswith(_NCCL_LIBRARY_PREFIX)]
    if not rows:
        return None
    out = []
    for line in rows:
        fields = line.rstrip('\r\n').split('\t')
        if len(fields) != 4 or not fields[2].startswith('/') or not fields[3].strip():
            raise ParseError('nccl version', 'a library line is not "library<TAB>code<TAB>path<TAB>found by": %r' % line[:200], text)
        code = fields[1].strip()
        out.append({'version': None if code == '-' else parse_nccl_version(code), 'path': fields[2], 'found_by': fields[3].strip()})
    return out


def parse_nccl_library(text):
    """Which ``libnccl.so.2`` the node probe judged: ``{path, found_by, version, others: [{path, found_by, version}]}``
    (``others``: the other libraries the run may load, in the probe's order of preference), from the probe's
    ``library`` lines (``_collect.nccl_version_text``). None when the text has no such line (a bare version of an
    older probe: which library it was is not known) or is empty.
    """
    rows = _nccl_library_lines(text)
    if not rows:
        return None
    first = dict(rows[0])
    first['others'] = rows[1:]
    return first


def parse_nccl_version(text):
    """Return the NCCL version as ``"major.minor.patch"``.

    Accepts the ``ncclGetVersion`` integer (``22809`` -> ``2.28.9``: major*10000+minor*100+patch
    since NCCL 2.9; ``2708`` -> ``2.7.8``: major*1000+minor*100+patch before), a dotted version
    (``2.28.9``, ``2.28.9-1+cuda13.0``), any text with an ``NCCL version 2.28.9+cuda13.0``
    banner (NCCL_DEBUG=INFO), or the ``(2, 28, 9)`` tuple that ``torch.cuda.nccl.version()``
    returns, alone or within one line (``2.11.0+cu130 13.0 (2, 28, 9) 4``), or the node probe's ``library`` lines
    (parse_nccl_library: the first line's version; None when neither the library nor its file name told it). Empty
    text (library not found) is ``None``.
    """
    lines = [line.strip() for line in _nonblank(text, 'nccl version')]
    if not lines:
        return None
    rows = _nccl_library_lines(text)
    if rows:
        return rows[0]['version']
    for line in lines:
        match = _NCCL_BANNER_RE.search(line)
        if match:
            return _nccl_dotted(match.groups(), text)
    if len(lines) == 1:
        value = lines[0]
        tuples = _NCCL_TUPLE_RE.findall(value)
        if len(tuples) == 1:
            return _nccl_dotted(tuples[0], text)
        match = _NCCL_DOTTED_RE.match(value)
        if match:
            return _nccl_dotted(match.groups(), text)
        if _NCCL_CODE_RE.match(value):
            code = int_from_text(value, 'nccl version', 'version code', text)
            if code >= 10000:
                major, rest = divmod(code, 10000)
            else:
                major, rest = divmod(code, 1000)
            minor, patch = divmod(rest, 100)
            if major < 1:
                raise ParseError('nccl version', 'version code out of range: %r' % value, text)
            return '%d.%d.%d' % (major, minor, patch)
    raise ParseError('nccl version', 'no NCCL version found', text)


# ---------------------------------------------------------------------------------------------
# ps -e -ww -o pid=,ppid=,user:32=,etimes=,args= (the line grammar: _commands)


def parse_ps(text):
    """Parse ``ps -e -ww -o pid=,ppid=,user:32=,etimes=,args=`` (a header line is skipped).

    Returns ``[{pid, ppid, user, etimes, args}]`` in output order, ``etimes`` the seconds since the
    process started, ``args`` the full command line. Kernel threads (a bracketed name whose parent
    is kthreadd, pid 2, or the scheduler, pid 0) are left out. Empty output is ``[]``.
    """
    rows = []
    for raw in _nonblank(text, 'ps'):
        line = raw.strip()
        if _PS_HEADER_RE.match(line):
            continue
        match = _PS_ROW_RE.match(line)
        if not match:
            raise ParseError('ps', 'not a "pid ppid user etimes args" line: %r' % line[:100], text)
        pid, ppid, user, etimes, args = match.groups()
        args = (args or '').strip()
        pid, ppid, etimes = (int_from_text(value, 'ps', what, text) for value, what in ((pid, 'pid'), (ppid, 'ppid'), (etimes, 'etimes')))
        if is_kernel_thread(ppid, args):
            continue
        rows.append({'pid': pid, 'ppid': ppid, 'user': user, 'etimes': etimes, 'args': args})
    return rows


# ---------------------------------------------------------------------------------------------
# modprobe.d configuration (man modprobe.d): which modules it blacklists or keeps from loading

# Directories in modprobe's order of precedence: a file in an earlier one hides the file of the
# same name in a later one (/lib is /usr/lib on merged-/usr systems: one rank).
_MODPROBE_RANK = {'/etc/modprobe.d': 0, '/run/modprobe.d': 1, '/usr/local/lib/modprobe.d': 2, '/usr/lib/modprobe.d': 3, '/lib/modprobe.d': 3}
_MODPROBE_LINE_RE = re.compile(r'^(/[^:]*\.conf):(.*)$')
# "install MODULE /bin/false" (or true, or exit N): modprobe runs the command instead of loading the module.
_NOOP_INSTALL_RE = re.compile(r'^(?:(?:/usr)?/s?bin/)?(?:false|true)(?:\s|;|$)|^exit(?:\s+[0-9]+)?\s*;?\s*$|^:\s*$')


def _module_name(name):
    return name.replace('-', '_')


def _modprobe_rank(path):
    directory = path.rsplit('/', 1)[0]
    return _MODPROBE_RANK.get(directory, max(_MODPROBE_RANK.values()) + 1)


def parse_modprobe_config(text):
    """Parse modprobe configuration files as ``grep -H -a -e '' FILE...`` prints them (``PATH:LINE``).

    Only ``*.conf`` files count (modprobe reads no others); of files with the same name, the one in
    the directory modprobe prefers (/etc/modprobe.d, /run, /usr/local/lib, /usr/lib or /lib) hides
    the others. Comments, blank lines and backslash continuations are handled as modprobe does.

    Returns ``{files, hidden, blacklist, disabled, options}``: ``files`` the files read, ``hidden``
    those hidden by a file of the same name; ``blacklist`` ``{module: [path, ...]}``; ``disabled``
    ``{module: [{path, command}]}`` for ``install MODULE`` commands that load nothing (``/bin/false``,
    ``/bin/true``, ``exit``); ``options`` ``{module: {parameter: value}}`` (the last one read wins).
    Module names are normalised with ``_`` for ``-``. Empty output is no configuration.
    """
    source = 'modprobe.d'
    per_file = {}
    order = []
    for raw in _lines(text, source):
        if not raw.strip():
            continue
        match = _MODPROBE_LINE_RE.match(raw)
        if not match:
            raise ParseError(source, 'not a "/PATH.conf:LINE" line: %r' % raw[:100], text)
        path, line = match.groups()
        if path not in per_file:
            per_file[path] = []
            order.append(path)
        per_file[path].append(line)
    effective = {}
    for path in order:
        name = path.rsplit('/', 1)[1]
        if name not in effective or _modprobe_rank(path) < _modprobe_rank(effective[name]):
            effective[name] = path
    files = sorted(effective.values(), key=lambda item: (item.rsplit('/', 1)[1], _modprobe_rank(item)))
    result = {'files': files, 'hidden': sorted(path for path in order if path not in files),
              'blacklist': {}, 'disabled': {}, 'options': {}}
    # modprobe reads the files in the order of their names, whatever their directory.
    for path in files:
        pending = ''
        for line in per_file[path] + ['']:
            if line.endswith('\\'):
                pending += line[:-1] + ' '
                continue
            line, pending = pending + line, ''
            words = line.split('#', 1)[0].split() if not line.lstrip().startswith('#') else []
            if len(words) < 2:
                continue
            command, module = words[0], _module_name(words[1])
            if command == 'blacklist':
                result['blacklist'].setdefault(module, []).append(path)
            elif command == 'install':
                action = ' '.join(words[2:])
                if _NOOP_INSTALL_RE.match(action):
                    result['disabled'].setdefault(module, []).append({'path': path, 'command': action})
            elif command == 'options':
                for word in words[2:]:
                    key, _sep, value = word.partition('=')
                    result['options'].setdefault(module, {})[key] = value
    return result


# ---------------------------------------------------------------------------------------------
# /proc/cmdline

_CMDLINE_WORD_RE = re.compile(r'(?:[^\s"]+|"[^"]*")+')


def parse_kernel_cmdline(text):
    """Parse ``/proc/cmdline``: the kernel's command line.

    Returns ``{args, params, flags, module_blacklist}``: ``args`` the words as given; ``params``
    ``{name: value}`` for ``name=value`` words (quotes removed, the last one wins; ``-`` in a name
    read as ``_``, as the kernel does); ``flags`` the words without ``=``; ``module_blacklist`` the
    sorted modules that ``modprobe.blacklist=`` and ``module_blacklist=`` name (comma-separated, every
    occurrence). Raises ParseError on more than one line or an unterminated quote.
    """
    source = 'cmdline'
    lines = _nonblank(text, source)
    if len(lines) > 1:
        raise ParseError(source, 'more than one line (%d): not /proc/cmdline' % len(lines), text)
    line = lines[0].strip() if lines else ''
    if line.count('"') % 2:
        raise ParseError(source, 'unterminated quote: %r' % line[:100], text)
    args = _CMDLINE_WORD_RE.findall(line)
    params, flags, blacklist = {}, [], set()
    for word in args:
        bare = word.replace('"', '')
        if '=' not in bare:
            flags.append(bare)
            continue
        name, _sep, value = bare.partition('=')
        name = name.replace('-', '_')
        params[name] = value
        if name in ('modprobe.blacklist', 'module_blacklist'):
            blacklist.update(_module_name(item) for item in value.split(',') if item)
    return {'args': args, 'params': params, 'flags': flags, 'module_blacklist': sorted(blacklist)}


# ---------------------------------------------------------------------------------------------
# modinfo MODULE

_MODINFO_RE = re.compile(r'^([a-z_][a-z0-9_.]*):\s*(.*?)\s*$')
_MODINFO_SINGLE = ('filename', 'name', 'version', 'srcversion', 'vermagic', 'license', 'description', 'author', 'depends',
                   'retpoline', 'intree', 'signer', 'sig_key', 'sig_hashalgo')
_MODINFO_SRCVERSION_RE = re.compile(r'^[0-9A-F]{23}$')


def parse_modinfo(text):
    """Parse ``modinfo MODULE`` (one module's fields, ``key:   value`` per line).

    Returns ``{filename, name, version, srcversion, vermagic, ..., firmware: [..], parm: [..],
    alias: [..]}``: a single-valued field that is not printed is ``None`` (the in-tree modules carry no
    ``version``), the repeated ones (``firmware``, ``parm``, ``alias``, ``import_ns``) are lists.
    ``srcversion`` must be the 23 hex digits the kernel prints. Raises ParseError without a
    ``filename`` line (modinfo's own error, such as "Module amdgpu not found.", is not its output).
    """
    source = 'modinfo'
    result = dict((key, None) for key in _MODINFO_SINGLE)
    result.update({'firmware': [], 'parm': [], 'alias': [], 'import_ns': []})
    seen = False
    for raw in _nonblank(text, source):
        match = _MODINFO_RE.match(raw)
        if not match:
            if seen:
                continue  # the next line of a parameter description that spans lines
            raise ParseError(source, 'not a "field: value" line: %r' % raw[:100], text)
        seen = True
        key, value = match.groups()
        if key in result and isinstance(result[key], list):
            result[key].append(value)
        elif key in result and result[key] is None:
            result[key] = value
    if not result['filename']:
        raise ParseError(source, 'no "filename:" line: not modinfo output for one module', text)
    if result['srcversion'] is not None and not _MODINFO_SRCVERSION_RE.match(result['srcversion']):
        raise ParseError(source, 'srcversion is not 23 hex digits: %r' % result['srcversion'][:40], text)
    return result


# ---------------------------------------------------------------------------------------------
# /proc/meminfo

_MEMINFO_RE = re.compile(r'^([A-Za-z0-9_()]+):\s+(\S+)(?:\s+(kB))?\s*$')
# meminfo key: (result key, a size in kB (True) or a count (False))
_MEMINFO_KEYS = {
    'MemTotal': ('total_bytes', True), 'MemFree': ('free_bytes', True), 'MemAvailable': ('available_bytes', True),
    'SwapTotal': ('swap_total_bytes', True), 'SwapFree': ('swap_free_bytes', True),
    'HugePages_Total': ('hugepages_total', False), 'HugePages_Free': ('hugepages_free', False),
    'Hugepagesize': ('hugepage_size_bytes', True),
}


def parse_meminfo(text):
    """Parse ``/proc/meminfo``.

    Returns ``{total_bytes, free_bytes, available_bytes, swap_total_bytes, swap_free_bytes, hugepages_total,
    hugepages_free, hugepage_size_bytes, hugepages_bytes}``: sizes in bytes (the file's kB are KiB), huge pages as
    counts, ``hugepages_bytes`` the memory the default-size huge pages reserve. A key the kernel does not print is None
    (MemAvailable exists since Linux 3.14). MemTotal is required; a line that is not ``Key: value [kB]`` is an error.
    """
    out = dict((key, None) for key, _size in _MEMINFO_KEYS.values())
    seen = False
    for raw in _nonblank(text, 'meminfo'):
        match = _MEMINFO_RE.match(raw.strip())
        if not match:
            raise ParseError('meminfo', 'unexpected line: %r' % raw[:100], text)
        name, value, unit = match.groups()
        if name not in _MEMINFO_KEYS:
            continue
        key, size = _MEMINFO_KEYS[name]
        if size != (unit == 'kB'):
            raise ParseError('meminfo', '%s: %s' % (name, 'a size in kB' if size else 'a count without a unit'), text)
        out[key] = int_from_text(value, 'meminfo', name, text, high=MAX_INT // 1024) * (1024 if size else 1)
        seen = seen or name == 'MemTotal'
    if not seen:
        raise ParseError('meminfo', 'no MemTotal line', text)
    if out['hugepages_total'] is not None and out['hugepage_size_bytes'] is not None:
        out['hugepages_bytes'] = min(out['hugepages_total'] * out['hugepage_size_bytes'], MAX_INT)
    else:
        out['hugepages_bytes'] = None
    return out


# ---------------------------------------------------------------------------------------------
# /proc/mounts

# File systems that several nodes share: NFS, SMB, Lustre, IBM Storage Scale (GPFS), BeeGFS, CephFS (kernel and
# FUSE), GlusterFS, WekaFS, JuiceFS, DAOS' dfuse and Amazon FSx for Lustre (lustre).
SHARED_FSTYPES = ('nfs', 'nfs4', 'cifs', 'smb3', 'lustre', 'gpfs', 'beegfs', 'ceph', 'fuse.ceph-fuse', 'glusterfs',
                  'fuse.glusterfs', 'wekafs', 'fuse.juicefs', 'fuse.dfuse', 'fuse.weka')
_MOUNT_ESCAPE_RE = re.compile(r'\\([0-7]{3})')


def _unescape_mount(value):
    """/proc/mounts writes a space, tab, newline and backslash of a path as \\040, \\011, \\012 and \\134."""
    return _MOUNT_ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 8)), value)


def parse_proc_mounts(text):
    """Parse ``/proc/mounts`` (or ``/proc/self/mounts``).

    Returns ``[{device, mount, fstype, read_only, shared}]`` in file order (a later mount on the same point hides
    the earlier one). ``shared``: the file system type is one that several nodes mount (SHARED_FSTYPES). Mount
    options are not kept (a CIFS or Ceph mount can name its credentials) except ``ro``. Each line must have six
    fields; an empty file is an error (every Linux system mounts /).
    """
    out = []
    for raw in _nonblank(text, 'mounts'):
        fields = raw.split()
        if len(fields) != 6 or not fields[1].startswith('/'):
            raise ParseError('mounts', 'not "device mount type options dump pass": %r' % raw[:100], text)
        mount = _unescape_mount(fields[1])
        if any(ord(char) < 32 for char in mount.replace('\t', ' ').replace(' ', '')):
            raise ParseError('mounts', 'control character in mount point %r' % mount[:100], text)
        fstype = fields[2]
        out.append({'device': _unescape_mount(fields[0]), 'mount': mount, 'fstype': fstype,
                    'read_only': 'ro' in fields[3].split(','), 'shared': fstype in SHARED_FSTYPES})
    if not out:
        raise ParseError('mounts', 'no mount', text)
    return out


# ---------------------------------------------------------------------------------------------
# storage_read:<path> (the node probe's bounded read of a dataset path, _probe.storage_read_text)

_READ_KEYS = ('path', 'bytes', 'seconds', 'files', 'cache', 'complete')


def parse_storage_read(text):
    """Parse the ``key=value`` lines of the bounded read of a path (``_probe.storage_read_text``).

    Returns ``{path, bytes, seconds, files, mb_per_s, cache, cache_dropped, complete, error}``: ``mb_per_s`` is bytes /
    10^6 / seconds (None when nothing was timed), ``cache`` how the files were read (``direct``: O_DIRECT, never through
    the page cache; ``dropped``: their cached pages dropped first; ``kept``: through whatever the cache held; the
    weakest of the files'), ``cache_dropped`` whether it was ``direct`` or ``dropped``, ``complete`` whether every file
    was read to its end within the bounds, ``error`` the first error
    (a path that does not exist, a file that cannot be read) or None.
    """
    seen = {}
    for raw in _nonblank(text, 'storage read'):
        key, sep, value = raw.partition('=')
        if not sep or key not in _READ_KEYS + ('error',) or key in seen:
            raise ParseError('storage read', 'unexpected line: %r' % raw[:100], text)
        seen[key] = value
    missing = [key for key in _READ_KEYS if key not in seen]
    if missing:
        raise ParseError('storage read', 'no %s line' % ', '.join(missing), text)
    if not seen['path'].startswith('/'):
        raise ParseError('storage read', 'path is not absolute: %r' % seen['path'][:100], text)
    if seen['cache'] not in ('direct', 'dropped', 'kept') or seen['complete'] not in ('true', 'false'):
        raise ParseError('storage read', 'cache is direct, dropped or kept, complete true or false', text)
    size = int_from_text(seen['bytes'], 'storage read', 'bytes', text)
    seconds = float_from_text(seen['seconds'], 'storage read', 'seconds', text, low=0, high=86400)
    return {
        'path': seen['path'], 'bytes': size, 'seconds': seconds,
        'files': int_from_text(seen['files'], 'storage read', 'files', text),
        'mb_per_s': round(size / 1e6 / seconds, 1) if seconds > 0 else None,
        'cache': seen['cache'], 'cache_dropped': seen['cache'] in ('direct', 'dropped'), 'complete': seen['complete'] == 'true',
        'error': seen.get('error') or None,
    }
