# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each GPU alone, before any communication (field guide §3.5: one GPU first, then the GPUs of a node, then the nodes).

    python gpu_single.py [--matmul-n 8192] [--compute-s 3] [--copy-mib 4096] [--membw-s 2] [--gpus 0,1]

One process, no launcher and no collective library: for each visible GPU in turn (nothing else of this job runs on
the others meanwhile), a dense bf16 matrix product of --matmul-n for --compute-s seconds (TFLOP/s: 2 n^3 per product,
timed with CUDA events after a warm-up), then a device-to-device copy of --copy-mib MiB for --membw-s seconds
(GB/s: each copy reads and writes the buffer once, 2 x its size moved). The figures of a GPU are the median of its
timed batches (about ten per phase), so one slow batch does not decide. A GPU that fails (out of memory, an Xid that
kills the context) is reported with its error and the next one is measured.

Prints one final line ``XUANWU_RESULT {json}``::

    {"ok", "gpus": [{"index", "name", "bf16_tflops", "membw_gbps", "batches", "error"}], "matmul_n", "copy_bytes",
     "device": "cuda" | "cpu", "cuda_available", "device_count", "torch_nccl_version", "error"}

(no "backend" nor "world_size": no collective, one process).

and exits 1 when CUDA is not available or a GPU failed. Needs only torch and the standard library (Python 3.8+).
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload_common as common  # noqa: E402  pylint: disable=wrong-import-position

MIB = 1 << 20


def _batches(torch, device, work, seconds, per_batch_s=None):
    """Run ``work()`` in batches for about ``seconds``; returns [(calls, seconds)] per timed batch (after a warm-up)."""
    torch.cuda.synchronize(device)
    start = time.monotonic()
    calls = 0
    while calls < 3 or time.monotonic() - start < 0.3:     # warm-up: clocks up, kernels chosen
        work()
        calls += 1
    torch.cuda.synchronize(device)
    rate = calls / max(time.monotonic() - start, 1e-6)
    per_batch = max(1, int(rate * (per_batch_s or seconds / 10.0)))
    out = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or len(out) < 3:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _call in range(per_batch):
            work()
        end.record()
        end.synchronize()
        out.append((per_batch, begin.elapsed_time(end) / 1000.0))
    return out


def measure(torch, index, args):
    device = torch.device('cuda', index)
    entry = {'index': index, 'name': torch.cuda.get_device_name(index), 'bf16_tflops': None, 'membw_gbps': None,
             'batches': {}, 'error': None}
    try:
        torch.cuda.set_device(device)
        n = args.matmul_n
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        c = torch.empty(n, n, device=device, dtype=torch.bfloat16)
        batches = _batches(torch, device, lambda: torch.matmul(a, b, out=c), args.compute_s)
        flops = 2.0 * n ** 3
        entry['bf16_tflops'] = round(statistics.median(calls * flops / s / 1e12 for calls, s in batches), 1)
        entry['batches']['compute'] = len(batches)
        del a, b, c
        elements = args.copy_mib * MIB // 2
        src = torch.empty(elements, device=device, dtype=torch.bfloat16).fill_(1)
        dst = torch.empty_like(src)
        batches = _batches(torch, device, lambda: dst.copy_(src), args.membw_s)
        moved = 2.0 * elements * 2
        entry['membw_gbps'] = round(statistics.median(calls * moved / s / 1e9 for calls, s in batches), 1)
        entry['batches']['copy'] = len(batches)
        del src, dst
    except Exception as exc:  # pylint: disable=broad-except
        entry['error'] = '%s: %s' % (type(exc).__name__, str(exc)[:300])
    finally:
        try:
            torch.cuda.empty_cache()
        except Exception:  # pylint: disable=broad-except
            pass
    return entry


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--matmul-n', type=int, default=8192)
    parser.add_argument('--compute-s', type=float, default=3.0)
    parser.add_argument('--copy-mib', type=int, default=4096)
    parser.add_argument('--membw-s', type=float, default=2.0)
    parser.add_argument('--gpus', default='', help='indexes separated by commas (default: every visible GPU)')
    args = parser.parse_args()
    result = {'ok': False, 'gpus': [], 'matmul_n': args.matmul_n, 'copy_bytes': args.copy_mib * MIB, 'device': 'cpu',
              'error': None}
    try:
        import torch
    except Exception as exc:  # pylint: disable=broad-except
        result['error'] = 'cannot import torch: %s' % exc
        common.emit(result)
        return 1
    result.update(common.torch_seen(torch))
    if not result.get('cuda_available'):
        result['error'] = 'CUDA is not available to torch (torch %s)' % getattr(torch, '__version__', '?')
        common.emit(result)
        return 1
    result['device'] = 'cuda'
    wanted = [int(i) for i in args.gpus.split(',') if i.strip()] if args.gpus else list(range(torch.cuda.device_count()))
    for index in wanted:
        result['gpus'].append(measure(torch, index, args))
    failed = [g for g in result['gpus'] if g['error']]
    result['ok'] = bool(result['gpus']) and not failed
    if failed:
        result['error'] = '; '.join('GPU %s: %s' % (g['index'], g['error']) for g in failed)
    elif not result['gpus']:
        result['error'] = 'no GPU to measure'
    common.emit(result)
    return 0 if result['ok'] else 1


if __name__ == '__main__':
    common.finish(main())
