# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: validate.yml over N replayed local hosts against `ansible -m ping` on the same inventory.

    python3 bench/run.py [--hosts 50] [--rounds 3] [--forks 25]

Each round runs both commands back to back (the order alternates between rounds so that neither
always runs on a warmer machine) and the medians and their ratio are printed. The hosts replay
the healthy demo bundle through `ansible_connection: local`, so the figure is the collection's own
cost per host (module round trip, parsing, checks, report) with the network taken out.
"""
from __future__ import print_function

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLE = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')


def inventory(path, hosts):
    lines = ['all:', '  vars:', '    ansible_connection: local', '    ansible_python_interpreter: "%s"' % sys.executable,
             '    xuanwu_profile: h200x4-nvlink', '    xuanwu_replay_dir: "%s"' % BUNDLE, '  hosts:']
    lines += ['    bench%03d: {}' % i for i in range(hosts)]
    with open(path, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')


def timed(cmd, env):
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:])
        raise SystemExit('%s exited %d' % (' '.join(cmd[:2]), proc.returncode))
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--hosts', type=int, default=50)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--forks', type=int, default=25)
    args = parser.parse_args()
    bindir = os.path.dirname(os.path.abspath(sys.executable))
    work = tempfile.mkdtemp(prefix='xuanwu-bench-')
    try:
        inv = os.path.join(work, 'hosts.yml')
        inventory(inv, args.hosts)
        env = dict(os.environ, ANSIBLE_FORKS=str(args.forks), ANSIBLE_CACHE_PLUGIN='memory',
                   PATH=bindir + os.pathsep + os.environ.get('PATH', ''))
        validate = [os.path.join(bindir, 'ansible-playbook'), '-i', inv, 'playbooks/validate.yml',
                    '-e', 'xuanwu_reports_dir=%s' % os.path.join(work, 'reports')]
        ping = [os.path.join(bindir, 'ansible'), '-i', inv, 'all', '-m', 'ansible.builtin.ping']
        times = {'validate': [], 'ping': []}
        for rnd in range(args.rounds):
            order = [('ping', ping), ('validate', validate)]
            if rnd % 2:
                order.reverse()
            for name, cmd in order:
                times[name].append(timed(cmd, env))
        version = subprocess.run([os.path.join(bindir, 'ansible'), '--version'], stdout=subprocess.PIPE,
                                 universal_newlines=True, check=False).stdout.split('\n')[0]
        med = dict((k, statistics.median(v)) for k, v in times.items())
        result = {'hosts': args.hosts, 'rounds': args.rounds, 'forks': args.forks, 'ansible': version, 'cpus': os.cpu_count(),
                  'validate_s': times['validate'], 'ping_s': times['ping'],
                  'validate_median_s': round(med['validate'], 2), 'ping_median_s': round(med['ping'], 2),
                  'ratio_validate_to_ping': round(med['validate'] / med['ping'], 2),
                  'validate_per_host_ms': round(1000 * med['validate'] / args.hosts, 1)}
        print('hosts=%d rounds=%d forks=%d cpus=%s (%s)' % (args.hosts, args.rounds, args.forks, os.cpu_count(), version))
        print('ansible -m ping      median %6.2f s   runs %s' % (med['ping'], ' '.join('%.2f' % t for t in times['ping'])))
        print('validate.yml         median %6.2f s   runs %s' % (med['validate'], ' '.join('%.2f' % t for t in times['validate'])))
        print('ratio validate/ping  %.2f' % result['ratio_validate_to_ping'])
        print('XUANWU_BENCH ' + json.dumps(result, sort_keys=True))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
