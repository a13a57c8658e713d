# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time ``xuanwu-health`` (docs/node-health.md): run it N times and print the median and spread of its wall time and
CPU time (its own and its children's: the tools it runs), its exit codes and lines.

    python3 bench/health_check.py --runs 20 [--command /usr/local/sbin/xuanwu-health] [--mode check]
                                  [--config /etc/xuanwu/health.json] [--replay DIR] [--json OUT.json]

Without ``--command`` the checkout's collection is run in place (``python3 -I`` with the checkout's collection root on
``sys.path``), as the installed command runs it. The goal on one GPU (issue 40): at most 2 s of wall and 1 s of CPU
per check.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = ('import sys\nsys.path.insert(0, %r)\nfrom ansible_collections.xuanwu.cluster.plugins.module_utils import _health\n'
          'sys.exit(_health.main(["xuanwu-health"] + sys.argv[1:]))')


def collection_root():
    """A folder holding ansible_collections/xuanwu/cluster -> this checkout (made under /tmp when the checkout is not
    one already)."""
    parts = ROOT.split(os.sep)
    if parts[-3:-1] == ['ansible_collections', 'xuanwu']:
        return os.sep.join(parts[:-3])
    base = '/tmp/xuanwu-health-bench'
    link = os.path.join(base, 'ansible_collections', 'xuanwu', 'cluster')
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(ROOT, link)
    return base


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def spread(values):
    values = sorted(values)
    return {'median': statistics.median(values), 'min': values[0], 'max': values[-1],
            'p90': values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--command', help='the installed command (default: this checkout run in place)')
    parser.add_argument('--mode', default='check', choices=('check', 'prolog', 'epilog', 'npd'))
    parser.add_argument('--config', default='/etc/xuanwu/health.json')
    parser.add_argument('--replay', help='a capture bundle replayed instead of the tools')
    parser.add_argument('--json', help='write the figures and every run here')
    args = parser.parse_args(argv)
    if args.command:
        argv0 = [args.command]
    else:
        argv0 = [sys.executable, '-I', '-c', LAUNCH % collection_root()]
    command = argv0 + [args.mode, '--config', args.config] + (['--replay', args.replay] if args.replay else [])
    runs = []
    for _run in range(args.runs):
        cpu0, wall0 = children_cpu(), time.monotonic()
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=700, check=False)
        runs.append({'wall_s': time.monotonic() - wall0, 'cpu_s': children_cpu() - cpu0, 'rc': proc.returncode,
                     'line': proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else proc.stderr.strip()[-300:]})
    wall, cpu = spread([r['wall_s'] for r in runs]), spread([r['cpu_s'] for r in runs])
    print('xuanwu-health %s, %d runs%s' % (args.mode, len(runs), ' (replay %s)' % args.replay if args.replay else ''))
    print('  wall s: median %.3f  min %.3f  p90 %.3f  max %.3f' % (wall['median'], wall['min'], wall['p90'], wall['max']))
    print('  cpu s:  median %.3f  min %.3f  p90 %.3f  max %.3f  (the command and the tools it ran)'
          % (cpu['median'], cpu['min'], cpu['p90'], cpu['max']))
    codes = sorted(set(r['rc'] for r in runs))
    print('  exit codes: %s' % ', '.join('%d x%d' % (c, sum(1 for r in runs if r['rc'] == c)) for c in codes))
    for line in sorted(set(r['line'] for r in runs))[:5]:
        print('  line: %s' % line)
    if args.json:
        with open(args.json, 'w') as handle:
            json.dump({'mode': args.mode, 'replay': args.replay, 'wall_s': wall, 'cpu_s': cpu, 'runs': runs}, handle, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
