# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fault isolation: one rank of a collective loop dies; the others must end with an error, in bounded
time, instead of hanging.

Run it under the PyTorch launcher (fault_isolation_launch.py does that with a hard time bound)::

    python -m torch.distributed.run --nproc-per-node 8 fault_isolation.py --victim-rank 3 --kill-after-iters 5

Every rank runs all-reduces in a loop. After --kill-after-iters iterations the rank --victim-rank
kills itself (SIGKILL, or os._exit with --kill-mode exit): no clean shutdown, like a crashed process
or a lost node; with --kill-mode hang it stays alive but stops taking part (a stuck GPU or process),
which only the collective timeout can detect. The survivors are set up to fail fast: the process-group timeout is
--collective-timeout-s (default a third of --bound-s), and for NCCL the environment asks for
asynchronous error handling and blocking waits (TORCH_NCCL_ASYNC_ERROR_HANDLING=1,
TORCH_NCCL_BLOCKING_WAIT=1; the older NCCL_* names for torch < 2.2) unless the caller set them. The
loop polls each collective from Python, so that the launcher's SIGTERM (torchrun stops the other
ranks when one dies) is seen at once even when NCCL itself cannot notice the dead peer.

Each survivor prints one line ``XUANWU_RESULT {json}``::

    {"rank", "victim_rank", "error", "error_type", "seconds_to_error", "iterations", "backend",
     "world_size", "ended_with_error"}

``seconds_to_error`` counts from the end of the last collective that completed to the error (or to
the launcher's SIGTERM, which also counts as an error: the launcher tore the job down). A survivor
exits 1 when it saw the error (the expected outcome) and 3 when its loop finished without one.
Needs only torch and the standard library (Python 3.8+).
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import re
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload_common as common  # noqa: E402  pylint: disable=wrong-import-position

RESULT_TAG = common.RESULT_TAG
NCCL_ENV = {'TORCH_NCCL_ASYNC_ERROR_HANDLING': '1', 'TORCH_NCCL_BLOCKING_WAIT': '1'}
LEGACY_NCCL_ENV = {'NCCL_ASYNC_ERROR_HANDLING': '1', 'NCCL_BLOCKING_WAIT': '1'}   # torch < 2.2 reads these
POLL_S = 0.0005
STATE = {'reported': False, 'last_ok': None, 'iterations': 0, 'base': {}}


def report(error, error_type):
    if STATE['reported']:
        return
    STATE['reported'] = True
    now = time.monotonic()
    last = STATE['last_ok']
    result = dict(STATE['base'])
    result.update({
        'error': error,
        'error_type': error_type,
        'ended_with_error': error is not None,
        'seconds_to_error': round(now - last, 3) if (error is not None and last is not None) else None,
        'iterations': STATE['iterations'],
    })
    common.emit(result)


def on_sigterm(signum, _frame):
    report('terminated by the launcher (signal %d) before the collective failed' % signum, 'Terminated')
    os._exit(1)


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--victim-rank', type=int, default=1)
    parser.add_argument('--kill-after-iters', type=int, default=5)
    parser.add_argument('--kill-mode', choices=('sigkill', 'exit', 'hang'), default='sigkill',
                        help='hang: the victim stops taking part but stays alive (a stuck GPU or process)')
    parser.add_argument('--bound-s', type=float, default=120.0, help='the survivors must fail within this')
    parser.add_argument('--collective-timeout-s', type=float, default=None, help='default: bound-s / 3')
    parser.add_argument('--max-iters', type=int, default=1000000)
    parser.add_argument('--size-bytes', type=int, default=1 << 20)
    parser.add_argument('--backend', choices=('auto', 'nccl', 'gloo'), default='auto')
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    timeout_s = args.collective_timeout_s if args.collective_timeout_s else max(1.0, args.bound_s / 3.0)
    signal.signal(signal.SIGTERM, on_sigterm)
    import torch
    import torch.distributed as dist

    env = dict(NCCL_ENV)
    if tuple(int(x) for x in re.findall(r'\d+', torch.__version__)[:2]) < (2, 2):
        env.update(LEGACY_NCCL_ENV)
    for key, value in env.items():
        os.environ.setdefault(key, value)

    backend, device, rank, world = common.init(torch, dist, args.backend, timeout_s)
    if not 0 <= args.victim_rank < world:
        raise SystemExit('--victim-rank %d is not a rank of this job (world size %d)' % (args.victim_rank, world))
    STATE['base'] = {'rank': rank, 'victim_rank': args.victim_rank, 'backend': backend, 'world_size': world,
                     'collective_timeout_s': timeout_s, 'host': os.uname()[1]}
    tensor = torch.ones(max(1, args.size_bytes // 4), dtype=torch.float32, device=device)
    STATE['last_ok'] = time.monotonic()
    try:
        for i in range(args.max_iters):
            if rank == args.victim_rank and i == args.kill_after_iters:
                sys.stdout.flush()
                sys.stderr.write('rank %d on %s: %s after %d iterations\n' % (
                    rank, os.uname()[1], 'hanging' if args.kill_mode == 'hang' else 'killing itself', i))
                sys.stderr.flush()
                if args.kill_mode == 'exit':
                    os._exit(137)
                if args.kill_mode == 'hang':
                    while True:
                        time.sleep(3600)
                os.kill(os.getpid(), signal.SIGKILL)
            work = dist.all_reduce(tensor, async_op=True)
            # poll in Python rather than block in C++: the launcher's SIGTERM handler can then run
            deadline = time.monotonic() + timeout_s + 10.0
            while not work.is_completed():
                if time.monotonic() > deadline:
                    raise TimeoutError('all_reduce did not complete within %.0f s (collective timeout %.0f s)'
                                       % (timeout_s + 10.0, timeout_s))
                time.sleep(POLL_S)
            work.wait()
            if device.type == 'cuda':
                torch.cuda.synchronize(device)
            STATE['iterations'] = i + 1
            STATE['last_ok'] = time.monotonic()
    except Exception as exc:  # pylint: disable=broad-except
        traceback.print_exc()
        report(str(exc).strip().split('\n', 1)[0][:500], type(exc).__name__)
        sys.stdout.flush()
        os._exit(1)   # no clean shutdown: the group is broken, destroy/abort can block
    report(None, None)
    return 3


if __name__ == '__main__':
    sys.exit(main())
