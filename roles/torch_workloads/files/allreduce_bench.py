# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""All-reduce bus-bandwidth benchmark through torch.distributed (NCCL on GPUs, gloo on CPUs).

Run it under the PyTorch launcher, one process per GPU::

    python -m torch.distributed.run --nproc-per-node 8 allreduce_bench.py --min-bytes 1M --max-bytes 8G

For every size from --min-bytes to --max-bytes (doubling), it runs --warmup untimed and --iters timed
all-reduces (sum) and reports the mean time per operation (CUDA events on GPUs; a barrier and
time.perf_counter on CPUs), averaged over the ranks as nccl-tests does. Bandwidths follow nccl-tests'
doc/PERFORMANCE.md: algbw = size / time (GB/s = 10^9 bytes/s), busbw = algbw * 2 (n - 1) / n. After the
timing, each size is checked: every rank contributes rank + 1 and the sum must be n (n + 1) / 2
everywhere ("wrong" counts the elements that differ, as nccl-tests' #wrong).

Rank 0 prints one final line ``XUANWU_RESULT {json}``::

    {"ok": true, "collective": "all_reduce", "sizes": [{"size_bytes", "time_us", "algbw_gbps",
     "busbw_gbps", "wrong"}], "world_size", "backend", "device", "dtype", "iters", "warmup",
     "torch_version", "nccl_version", "cuda_available", "device_count", "torch_nccl_version", "error": null}

and every rank exits 1 when a collective fails or a result is wrong. Needs only torch and the standard
library (Python 3.8+).
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload_common as common  # noqa: E402  pylint: disable=wrong-import-position

RESULT_TAG = common.RESULT_TAG
_UNITS = {'': 1, 'B': 1, 'K': 1 << 10, 'KB': 1 << 10, 'KIB': 1 << 10, 'M': 1 << 20, 'MB': 1 << 20,
          'MIB': 1 << 20, 'G': 1 << 30, 'GB': 1 << 30, 'GIB': 1 << 30}


def parse_size(text):
    """'8', '1M', '16MiB', '8G' -> bytes (binary units, as nccl-tests reads -b/-e)."""
    match = re.match(r'^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$', str(text))
    if not match or match.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError('not a size: %r (use e.g. 1048576, 1M, 8G)' % (text,))
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def nccl_version(torch):
    try:
        version = torch.cuda.nccl.version()
    except Exception:  # pylint: disable=broad-except
        return None
    if isinstance(version, tuple):
        return '.'.join(str(v) for v in version)
    if isinstance(version, int):   # older torch: 2708 / 21803
        if version >= 20900:
            return '%d.%d.%d' % (version // 10000, (version % 10000) // 100, version % 100)
        return '%d.%d.%d' % (version // 1000, (version % 1000) // 100, version % 100)
    return str(version)


def busbw_factor(nranks):
    return 2.0 * (nranks - 1) / nranks if nranks > 0 else 0.0


def sizes_between(min_bytes, max_bytes, factor=2):
    sizes = []
    size = max(1, min_bytes)
    while size <= max_bytes:
        sizes.append(size)
        size *= factor
    return sizes


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--min-bytes', type=parse_size, default=None, help='smallest message (default 1M on GPU, 64K on CPU)')
    parser.add_argument('--max-bytes', type=parse_size, default=None, help='largest message (default 1G on GPU, 4M on CPU)')
    parser.add_argument('--warmup', type=int, default=5)
    parser.add_argument('--iters', type=int, default=20)
    parser.add_argument('--dtype', choices=('float32', 'bfloat16', 'float16'), default='float32')
    parser.add_argument('--backend', choices=('auto', 'nccl', 'gloo'), default='auto')
    parser.add_argument('--timeout-s', type=float, default=600.0, help='collective timeout')
    parser.add_argument('--no-check', action='store_true', help='skip the result check')
    return parser


def run(args, torch, dist):
    backend, device, rank, world = common.init(torch, dist, args.backend, args.timeout_s)
    on_gpu = device.type == 'cuda'
    min_bytes = args.min_bytes if args.min_bytes is not None else (1 << 20 if on_gpu else 64 << 10)
    max_bytes = args.max_bytes if args.max_bytes is not None else (1 << 30 if on_gpu else 4 << 20)
    dtype = getattr(torch, args.dtype)
    elem = torch.tensor([], dtype=dtype).element_size()
    result = {
        'ok': False, 'collective': 'all_reduce', 'sizes': [], 'world_size': world, 'backend': backend,
        'device': torch.cuda.get_device_name(device) if on_gpu else 'cpu', 'dtype': args.dtype,
        'iters': args.iters, 'warmup': args.warmup, 'torch_version': torch.__version__,
        'nccl_version': nccl_version(torch) if backend == 'nccl' else None, 'error': None,
    }
    result.update(common.torch_seen(torch))
    buf = torch.empty(max(1, max_bytes // elem), dtype=dtype, device=device)
    check = None if args.no_check else torch.empty(max(1, max_bytes // 4), dtype=torch.float32, device=device)
    timing = torch.zeros(1, dtype=torch.float64, device=device)
    for size in sizes_between(min_bytes, max_bytes):
        count = max(1, size // elem)
        tensor = buf[:count]
        tensor.fill_(1)
        for dummy in range(args.warmup):
            dist.all_reduce(tensor)
        if on_gpu:
            torch.cuda.synchronize(device)
            dist.barrier()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for dummy in range(args.iters):
                dist.all_reduce(tensor)
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1000.0 / max(1, args.iters)
        else:
            dist.barrier()
            began = time.perf_counter()
            for dummy in range(args.iters):
                dist.all_reduce(tensor)
            seconds = (time.perf_counter() - began) / max(1, args.iters)
        timing.fill_(seconds)
        dist.all_reduce(timing)
        seconds = float(timing.item()) / world
        size_bytes = count * elem
        algbw = size_bytes / seconds / 1e9 if seconds > 0 else 0.0
        wrong = None
        if check is not None:
            data = check[:max(1, size_bytes // 4)]
            data.fill_(float(rank + 1))
            dist.all_reduce(data)
            wrong = int((data != float(world * (world + 1) // 2)).sum().item())
        result['sizes'].append({
            'size_bytes': size_bytes, 'time_us': round(seconds * 1e6, 3), 'algbw_gbps': round(algbw, 6),
            'busbw_gbps': round(algbw * busbw_factor(world), 6), 'wrong': wrong,
        })
    bad = [s['size_bytes'] for s in result['sizes'] if s['wrong']]
    result['ok'] = bool(result['sizes']) and not bad
    if bad:
        result['error'] = 'wrong all-reduce results at sizes %s' % bad
    return rank, result


def main(argv=None):
    return common.run_job(run, build_parser().parse_args(argv), {'ok': False, 'collective': 'all_reduce', 'sizes': [], 'error': None})


if __name__ == '__main__':
    common.finish(main())
