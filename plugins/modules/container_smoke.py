#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: container_smoke
short_description: Run nvidia-smi -L in a container with the node's GPUs, or replay a recorded run
version_added: 0.2.0
description:
  - Runs C(<engine> run --rm <GPU flags> <image> nvidia-smi -L) with podman or docker and a wall-clock bound, and returns
    what it printed, its exit code and the GPUs it listed, beside the GPUs the probe found on the host (O(host_gpus)).
  - The GPU flags are CDI for podman (C(--device nvidia.com/gpu=all)) and C(--gpus all) for docker, or as O(gpu_mode) says.
  - The module does not judge the result; M(xuanwu.cluster.workload_check) with kind C(container_smoke) does, on the
    controller (checks C(container.*), docs/container-smoke.md).
  - On a host whose GPUs are AMD, or whose probe counted no GPU, nothing runs and RV(not_measured) says why.
  - With O(replay_dir), the run is read from a capture bundle (entry O(replay_key) of its C(manifest.json)).
extends_documentation_fragment:
  - xuanwu.cluster.attributes
attributes:
  check_mode:
    support: full
    details:
      - The smoke only reads (the container is removed, C(--rm)), so it runs in check mode too, but with C(--pull never)
        and only when the image is already on the node; otherwise RV(not_measured) says so and nothing runs.
options:
  image:
    description: The image to run; it must hold or be given C(nvidia-smi) (the NVIDIA runtime mounts the host's). Required unless O(replay_dir).
    type: str
  engine:
    description: The container engine; C(auto) takes podman, else docker, whichever is on the PATH first.
    type: str
    choices: [auto, podman, docker]
    default: auto
  gpu_mode:
    description:
      - How the GPUs reach the container. C(cdi) passes O(cdi_devices) with C(--device) (podman; docker 25+ with CDI
        enabled), C(gpus) passes C(--gpus all) (docker with the NVIDIA Container Toolkit), C(runtime) passes
        C(--runtime nvidia -e NVIDIA_VISIBLE_DEVICES=all) (the legacy NVIDIA runtime).
      - C(auto) is C(cdi) for podman and C(gpus) for docker.
    type: str
    choices: [auto, cdi, gpus, runtime]
    default: auto
  cdi_devices:
    description: Fully qualified CDI device names given with C(--device) in C(cdi) mode.
    type: list
    elements: str
    default: [nvidia.com/gpu=all]
  run_args:
    description: More arguments of C(<engine> run), before the image (for example C(--runtime=runc), C(--security-opt=label=disable)).
    type: list
    elements: str
    default: []
  command:
    description: The command run in the container; its output must be that of C(nvidia-smi -L).
    type: list
    elements: str
    default: [nvidia-smi, -L]
  pull:
    description: The engine's C(--pull) policy; unset leaves the engine's default. Check mode always uses C(never).
    type: str
    choices: [always, missing, never]
  timeout:
    description: Seconds after which the run is stopped (and the container removed) and reported as timed out.
    type: int
    default: 120
  host_gpus:
    description:
      - The probe's C(gpu) facts of the host (C(xuanwu_facts.gpu), docs/facts.md), or a mapping with at least C(count).
        They give the GPU count, the vendor and the GPU UUIDs the container must show.
    type: dict
  replay_dir:
    description:
      - Capture bundle to read the run from instead of running it (read as docs/capture-format.md says). An invalid
        manifest fails the task; a missing entry or a file that is not read is RV(not_measured); an entry with status
        C(missing) is RV(engine_missing) (the engine of its command was not installed).
    type: path
  replay_key:
    description: Probe key of the recorded run in the bundle's manifest.
    type: str
    default: container_smoke
notes:
  - The command is run directly, without a shell; a run that exceeds O(timeout) is stopped and its container removed.
'''

EXAMPLES = r'''
- name: nvidia-smi -L in a CUDA container with every GPU (podman and CDI, or docker --gpus all)
  xuanwu.cluster.container_smoke:
    image: nvcr.io/nvidia/cuda:12.6.3-base-ubuntu24.04
    host_gpus: "{{ xuanwu_facts.gpu }}"
  register: smoke

- name: Judge it (container.* findings added to the host's)
  xuanwu.cluster.workload_check:
    kind: container_smoke
    run: "{{ smoke }}"

- name: Docker with the legacy NVIDIA runtime
  xuanwu.cluster.container_smoke:
    engine: docker
    gpu_mode: runtime
    image: registry.example.com/cuda:12.6.3-base-ubuntu24.04
    host_gpus: {count: 8}
'''

RETURN = r'''
engine:
  description: The engine that ran (C(podman), C(docker)); null when none was found or nothing ran.
  returned: always
  type: str
image:
  description: The image.
  returned: always
  type: str
command:
  description: The command line that ran (or was replayed).
  returned: always
  type: str
exit_code:
  description: Exit code of the engine (124 when stopped by the timeout; null when nothing ran).
  returned: always
  type: int
stdout:
  description: Standard output (the container's C(nvidia-smi -L)), at most 64 KiB.
  returned: always
  type: str
stderr:
  description: Standard error (the engine's and the container's errors), at most 8 KiB.
  returned: always
  type: str
output_tail:
  description: The last 4000 characters of standard output and standard error together.
  returned: always
  type: str
seconds:
  description: Wall-clock duration of the run.
  returned: always
  type: float
timed_out:
  description: Whether the run was stopped by the timeout.
  returned: always
  type: bool
timeout_s:
  description: The bound used.
  returned: always
  type: int
expected:
  description: What the container must show, from O(host_gpus) (C(vendor), C(count), C(uuids)).
  returned: always
  type: dict
gpus:
  description: The GPUs the container listed (C(index), C(name), C(uuid), C(mig)); null when its output was not understood.
  returned: always
  type: list
  elements: dict
engine_missing:
  description: No engine of O(engine) is on the node's PATH (RV(engine_wanted) names what was looked for).
  returned: when no engine was found
  type: bool
engine_wanted:
  description: The engines looked for.
  returned: when no engine was found
  type: str
not_measured:
  description: Why nothing ran or was replayed (AMD host, no GPU counted, check mode without the image, not in the bundle).
  returned: when nothing ran
  type: str
'''

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves import shlex_quote
from ansible_collections.xuanwu.cluster.plugins.module_utils import _bundle, _container_run
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nvidia import parse_gpu_list


def _gpus(text):
    try:
        return parse_gpu_list(text)['gpus']
    except ParseError:
        return None


def _replay(module, base):
    p = module.params
    try:
        recorded = _bundle.recorded_run(p['replay_dir'], p['replay_key'])
    except _bundle.BundleError as err:
        module.fail_json(msg=str(err))
    if recorded is None:
        base.update(command=p['replay_key'], not_measured='%s is not in the capture bundle' % p['replay_key'])
    elif recorded.get('skipped_reason'):
        base.update(command=recorded['command'], not_measured=recorded['skipped_reason'])
    else:
        status = recorded.pop('status', None)
        base.update(recorded)
        first = os.path.basename(recorded['command'].split()[0]) if recorded['command'].split() else ''
        base.update(engine=first if first in _container_run.ENGINES else None, gpus=_gpus(recorded['stdout']))
        if status == 'missing':
            # the capture found no engine (docs/capture-format.md: status missing, the tool is not installed)
            base.update(engine=None, engine_missing=True, engine_wanted=first or 'podman or docker')
    module.exit_json(**base)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type='str'),
            engine=dict(type='str', default='auto', choices=['auto'] + list(_container_run.ENGINES)),
            gpu_mode=dict(type='str', default='auto', choices=list(_container_run.GPU_MODES)),
            cdi_devices=dict(type='list', elements='str', default=list(_container_run.DEFAULT_CDI_DEVICES)),
            run_args=dict(type='list', elements='str', default=[]),
            command=dict(type='list', elements='str', default=list(_container_run.DEFAULT_COMMAND)),
            pull=dict(type='str', choices=list(_container_run.PULL_POLICIES)),
            timeout=dict(type='int', default=120),
            host_gpus=dict(type='dict'),
            replay_dir=dict(type='path'),
            replay_key=dict(type='str', default=_container_run.REPLAY_KEY, no_log=False),
        ),
        required_one_of=[('image', 'replay_dir')],
        supports_check_mode=True,
    )
    p = module.params
    if p['timeout'] <= 0:
        module.fail_json(msg='timeout must be a positive number of seconds, got %d' % p['timeout'])
    if not p['command'] or not p['cdi_devices']:
        module.fail_json(msg='command and cdi_devices must not be empty')
    expected = _container_run.expected_from_facts(p['host_gpus'])
    base = dict(changed=False, engine=None, image=p['image'], command='', exit_code=None, stdout='', stderr='', output_tail='',
                seconds=0.0, timed_out=False, timeout_s=p['timeout'], expected=expected, gpus=None)
    reason = _container_run.not_run_reason(expected)
    if reason:
        module.exit_json(not_measured=reason, **base)
    if p['replay_dir']:
        _replay(module, base)

    wanted = list(_container_run.ENGINES) if p['engine'] == 'auto' else [p['engine']]
    found = [(name, module.get_bin_path(name, required=False)) for name in wanted]
    found = [(name, path) for name, path in found if path]
    if not found:
        module.exit_json(engine_missing=True, engine_wanted=' or '.join(wanted), **base)
    engine, path = found[0]
    base['engine'] = engine
    pull = p['pull']
    if module.check_mode:
        rc, _out, _err = module.run_command([path, 'image', 'inspect', p['image']], check_rc=False)
        if rc != 0:
            module.exit_json(not_measured='check mode: the image %s is not on the node and a check-mode run pulls nothing' % p['image'],
                             **base)
        pull = 'never'
    name = 'xuanwu-smoke-%s' % os.urandom(6).hex()
    argv = _container_run.run_argv(path, engine, p['image'], p['gpu_mode'], p['cdi_devices'], p['run_args'], p['command'], pull, name)
    base['command'] = ' '.join(shlex_quote(a) for a in [engine] + argv[1:])
    timeout_bin = module.get_bin_path('timeout', required=True)
    start = time.time()
    rc, out, err = module.run_command([timeout_bin, '--kill-after=5', str(p['timeout'])] + argv, check_rc=False)
    seconds = round(time.time() - start, 2)
    # 124: stopped by SIGTERM; 137 or -9: the engine's client ignored it (it waits for the container) and was killed
    timed_out = rc in (124, 137, -9) and seconds >= p['timeout'] - 1
    if timed_out:
        # the engine's client was stopped; the container may still run
        module.run_command([path, 'rm', '--force'] + (['--time', '0'] if engine == 'podman' else []) + [name], check_rc=False)
    base.update(exit_code=rc, stdout=out[-65536:], stderr=err[-8192:], output_tail=(out + err)[-4000:], seconds=seconds,
                timed_out=timed_out, gpus=_gpus(out) if rc == 0 else None)
    module.exit_json(**base)


if __name__ == '__main__':
    main()
