"""The elastic restart run for real on the CPU (gloo, 2 workers): elastic_restart_launch.py starts torchrun with
--max-restarts, kills rank 1 (SIGKILL) after a checkpoint, torchrun restarts both workers, which resume from the
checkpoint and finish; the launcher's result line is then judged as a role would. About 30 s on 2 cores (torch is
imported twice per worker: before and after the kill). Plus the launcher's pure functions.

Skipped when torch is not installed.
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip('torch')

from ansible_collections.xuanwu.cluster.plugins.module_utils import _workloads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FILES = os.path.join(ROOT, 'roles', 'torch_workloads', 'files')
TAG = 'XUANWU_RESULT '


def _launcher():
    spec = importlib.util.spec_from_file_location('xuanwu_workload_elastic_launch', os.path.join(FILES, 'elastic_restart_launch.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _launch(tmp_path, *args):
    env = dict(os.environ, OMP_NUM_THREADS='1', PYTHONWARNINGS='ignore', PYTHONUNBUFFERED='1', GLOO_SOCKET_IFNAME='lo')
    parent = tmp_path / 'parent'
    parent.mkdir()
    command = [sys.executable, os.path.join(FILES, 'elastic_restart_launch.py'), '--nproc-per-node', '2', '--backend', 'gloo',
               '--checkpoint-parent', str(parent)] + [str(a) for a in args]
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=240, check=False)
    lines = proc.stdout.decode('utf-8', 'replace').strip().splitlines()
    err = proc.stderr.decode('utf-8', 'replace')
    assert len(lines) == 1 and lines[0].startswith(TAG), (proc.stdout, err[-3000:])
    return proc.returncode, json.loads(lines[0][len(TAG):]), err, parent


def test_a_killed_rank_is_restarted_and_the_job_resumes_from_its_checkpoint(tmp_path):
    code, result, err, parent = _launch(tmp_path, '--steps', 6, '--checkpoint-every', 2, '--max-restarts', 2)
    assert code == 0 and result['ok'] is True, (result, err[-3000:])
    # killed after step 3 (the checkpoint at step 2 plus one), restarted, resumed from step 2: one step redone
    assert result['killed'] and result['victim_rank'] == 1 and result['kill_step'] == 3
    assert result['restarts'] >= 1 and result['resumed_from'] == 2 and result['steps_redone'] == 1
    assert result['steps_done'] == 6 and result['final_loss'] < result['first_loss']
    assert 0 < result['recover_s'] < result['total_s']
    assert 'SIGKILL to rank 1 (pid %d) after step 3' % result['victim_pid'] in err
    # the private checkpoint directory (0700 under the parent) is gone
    assert result['checkpoint_dir_removed'] and os.listdir(str(parent)) == []
    run = {'exit_code': code, 'stdout': TAG + json.dumps(result) + '\n', 'timed_out': False, 'component': 'elastic_restart'}
    spec = {'recover_s_max': 60.0, 'checkpoint_every': 2}
    assert _workloads.evaluate('elastic_restart', run, {'workloads': {'elastic_restart': spec}}, 'cpu-node') == []


def test_options_that_cannot_test_a_restart_are_refused_before_anything_runs():
    launch = _launcher()
    args = launch.build_parser().parse_args(['--steps', '7', '--checkpoint-every', '5'])
    assert launch.kill_step_of(args) == 7 and 'leaves no step after the kill' in launch.config_error(args)
    args = launch.build_parser().parse_args(['--kill-at-step', '4', '--checkpoint-every', '5'])
    assert 'not after the first checkpoint' in launch.config_error(args)
    assert launch.config_error(launch.build_parser().parse_args([])) is None


def test_the_launcher_reads_the_progress_lines(monkeypatch):
    launch = _launcher()
    watch = launch.Watch(os.getpid(), 7)
    killed, real_kill = [], os.kill
    monkeypatch.setattr(launch.os, 'kill', lambda pid, sig: killed.append((pid, sig)))
    # a pid that is not below the job's torchrun is never signalled
    watch.line('XUANWU_ELASTIC {"event": "hold", "rank": 1, "pid": 1, "step": 7, "restart": 0}\n')
    assert killed == [] and 'not a process of the job' in watch.state['kill_error']
    watch.state['kill_error'] = None
    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])
    try:
        watch.line('[rank1]: XUANWU_ELASTIC {"event": "hold", "rank": 1, "pid": %d, "step": 7, "restart": 0}\n' % child.pid)
    finally:
        real_kill(child.pid, launch.signal.SIGKILL)
        child.wait()
    assert killed == [(child.pid, launch.signal.SIGKILL)] and watch.state['killed']
    watch.line('XUANWU_ELASTIC {"event": "resume", "step": 5, "restart": 1}\n')
    watch.line('XUANWU_ELASTIC {"event": "step", "step": 6, "restart": 1, "loss": 3.2}\n')
    watch.line('XUANWU_RESULT {"ok": true, "restart_count": 1, "steps_done": 20}\n')
    assert watch.state['resumed_from'] == 5 and watch.state['recovered_at'] >= watch.state['kill_at']
    args = launch.build_parser().parse_args([])
    result = launch.summary(args, watch.state, 0, False)
    assert result['restarts'] == 1 and result['steps_redone'] == 2 and result['ok'] and result['error'] is None
