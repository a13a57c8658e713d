# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the node's commands print, and what the node keeps of its process list, shared by the node's collection
(_collect) and the parsers (on the controller): the fields asked of ``nvidia-smi --query-gpu``, and the process list's
format, line grammar and default job patterns, which the node's filter (_collect.filter_processes) also reads to keep
only the lines the facts need before they leave the node (command lines can carry secrets). Nothing here imports
Ansible or a parser: the node imports it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# nvidia-smi --query-gpu=<these> --format=csv
QUERY_GPU_FIELDS = (
    'index', 'name', 'uuid', 'pci.bus_id', 'driver_version', 'memory.total',
    'pcie.link.gen.current', 'pcie.link.gen.max', 'pcie.link.width.current', 'pcie.link.width.max',
    'persistence_mode', 'ecc.mode.current', 'clocks.max.sm',
)

# pid, parent, user, seconds running, full command line (``ps -e -ww -o`` this, no header line).
PS_FORMAT = 'pid=,ppid=,user:32=,etimes=,args='
HEADER_RE = re.compile(r'^PID\s+PPID\s+USER\s+ELAPSED\s+(?:COMMAND|CMD)\s*$')
ROW_RE = re.compile(r'^([0-9]+)\s+([0-9]+)\s+(\S+)\s+([0-9]+)(?:\s(.*))?$')


# Processes of a distributed job (torchrun, torch.distributed launchers, MPI launchers and daemons,
# nccl-tests binaries, DeepSpeed): one still running before a job is a leftover (field guide 7.5). The profile schema's
# default host.leftover_process_patterns, and what the node keeps of its process list by default.
DEFAULT_LEFTOVER_PATTERNS = [
    r'(^|[\s/])torchrun(\s|$)',
    r'-m\s+torch\.distributed\.(run|launch)(\s|$)',
    r'(^|[\s/])(mpirun|mpiexec|orterun|orted|prterun|prted|hydra_pmi_proxy)(\s|$)',
    r'(^|/)[a-z_]+_perf(_mpi)?(\s|$)',
    r'(^|[\s/])deepspeed(\s|$)',
]


def is_kernel_thread(ppid, args):
    """A kernel thread: a bracketed name whose parent is kthreadd (pid 2) or the scheduler (pid 0)."""
    return ppid in (0, 2) and args.startswith('[') and args.endswith(']')
