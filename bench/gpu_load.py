# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load a GPU with PyTorch, for the real-hardware runs of bench/gpu-host-validate.sh (no GPU setting is changed).

    python3 bench/gpu_load.py matmul --seconds 45 [--n 8192] [--device 0]   # bf16 matrix products back to back
    python3 bench/gpu_load.py hold --gib 20 --seconds 900 [--device 0]     # keep GPU memory allocated, idle

``matmul`` prints one line at the end: ``gpu_load matmul seconds=S tflops=T iterations=N``; ``hold`` prints
``gpu_load hold gib=G pid=P`` once the memory is allocated and written, then sleeps. Both stop on SIGTERM.
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import signal
import sys
import time


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('mode', choices=('matmul', 'hold'))
    parser.add_argument('--seconds', type=float, default=45.0)
    parser.add_argument('--n', type=int, default=8192, help='matrix side (matmul)')
    parser.add_argument('--gib', type=float, default=20.0, help='GiB to hold (hold)')
    parser.add_argument('--device', type=int, default=int(os.environ.get('LOCAL_RANK', '0')))
    args = parser.parse_args(argv)

    import torch  # pylint: disable=import-outside-toplevel

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    dev = torch.device('cuda', args.device)
    if args.mode == 'hold':
        block = torch.empty(int(args.gib * (1 << 30)), dtype=torch.uint8, device=dev)
        block.fill_(1)
        torch.cuda.synchronize(dev)
        print('gpu_load hold gib=%g pid=%d' % (args.gib, os.getpid()), flush=True)
        end = time.time() + args.seconds
        while not stop and time.time() < end:
            time.sleep(0.5)
        return 0
    a = torch.randn(args.n, args.n, dtype=torch.bfloat16, device=dev)
    b = torch.randn(args.n, args.n, dtype=torch.bfloat16, device=dev)
    torch.cuda.synchronize(dev)
    start = time.time()
    iterations = 0
    while not stop and time.time() - start < args.seconds:
        for _step in range(20):
            a @ b  # pylint: disable=pointless-statement
        torch.cuda.synchronize(dev)
        iterations += 20
    seconds = time.time() - start
    print('gpu_load matmul seconds=%.1f tflops=%.1f iterations=%d' % (
        seconds, 2.0 * args.n ** 3 * iterations / seconds / 1e12, iterations), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
