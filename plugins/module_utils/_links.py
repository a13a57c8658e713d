# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Link flaps (field guide 8, "network jitter"): link down events in the kernel log, per interface,
and the growth of the InfiniBand error counters while the load ran.

``check_link_flaps`` is called by ``_checks.check_node`` with its run object; ``counter_growth`` and
``evaluate_counter_growth`` judge two counter reads (the probe's and the one at the end of
validate.yml) for ``workload_check`` kind ``link_counters``. Pure: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings

# The checks of evaluate_counter_growth (network.link_flaps is in _checks.CHECKS, next to its run object).
CHECKS = {
    'workload.ib_counter_growth': _findings.entry(
        'InfiniBand error counters grew under load', 'fail',
        'A port whose link_downed / link_error_recovery / symbol_error counters grow while NCCL traffic runs '
        'has a marginal link (field guide 8, network jitter): check it with `mlxlink -d <ca> -p <port> -c` '
        '(BER, FEC, eye), reseat or replace the cable/transceiver, check the switch port (its error counters '
        'and flap log), update the HCA firmware; clear the counters with `perfquery -x -R` and rerun the '
        'collectives to confirm.'),
    'workload.ib_counters_unread': _findings.entry(
        'InfiniBand counter growth not measured', 'warn',
        'The counters were not read again after the load (probe failed, port gone, or a replayed bundle '
        'without an ib_counters_end entry): read them by hand with `grep -H . '
        '/sys/class/infiniband/*/ports/*/counters/{link_downed,link_error_recovery,symbol_error}` before and '
        'after a collectives run.'),
}

# Counters whose growth the run report lists.
GROWTH_SUMMARY = ('link_downed', 'link_error_recovery', 'symbol_error', 'port_rcv_errors')


def _interface_of(name, interfaces):
    """``pci:<address>`` events name a PCI function: the interface whose bus_info is that address."""
    if not name.startswith('pci:'):
        return name
    address = name[4:]
    for ifname in sorted(interfaces):
        info = interfaces[ifname] if isinstance(interfaces[ifname], dict) else {}
        if str(info.get('bus_info') or '').lower() == address:
            return ifname
    return 'pci %s' % address


def check_link_flaps(run, want, network):
    """``network.link_flaps``: an interface that went down more than ``want['down_events_max']`` times."""
    spec = want.get('link_flaps') or {}
    limit = spec.get('down_events_max')
    if limit is None:
        run.skip(['network.link_flaps'], 'the profile sets no host.link_flaps.down_events_max')
        return
    events = network.get('link_events')
    if not isinstance(events, dict):
        run.unknown(['kernel_log'], 'network link events', 'link down events in the kernel log', checks=('network.link_flaps',))
        return
    interfaces = network.get('interfaces') if isinstance(network.get('interfaces'), dict) else {}
    ignore = spec.get('ignore') or []
    for name in sorted(events):
        entry = events[name] if isinstance(events[name], dict) else {}
        component = _interface_of(name, interfaces)
        if any(fnmatch.fnmatchcase(component, pattern) for pattern in ignore):
            continue
        downs = entry.get('down')
        if not isinstance(downs, int) or downs <= limit:
            continue
        lines = entry.get('lines') or []
        state = 'up again' if entry.get('last') == 'up' else 'still down at the last event'
        run.add('network.link_flaps', component, '%d link down events' % downs, '<= %d' % limit,
                '%s went down %d time(s) since boot (%d up event(s); %s); last: %s'
                % (component, downs, entry.get('up') or 0, state, lines[-1] if lines else 'no line kept'),
                interface=component)


# ---------------------------------------------------------------------------------------------
# Counter growth between two reads.

def _ports(ib):
    """``{"ca/port": counters}`` from the probe's infiniband facts (cas), the end read (counters) or whole facts."""
    out = {}
    if isinstance(ib, dict) and isinstance(ib.get('infiniband'), dict):
        ib = ib['infiniband']
    if not isinstance(ib, dict):
        return out
    if isinstance(ib.get('counters'), dict):
        for ca, ports in ib['counters'].items():
            for port, counters in (ports or {}).items():
                out['%s/%s' % (ca, port)] = counters if isinstance(counters, dict) else {}
    for ca, info in (ib.get('cas') or {}).items():
        for port, data in ((info or {}).get('ports') or {}).items():
            if isinstance(data, dict) and isinstance(data.get('counters'), dict):
                out['%s/%s' % (ca, port)] = data['counters']
    return out


def counter_growth(before, after, names):
    """Per port, how much each counter of ``names`` grew from ``before`` to ``after``.

    Returns ``{"ca/port": {counter: {before, after, growth}}}`` for the ports read both times; a counter
    that went down (reset in between, e.g. ``perfquery -R``) counts its whole ``after`` value as growth.
    Counters absent from either read are ``growth: None``.
    """
    start, end = _ports(before), _ports(after)
    out = {}
    for port in sorted(set(start) & set(end)):
        rows = {}
        for name in names:
            a, b = start[port].get(name), end[port].get(name)
            if not isinstance(a, int) or not isinstance(b, int):
                rows[name] = {'before': a, 'after': b, 'growth': None}
            else:
                rows[name] = {'before': a, 'after': b, 'growth': b - a if b >= a else b}
        out[port] = rows
    return out


def _finding(host, check, component, measured, expected, message):
    return _findings.make(CHECKS, host, check, component, measured, expected, message)


def evaluate_counter_growth(run, profile, host):
    """Findings for the ``link_counters`` workload kind.

    ``run`` is ``{before: <infiniband facts of the probe>, after: <facts of node_probe stage end>}``.
    """
    limits = ((profile or {}).get('infiniband') or {}).get('counters_growth_max') or {}
    if not limits:
        return []
    before = run.get('before') if isinstance(run.get('before'), dict) else {}
    after = run.get('after') if isinstance(run.get('after'), dict) else {}
    record = ((after.get('probes') or {}).get('ib_counters_end') or {})
    counters = (after.get('infiniband') or {}).get('counters')
    if not isinstance(counters, dict):
        why = record.get('error') or record.get('status') or 'not read'
        return [_finding(host, 'workload.ib_counters_unread', 'infiniband counters', why, 'read at the end of the run',
                         'the InfiniBand error counters were not read again at the end of the run (%s): their growth '
                         'under load is not measured' % why)]
    findings = []
    start_ports = _ports(before)
    growth = counter_growth(before, after, sorted(limits))
    for port in sorted(start_ports):
        if port not in growth:
            findings.append(_finding(host, 'workload.ib_counters_unread', port, 'port absent from the end read',
                                     'read at the end of the run', '%s was not in the counters read at the end of the run' % port))
            continue
        over, unread = [], []
        for name in sorted(limits):
            row = growth[port][name]
            if row['growth'] is None:
                if row['before'] is not None or row['after'] is not None:
                    unread.append(name)
            elif row['growth'] > limits[name]:
                over.append('%s +%d (%d -> %d, max +%d)' % (name, row['growth'], row['before'], row['after'], limits[name]))
        if over:
            findings.append(_finding(host, 'workload.ib_counter_growth', port, ', '.join(over),
                                     'growth within infiniband.counters_growth_max',
                                     '%s error counters grew while the load ran: %s' % (port, ', '.join(over))))
        if unread:
            findings.append(_finding(host, 'workload.ib_counters_unread', port, ', '.join(unread), 'read twice',
                                     '%s: %s read only once, growth not measured' % (port, ', '.join(unread))))
    return findings


def summarise_growth(run, names):
    """The growth per port and counter (for the run report)."""
    growth = counter_growth(run.get('before'), run.get('after'), names)
    return dict((port, dict((name, row['growth']) for name, row in rows.items())) for port, rows in growth.items())
