# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# TEST DOUBLE of NVIDIA's `mlnx_qos` (MLNX_OFED / DOCA-OFED / mlnx-tools) for the roce_qos
# molecule scenario: no ConnectX NIC exists in a container. It keeps each interface's DCBX mode,
# trust state, DSCP -> priority table and PFC in a JSON file under $XUANWU_TEST_DOUBLE_STATE
# (default /var/lib/xuanwu-test-doubles) and prints the layout `mlnx_qos -i IF` prints (see
# tests/fixtures/derived/net/mlnx_qos_-i_ens1np0_pfc3_dscp.txt). Like the real tool it prints the
# whole state after a change, and the dscp2prio table only with trust dscp.
"""Test double of `mlnx_qos`: -i IF [--dcbx os|fw] [--trust pcp|dscp] [--pfc LIST] [--dscp2prio set,D,P]."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import json
import os
import sys

STATE_DIR = os.environ.get('XUANWU_TEST_DOUBLE_STATE', '/var/lib/xuanwu-test-doubles')


def load(dev):
    path = os.path.join(STATE_DIR, 'mlnx_qos-%s.json' % dev)
    if os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)
    # A ConnectX port as it comes: firmware DCBX, trust pcp, the default DSCP table (dscp >> 3).
    return {'dcbx': 'Firmware controlled', 'trust': 'pcp', 'dscp2prio': dict((str(d), d >> 3) for d in range(64)),
            'pfc': [0] * 8}


def save(dev, state):
    if not os.path.isdir(STATE_DIR):
        os.makedirs(STATE_DIR)
    with open(os.path.join(STATE_DIR, 'mlnx_qos-%s.json' % dev), 'w') as handle:
        json.dump(state, handle)


def show(state):
    print('DCBX mode: %s' % state['dcbx'])
    print('Priority trust state: %s' % state['trust'])
    if state['trust'] == 'dscp':
        print('dscp2prio mapping:')
        for prio in range(8):
            dscps = sorted((int(d) for d, p in state['dscp2prio'].items() if p == prio), reverse=True)
            print('\tprio:%d dscp:%s' % (prio, ''.join('%02d,' % d for d in dscps)))
    print('Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016')
    print('Cable len: 7')
    print('PFC configuration:')
    print('\tpriority    0   1   2   3   4   5   6   7')
    print('\tenabled     ' + '   '.join(str(v) for v in state['pfc']) + '   ')
    print('\tbuffer      ' + '   '.join(str(v) for v in state['pfc']) + '   ')
    for tc in range(8):
        print('tc: %d ratelimit: unlimited, tsa: vendor' % tc)
        print('\t priority:  %d' % tc)


def main():
    if not os.path.isdir(STATE_DIR):
        os.makedirs(STATE_DIR)
    with open(os.path.join(STATE_DIR, 'calls.log'), 'a') as log:
        log.write('mlnx_qos %s\n' % ' '.join(sys.argv[1:]))
    parser = argparse.ArgumentParser(prog='mlnx_qos')
    parser.add_argument('-i', '--interface', required=True)
    parser.add_argument('--dcbx', choices=['os', 'fw'])
    parser.add_argument('--trust', choices=['pcp', 'dscp'])
    parser.add_argument('-p', '--pfc')
    parser.add_argument('--dscp2prio')
    args = parser.parse_args()
    dev = args.interface
    if not os.path.isdir('/sys/class/net/' + dev):
        sys.stderr.write('Netlink error: No such device: %s\n' % dev)
        sys.exit(1)
    state = load(dev)
    changed = False
    if args.dcbx:
        state['dcbx'] = 'OS controlled' if args.dcbx == 'os' else 'Firmware controlled'
        changed = True
    if (args.trust or args.pfc or args.dscp2prio) and state['dcbx'] != 'OS controlled':
        sys.stderr.write('DCBX mode is Firmware controlled: set it to OS controlled (--dcbx os) first\n')
        sys.exit(1)
    if args.trust:
        state['trust'] = args.trust
        changed = True
    if args.pfc:
        values = args.pfc.split(',')
        if len(values) != 8 or any(v not in ('0', '1') for v in values):
            sys.stderr.write('Invalid --pfc %s: expected 8 comma-separated 0/1 values\n' % args.pfc)
            sys.exit(1)
        state['pfc'] = [int(v) for v in values]
        changed = True
    if args.dscp2prio:
        parts = args.dscp2prio.split(',')
        if len(parts) != 3 or parts[0] not in ('set', 'del') or not parts[1].isdigit() or not parts[2].isdigit() \
                or int(parts[1]) > 63 or int(parts[2]) > 7:
            sys.stderr.write('Invalid --dscp2prio %s: expected set,DSCP,PRIO\n' % args.dscp2prio)
            sys.exit(1)
        state['dscp2prio'][str(int(parts[1]))] = int(parts[2]) if parts[0] == 'set' else int(parts[1]) >> 3
        changed = True
    if changed:
        save(dev, state)
    show(state)


if __name__ == '__main__':
    main()
