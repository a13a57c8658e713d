# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run fault_isolation.py under the PyTorch launcher with a hard wall-clock bound.

    python3 fault_isolation_launch.py --nproc-per-node 8 --bound-s 120 --victim-rank 3

starts ``python -m torch.distributed.run`` (torchrun) in its own process group, with the output of
the job on this script's stderr, and waits at most --bound-s seconds. A job still running then is
hung: its whole process group gets SIGTERM, then SIGKILL. Extra launcher options (multi-node
rendezvous, for instance) go after ``--torchrun-arg``; options of fault_isolation.py after ``--``.

Prints one final line ``XUANWU_RESULT {json}``::

    {"ok", "ended_with_error", "hung", "seconds", "exit_code", "victim_rank", "attributed",
     "failed_ranks": [{"rank", "exitcode", "host"}], "root_cause_rank", "survivors": [...],
     "bound_s", "nproc_per_node", "command"}

``ended_with_error``: the launcher exited non-zero within the bound. ``attributed``: the launcher's
failure report names the victim rank as failed (killed by a signal or a non-zero exit), or a
survivor's error names the victim's rank. ``survivors`` are the per-rank results the job printed.
``ok`` = ended_with_error and not hung; the exit status is 0 when ok, else 1.
Needs only the standard library (and torch for the job itself); Python 3.8+.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload_common as common  # noqa: E402  pylint: disable=wrong-import-position

RESULT_TAG = common.RESULT_TAG
HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
    finally:
        sock.close()


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--nproc-per-node', type=int, default=2)
    parser.add_argument('--bound-s', type=float, default=120.0)
    parser.add_argument('--victim-rank', type=int, default=1)
    parser.add_argument('--kill-after-iters', type=int, default=5)
    parser.add_argument('--backend', choices=('auto', 'nccl', 'gloo'), default='auto')
    parser.add_argument('--python', default=sys.executable, help='the interpreter that holds torch')
    parser.add_argument('--script', default=os.path.join(HERE, 'fault_isolation.py'))
    parser.add_argument('--torchrun-arg', action='append', default=[],
                        help='extra launcher option, repeatable (default: one node on 127.0.0.1 and a free port)')
    parser.add_argument('--grace-s', type=float, default=10.0, help='SIGTERM to SIGKILL delay for a hung job')
    parser.add_argument('job_args', nargs=argparse.REMAINDER, help='after --: more fault_isolation.py options')
    return parser


def launcher_command(args):
    command = [args.python, '-m', 'torch.distributed.run', '--nproc_per_node', str(args.nproc_per_node)]
    if args.torchrun_arg:
        command += args.torchrun_arg
    else:
        command += ['--nnodes', '1', '--master_addr', '127.0.0.1', '--master_port', str(free_port())]
    job_args = [a for a in args.job_args if a != '--']
    command += [args.script, '--victim-rank', str(args.victim_rank), '--kill-after-iters', str(args.kill_after_iters),
                '--bound-s', str(args.bound_s), '--backend', args.backend] + job_args
    return command


def _pump(stream, sink):
    for raw in iter(stream.readline, b''):
        line = raw.decode('utf-8', 'replace')
        sink.append(line)
        sys.stderr.write(line)
        sys.stderr.flush()
    stream.close()


def failed_ranks(output):
    """The ranks in torchrun's ChildFailedError report ("Failures:" and "Root Cause" blocks)."""
    ranks, root = [], None
    blocks = re.split(r'\n\s*\[\d+\]:\s*\n', output)
    for i, block in enumerate(blocks):
        rank = re.search(r'^\s*rank\s*:\s*(\d+)', block, re.M)
        code = re.search(r'^\s*exitcode\s*:\s*(-?\d+)', block, re.M)
        host = re.search(r'^\s*host\s*:\s*(\S+)', block, re.M)
        if i and rank and code:
            entry = {'rank': int(rank.group(1)), 'exitcode': int(code.group(1)), 'host': host.group(1) if host else None}
            if root is None and 'Root Cause' in blocks[i - 1]:
                root = entry['rank']
            if entry not in ranks:
                ranks.append(entry)
    return sorted(ranks, key=lambda e: e['rank']), root


def survivor_results(output):
    results = []
    for line in output.splitlines():
        if line.startswith(RESULT_TAG + ' '):
            try:
                results.append(json.loads(line[len(RESULT_TAG) + 1:]))
            except ValueError:
                continue
    return results


def main(argv=None):
    args = build_parser().parse_args(argv)
    command = launcher_command(args)
    output = []
    began = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    reader = threading.Thread(target=_pump, args=(proc.stdout, output))
    reader.daemon = True
    reader.start()
    hung = False
    try:
        exit_code = proc.wait(timeout=args.bound_s)
    except subprocess.TimeoutExpired:
        hung = True
        exit_code = common.stop_job(proc, args.grace_s, lambda sig: os.killpg(proc.pid, sig))
    seconds = time.monotonic() - began
    reader.join(timeout=5)
    text = ''.join(output)
    failures, root = failed_ranks(text)
    survivors = survivor_results(text)
    victim = args.victim_rank
    named = any(f['rank'] == victim and f['exitcode'] != 0 for f in failures)
    named = named or any(re.search(r'\brank[\s:=]*%d\b' % victim, str(s.get('error') or '')) for s in survivors)
    ended_with_error = (not hung) and exit_code not in (0, None)
    result = {
        'ok': ended_with_error and not hung,
        'ended_with_error': ended_with_error,
        'hung': hung,
        'seconds': round(seconds, 3),
        'exit_code': exit_code,
        'victim_rank': victim,
        'attributed': bool(named),
        'failed_ranks': failures,
        'root_cause_rank': root,
        'survivors': survivors,
        'bound_s': args.bound_s,
        'nproc_per_node': args.nproc_per_node,
        'command': command,
    }
    common.emit(result)
    return 0 if result['ok'] else 1


if __name__ == '__main__':
    sys.exit(main())
