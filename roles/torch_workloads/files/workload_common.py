# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every workload script shares: the result line, the backend choice and the job's life cycle.

Copied next to the scripts; they import it from their own directory. Standard library only.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import sys
import traceback

RESULT_TAG = 'XUANWU_RESULT'


def emit(result):
    """Print the one result line a role parses."""
    sys.stdout.write('%s %s\n' % (RESULT_TAG, json.dumps(result, sort_keys=True)))
    sys.stdout.flush()


def pick_backend(torch, dist, wanted):
    """NCCL on GPUs, gloo on the CPU, unless a backend is asked for."""
    if wanted != 'auto':
        return wanted
    if torch.cuda.is_available() and dist.is_nccl_available():
        return 'nccl'
    return 'gloo'


def torch_seen(torch):
    """What PyTorch sees of the GPUs (field guide §4.1), reported with every result so that a run on the CPU or on
    fewer GPUs says why: ``{cuda_available, device_count, torch_nccl_version}`` (None where torch cannot tell)."""
    seen = {'cuda_available': None, 'device_count': None, 'torch_nccl_version': None}
    try:
        seen['cuda_available'] = bool(torch.cuda.is_available())
        seen['device_count'] = int(torch.cuda.device_count())
    except Exception:  # pylint: disable=broad-except
        pass
    try:
        version = torch.cuda.nccl.version()
    except Exception:  # pylint: disable=broad-except
        version = None
    if isinstance(version, tuple):
        version = '.'.join(str(v) for v in version)
    seen['torch_nccl_version'] = None if version is None else str(version)
    return seen


def run_job(run, args, result):
    """Run ``run(args, torch, dist) -> (rank, result)`` and tear the process group down cleanly.

    ``result`` is what rank 0 prints when ``run`` fails before returning one. When ``run`` returned,
    rank 0 prints its result first and every rank then waits for the others (so no rank exits before
    the result line is out) before the transport is torn down. Returns the exit code (0 when ok).
    """
    rank = int(os.environ.get('RANK', '0'))
    try:
        import torch
        import torch.distributed as dist
        rank, result = run(args, torch, dist)
    except Exception as exc:  # pylint: disable=broad-except
        traceback.print_exc()
        result['ok'] = False
        result['error'] = '%s: %s' % (type(exc).__name__, exc)
        if rank == 0:
            emit(result)
        return 1
    if rank == 0:
        emit(result)
    try:
        if dist.is_initialized():
            # every rank waits for rank 0's result line, also when the run judged a failure: a rank that exited 1
            # first would have the launcher stop rank 0 before its line is out; then the transport is torn down
            dist.barrier()
            dist.destroy_process_group()
    except Exception:  # pylint: disable=broad-except
        pass
    return 0 if result.get('ok') else 1


def finish(code):
    """Exit without interpreter teardown: a collective library's destructors can abort (SIGABRT)
    after the work is done and the result is out, which would turn a pass into a failure."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def init(torch, dist, wanted_backend, timeout_s):
    """Join the process group the launcher set up; return ``(backend, device, rank, world)``.

    ``wanted_backend`` is auto, nccl or gloo; ``timeout_s`` bounds every collective.
    """
    import datetime
    backend, device = backend_and_device(torch, dist, wanted_backend)
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=timeout_s))
    return backend, device, dist.get_rank(), dist.get_world_size()


def backend_and_device(torch, dist, wanted_backend):
    """``(backend, device)`` of this rank: its GPU (LOCAL_RANK, made current) with NCCL, else the CPU."""
    backend = pick_backend(torch, dist, wanted_backend)
    local_rank = int(os.environ.get('LOCAL_RANK', '0'))
    if backend == 'nccl':
        torch.cuda.set_device(local_rank)
        return backend, torch.device('cuda', local_rank)
    return backend, torch.device('cpu')


def stop_job(proc, grace_s, send):
    """Stop a job past its bound: ``send(SIGTERM)``, wait ``grace_s``, then ``send(SIGKILL)`` and wait 10 s (``send``
    signals the job's processes, an OSError ignored); the job's exit code (None when it still did not end)."""
    import signal
    import subprocess
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        try:
            send(sig)
        except OSError:
            pass
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    return proc.returncode
