#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: workload_run
short_description: Run a benchmark or test workload with a hard time bound, or replay its captured output
version_added: 0.1.0
description:
  - Runs one workload command (an nccl-tests binary, C(mpirun), C(torchrun) with one of the collection's PyTorch
    workloads) with a wall-clock bound, and returns its exit code, its output and how long it took. A run that
    exceeds the bound is stopped (SIGTERM, then SIGKILL) and reported with O(timeout) exceeded, never left hanging.
  - The module does not judge the result; M(xuanwu.cluster.workload_check) does, on the controller.
  - With O(replay_dir), the output is read from a capture bundle (entry O(replay_key) of its C(manifest.json))
    instead of running anything, so recorded runs go through the same checks.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
    details: Benchmarks only read the hardware but take time and GPUs; in check mode nothing runs and the command is returned.
  diff_mode:
    support: none
    description: Will return details on what has changed (or possibly needs changing in diff_mode), when in diff mode.
options:
  argv:
    description: The command and its arguments.
    type: list
    elements: str
  env:
    description:
      - Environment variables added for the command (for example C(NCCL_IB_HCA), C(LD_LIBRARY_PATH)).
      - The values reach the command as they are. In the result (C(invocation), RV(stdout), RV(output_tail), RV(command),
        messages) the values of secret variables and the passwords of URLs are masked; a secret variable is one whose name
        matches C(PASSWORD), C(PASSWD), C(SECRET), C(TOKEN), C(CREDENTIAL), C(PRIVATE_KEY), C(API_KEY) or C(AUTH)
        (case-insensitive) or is listed in O(secret_keys). The other values are shown.
      - The option is never written to the node's system log.
    type: dict
    default: {}
  secret_keys:
    description: More names of variables of O(env) whose values are secret (compared case-insensitively).
    type: list
    elements: str
    default: []
  chdir:
    description: Directory to run the command in.
    type: path
  timeout:
    description: Seconds after which the command is stopped and the run reported as timed out.
    type: int
    default: 900
  replay_dir:
    description:
      - Capture bundle to read the output from instead of running O(argv).
      - A bundle is untrusted input; it is read as C(docs/capture-format.md) says (regular files inside the bundle only,
        at most 64 MiB each, the manifest validated). An invalid manifest fails the task with a message naming the
        bundle, the key and the reason; a file of the entry that is not read is returned as RV(skipped_reason) (not measured).
    type: path
  replay_key:
    description: Probe key of the output in the bundle's manifest (for example C(nccl_tests:all_reduce)).
    type: str
  output_limit:
    description: Characters of standard output kept in the result (the end is kept).
    type: int
    default: 200000
  dmon:
    description:
      - Sample the GPUs with C(nvidia-smi dmon -s <select> -d <interval>) while the command runs (field guide §7), and
        return what it printed as RV(dmon); M(xuanwu.cluster.workload_check) judges it (checks C(dmon.*), docs/metrics.md).
      - Without C(nvidia-smi) on the node, or when dmon ends with an error before the workload does, RV(dmon) says
        C(not_measured) and why.
      - With O(replay_dir), the bundle's entry C(dmon:<replay_key>) (or O(dmon.replay_key)) is read instead.
    type: dict
    suboptions:
      select:
        description: The metric groups of C(nvidia-smi dmon -s) (letters only).
        type: str
        default: pucvmet
      interval:
        description: Seconds between samples (C(-d)), at least 1.
        type: int
        default: 1
      replay_key:
        description: Probe key of the dmon output in the capture bundle. Default C(dmon:) followed by O(replay_key).
        type: str
      clock_events:
        description:
          - Also sample the clock event reasons every O(dmon.interval) seconds with C(nvidia-smi
            --query-gpu=index,clocks_event_reasons.active,clocks.sm,power.draw,power.limit,temperature.gpu
            --format=csv,noheader,nounits -lms <ms>) (C(clocks_throttle_reasons.active) on drivers before R535), returned as
            C(clock_events) in RV(dmon), the driver's account of why the clocks are lower (SW power cap, HW slowdown, ...).
          - With O(replay_dir), the bundle's entry C(clock_events:<replay_key>) is read; without one, C(clock_events) says
            C(not_measured).
        type: bool
        default: true
  host_cpu:
    description:
      - Sample the host's CPU every O(host_cpu.interval) seconds while the command runs (field guide §5.5, C(sar -u)), the
        share of CPU time busy, in iowait and stolen (C(/proc/stat), every core), the 1-minute load (C(/proc/loadavg))
        and the CPU the command's processes used (C(/proc/<pid>/stat) of the process tree it started), and return them as
        RV(host_cpu); M(xuanwu.cluster.workload_check) judges them (checks C(workload.host_cpu_*), docs/metrics.md).
      - With O(replay_dir), the bundle's entry C(host_cpu:<replay_key>) (the RV(host_cpu) of a run, as JSON) is read instead;
        without one, RV(host_cpu) says C(not_measured).
    type: dict
    suboptions:
      interval:
        description: Seconds between samples, at least 1.
        type: int
        default: 2
notes:
  - The command is run directly, without a shell.
'''

EXAMPLES = r'''
- name: Run all_reduce_perf on the node's 8 GPUs
  xuanwu.cluster.workload_run:
    argv: [/opt/xuanwu/nccl-tests/current/bin/all_reduce_perf, -b, "8", -e, 8G, -f, "2", -g, "8"]
    timeout: 900
  register: run

- name: Replay a recorded run
  xuanwu.cluster.workload_run:
    replay_dir: /srv/bundles/node17
    replay_key: nccl_tests:all_reduce
'''

RETURN = r'''
exit_code:
  description:
    - Exit code of the command (124 when stopped by the timeout; null in check mode or when not captured).
    - Not called C(rc), so that a failing benchmark does not fail the task; the checks judge it.
  returned: always
  type: int
stdout:
  description: Standard output (its last O(output_limit) characters).
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
command:
  description: The command line that ran (or was replayed).
  returned: always
  type: str
dmon:
  description:
    - What C(nvidia-smi dmon) printed while the command ran (O(dmon) set), with C(command), C(interval_s), C(exit_code),
      C(truncated_bytes) (output cut from the start, kept to the last 4 MiB); or C(command) and C(not_measured) (the reason).
    - With O(dmon.clock_events), C(clock_events) holds the clock event sampling in the same shape, with the query's C(fields).
  returned: when O(dmon) is set and something ran or was replayed
  type: dict
  sample: {command: nvidia-smi dmon -s pucvmet -d 1, interval_s: 1, exit_code: -15, truncated_bytes: 0,
           stdout: "# gpu    pwr  gtemp ...\n    0    181     42 ..."}
host_cpu:
  description:
    - The host CPU samples taken while the command ran (O(host_cpu) set), with C(command), C(interval_s), C(cores),
      C(samples) (one per interval, C(t) seconds from the start, C(busy), C(iowait), C(steal) in % of all CPU time,
      C(core_max) the busiest core's busy % and C(core) its name, C(pegged) the cores at 95 % or more, C(load1),
      C(procs) the command's processes, C(proc_cpu) the cores they used, C(proc_max) the busiest one's % of a core) and
      C(core_busy_pct) (every core's busy % over the run); or C(command) and C(not_measured) (the reason).
  returned: when O(host_cpu) is set and something ran or was replayed
  type: dict
  sample: {command: read /proc/stat every 2 s, interval_s: 2, cores: 16,
           samples: [{t: 2.0, busy: 7.1, iowait: 0.0, steal: 0.0, core_max: 100.0, core: cpu3, pegged: 1, load1: 1.2,
                      procs: 3, proc_cpu: 1.05, proc_max: 99.5}]}
skipped_reason:
  description:
    - Why nothing ran or was replayed (check mode, the key is not in the bundle, or its file in the bundle is not read,
      being a symbolic link, not a regular file, or larger than 64 MiB). M(xuanwu.cluster.workload_check) reports it as not measured.
  returned: when nothing ran
  type: str
'''

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves import shlex_quote
from ansible_collections.xuanwu.cluster.plugins.module_utils import _bundle, _dmon_sampler, _host_sampler

from ansible_collections.xuanwu.cluster.plugins.module_utils import _redact


def _replay(module, directory, key):
    """The recorded run ``key`` of the bundle (None when absent). An invalid manifest fails the task; a file
    of the entry that is not read (docs/capture-format.md) is a run not measured, with the reason."""
    try:
        replayed = _bundle.recorded_run(directory, key)
    except _bundle.BundleError as err:
        module.fail_json(msg=str(err))
    if replayed is not None:
        replayed.pop('stderr', None)
        replayed.pop('status', None)
    return replayed


def _replay_sampling(module, directory, key):
    """(the recorded run of a sampler beside a replayed workload, None) or (None, the entry saying why there is none)."""
    replayed = _replay(module, directory, key)
    if replayed is None:
        return None, {'command': key, 'not_measured': 'the capture bundle has no %s' % key}
    if replayed.get('skipped_reason'):
        return None, {'command': replayed['command'], 'not_measured': replayed['skipped_reason']}
    return replayed, None


def _replay_dmon(module, directory, key):
    """The recorded dmon output beside a replayed workload, or why there is none."""
    replayed, missing = _replay_sampling(module, directory, key)
    if missing:
        return missing
    return _dmon_sampler.replayed(replayed['stdout'], replayed['command'], _dmon_sampler.interval_of(replayed['command']))


def _replay_clock_events(module, directory, key):
    """The recorded clock event sampling beside a replayed workload, or why there is none."""
    replayed, missing = _replay_sampling(module, directory, key)
    if missing:
        return missing
    out = _dmon_sampler.replayed(replayed['stdout'], replayed['command'])
    out['fields'] = _dmon_sampler.fields_of(replayed['command'])
    return out


def _replay_host_cpu(module, directory, key):
    """The recorded host CPU samples beside a replayed workload (the JSON of a run's host_cpu), or why there are none."""
    replayed, missing = _replay_sampling(module, directory, key)
    if missing:
        return missing
    try:
        entry = json.loads(replayed['stdout'])
    except ValueError as err:
        return {'command': replayed['command'], 'not_measured': 'the recorded host CPU samples are not JSON: %s' % err}
    if not isinstance(entry, dict):
        return {'command': replayed['command'], 'not_measured': 'the recorded host CPU samples are not a JSON object'}
    return entry


def _mask_only_secrets(module, env, secret_keys):
    """Mask exactly the secret values of ``env`` (and URL passwords) in everything the module returns."""
    secrets = set(_redact.secret_values(env, secret_keys))
    shown = set(str(v) for v in (env or {}).values() if v is not None) - secrets
    module.no_log_values.difference_update(shown)
    module.no_log_values.update(secrets)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            argv=dict(type='list', elements='str'),
            # no_log keeps the environment out of the node's system log; which values are masked in the
            # result is narrowed below to the secret ones, so that e.g. NCCL_DEBUG=INFO does not mask 'INFO'
            env=dict(type='dict', default={}, no_log=True),
            secret_keys=dict(type='list', elements='str', default=[], no_log=False),
            chdir=dict(type='path'),
            timeout=dict(type='int', default=900),
            replay_dir=dict(type='path'),
            replay_key=dict(type='str', no_log=False),
            output_limit=dict(type='int', default=200000),
            dmon=dict(type='dict', options=dict(
                select=dict(type='str', default=_dmon_sampler.DEFAULT_SELECT),
                interval=dict(type='int', default=1),
                replay_key=dict(type='str', no_log=False),
                clock_events=dict(type='bool', default=True),
            )),
            host_cpu=dict(type='dict', options=dict(
                interval=dict(type='int', default=_host_sampler.DEFAULT_INTERVAL_S),
            )),
        ),
        required_one_of=[('argv', 'replay_dir')],
        required_together=[('replay_dir', 'replay_key')],
        supports_check_mode=True,
    )
    p = module.params
    _mask_only_secrets(module, p['env'], p['secret_keys'])
    if p['timeout'] <= 0:
        module.fail_json(msg='timeout must be a positive number of seconds, got %d' % p['timeout'])
    dmon = p['dmon']
    if dmon is not None and (dmon['interval'] < 1 or not dmon['select'] or not dmon['select'].isalpha()):
        module.fail_json(msg='dmon: interval must be at least 1 second and select letters of nvidia-smi dmon -s '
                             '(for example pucvmet), got interval %d, select %r' % (dmon['interval'], dmon['select']))
    host_cpu = p['host_cpu']
    if host_cpu is not None and host_cpu['interval'] < 1:
        module.fail_json(msg='host_cpu: interval must be at least 1 second, got %d' % host_cpu['interval'])
    base = dict(changed=False, timeout_s=p['timeout'], exit_code=None, stdout='', output_tail='', seconds=0.0, timed_out=False)
    if p['replay_dir']:
        replayed = _replay(module, p['replay_dir'], p['replay_key'])
        if replayed is None:
            base.update(command=p['replay_key'], skipped_reason='%s is not in the capture bundle' % p['replay_key'])
            module.exit_json(**base)
        base.update(replayed)
        if dmon is not None and not replayed.get('skipped_reason'):
            base['dmon'] = _replay_dmon(module, p['replay_dir'], dmon['replay_key'] or 'dmon:%s' % p['replay_key'])
            if dmon['clock_events']:
                base['dmon']['clock_events'] = _replay_clock_events(module, p['replay_dir'], 'clock_events:%s' % p['replay_key'])
        if host_cpu is not None and not replayed.get('skipped_reason'):
            base['host_cpu'] = _replay_host_cpu(module, p['replay_dir'], 'host_cpu:%s' % p['replay_key'])
        module.exit_json(**base)

    command = ' '.join(shlex_quote(a) for a in p['argv'])
    base['command'] = command
    if module.check_mode:
        base.update(skipped_reason='check mode: would run %s' % command)
        module.exit_json(**base)
    exe = p['argv'][0]
    if not os.path.isabs(exe):
        found = module.get_bin_path(exe, required=False)
        if not found:
            base.update(exit_code=127, output_tail='%s: command not found' % exe)
            module.exit_json(**base)
        exe = found
    timeout_bin = module.get_bin_path('timeout', required=True)
    argv = [timeout_bin, '--kill-after=30', str(p['timeout']), exe] + list(p['argv'][1:])
    env = dict((k, str(v)) for k, v in p['env'].items())
    sampler = events = None
    if dmon is not None:
        nvidia_smi = module.get_bin_path('nvidia-smi', required=False)
        sampler = _dmon_sampler.Sampler(nvidia_smi, dmon['select'], dmon['interval']).start()
        if dmon['clock_events']:
            field = _dmon_sampler.reasons_field(lambda a: module.run_command(a, check_rc=False), nvidia_smi) if nvidia_smi else None
            events = _dmon_sampler.ClockEventsSampler(nvidia_smi, dmon['interval'], field or _dmon_sampler.REASONS_FIELD).start()
    cpu = None
    if host_cpu is not None:
        # the module's own process tree is the workload's, less the GPU samplers started beside it
        cpu = _host_sampler.Sampler(host_cpu['interval'], leave_out=lambda: [s.process.pid for s in (sampler, events)
                                                                             if s is not None and s.process is not None]).start()
    start = time.time()
    try:
        rc, out, err = module.run_command(argv, cwd=p['chdir'], environ_update=env, check_rc=False)
    finally:
        if cpu is not None:
            base['host_cpu'] = cpu.stop()
        if sampler is not None:
            base['dmon'] = sampler.stop()
        if events is not None:
            base['dmon']['clock_events'] = events.stop()
    seconds = round(time.time() - start, 2)
    timed_out = rc in (124, 137) and seconds >= p['timeout'] - 1
    base.update(exit_code=rc, stdout=out[-p['output_limit']:], output_tail=(out + err)[-4000:], seconds=seconds,
                timed_out=timed_out)
    module.exit_json(**base)


if __name__ == '__main__':
    main()
