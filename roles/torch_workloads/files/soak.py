# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Soak test: all-reduce plus matrix products for a while, watching memory and GPU error counters.

Run it under the PyTorch launcher, one process per GPU::

    python -m torch.distributed.run --nproc-per-node 8 soak.py --duration-s 600 --sample-s 10

Every rank loops on an all-reduce of --size-bytes and a --matmul-n square matrix product until
--duration-s has passed (the ranks agree on when to stop). Every --sample-s seconds each rank samples
its resident memory (VmRSS of /proc/self/status), torch.cuda.memory_allocated, and -- on local rank 0
of each node, when nvidia-smi is on PATH -- the GPUs' volatile uncorrectable ECC counts, retired pages
and remapped rows. It fails when the RSS or the GPU memory of any rank grew by more than
--max-growth-pct from the first sample to the last, when an error counter rose or a page retirement /
row remap became pending during the run, or when a collective failed.
--leak-mb-per-sample makes every rank keep that many more MiB at every sample: a test of the check.

Rank 0 prints one final line ``XUANWU_RESULT {json}``::

    {"ok", "samples": [{"t_s", "rss_kib", "gpu_mem_allocated_bytes", "gpu_errors"}],   # rank 0's
     "per_rank": [{"rank", "host", "rss_growth_pct", "gpu_mem_growth_pct", "iterations"}],
     "rss_growth_pct", "gpu_mem_growth_pct",           # the largest over the ranks
     "new_errors": [{"host", "gpu", "field", "before", "after"}], "iterations", "duration_s",
     "world_size", "backend", "cuda_available", "device_count", "torch_nccl_version", "error"}

and every rank exits 1 on failure. Needs only torch and the standard library (Python 3.8+).
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload_common as common  # noqa: E402  pylint: disable=wrong-import-position

RESULT_TAG = common.RESULT_TAG
MIB = 1 << 20
# nvidia-smi --query-gpu field sets, richest first (older drivers lack remapped rows; some GPUs lack all)
GPU_FIELD_SETS = (
    ('index', 'ecc.errors.uncorrected.volatile.total', 'retired_pages.double_bit.count', 'retired_pages.pending',
     'remapped_rows.uncorrectable', 'remapped_rows.pending'),
    ('index', 'ecc.errors.uncorrected.volatile.total', 'retired_pages.double_bit.count', 'retired_pages.pending'),
    ('index', 'ecc.errors.uncorrected.volatile.total'),
)


def rss_kib():
    try:
        with open('/proc/self/status') as handle:
            for line in handle:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except (IOError, OSError, ValueError, IndexError):
        return None
    return None


def _value(text):
    text = text.strip()
    if not text or text.upper().strip('[]') in ('N/A', 'NOT SUPPORTED', 'UNKNOWN ERROR', 'REQUESTED FUNCTIONALITY HAS BEEN DEPRECATED'):
        return None
    if text.lower() in ('yes', 'true', 'active'):
        return 1
    if text.lower() in ('no', 'false', 'inactive'):
        return 0
    try:
        return int(float(text))
    except ValueError:
        return None


class GpuCounters(object):
    """Error counters from nvidia-smi; disabled when it is missing or answers no known field set."""

    def __init__(self, enabled):
        self.fields = None
        self.enabled = enabled
        self.note = None

    def read(self):
        if not self.enabled:
            return None
        sets = [self.fields] if self.fields else GPU_FIELD_SETS
        for fields in sets:
            try:
                proc = subprocess.run(['nvidia-smi', '--query-gpu=' + ','.join(fields), '--format=csv,noheader,nounits'],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=False)
            except (OSError, subprocess.SubprocessError) as exc:
                self.enabled, self.note = False, 'nvidia-smi not usable: %s' % exc
                return None
            if proc.returncode != 0:
                continue
            self.fields = fields
            counters = {}
            for line in proc.stdout.decode('utf-8', 'replace').splitlines():
                parts = [p.strip() for p in line.split(',')]
                if len(parts) != len(fields):
                    continue
                counters[parts[0]] = dict((f, _value(v)) for f, v in zip(fields[1:], parts[1:]))
            return counters
        self.enabled, self.note = False, 'nvidia-smi answered none of the error-counter queries'
        return None


def new_errors(first, last, host):
    errors = []
    for gpu, before in sorted((first or {}).items()):
        after = (last or {}).get(gpu) or {}
        for field, old in sorted(before.items()):
            new = after.get(field)
            if new is not None and new > (old or 0):
                errors.append({'host': host, 'gpu': gpu, 'field': field, 'before': old, 'after': new})
    return errors


def growth_pct(first, last):
    if first is None or last is None or first <= 0:
        return None
    return round((last - first) * 100.0 / first, 2)


def gather_json(torch, dist, obj, device, world):
    """all_gather of a JSON-able object as padded bytes (all_gather_object needs numpy on some builds)."""
    data = json.dumps(obj, sort_keys=True).encode('utf-8')
    length = torch.tensor([len(data)], dtype=torch.int64, device=device)
    dist.all_reduce(length, op=dist.ReduceOp.MAX)
    padded = torch.zeros(int(length.item()), dtype=torch.uint8)
    if data:
        padded[:len(data)] = torch.tensor(list(bytearray(data)), dtype=torch.uint8)
    padded = padded.to(device)
    parts = [torch.zeros_like(padded) for dummy in range(world)]
    dist.all_gather(parts, padded)
    return [json.loads(bytes(bytearray(p.cpu().tolist())).rstrip(b'\x00').decode('utf-8')) for p in parts]


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--duration-s', type=float, default=300.0)
    parser.add_argument('--sample-s', type=float, default=10.0)
    parser.add_argument('--size-bytes', type=int, default=None, help='all-reduce size (default 64 MiB on GPU, 256 KiB on CPU)')
    parser.add_argument('--matmul-n', type=int, default=None, help='matrix size (default 8192 on GPU, 128 on CPU)')
    parser.add_argument('--max-growth-pct', type=float, default=10.0)
    parser.add_argument('--leak-mb-per-sample', type=float, default=0.0, help='test only: keep this much more memory at every sample')
    parser.add_argument('--backend', choices=('auto', 'nccl', 'gloo'), default='auto')
    parser.add_argument('--timeout-s', type=float, default=600.0, help='collective timeout')
    return parser


def run(args, torch, dist):
    backend, device, rank, world = common.init(torch, dist, args.backend, args.timeout_s)
    on_gpu = device.type == 'cuda'
    host = socket.gethostname()
    size = args.size_bytes or (64 * MIB if on_gpu else 256 << 10)
    n = args.matmul_n or (8192 if on_gpu else 128)
    dtype = torch.bfloat16 if on_gpu else torch.float32
    tensor = torch.ones(max(1, size // 4), dtype=torch.float32, device=device)
    left = torch.randn(n, n, device=device).to(dtype)
    right = torch.randn(n, n, device=device).to(dtype)
    stop = torch.zeros(1, dtype=torch.int32, device=device)
    counters = GpuCounters(enabled=(int(os.environ.get('LOCAL_RANK', '0')) == 0 and on_gpu) or os.environ.get('XUANWU_SOAK_GPU_COUNTERS') == '1')
    leaked = []
    samples = []
    began = time.monotonic()
    next_sample = began
    iterations = 0
    while True:
        dist.all_reduce(tensor)
        tensor.mul_(1.0 / world)
        product = torch.matmul(left, right)
        iterations += 1
        now = time.monotonic()
        if now >= next_sample:
            if on_gpu:
                torch.cuda.synchronize(device)
            if args.leak_mb_per_sample > 0:
                leaked.append(b'\x01' * int(args.leak_mb_per_sample * MIB))
            samples.append({
                't_s': round(now - began, 3),
                'rss_kib': rss_kib(),
                'gpu_mem_allocated_bytes': int(torch.cuda.memory_allocated(device)) if on_gpu else None,
                'gpu_errors': counters.read(),
            })
            next_sample += args.sample_s
        stop.fill_(1 if now - began >= args.duration_s else 0)
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if int(stop.item()):
            break
    del product
    if on_gpu:
        torch.cuda.synchronize(device)
    first, last = samples[0], samples[-1]
    mine = {
        'rank': rank, 'host': host, 'iterations': iterations,
        'rss_growth_pct': growth_pct(first['rss_kib'], last['rss_kib']),
        'gpu_mem_growth_pct': growth_pct(first['gpu_mem_allocated_bytes'], last['gpu_mem_allocated_bytes']),
        'new_errors': new_errors(first['gpu_errors'], last['gpu_errors'], host),
        'gpu_counters_note': counters.note,
    }
    gathered = gather_json(torch, dist, mine, device, world)
    rss = [r['rss_growth_pct'] for r in gathered if r['rss_growth_pct'] is not None]
    gpu = [r['gpu_mem_growth_pct'] for r in gathered if r['gpu_mem_growth_pct'] is not None]
    errors = [e for r in gathered for e in r['new_errors']]
    worst_rss = max(rss) if rss else None
    worst_gpu = max(gpu) if gpu else None
    problems = []
    if worst_rss is not None and worst_rss > args.max_growth_pct:
        problems.append('resident memory grew by %.1f %% (limit %.1f %%)' % (worst_rss, args.max_growth_pct))
    if worst_gpu is not None and worst_gpu > args.max_growth_pct:
        problems.append('GPU memory grew by %.1f %% (limit %.1f %%)' % (worst_gpu, args.max_growth_pct))
    if errors:
        problems.append('%d GPU error counter(s) rose during the run' % len(errors))
    result = {
        'ok': not problems, 'samples': samples,
        'per_rank': [dict((k, r[k]) for k in ('rank', 'host', 'rss_growth_pct', 'gpu_mem_growth_pct', 'iterations'))
                     for r in gathered],
        'rss_growth_pct': worst_rss, 'gpu_mem_growth_pct': worst_gpu, 'new_errors': errors,
        'iterations': iterations, 'duration_s': round(time.monotonic() - began, 3), 'world_size': world,
        'backend': backend, 'max_growth_pct': args.max_growth_pct, 'leak_mb_per_sample': args.leak_mb_per_sample,
        'gpu_counters_note': counters.note, 'error': '; '.join(problems) or None,
    }
    result.update(common.torch_seen(torch))
    return rank, result


def main(argv=None):
    return common.run_job(run, build_parser().parse_args(argv), {'ok': False, 'samples': [], 'new_errors': [], 'error': None})


if __name__ == '__main__':
    common.finish(main())
