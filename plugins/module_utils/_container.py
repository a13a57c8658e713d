# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container smoke: ``<engine> run --rm <GPU flags> <image> nvidia-smi -L`` on a node, judged against the
GPUs the probe found on the host (docs/container-smoke.md).

Pure functions: the causes of a failed run read from the engine's error text and the findings (``CHECKS``); the
command line of the smoke is ``_container_run``'s (the node's half) and ``nvidia-smi -L`` is read by
``_parse_nvidia.parse_gpu_list``, both re-exported here. No I/O, no Ansible imports; the module ``container_smoke``
runs the command, ``workload_check`` (kind ``container_smoke``) judges the result.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
# The node's half (what module container_smoke carries); every name stays importable from this module.
from ansible_collections.xuanwu.cluster.plugins.module_utils._container_run import (  # noqa: F401 pylint: disable=unused-import
    DEFAULT_CDI_DEVICES, DEFAULT_COMMAND, ENGINES, GPU_MODES, PULL_POLICIES, REPLAY_KEY, expected_from_facts, gpu_flags,
    not_run_reason, run_argv,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError, excerpt
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nvidia import parse_gpu_list  # noqa: F401 pylint: disable=unused-import

_e = _findings.entry
_TOOLKIT = ('install the NVIDIA Container Toolkit (nvidia-container-toolkit) and, for CDI, write the spec: '
            'nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml, then nvidia-ctk cdi list must name nvidia.com/gpu=all; '
            'for docker --gpus or --runtime=nvidia: nvidia-ctk runtime configure --runtime=docker and restart docker')
CHECKS = {
    'container.engine_missing': _e(
        'No container engine to run the smoke with', 'fail',
        'Install podman or docker on the node (the engine the training jobs use), or name the one installed with '
        'xuanwu_container_smoke_engine; the smoke was requested, so a node without an engine is not proven fit.'),
    'container.smoke_failed': _e(
        'The GPU container did not run', 'fail',
        'Read the quoted error. Unresolvable CDI device: ' + _TOOLKIT + '. "could not select device driver" or '
        '"unknown or invalid runtime name: nvidia": nvidia-ctk runtime configure --runtime=docker, restart docker. '
        'Image not found: pull or mirror xuanwu_container_image on the node. nvidia-smi not found or NVML errors '
        'in the container: regenerate the CDI spec after a driver upgrade (nvidia-ctk cdi generate) and check '
        'nvidia-smi on the host.'),
    'container.gpu_count': _e(
        'A container sees other GPUs than the host', 'fail',
        'The container runtime hands the container other GPUs than the node has: regenerate the CDI spec after '
        'a GPU or driver change (nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml; nvidia-ctk cdi list), check '
        'that xuanwu_container_smoke_cdi_devices / the GPU flags ask for all GPUs, that NVIDIA_VISIBLE_DEVICES is '
        'not set in the image, and that nvidia-smi -L on the host lists every GPU.'),
    'container.unparsable': _e(
        'nvidia-smi -L in the container printed output that is not understood', 'fail',
        'The container ran but its nvidia-smi -L output is not "GPU <n>: <name> (UUID: GPU-...)" lines: run the '
        'quoted command by hand, check that the image runs NVIDIA\'s nvidia-smi (the runtime mounts the host\'s) '
        'and not a wrapper, and that xuanwu_container_smoke_command is nvidia-smi -L.'),
    'container.not_measured': _e(
        'The container smoke was requested and measured nothing', 'fail',
        'The smoke was switched on (xuanwu_container_smoke) but nothing was compared: give it what it needs (a '
        'node whose probe counted its NVIDIA GPUs, a capture bundle with a container_smoke entry, the image on the '
        'node for a check-mode run) or switch it off; an AMD node has no container smoke yet.'),
}

# Causes of a failed run, read from the engine's and the container's error text (first match wins):
# (key, pattern, what it means, remediation). Sources of the messages: docs/container-smoke.md.
CAUSES = (
    ('cdi_unresolvable', re.compile(r'unresolvable CDI devices?:?\s*([^\s:,]+)?', re.I),
     'the CDI device {device} is not defined on the node',
     'Write the CDI spec of the node\'s GPUs: nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml (rerun it after '
     'every driver or GPU change), then nvidia-ctk cdi list must list {device}. With docker, CDI needs Docker 25+ '
     'with the cdi feature enabled, or use xuanwu_container_smoke_gpu_mode gpus.'),
    ('cdi_injection', re.compile(r'failed to (?:inject (?:CDI )?devices|stat CDI host device)[^\n]*', re.I),
     'the CDI spec names device nodes or files the node does not have (stale spec)',
     'Regenerate the CDI spec for the running driver: nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml, then '
     'rerun the smoke.'),
    ('docker_cdi_disabled', re.compile(r'could not select device driver "cdi"', re.I),
     'docker does not resolve CDI devices (its cdi feature is off or it is older than Docker 25)',
     'Enable CDI in docker ("features": {"cdi": true} in /etc/docker/daemon.json, Docker 25 or newer), restart docker '
     'and write the spec (nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml), or use xuanwu_container_smoke_gpu_mode gpus.'),
    ('no_device_driver', re.compile(r'could not select device driver "[^"]*" with capabilities: \[\[gpu\]\]', re.I),
     'docker has no GPU device driver (the NVIDIA Container Toolkit is not installed or not configured for docker)',
     'Install nvidia-container-toolkit, run nvidia-ctk runtime configure --runtime=docker and restart docker '
     '(systemctl restart docker); docker info must list the nvidia runtime.'),
    ('unknown_runtime', re.compile(r'unknown or invalid runtime name: \S+|unknown runtime specified \S+', re.I),
     'the engine has no nvidia runtime configured',
     'Run nvidia-ctk runtime configure --runtime=docker (or --runtime=containerd / crio for those engines) and '
     'restart the engine, or use CDI (xuanwu_container_smoke_gpu_mode cdi).'),
    ('image_missing', re.compile(r'image not known|no such image|unable to find image|pull access denied|manifest unknown|'
                                 r'repository does not exist|failed to resolve reference|requested access to the resource '
                                 r'is denied|initializing source docker://|could not be found locally', re.I),
     'the image is not on the node and could not be pulled',
     'Pull or mirror xuanwu_container_image on the node (podman pull / docker pull IMAGE) or fix its name; the '
     'node must reach its registry, or the image must be loaded beforehand.'),
    ('daemon_unreachable', re.compile(r'cannot connect to the docker daemon|permission denied while trying to connect to the '
                                      r'docker daemon', re.I),
     'the docker daemon is not running or the user may not reach it',
     'Start docker (systemctl start docker) and run the smoke as root or as a member of the docker group.'),
    ('command_missing', re.compile(r'executable file [`\'"]?\S*?[`\'"]? not found|invoke a command that was not found|'
                                   r'nvidia-smi: (?:command )?not found|exec: "[^"]+": executable file not found', re.I),
     'nvidia-smi is neither in the image nor mounted into it by the runtime',
     'The NVIDIA runtime mounts the host\'s nvidia-smi only when the GPUs are injected with the utility capability: '
     'regenerate the CDI spec (nvidia-ctk cdi generate), do not set NVIDIA_DRIVER_CAPABILITIES without "utility", '
     'or use an image that has nvidia-smi (a CUDA base image).'),
    ('nvml', re.compile(r'Failed to initialize NVML: [^\n]*|NVML: [^\n]*mismatch[^\n]*', re.I),
     'nvidia-smi in the container cannot talk to the driver',
     'Check nvidia-smi on the host first (driver loaded, no version mismatch). In containers, "Unknown Error" after a '
     'systemctl daemon-reload is the cgroup device rules being lost: use CDI (nvidia-ctk cdi generate, '
     'xuanwu_container_smoke_gpu_mode cdi) and restart the affected containers.'),
    ('toolkit_error', re.compile(r'nvidia-container-cli: [^\n]*', re.I),
     'the NVIDIA container runtime hook failed',
     'Read the nvidia-container-cli error: usually the driver libraries are not found (libnvidia-ml.so.1): check the '
     'driver on the host (nvidia-smi), reinstall nvidia-container-toolkit, or move to CDI (nvidia-ctk cdi generate).'),
    ('no_devices', re.compile(r'No devices were found', re.I),
     'the container started without any GPU',
     'The GPU flags gave the container no GPU: check xuanwu_container_smoke_cdi_devices (nvidia-ctk cdi list) or '
     'the --gpus / --runtime configuration, and NVIDIA_VISIBLE_DEVICES in the image.'),
)


def _expected(expected):
    """``expected`` with its count an int (a templated value may arrive as text), or None."""
    expected = dict(expected or {})
    try:
        expected['count'] = int(expected['count']) if expected.get('count') not in (None, '') and not isinstance(expected['count'], bool) else None
    except (TypeError, ValueError):
        expected['count'] = None
    return expected


def cause(text):
    """``{'key', 'summary', 'remediation', 'quote'}`` of the first known cause in an error text, else None."""
    for key, pattern, summary, remediation in CAUSES:
        match = pattern.search(text or '')
        if match:
            device = match.group(1) if key == 'cdi_unresolvable' and match.group(1) else 'nvidia.com/gpu=all'
            return {'key': key, 'summary': summary.replace('{device}', device), 'remediation': remediation.replace('{device}', device),
                    'quote': match.group(0).strip()}
    return None


def component(run):
    return '%s run' % run['engine'] if run.get('engine') else 'container engine'


def _finding(host, check, run, measured, expected, message, remediation=None):
    return _findings.make(CHECKS, host, check, component(run), measured, expected, message, remediation=remediation)


def _error_text(run):
    return '\n'.join(t for t in (run.get('stderr'), run.get('stdout')) if t) or run.get('output_tail') or ''


def _compare(parsed, expected, host, run):
    want = expected.get('count')
    seen = [g.get('uuid') for g in parsed['gpus']]
    uuids = [u for u in seen if u]
    missing = [u for u in expected.get('uuids') or [] if uuids and u not in uuids]
    extra = [u for u in uuids if expected.get('uuids') and u not in expected['uuids']]
    details = ''.join('; %s: %s' % (label, ', '.join(values)) for label, values in (
        ("missing in the container", missing), ("not on the host", extra)) if values)
    if len(parsed['gpus']) != want:
        return [_finding(host, 'container.gpu_count', run, '%d GPU(s)' % len(parsed['gpus']), "%d GPU(s), the host's" % want,
                         'a container on %s sees %d GPU(s), the host has %d%s' % (host, len(parsed['gpus']), want, details))]
    if missing or extra:
        return [_finding(host, 'container.gpu_count', run, 'other GPU UUIDs', "the host's %d GPU UUIDs" % want,
                         "a container on %s sees %d GPU(s) but not the host's%s" % (host, want, details))]
    return []


def not_measured_reason(run):
    """Why a smoke that was requested measured nothing (None when it ran, failed or found no engine)."""
    reason = run.get('not_measured') or run.get('skipped_reason') or ('the task was skipped' if run.get('skipped') else None)
    if reason or run.get('engine_missing'):
        return reason
    return not_run_reason(_expected(run.get('expected')))


def evaluate(run, host):
    """Findings of one container smoke (the ``container_smoke`` module's result, or a replayed one)."""
    expected = _expected(run.get('expected'))
    # without the host's GPUs to compare with, nothing the container printed is a pass
    reason = not_measured_reason(run)
    if reason:
        return [_finding(host, 'container.not_measured', run, 'not measured: %s' % reason, "the container's GPUs compared with the host's",
                         'the container smoke was requested on %s but not measured: %s' % (host, reason))]
    if run.get('engine_missing'):
        wanted = run.get('engine_wanted') or 'podman or docker'
        return [_finding(host, 'container.engine_missing', run, '%s not found' % wanted, wanted,
                         'no container engine on %s: %s is not on its PATH' % (host, wanted))]
    command = run.get('command') or 'the smoke'
    if run.get('timed_out'):
        return [_finding(host, 'container.smoke_failed', run, 'timed out after %ss' % run.get('timeout_s'),
                         'ends within %ss' % run.get('timeout_s'),
                         '%s on %s did not end within %ss: %s' % (command, host, run.get('timeout_s'),
                                                                  excerpt((run.get('output_tail') or '')[-300:], 300)))]
    if run.get('exit_code') != 0:
        found = cause(_error_text(run))
        quoted = excerpt(found['quote'] if found else (_error_text(run).strip()[-400:] or 'no output'), 400)
        return [_finding(host, 'container.smoke_failed', run, 'exit code %s%s' % (run.get('exit_code'), ': ' + found['key'] if found else ''),
                         'exit code 0', '%s on %s failed%s: %s' % (command, host, ' (%s)' % found['summary'] if found else '', quoted),
                         remediation=found['remediation'] if found else None)]
    try:
        parsed = parse_gpu_list(run.get('stdout') or '')
    except ParseError as err:
        return [_finding(host, 'container.unparsable', run, 'unparsable output', '"GPU <n>: <name> (UUID: ...)" lines',
                         '%s on %s: %s: %s' % (command, host, err.reason, err.excerpt))]
    return _compare(parsed, expected, host, run)


def summary(run):
    """The figures of a smoke worth keeping in the report: engine, image, GPUs in the container and on the host."""
    expected = _expected(run.get('expected'))
    out = {'engine': run.get('engine'), 'image': run.get('image'), 'gpus_on_host': expected.get('count'), 'gpus_in_container': None}
    if run.get('exit_code') == 0:
        try:
            out['gpus_in_container'] = len(parse_gpu_list(run.get('stdout') or '')['gpus'])
        except ParseError:
            pass
    elif run.get('exit_code') is not None:
        found = cause(_error_text(run))
        out['cause'] = found['key'] if found else None
    return out
