# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node checks of the fabric: InfiniBand ports and counters, network interfaces, RoCE settings and link
flaps. Called by ``_checks.check_node``. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch

from ansible_collections.xuanwu.cluster.plugins.module_utils._checks_base import (
    _g, _c, _num,
)


# The checks of this module (the catalogue of every check: plugins/module_utils/_catalogue.py).
# Remediation texts may name {placeholders}; a finding fills them in, the docs show <placeholder>.
CHECKS = {
    # --- InfiniBand -----------------------------------------------------------------------
    'ib.tools_missing': _c(
        'InfiniBand tools not installed', 'ibstat', 'fail', 'infiniband.installed is false while ports are required',
        'Install the RDMA userspace (infiniband-diags and rdma-core, or DOCA-OFED/MLNX_OFED) and load the HCA driver '
        '(mlx5_ib); check `ibstat`.'),
    'ib.port_count': _c(
        'Usable InfiniBand ports', 'infiniband', 'fail',
        'ports with the link layer, state, physical state and rate of the profile >= infiniband.ports_min',
        'Run `ibstat` and `ibv_devinfo`; for each port that is down see the port findings: check the cable and '
        'transceiver, the switch port, that the subnet manager runs (`sminfo`), and the HCA firmware (`mlxfwmanager`).'),
    'ib.port_state': _c(
        'InfiniBand port not up', '<ca>/<port>', 'fail',
        'port state == infiniband.state and physical_state == infiniband.physical_state',
        'Polling/Down: reseat or replace the cable/transceiver, check the switch port; Initializing/Armed: no subnet '
        'manager has configured the port (check opensm/UFM, `sminfo`). Then `ibstat {ca} {port}`.'),
    'ib.port_rate': _c(
        'InfiniBand port below the rate', '<ca>/<port>', 'fail', 'port rate_gbps >= infiniband.rate_gbps_min',
        'The link trained at a lower rate: check `ibstat {ca} {port}` and `mlxlink -d {ca} -p {port}`; replace the '
        'cable/transceiver, check the switch port speed configuration and HCA firmware.'),
    'ib.link_layer': _c(
        'InfiniBand port in the wrong link layer', '<ca>/<port>', 'fail',
        'enough ports have link_layer == infiniband.link_layer',
        'Set the port protocol: `mlxconfig -d {ca} set LINK_TYPE_P{port}=1` (InfiniBand) or `=2` (Ethernet), then reboot '
        'or reset the firmware (`mlxfwreset`).'),
    'ib.ca_type': _c(
        'HCA model', '<ca>', 'fail', 'CA type == infiniband.ca_type',
        'The node has a different HCA model than its profile: assign the right profile or fix the hardware inventory.'),
    'ib.port_counters': _c(
        'InfiniBand port error counters', '<ca>/<port>', 'warn', 'port counters <= infiniband.counters_max',
        'Rising symbol errors / link downs point at the cable or transceiver: check `mlxlink -d {ca} -p {port} -c` (BER), '
        'replace the cable; reset counters with `perfquery -x -R` and re-check after a load test.'),
    # --- network --------------------------------------------------------------------------
    'network.interface_missing': _c(
        'Network interface missing', '<interface>', 'fail', 'an interface matches each required name/glob',
        'Check `ip -d link show` and the driver (`ethtool -i`, dmesg); check udev/netplan naming.'),
    'network.mtu': _c(
        'Interface MTU', '<interface>', 'fail', 'interface mtu == network.interfaces[].mtu',
        'Set the MTU in the network configuration (netplan/NetworkManager/ifcfg) and apply it: `ip link set {component} '
        'mtu {expected}`; the switch ports must allow it too.'),
    'network.link': _c(
        'Interface link down', '<interface>', 'fail', 'link_detected is true and operstate is UP',
        'Check `ethtool {component}` and `ip link show {component}`: cable, transceiver, switch port; bring the interface up.'),
    'network.speed': _c(
        'Interface speed', '<interface>', 'fail', 'ethtool speed_mbps >= network.interfaces[].speed_mbps_min',
        'Check `ethtool {component}`: replace the cable/transceiver, check switch port speed and auto-negotiation.'),
    'network.roce_pfc': _c(
        'RoCE PFC priority', '<interface>', 'fail', 'network.roce.pfc_priority is in pfc.enabled_priorities',
        'Enable PFC on the priority: `mlnx_qos -i {component} --pfc <mask>` or `dcb pfc set dev {component} '
        'prio-pfc {priority}:on`; the switch must match.'),
    'network.roce_ecn': _c(
        'RoCE ECN', '<interface>', 'fail', 'ECN roce_np and roce_rp are enabled on network.roce.pfc_priority',
        'Enable ECN: `echo 1 > /sys/class/net/{component}/ecn/roce_np/enable/{priority}` and the same for roce_rp '
        '(persist it with the vendor QoS tooling).'),
    'network.roce_trust': _c(
        'RoCE trust mode', '<interface>', 'fail', 'QoS trust mode == network.roce.trust',
        'Set the trust mode: `mlnx_qos -i {component} --trust {expected}`.'),
    # --- link flaps (field guide 8) ---------------------------------------------------------
    'network.link_flaps': _c(
        'Interface link flaps', '<interface>', 'fail',
        'link down events of the interface in the kernel log since boot <= host.link_flaps.down_events_max',
        'The link of {interface} went down and came back (network jitter stalls collectives and makes NCCL time out): '
        'read the lines with `journalctl -k | grep {interface}`, check the cable/transceiver (`ethtool -m {interface}`, '
        '`mlxlink -d <device> -c` on ConnectX), the switch port\'s flap log and error counters, and `ethtool -S {interface} '
        '| grep -i -e err -e down`; replace the cable or optic, move to another switch port, update the NIC firmware. '
        'After the fix the count restarts only at the next boot: raise down_events_max for this host until then.'),
}


# ---------------------------------------------------------------------------------------------
# InfiniBand.

def _port_sort_key(port):
    return (0, int(port)) if str(port).isdigit() else (1, str(port))


# The InfiniBand checks but the tools' own: not measured where ibstat could not read the ports.
IB_PORT_CHECKS = ('ib.ca_type', 'ib.link_layer', 'ib.port_count', 'ib.port_counters', 'ib.port_rate', 'ib.port_state')
NETWORK_CHECKS = ('network.interface_missing', 'network.link', 'network.mtu', 'network.speed', 'network.roce_pfc',
                  'network.roce_ecn', 'network.roce_trust')


def check_infiniband(run):
    want = run.profile.get('infiniband')
    if not want:
        run.skip(IB_PORT_CHECKS + ('ib.tools_missing',), 'the profile has no infiniband section (a host without InfiniBand)')
        return
    ib = run.facts.get('infiniband') if isinstance(run.facts.get('infiniband'), dict) else {}
    status = run.status('ibstat')
    cas = ib.get('cas') if isinstance(ib.get('cas'), dict) else {}
    if not want.get('ca_type'):
        run.skip(['ib.ca_type'], 'the profile sets no infiniband.ca_type')
    if want.get('rate_gbps_min') is None:
        run.skip(['ib.port_rate'], 'the profile sets no infiniband.rate_gbps_min')
    if not want['counters_max']:
        run.skip(['ib.port_counters'], 'the profile sets no infiniband.counters_max')
    if ib.get('installed') is False or (status == 'missing' and not cas):
        if want['ports_min'] > 0:
            run.add('ib.tools_missing', 'ibstat', 'not installed', '%d port(s)' % want['ports_min'],
                    'ibstat is not installed: cannot see the %d InfiniBand port(s) the profile wants' % want['ports_min'])
            run.unmeasured(IB_PORT_CHECKS, 'InfiniBand ports: ibstat is not installed (ib.tools_missing)')
        else:
            run.skip(IB_PORT_CHECKS, 'the profile wants no InfiniBand port (infiniband.ports_min 0) and ibstat is not installed')
        return
    if not cas and ib.get('installed') is not True and status != 'ok':
        run.unknown(['ibstat'], 'infiniband', 'InfiniBand ports', checks=IB_PORT_CHECKS)
        return
    usable, short, other_layer, counted = [], [], [], 0
    counters_seen = False
    matched = 0
    for ca in sorted(cas):
        if not any(fnmatch.fnmatchcase(ca, pattern) for pattern in want['ca_names']):
            continue
        matched += 1
        info = cas[ca] if isinstance(cas[ca], dict) else {}
        if want.get('ca_type') and info.get('ca_type') != want['ca_type']:
            run.add('ib.ca_type', ca, info.get('ca_type'), want['ca_type'],
                    '%s is a %s, profile wants %s' % (ca, info.get('ca_type'), want['ca_type']))
        ports = info.get('ports') if isinstance(info.get('ports'), dict) else {}
        for port in sorted(ports, key=_port_sort_key):
            data = ports[port] if isinstance(ports[port], dict) else {}
            comp = '%s/%s' % (ca, port)
            ctx = {'ca': ca, 'port': port}
            if str(data.get('link_layer') or '').lower() != want['link_layer'].lower():
                other_layer.append((comp, data.get('link_layer'), ctx))
                continue
            counted += 1
            ok = True
            state, phys = data.get('state'), data.get('physical_state')
            if str(state).lower() != want['state'].lower() or str(phys).lower() != want['physical_state'].lower():
                ok = False
                run.add('ib.port_state', comp, '%s/%s' % (state, phys), '%s/%s' % (want['state'], want['physical_state']),
                        '%s is %s (physical %s), profile wants %s/%s' % (comp, state, phys, want['state'], want['physical_state']),
                        **ctx)
            rate = _num(data.get('rate_gbps'))
            if want.get('rate_gbps_min') is not None and ok:
                if rate is None:
                    ok = False
                    run.not_measured(comp, 'port rate', 'ibstat %s %s' % (ca, port), checks=('ib.port_rate',))
                elif rate < want['rate_gbps_min']:
                    ok = False
                    run.add('ib.port_rate', comp, rate, want['rate_gbps_min'],
                            '%s runs at %s Gb/s, profile wants at least %s Gb/s' % (comp, _g(rate), _g(want['rate_gbps_min'])), **ctx)
            counters = data.get('counters')
            if isinstance(counters, dict):
                counters_seen = True
                over = []
                for cname in sorted(want['counters_max']):
                    value = _num(counters.get(cname))
                    if value is None:
                        run.not_measured(comp, 'counter %s' % cname, 'cat /sys/class/infiniband/%s/ports/%s/counters/%s'
                                         % (ca, port, cname), checks=('ib.port_counters',))
                    elif value > want['counters_max'][cname]:
                        over.append('%s=%d (max %d)' % (cname, value, want['counters_max'][cname]))
                if over:
                    run.add('ib.port_counters', comp, ', '.join(over), 'counters within counters_max',
                            '%s error counters: %s' % (comp, ', '.join(over)), **ctx)
            (usable if ok else short).append(comp)
    if not counted:
        # no port of the profile's link layer was read: nothing to judge of a port (ib.port_count says how many)
        why = run.probe_why(['ibstat']) if status != 'ok' else 'ibstat lists no %s port%s' % (
            want['link_layer'], ' of %s' % ', '.join(want['ca_names']) if matched else '')
        run.unmeasured(('ib.port_state', 'ib.port_rate', 'ib.port_counters') + (() if matched else ('ib.ca_type', 'ib.link_layer')),
                       'InfiniBand ports: %s' % why)
    if want['counters_max'] and counted and not counters_seen:
        run.unknown(['ib_counters'], 'infiniband counters', 'InfiniBand port error counters', checks=('ib.port_counters',))
    if len(usable) < want['ports_min']:
        detail = ('; not usable: %s' % ', '.join(short)) if short else ''
        run.add('ib.port_count', 'infiniband', len(usable), want['ports_min'],
                '%d usable %s port(s) (%s, %s%s), profile wants %d%s' % (
                    len(usable), want['link_layer'], want['state'], want['physical_state'],
                    ', >= %s Gb/s' % _g(want['rate_gbps_min']) if want.get('rate_gbps_min') is not None else '',
                    want['ports_min'], detail))
        if counted < want['ports_min']:
            for comp, layer, ctx in other_layer:
                run.add('ib.link_layer', comp, layer, want['link_layer'],
                        '%s runs %s, profile counts %s ports' % (comp, layer, want['link_layer']), **ctx)


# ---------------------------------------------------------------------------------------------
# Network.

_DOWN_STATES = ('DOWN', 'LOWERLAYERDOWN', 'NOTPRESENT', 'DORMANT')


def check_network(run):
    want = run.profile.get('network')
    if not want:
        run.skip(NETWORK_CHECKS, 'the profile has no network section')
        return
    specs = list(want['interfaces'].values())
    for check, key, why in (('network.mtu', 'mtu', 'the profile sets no network.interfaces.*.mtu'),
                            ('network.speed', 'speed_mbps_min', 'the profile sets no network.interfaces.*.speed_mbps_min'),
                            ('network.link', 'link_detected', 'the profile sets no network.interfaces.*.link_detected')):
        if not any(spec.get(key) not in (None, False) for spec in specs):
            run.skip([check], why)
    roce = want.get('roce')
    if not roce:
        run.skip(('network.roce_pfc', 'network.roce_ecn', 'network.roce_trust'), 'the profile has no network.roce')
    else:
        if not roce['ecn']:
            run.skip(['network.roce_ecn'], 'the profile does not ask for ECN (network.roce.ecn)')
        if not roce.get('trust'):
            run.skip(['network.roce_trust'], 'the profile sets no network.roce.trust')
    if not specs and not roce:
        run.skip(['network.interface_missing'], 'the profile names no interface (network.interfaces, network.roce)')
    net = run.facts.get('network') if isinstance(run.facts.get('network'), dict) else {}
    ifaces = net.get('interfaces') if isinstance(net.get('interfaces'), dict) else {}
    if net.get('probed') is False or (not ifaces and run.status('ip_link') != 'ok'):
        if want['interfaces'] or want.get('roce'):
            run.unknown(['ip_link'], 'network', 'network interfaces', checks=NETWORK_CHECKS)
        return
    for pattern in sorted(want['interfaces']):
        spec = want['interfaces'][pattern]
        names = sorted(n for n in ifaces if fnmatch.fnmatchcase(n, pattern))
        if not names:
            if spec['required']:
                run.add('network.interface_missing', pattern, None, 'present',
                        'no interface matches %s (have: %s)' % (pattern, ', '.join(sorted(ifaces)) or 'none'))
            continue
        for name in names:
            _check_interface(run, spec, name, ifaces[name] if isinstance(ifaces[name], dict) else {})
    roce = want.get('roce')
    if roce:
        for pattern in roce['interfaces']:
            names = sorted(n for n in ifaces if fnmatch.fnmatchcase(n, pattern))
            if not names:
                run.add('network.interface_missing', pattern, None, 'present',
                        'no RoCE interface matches %s (have: %s)' % (pattern, ', '.join(sorted(ifaces)) or 'none'))
            for name in names:
                _check_roce(run, roce, name, ifaces[name] if isinstance(ifaces[name], dict) else {})


def _check_interface(run, spec, name, iface):
    if spec.get('mtu') is not None:
        mtu = _num(iface.get('mtu'))
        if mtu is None:
            run.not_measured(name, 'MTU', 'ip link show %s' % name, checks=('network.mtu',))
        elif mtu != spec['mtu']:
            run.add('network.mtu', name, int(mtu), spec['mtu'], '%s MTU is %d, profile wants %d' % (name, mtu, spec['mtu']))
    if spec['link_detected']:
        link, oper = iface.get('link_detected'), iface.get('operstate')
        if link is None and oper is None:
            run.not_measured(name, 'link state', 'ethtool %s' % name, checks=('network.link',))
        elif link is False or str(oper).upper() in _DOWN_STATES:
            run.add('network.link', name, 'operstate %s, link %s' % (oper, 'detected' if link else 'not detected' if link is False else 'unknown'),
                    'operstate UP, link detected', '%s has no link (operstate %s)' % (name, oper))
    if spec.get('speed_mbps_min') is not None:
        speed = _num(iface.get('speed_mbps'))
        if speed is None:
            run.not_measured(name, 'link speed', 'ethtool %s' % name, checks=('network.speed',))
        elif speed < spec['speed_mbps_min']:
            run.add('network.speed', name, int(speed), spec['speed_mbps_min'],
                    '%s runs at %d Mb/s, profile wants at least %d Mb/s' % (name, speed, spec['speed_mbps_min']))


def _check_roce(run, want, name, iface):
    roce = iface.get('roce') if isinstance(iface.get('roce'), dict) else {}
    prio = want['pfc_priority']
    pfc = roce.get('pfc')
    if not isinstance(pfc, dict) or pfc.get('enabled_priorities') is None:
        run.not_measured(name, 'PFC configuration', 'mlnx_qos -i %s (or dcb pfc show dev %s)' % (name, name),
                         checks=('network.roce_pfc',))
    else:
        enabled = [int(p) for p in pfc['enabled_priorities'] if str(p).isdigit()]
        if prio not in enabled:
            run.add('network.roce_pfc', name, enabled, prio, '%s PFC is enabled on priorities %s, profile wants %d'
                    % (name, enabled or 'none', prio), priority=prio)
    if want['ecn']:
        ecn = roce.get('ecn')
        if not isinstance(ecn, dict):
            run.not_measured(name, 'ECN configuration', 'cat /sys/class/net/%s/ecn/roce_np/enable/%d (and roce_rp)' % (name, prio),
                             checks=('network.roce_ecn',))
        else:
            off = [side for side in ('np', 'rp') if (ecn.get(side) or {}).get(str(prio)) is not True]
            if off:
                run.add('network.roce_ecn', name, 'off: %s' % ', '.join('roce_' + s for s in off), 'on for priority %d' % prio,
                        '%s ECN is off on priority %d for %s' % (name, prio, ', '.join('roce_' + s for s in off)), priority=prio)
    if want.get('trust'):
        trust = roce.get('trust')
        if trust is None:
            run.not_measured(name, 'QoS trust mode', 'mlnx_qos -i %s' % name, checks=('network.roce_trust',))
        elif str(trust).lower() != want['trust']:
            run.add('network.roce_trust', name, trust, want['trust'], '%s trusts %s, profile wants %s' % (name, trust, want['trust']))
