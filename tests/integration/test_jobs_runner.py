"""The job runner on real ansible-runner and real processes: a validate job on the demo inventory, timeouts
and cancels that kill the whole process tree, restart recovery, command jobs (locally and through Slurm)."""
import json
import os
import shutil
import signal
import stat
import subprocess

import pytest

from jobs_support import INVENTORY, ROOT, cli_argv, env, group_gone, interruptible, load, open_to_others, read_json, \
    wait_for, write_config, xuanwu

pytestmark = [pytest.mark.one_controller,
              pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')]


def _job_id(stdout):
    return json.loads(stdout)['id']


def test_validate_on_the_demo_inventory_fails_permanently_once_with_its_report(tmp_path):
    config = write_config(tmp_path)
    done = xuanwu(config, 'run', '--playbook', 'validate', '--inventory', 'inventories/demo', '--json', timeout=300)
    assert done.returncode == 2, done.stderr
    job = json.loads(done.stdout)
    assert (job['status'], job['error_class'], job['attempts'], job['rc']) == ('failed', 'permanent', 1, 2)
    assert 'exited with 2' in job['reason']
    report = job['info']['report']
    assert report and os.path.isfile(os.path.join(report, 'report.json'))
    assert report.startswith(job['artifact_dir'])
    shown = xuanwu(config, 'show', job['id'])
    assert 'report: %s' % report in shown.stdout and 'attempt 1: failed, rc 2, permanent' in shown.stdout


def test_everything_jobs_leave_in_the_data_dir_is_the_owners_only(tmp_path):
    """docs/jobs.md: every folder of the data dir 0700, every file 0600: the report and the launch kit of a
    playbook run (written by the collection with modes of their own), ansible-runner's artifacts (ansible-core's fact
    cache is 0644 whatever the umask), and what a command made with an explicit mode in its attempt's folder."""
    config = write_config(tmp_path)
    done = xuanwu(config, 'run', '--playbook', 'validate', '--inventory', 'inventories/demo', '--json', timeout=300)
    job = json.loads(done.stdout)
    attempt = tmp_path / 'home' / 'jobs' / job['id'] / 'attempt-1'
    assert job['info']['report'] and list(attempt.glob('runs/*/launch-kit/launch-mpirun.sh')), done.stderr
    assert list(attempt.glob('artifacts/*/fact_cache/*'))
    outside = tmp_path / 'outside.txt'
    outside.write_text('not the job\'s')
    outside.chmod(0o644)
    made = ('mkdir -p out/deep && echo x > out/deep/made.txt && chmod 0755 out out/deep '
            '&& chmod 0644 out/deep/made.txt && install -m 0755 /dev/null out/run.sh && ln -s %s out/link' % outside)
    done = xuanwu(config, 'run', '--command', made, '--nodes', 'localhost', '--json')
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    attempt = tmp_path / 'home' / 'jobs' / job['id'] / 'attempt-1'
    assert (attempt / 'out' / 'deep' / 'made.txt').read_text() == 'x\n' and (attempt / 'out' / 'link').is_symlink()
    assert open_to_others(tmp_path / 'home') == []
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644     # a link's target is never changed


def _gone(pid):
    """Process ``pid`` ended (at most a zombie that its new parent has yet to reap)."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except OSError:
        return True


def test_a_job_past_its_timeout_fails_and_its_tree_is_gone(tmp_path):
    # a timeout is the job's own (permanent, not retried) unless the job asks for retries of it: then each
    # attempt is stopped at the bound, whole tree, and the job ends after its retries
    config = write_config(tmp_path)
    done = xuanwu(config, 'run', '--playbook', 't-sleep', '--inventory', INVENTORY, '--timeout-sec', '4',
                  '--retry-count', '1', '-e', 'sleep_sec=60', '--json')
    assert done.returncode == 2, done.stderr
    job = json.loads(done.stdout)
    assert (job['status'], job['error_class'], job['reason']) == ('failed', 'permanent', 'timed out after 4 s')
    assert job['attempt_list'][0]['status'] == 'failed' and job['attempts'] == 1
    with pytest.raises(ProcessLookupError):
        os.killpg(job['pgid'], 0)
    done = xuanwu(config, 'run', '--playbook', 't-sleep', '--inventory', INVENTORY, '--timeout-sec', '3',
                  '--retry-count', '1', '--retry-on-timeout', '-e', 'sleep_sec=60', '--json')
    assert done.returncode == 2, done.stderr
    job = json.loads(done.stdout)
    assert (job['status'], job['error_class'], job['attempts']) == ('failed', 'transient', 2)
    assert job['reason'] == 'timed out after 3 s (retry_on_timeout)'
    with pytest.raises(ProcessLookupError):
        os.killpg(job['pgid'], 0)


def test_cancel_from_another_process_kills_the_tree(tmp_path):
    config = write_config(tmp_path)
    pid_file = tmp_path / 'shell.pid'
    runner = subprocess.Popen(cli_argv(config, 'run', '--playbook', 't-sleep', '--inventory', INVENTORY,
                                       '-e', 'sleep_sec=60', '-e', 'pid_file=%s' % pid_file, '--json'),
                              cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        store = load(config)[1]
        wait_for(pid_file.exists, what='the play to start its shell')
        job = store.list_jobs(status='running')[0]
        done = xuanwu(config, 'cancel', job['id'])
        assert done.returncode == 0, done.stdout + done.stderr
        out, err = runner.communicate(timeout=60)
    finally:
        runner.kill()
    assert runner.returncode == 3, err
    final = json.loads(out)
    assert final['status'] == 'cancelled' and final['reason'] == 'cancelled by request'
    assert final['attempt_list'][0]['status'] == 'cancelled'
    assert wait_for(lambda: group_gone(job['pgid']), timeout=15, what='the process group to go')
    # the shell of the play (a grandchild of ansible-playbook) went with it
    assert wait_for(lambda: _gone(int(pid_file.read_text())), timeout=15, what='the shell of the play to go')
    assert xuanwu(config, 'cancel', job['id']).returncode == 1     # already final


def test_a_queued_job_cancelled_never_runs_and_the_running_one_is_killed(tmp_path):
    from xuanwu.runner import Executor
    from xuanwu.spec import parse_job
    cfg, store = load(write_config(tmp_path))
    executor = Executor(cfg, store, 1)
    states = []
    executor.on_event(lambda job_id, event: states.append((job_id, event.get('status'))))
    pid_file = tmp_path / 'shell.pid'
    first = executor.submit(parse_job({'name': 'first', 'playbook': 't-sleep', 'inventory': INVENTORY,
                                       'extra_vars': {'sleep_sec': 60, 'pid_file': str(pid_file)}}, cfg))
    second = executor.submit(parse_job({'name': 'second', 'playbook': 't-succeed', 'inventory': INVENTORY}, cfg))
    assert executor.cancel(second) and store.get_job(second)['status'] == 'cancelled'
    wait_for(pid_file.exists, what='the first job to run its shell')
    assert executor.cancel(first)
    job = executor.wait(first, timeout=60)
    assert job['status'] == 'cancelled' and job['attempt_list'][0]['status'] == 'cancelled'
    assert wait_for(lambda: group_gone(job['pgid']), timeout=15, what='the process group to go')
    executor.shutdown()
    queued = store.get_job(second)
    assert (queued['status'], queued['attempts'], queued['attempt_list']) == ('cancelled', 0, [])
    assert (second, 'running') not in states and (first, 'cancelled') in states
    assert not executor.cancel(first)


def _start_and_abandon(config, tmp_path, sleeps):
    """Start a sleeping job per item of ``sleeps`` with the CLI, all at once, then kill the CLIs only (SIGKILL:
    no clean-up) once each play runs its shell; the job records, in the order of ``sleeps``."""
    runners = []
    for index, sleep_sec in enumerate(sleeps):
        pid_file = tmp_path / ('shell-%d.pid' % index)
        runners.append((pid_file, subprocess.Popen(
            cli_argv(config, 'run', '--name', 'job-%d' % index, '--playbook', 't-sleep', '--inventory', INVENTORY,
                     '-e', 'sleep_sec=%s' % sleep_sec, '-e', 'pid_file=%s' % pid_file),
            cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    for pid_file, runner in runners:
        wait_for(pid_file.exists, what='the play to start its shell')
        runner.kill()
        runner.wait()
    store = load(config)[1]
    jobs = dict((j['name'], j) for j in store.list_jobs())
    return [store.get_job(jobs['job-%d' % index]['id']) for index in range(len(sleeps))]


def test_recover_reattaches_a_live_job_reads_an_ended_one_and_fails_one_whose_process_is_gone(tmp_path):
    from xuanwu.runner import Executor
    config = write_config(tmp_path)
    dead, ended, live = _start_and_abandon(config, tmp_path, [60, 0, 6])
    os.killpg(dead['pgid'], signal.SIGKILL)
    wait_for(lambda: group_gone(dead['pgid']), what='the killed job to go')
    wait_for(lambda: os.path.isfile(os.path.join(ended['artifact_dir'], 'exit.json')), what='the short job to end')
    cfg, store = load(config)
    executor = Executor(cfg, store, 2)
    found = executor.recover()
    assert found == {'reattached': [live['id']], 'ended': [ended['id']], 'failed': [dead['id']], 'requeued': []}
    failed = store.get_job(dead['id'])
    assert failed['status'] == 'failed'
    assert failed['reason'] == ('the service stopped while this job ran (pid %d gone); its artifacts: %s'
                                % (dead['pid'], dead['artifact_dir']))
    assert failed['attempt_list'][0]['finished'] is not None
    for job_id in (live['id'], ended['id']):
        job = executor.wait(job_id, timeout=60)
        assert (job['status'], job['rc'], job['attempts']) == ('succeeded', 0, 1)
        assert read_json(os.path.join(job['artifact_dir'], 'job.json'))['status'] == 'succeeded'


def test_ctrl_c_on_xuanwu_run_cancels_the_job_and_kills_its_tree(tmp_path):
    config = write_config(tmp_path)
    pid_file = tmp_path / 'command.pid'
    runner = subprocess.Popen(cli_argv(config, 'run', '--command', 'echo $$ > %s; exec sleep 60' % pid_file,
                                       '--nodes', 'localhost', '--json'),
                              cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=interruptible)
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), what='the command to start')
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=60)
    finally:
        runner.kill()
    assert runner.returncode == 3 and 'interrupted; cancelling job' in err
    job = json.loads(out)
    assert job['status'] == 'cancelled' and job['attempt_list'][0]['status'] == 'cancelled'
    assert group_gone(job['pgid']) and _gone(int(pid_file.read_text()))


def test_a_command_job_on_localhost_runs_locally(tmp_path):
    config = write_config(tmp_path)
    done = xuanwu(config, 'run', '--command', 'echo out-$((6 * 7)); echo err >&2', '--nodes', 'localhost', '--json')
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert job['info']['mode'] == 'local' and job['info']['ran_on'] == ['localhost']
    assert (tmp_path / 'home' / 'jobs' / job['id'] / 'attempt-1' / 'stdout.txt').read_text() == 'out-42\n'
    failing = json.loads(xuanwu(config, 'run', '--command', 'exit 3', '--nodes', '127.0.0.1', '--json').stdout)
    assert (failing['status'], failing['error_class'], failing['rc']) == ('failed', 'permanent', 3)


def test_a_command_job_over_ssh_runs_on_each_node_and_an_unreachable_one_is_transient(tmp_path):
    from sshd_server import SSHD, Sshd, free_port, keygen
    if SSHD is None or shutil.which('ssh') is None:
        pytest.skip('needs sshd and ssh')
    host_key = keygen(tmp_path / 'host_key')
    client_key = keygen(tmp_path / 'client_key')
    (tmp_path / 'authorized_keys').write_text(client_key + '\n')
    sshd = Sshd(tmp_path, [tmp_path / 'host_key'], tmp_path / 'authorized_keys').start()
    try:
        (tmp_path / 'known_hosts').write_text('[127.0.0.1]:%d %s\n' % (sshd.port, host_key))
        hosts = {'node-a': sshd.port, 'node-b': sshd.port, 'node-down': free_port()}
        entry = ('Host %s\n  HostName 127.0.0.1\n  Port %d\n  IdentityFile {key}\n  IdentitiesOnly yes\n'
                 '  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n').format(
                     key=tmp_path / 'client_key', known=tmp_path / 'known_hosts')
        (tmp_path / 'ssh_config').write_text(''.join(entry % (name, port) for name, port in hosts.items()))
        config = write_config(tmp_path, ssh_config_file=str(tmp_path / 'ssh_config'))
        job = json.loads(xuanwu(config, 'run', '--command', 'echo "hello from $(hostname)"', '--nodes',
                                'node-a,node-b', '--json').stdout)
        down = json.loads(xuanwu(config, 'run', '--command', 'true', '--nodes', 'node-a,node-down', '--json').stdout)
    finally:
        sshd.stop()
    assert (job['status'], job['info']['mode'], job['info']['ran_on']) == ('succeeded', 'ssh', ['node-a', 'node-b'])
    attempt = tmp_path / 'home' / 'jobs' / job['id'] / 'attempt-1'
    for node in ('node-a', 'node-b'):
        assert (attempt / ('stdout-%s.txt' % node)).read_text().startswith('hello from ')
    assert (down['status'], down['error_class'], down['rc']) == ('failed', 'transient', 255)
    assert 'node or connection failure' in down['reason'] and 'Connection refused' in down['error']


def _slurm(tmp_path):
    import slurm_double
    folder = tmp_path / 'slurm-bin'
    folder.mkdir()
    slurm_double.install(str(folder), {name: {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}
                                       for name in ('gpu-node01', 'gpu-node02', 'gpu-node03')})
    return folder


def test_a_command_job_through_slurm_records_the_slurm_job_and_its_nodes(tmp_path):
    folder = _slurm(tmp_path)
    config = write_config(tmp_path, scheduler='slurm')
    done = xuanwu(config, 'run', '--command', 'echo "on $SLURMD_NODENAME"', '--nodes', 'gpu-node01,gpu-node02',
                  '--json', path_prefix=str(folder))
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    state = read_json(folder / 'slurm-double-state.json')
    slurm_job = state['jobs'][job['info']['slurm_job_id']]
    assert slurm_job['name'] == 'xuanwu-%s' % job['id'] and slurm_job['nodes'] == ['gpu-node01', 'gpu-node02']
    assert slurm_job['state'] == 'COMPLETED'
    assert job['info']['mode'] == 'slurm' and job['info']['ran_on'] == ['gpu-node01', 'gpu-node02']
    stdout = (tmp_path / 'home' / 'jobs' / job['id'] / 'attempt-1' / 'stdout.txt').read_text()
    assert sorted(stdout.splitlines()) == ['on gpu-node01', 'on gpu-node02']
    unknown = json.loads(xuanwu(config, 'run', '--command', 'true', '--nodes', 'gpu-node09', '--json',
                                path_prefix=str(folder)).stdout)
    assert unknown['status'] == 'failed' and unknown['error_class'] == 'permanent'


def test_a_slurm_command_job_past_its_timeout_is_scancelled(tmp_path):
    folder = _slurm(tmp_path)
    config = write_config(tmp_path, scheduler='slurm')
    done = xuanwu(config, 'run', '--command', 'sleep 60', '--nodes', 'gpu-node03', '--timeout-sec', '2', '--json',
                  path_prefix=str(folder))
    job = json.loads(done.stdout)
    assert (job['status'], job['reason']) == ('failed', 'timed out after 2 s')
    calls = [json.loads(line) for line in (folder / 'slurm-double-calls.jsonl').read_text().splitlines()]
    assert ['scancel', '--name=xuanwu-%s' % job['id']] in calls
    state = read_json(folder / 'slurm-double-state.json')
    assert [j['state'] for j in state['jobs'].values() if j['name'] == 'xuanwu-%s' % job['id']] == ['CANCELLED']
    assert group_gone(job['pgid'])
