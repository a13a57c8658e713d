# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# TEST DOUBLE of iproute2's `dcb` for the roce_qos molecule scenario: no NIC with DCB exists in
# a container. It keeps each interface's PFC and DSCP APP table in a JSON file under
# $XUANWU_TEST_DOUBLE_STATE (default /var/lib/xuanwu-test-doubles) and prints what dcb prints
# (JSON layout of dcb/dcb_pfc.c and dcb/dcb_app.c). Only the subcommands the role uses exist.
"""Test double of `dcb` (iproute2): pfc show/set, app show/add/replace/del/flush dscp-prio."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import sys

STATE_DIR = os.environ.get('XUANWU_TEST_DOUBLE_STATE', '/var/lib/xuanwu-test-doubles')


def die(msg, code=1):
    sys.stderr.write(msg + '\n')
    sys.exit(code)


def load(dev):
    if not os.path.isdir('/sys/class/net/' + dev):
        die('Cannot find device "%s"' % dev)
    path = os.path.join(STATE_DIR, 'dcb-%s.json' % dev)
    if os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)
    return {'prio_pfc': [False] * 8, 'dscp_prio': []}


def save(dev, state):
    if not os.path.isdir(STATE_DIR):
        os.makedirs(STATE_DIR)
    with open(os.path.join(STATE_DIR, 'dcb-%s.json' % dev), 'w') as handle:
        json.dump(state, handle)


def mapping(args, key_max, parse_key=int):
    pairs = []
    for arg in args:
        try:
            key, value = arg.split(':', 1)
            pairs.append((key if key == 'all' else parse_key(key), value))
        except ValueError:
            die('Invalid mapping %s' % arg)
    for key, dummy in pairs:
        if key != 'all' and not 0 <= key <= key_max:
            die('Invalid mapping %s:...' % key)
    return pairs


def main():
    if not os.path.isdir(STATE_DIR):
        os.makedirs(STATE_DIR)
    argv = sys.argv[1:]
    with open(os.path.join(STATE_DIR, 'calls.log'), 'a') as log:
        log.write('dcb %s\n' % ' '.join(argv))
    use_json = False
    while argv and argv[0].startswith('-'):
        if argv[0] in ('-j', '--json'):
            use_json = True
        argv.pop(0)
    if len(argv) < 4 or argv[2] != 'dev':
        die('Usage: dcb [ OPTIONS ] { app | pfc } { show | set | add | del | replace | flush } dev DEV ...')
    obj, cmd, dev, rest = argv[0], argv[1], argv[3], argv[4:]
    state = load(dev)
    if obj == 'pfc' and cmd == 'show':
        if use_json:
            print(json.dumps({'pfc_cap': 8, 'macsec_bypass': False, 'delay': 0, 'prio_pfc': state['prio_pfc']}, separators=(',', ':')))
        else:
            print('pfc-cap 8 macsec-bypass off delay 0')
            print('prio-pfc ' + ' '.join('%d:%s' % (i, 'on' if on else 'off') for i, on in enumerate(state['prio_pfc'])))
    elif obj == 'pfc' and cmd == 'set':
        if not rest or rest[0] != 'prio-pfc':
            die('What is "%s"?' % (rest[0] if rest else ''))
        for key, value in mapping(rest[1:], 7):
            if value not in ('on', 'off'):
                die('Invalid mapping %s:%s' % (key, value))
            for prio in (range(8) if key == 'all' else [key]):
                state['prio_pfc'][prio] = value == 'on'
        save(dev, state)
    elif obj == 'app' and cmd == 'show':
        table = sorted(state['dscp_prio'])
        if use_json:
            print(json.dumps({'dscp_prio': table} if table else {}, separators=(',', ':')))
        elif table:
            print('dscp-prio ' + ' '.join('%d:%d' % (d, p) for d, p in table))
    elif obj == 'app' and cmd in ('add', 'del', 'replace', 'flush'):
        if cmd == 'flush':
            state['dscp_prio'] = []
        else:
            if not rest or rest[0] != 'dscp-prio':
                die('What is "%s"?' % (rest[0] if rest else ''))
            pairs = [(d, int(p)) for d, p in mapping(rest[1:], 63)]
            table = [list(e) for e in state['dscp_prio']]
            for dscp, prio in pairs:
                if cmd == 'replace':
                    table = [e for e in table if e[0] != dscp]
                if cmd == 'del':
                    table = [e for e in table if e != [dscp, prio]]
                elif [dscp, prio] not in table:
                    table.append([dscp, prio])
            state['dscp_prio'] = sorted(table)
        save(dev, state)
    else:
        die('What is "%s %s"?' % (obj, cmd))


if __name__ == '__main__':
    main()
