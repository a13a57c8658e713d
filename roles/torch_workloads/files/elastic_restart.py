# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Elastic restart, the job's side: a small DDP training loop that checkpoints every --checkpoint-every steps and,
started again by the launcher after a failure, resumes from its last checkpoint.

Run it under torchrun with restarts (elastic_restart_launch.py does that, kills one rank and times the recovery)::

    python -m torch.distributed.run --nproc-per-node 8 --max-restarts 3 --rdzv-backend c10d ... \\
        elastic_restart.py --checkpoint-dir DIR --steps 20 --checkpoint-every 5 --hold-at-step 7

The model and data are those of ddp_smoke.py (a small transformer on a fixed, learnable synthetic task), smaller on
the GPU so that a checkpoint stays small. After step s (counted from 1) with s a multiple of --checkpoint-every, rank 0
writes the model, the optimizer, the step and the losses so far to DIR/checkpoint.pt (a temporary file, then renamed).
A worker finding that file at start loads it (every rank, before DDP wraps the model) and goes on from the step after.

In the first attempt only (TORCHELASTIC_RESTART_COUNT 0), --victim-rank (default the last rank) stops after step
--hold-at-step and waits, at most --hold-s seconds, for the launcher to kill it: the kill then lands at that step
whatever the speed of a step. Killed, the other ranks fail in their next collective or are stopped by torchrun, which
starts the worker group again (--max-restarts). Not killed in time, the job simply goes on (the launcher reports that
the kill did not happen).

Progress lines for the launcher (rank 0, and the victim's hold), ``XUANWU_ELASTIC {json}``::

    {"event": "step", "step", "restart", "loss"}          every step (rank 0)
    {"event": "checkpoint", "step", "restart"}            after each checkpoint is in place (rank 0)
    {"event": "resume", "step", "restart", "load_s"}      a checkpoint was loaded (rank 0)
    {"event": "hold", "rank", "pid", "step", "restart"}   the victim waits for its kill

Rank 0 prints one final line ``XUANWU_RESULT {json}`` when the loop finished::

    {"ok", "steps", "steps_done", "checkpoint_every", "restart_count", "max_restarts", "resumed_from", "losses",
     "first_loss", "final_loss", "init_s", "world_size", "backend", "device", "torch_version", "cuda_available",
     "device_count", "torch_nccl_version", "error"}

A worker that fails prints ``XUANWU_ELASTIC {"event": "error", ...}`` and exits 1. Needs only torch and the standard
library (Python 3.8+).
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import math
import os
import sys
import time
import traceback

BEGAN = time.monotonic()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload_common as common  # noqa: E402  pylint: disable=wrong-import-position
import ddp_smoke  # noqa: E402  pylint: disable=wrong-import-position

EVENT_TAG = 'XUANWU_ELASTIC'
CHECKPOINT = 'checkpoint.pt'
# smaller than the DDP smoke's model on the GPU: about 5M parameters, a checkpoint of about 60 MB with the optimizer
GPU_CONFIG = {'d_model': 256, 'layers': 2, 'heads': 4, 'ff': 1024, 'vocab': 8192, 'seq': 128, 'batch': 16, 'lr': 1e-3}


def event(**fields):
    """One progress line (a single write, so that lines of several ranks do not interleave)."""
    sys.stdout.write('%s %s\n' % (EVENT_TAG, json.dumps(fields, sort_keys=True)))
    sys.stdout.flush()


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--checkpoint-dir', required=True, help='private directory the launcher made (mode 0700)')
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--checkpoint-every', type=int, default=5)
    parser.add_argument('--hold-at-step', type=int, default=0, help='0: no rank waits for a kill')
    parser.add_argument('--victim-rank', type=int, default=-1, help='-1: the last rank')
    parser.add_argument('--hold-s', type=float, default=30.0, help='longest wait for the kill')
    parser.add_argument('--seed', type=int, default=1234)
    parser.add_argument('--backend', choices=('auto', 'nccl', 'gloo'), default='auto')
    parser.add_argument('--timeout-s', type=float, default=120.0, help='collective timeout (above --hold-s)')
    return parser


def init_attempt(torch, dist, wanted_backend, timeout_s, restart):
    """Join this attempt's process group; ``(backend, device, rank, world)``.

    The group's keys go to the launcher's store under a prefix of their own attempt: torchrun (2.4 and later) keeps
    one TCP store across restarts, and a restarted group would otherwise read the keys the killed attempt left there
    (a gloo peer's old address, an NCCL unique id) and fail to connect."""
    import datetime
    backend, device = common.backend_and_device(torch, dist, wanted_backend)
    rank, world = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])
    timeout = datetime.timedelta(seconds=timeout_s)
    agent_store = os.environ.get('TORCHELASTIC_USE_AGENT_STORE') == 'True'
    store = dist.TCPStore(os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT']), world,
                          is_master=(not agent_store and rank == 0), timeout=timeout)
    dist.init_process_group(backend=backend, store=dist.PrefixStore('xuanwu-elastic/attempt_%d' % restart, store),
                            rank=rank, world_size=world, timeout=timeout)
    return backend, device, dist.get_rank(), dist.get_world_size()


def load_checkpoint(torch, path, device):
    """The checkpoint's content, or None when there is none yet."""
    if not os.path.exists(path):
        return None
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except TypeError:       # torch < 1.13 has no weights_only
        return torch.load(path, map_location=device)


def save_checkpoint(torch, path, state):
    partial = path + '.partial'
    torch.save(state, partial)
    os.replace(partial, path)


def hold(args, rank, step, restart):
    """The victim waits for the launcher's SIGKILL, at most --hold-s seconds."""
    event(event='hold', rank=rank, pid=os.getpid(), step=step, restart=restart)
    deadline = time.monotonic() + args.hold_s
    while time.monotonic() < deadline:
        time.sleep(0.05)
    sys.stderr.write('rank %d: no kill came within %.0f s of step %d; going on\n' % (rank, args.hold_s, step))
    sys.stderr.flush()


def train(args, torch, dist):
    from torch.nn.parallel import DistributedDataParallel as DDP

    restart = int(os.environ.get('TORCHELASTIC_RESTART_COUNT', '0'))
    backend, device, rank, world = init_attempt(torch, dist, args.backend, args.timeout_s, restart)
    on_gpu = device.type == 'cuda'
    victim = args.victim_rank if args.victim_rank >= 0 else world - 1
    cfg = dict(GPU_CONFIG if on_gpu else ddp_smoke.CPU_DEFAULTS)
    if on_gpu:
        torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(args.seed)
    model = ddp_smoke.make_model(torch, cfg).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg['lr'], weight_decay=0.0)
    path = os.path.join(args.checkpoint_dir, CHECKPOINT)
    loaded_at = time.monotonic()
    state = load_checkpoint(torch, path, device)
    start, losses = 0, []
    if state is not None:
        model.load_state_dict(state['model'])
        optimizer.load_state_dict(state['optimizer'])
        start, losses = int(state['step']), [float(v) for v in state['losses']][:int(state['step'])]
        if rank == 0:
            event(event='resume', step=start, restart=restart, load_s=round(time.monotonic() - loaded_at, 3))
    ddp = DDP(model, device_ids=[device.index] if on_gpu else None, broadcast_buffers=False)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = [(x.to(device), y.to(device)) for x, y in ddp_smoke.make_batches(torch, cfg, rank, args.seed, 4)]
    init_s = round(time.monotonic() - BEGAN, 3)
    for step in range(start + 1, args.steps + 1):
        inputs, targets = batches[(step - 1) % len(batches)]
        optimizer.zero_grad(set_to_none=True)
        if on_gpu:
            with torch.autocast(device_type='cuda', dtype=torch.bfloat16):
                logits = ddp(inputs)
        else:
            logits = ddp(inputs)
        loss = loss_fn(logits.float().reshape(-1, cfg['vocab']), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        value = loss.detach().clone()
        dist.all_reduce(value)
        losses.append(float(value.item()) / world)
        if rank == 0:
            event(event='step', step=step, restart=restart, loss=round(losses[-1], 5))
        if step % args.checkpoint_every == 0 and step < args.steps:
            if rank == 0:
                save_checkpoint(torch, path, {'model': model.state_dict(), 'optimizer': optimizer.state_dict(),
                                              'step': step, 'losses': losses})
                event(event='checkpoint', step=step, restart=restart)
            dist.barrier()
        if restart == 0 and rank == victim and step == args.hold_at_step:
            hold(args, rank, step, restart)
    finite = bool(losses) and all(math.isfinite(v) for v in losses)
    result = {
        'ok': len(losses) == args.steps and finite and losses[-1] < losses[0],
        'steps': args.steps, 'steps_done': len(losses), 'checkpoint_every': args.checkpoint_every,
        'restart_count': restart, 'max_restarts': _int(os.environ.get('TORCHELASTIC_MAX_RESTARTS')),
        'resumed_from': start if state is not None else None, 'losses': [round(v, 5) for v in losses],
        'first_loss': round(losses[0], 5) if losses else None, 'final_loss': round(losses[-1], 5) if losses else None,
        'init_s': init_s, 'world_size': world, 'backend': backend, 'victim_rank': victim,
        'device': torch.cuda.get_device_name(device) if on_gpu else 'cpu', 'torch_version': torch.__version__,
        'error': None,
    }
    result.update(common.torch_seen(torch))
    if not result['ok']:
        result['error'] = ('non-finite loss' if not finite else 'loss did not fall: first %.5f, final %.5f'
                           % (losses[0], losses[-1]))
    return rank, result


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def main(argv=None):
    args = build_parser().parse_args(argv)
    rank = int(os.environ.get('RANK', '0'))
    try:
        import torch
        import torch.distributed as dist
        rank, result = train(args, torch, dist)
    except Exception as exc:  # pylint: disable=broad-except
        traceback.print_exc()
        event(event='error', rank=rank, restart=int(os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')),
              error='%s: %s' % (type(exc).__name__, str(exc).strip().split('\n', 1)[0][:300]))
        return 1
    if rank == 0:
        common.emit(result)
    try:
        dist.barrier()
        dist.destroy_process_group()
    except Exception:  # pylint: disable=broad-except
        pass
    return 0 if result['ok'] else 1


if __name__ == '__main__':
    common.finish(main())
