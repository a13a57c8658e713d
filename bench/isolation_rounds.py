# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller time of each round of playbooks/isolate.yml, replayed (docs/isolation.md, "What it costs").

    .venv/bin/python bench/isolation_rounds.py [--hosts 16] [--coverage quick,full] [--rounds 1]

N local hosts (``ansible_connection: local``) with a test double for ``mpirun`` that prints the real 16-rank
nccl-tests output (tests/fixtures/derived/nccl), at half speed for every pair with the bad node (quick) or for
the bad link (full), and logs when each run starts and ends. The playbook runs with the profile_tasks callback;
a round's wall time goes from its include task's start to the start of the next task of the play (profile_tasks'
elapsed time at each task banner). The controller time of a round is its wall time less the time during which
at least one pair run of the round was running (the union of the double's run intervals): what Ansible spends
planning, including, templating and collecting, per round and per wave. Prints one table row per round (and per
skipped include) and the median over ``--rounds`` runs.
"""
import argparse
import importlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
nccl_text = importlib.import_module('nccl_text')
CAPTURE = os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'nccl', 'nccl-tests_all_reduce_perf_16-ranks.txt')

DOUBLE = r'''#!%(python)s
# test double: stands in for mpirun in the isolation bench
import json, os, sys, time
start = time.time()
args = sys.argv[1:]
hosts = sorted(line.split()[0] for line in open(args[args.index('--hostfile') + 1]) if line.strip() and not line.startswith('#'))
fabric = json.load(open(%(fabric)r))
slow = set(hosts) & set(fabric['bad']) or hosts in fabric['links']
sys.stdout.write(open(os.path.join(%(folder)r, 'slow.txt' if slow else 'healthy.txt')).read())
sys.stdout.flush()
with open(%(log)r, 'a') as log:
    log.write(json.dumps({'pair': hosts, 'start': start, 'end': time.time()}) + '\n')
'''
BANNER = re.compile(r'^TASK \[(?P<name>.*)\] \*+$')
ELAPSED = re.compile(r'\((?P<step>\d+:\d\d:\d\d\.\d+)\)\s+(?P<total>\d+:\d\d:\d\d\.\d+)')


def seconds(text):
    hours, minutes, rest = text.split(':')
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)


def task_starts(out):
    """[(task name, seconds since the start of the playbook)] from the profile_tasks lines after each banner."""
    starts, name = [], None
    for line in out.splitlines():
        match = BANNER.match(line.strip())
        if match:
            name = match.group('name')
            continue
        match = ELAPSED.search(line)
        if match and name is not None:
            starts.append((name, seconds(match.group('total'))))
            name = None
    return starts


def round_walls(starts):
    """{round number: wall seconds} from the start of 'Run round K' to the start of the next task of the play."""
    walls = {}
    for index, (name, at) in enumerate(starts):
        match = re.match(r'Run round (\d)', name)
        if not match:
            continue
        after = [t for n, t in starts[index + 1:] if not n.startswith('xuanwu.cluster.collectives_multinode :')]
        walls[int(match.group(1))] = after[0] - at if after else None
    return walls


def before_round1(starts):
    """profile_tasks' elapsed time at the start of 'Run round 1': the preflight and the plan, the controller's work
    ahead of the first pair (profile_tasks counts from its own load, just before the first task); None without a
    round 1."""
    first = [at for name, at in starts if re.match(r'Run round 1\b', name)]
    return first[0] if first else None


def union(intervals):
    total, end = 0.0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def run_once(count, coverage, folder):
    hosts = ['node%02d' % i for i in range(1, count + 1)]
    bindir = os.path.join(folder, 'bin')
    os.makedirs(bindir)
    fabric = {'bad': [hosts[count // 2]] if coverage == 'quick' else [], 'links': [[hosts[0], hosts[count // 2 + 1]]]}
    with open(os.path.join(folder, 'fabric.json'), 'w') as handle:
        json.dump(fabric, handle)
    with open(CAPTURE) as handle:
        capture = handle.read()
    for name, factor in (('healthy.txt', 1.0), ('slow.txt', 0.5)):
        with open(os.path.join(folder, name), 'w') as handle:
            handle.write(nccl_text.scaled(capture, factor))
    log = os.path.join(folder, 'runs.log')
    for name, body in (('mpirun', DOUBLE % {'python': sys.executable, 'fabric': os.path.join(folder, 'fabric.json'), 'folder': folder,
                                            'log': log}),
                       ('all_reduce_perf', '#!/bin/sh\n# test double\nexit 0\n')):
        path = os.path.join(bindir, name)
        with open(path, 'w') as handle:
            handle.write(body)
        os.chmod(path, 0o755)
    with open(os.path.join(folder, 'pairs.yml'), 'w') as handle:
        yaml.safe_dump({'schema_version': 1, 'name': 'pairs', 'isolation': {'pair_busbw_gbps_min': 330.0}}, handle)
    inventory = os.path.join(folder, 'inventory.yml')
    with open(inventory, 'w') as handle:
        yaml.safe_dump({'all': {'hosts': dict((h, {}) for h in hosts), 'vars': {
            'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
            'xuanwu_profile': os.path.join(folder, 'pairs.yml'), 'xuanwu_nccl_tests_bin_dir': bindir,
            'xuanwu_mpirun': os.path.join(bindir, 'mpirun'), 'xuanwu_multinode_slots': 8}}}, handle)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_CACHE_PLUGIN='memory',
               ANSIBLE_CALLBACKS_ENABLED='ansible.posix.profile_tasks', PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'])
    reports = os.path.join(folder, 'reports')
    proc = subprocess.run(['ansible-playbook', '-i', inventory, 'playbooks/isolate.yml', '-e', 'xuanwu_reports_dir=' + reports,
                           '-e', 'xuanwu_isolation_coverage=' + coverage], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    (run_id,) = os.listdir(reports)
    with open(os.path.join(reports, run_id, 'isolation.json')) as handle:
        verdict = json.load(handle)['verdict']
    with open(log) as handle:
        runs = sorted((json.loads(line) for line in handle), key=lambda r: r['start'])
    starts = task_starts(proc.stdout)
    walls = round_walls(starts)
    rows, used = [], 0
    for number in sorted(walls):
        pairs = [p for p in verdict['pairs'] if p['round'] == number]
        mine = runs[used:used + len(pairs)]
        used += len(pairs)
        busy = union([(r['start'], r['end']) for r in mine])
        waves = len(set(p['wave'] for p in pairs))
        rows.append({'round': number, 'waves': waves, 'pairs': len(pairs), 'wall': walls[number], 'pair_runs': busy,
                     'controller': walls[number] - busy})
    return proc.returncode, verdict, rows, before_round1(starts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', default='16')
    parser.add_argument('--coverage', default='quick,full')
    parser.add_argument('--rounds', type=int, default=1)
    args = parser.parse_args()
    print('| coverage | hosts | round | waves | pairs | round wall (s) | pair runs (s) | controller (s) | per wave (s) | per pair (s) |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    for count in [int(n) for n in args.hosts.split(',')]:
        for coverage in args.coverage.split(','):
            runs = []
            for _run in range(args.rounds):
                with tempfile.TemporaryDirectory(prefix='xuanwu-isolation-bench-') as folder:
                    rc, verdict, rows, before = run_once(count, coverage, folder)
                runs.append(rows)
                sys.stderr.write('%s %d hosts: exit %d, %s; round 1 started %s s after the first task\n' % (
                    coverage, count, rc, verdict['answer'], '?' if before is None else '%.1f' % before))
            for index, row in enumerate(runs[0]):
                wall = statistics.median(r[index]['wall'] for r in runs)
                busy = statistics.median(r[index]['pair_runs'] for r in runs)
                ctl = statistics.median(r[index]['controller'] for r in runs)
                print('| %s | %d | %d%s | %d | %d | %.2f | %.2f | %.2f | %s | %s |' % (
                    coverage, count, row['round'], '' if row['pairs'] else ' (skipped)', row['waves'], row['pairs'], wall, busy, ctl,
                    '%.2f' % (ctl / row['waves']) if row['waves'] else '-', '%.3f' % (ctl / row['pairs']) if row['pairs'] else '-'))


if __name__ == '__main__':
    main()
