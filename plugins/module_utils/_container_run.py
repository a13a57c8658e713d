# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container smoke's node half: the command line ``<engine> run --rm <GPU flags> <image> nvidia-smi -L`` that
module ``container_smoke`` runs, what the container must see (from the probe's facts) and why a host cannot take the
smoke (docs/container-smoke.md). What module ``container_smoke`` carries: no check, no remediation text
(``_container`` judges the result on the controller and re-exports these names). No I/O, no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

ENGINES = ('podman', 'docker')
GPU_MODES = ('auto', 'cdi', 'gpus', 'runtime')
PULL_POLICIES = ('always', 'missing', 'never')
DEFAULT_CDI_DEVICES = ('nvidia.com/gpu=all',)
DEFAULT_COMMAND = ('nvidia-smi', '-L')
REPLAY_KEY = 'container_smoke'


def gpu_flags(engine, mode, cdi_devices=DEFAULT_CDI_DEVICES):
    """The engine flags that hand the container the node's GPUs.

    ``auto`` is CDI for podman (``--device nvidia.com/gpu=all``) and ``--gpus all`` for docker; ``runtime`` is
    the legacy NVIDIA runtime (``--runtime nvidia`` with ``NVIDIA_VISIBLE_DEVICES=all``)."""
    if mode not in GPU_MODES:
        raise ValueError('gpu mode must be one of %s, got %r' % (', '.join(GPU_MODES), mode))
    if mode == 'auto':
        mode = 'cdi' if engine == 'podman' else 'gpus'
    if mode == 'cdi':
        flags = []
        for device in cdi_devices or DEFAULT_CDI_DEVICES:
            flags += ['--device', device]
        return flags
    if mode == 'gpus':
        return ['--gpus', 'all']
    return ['--runtime', 'nvidia', '-e', 'NVIDIA_VISIBLE_DEVICES=all']


def run_argv(engine_path, engine, image, mode='auto', cdi_devices=DEFAULT_CDI_DEVICES, run_args=(), command=DEFAULT_COMMAND,
             pull=None, name=None):
    """``<engine> run --rm [--name N] [--pull P] <GPU flags> <run_args> <image> <command>``."""
    argv = [engine_path or engine, 'run', '--rm']
    if name:
        argv += ['--name', name]
    if pull:
        argv += ['--pull', pull]
    return argv + gpu_flags(engine, mode, cdi_devices) + list(run_args or []) + [image] + list(command or DEFAULT_COMMAND)


def expected_from_facts(gpu):
    """What the container must see, from the probe's ``gpu`` facts: ``{vendor, count, uuids}`` (docs/facts.md)."""
    if not isinstance(gpu, dict):
        return {'vendor': None, 'count': None, 'uuids': []}
    devices = gpu.get('devices') if isinstance(gpu.get('devices'), list) else []
    uuids = [d['uuid'] for d in devices if isinstance(d, dict) and isinstance(d.get('uuid'), str) and d['uuid'].startswith('GPU-')]
    count = gpu.get('count')
    return {'vendor': gpu.get('vendor') or 'nvidia', 'count': count if isinstance(count, int) and not isinstance(count, bool) else None,
            'uuids': uuids}


def not_run_reason(expected):
    """Why the smoke cannot be judged on a host with these expectations (None: it can)."""
    expected = expected or {}
    if expected.get('vendor') == 'amd':
        return ("the host's GPUs are AMD: the smoke runs nvidia-smi -L through the NVIDIA container runtime and has "
                "no AMD variant yet")
    if expected.get('count') is None:
        return "the probe did not count the host's GPUs (no gpu facts), so there is nothing to compare the container with"
    if expected['count'] == 0:
        return "the probe found no NVIDIA GPU on the host (nvidia-smi missing or no device), so there is nothing to compare"
    return None
