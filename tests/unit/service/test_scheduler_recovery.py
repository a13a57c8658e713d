"""The durable scheduler with real, short jobs: whole process trees (setsid and double-fork children) die on
timeout and cancel, in a cgroup and as a tracked tree; a runner that died is stopped before its job is
failed or retried; the limit counts re-attached jobs; a killed ``xuanwu batch`` resumes exactly once."""
import json
import os
import signal
import time

import pytest

from real_jobs import cli, config, overlap, pid_alive, read_pid, wait_for, write_config
from xuanwu import proctree, runner
from xuanwu.runner import Executor
from xuanwu.spec import parse_job
from xuanwu.store import Store

# A command that leaves a setsid grandchild and a double-forked one behind, then waits for ever.
ESCAPES = ('setsid sh -c \'echo $$ > {d}/setsid.pid; exec sleep 300\' & '
           '( sh -c \'echo $$ > {d}/fork.pid; exec sleep 300\' & ) ; sleep 300')


def _executor(tmp_path, limit=4, serve_all=False, **extra):
    cfg = config(tmp_path, **extra)
    return Executor(cfg, Store(cfg.data_dir / 'jobs.db'), limit, serve_all=serve_all)


@pytest.fixture(params=['cgroup', 'tracked'])
def tree_mode(request, monkeypatch):
    if request.param == 'tracked':
        monkeypatch.setattr(proctree, 'make_cgroup', lambda name: None)
    elif proctree.make_cgroup('xuanwu-probe') is None:
        pytest.skip('no writable cgroup v2 here')
    else:
        proctree.remove_cgroup(proctree.make_cgroup('xuanwu-probe'))
    return request.param


@pytest.mark.parametrize('how', ['timeout', 'cancel'])
def test_setsid_and_double_fork_children_die_on_timeout_and_cancel(tmp_path, tree_mode, how):
    ex = _executor(tmp_path)
    try:
        job_id = ex.submit(parse_job({'name': 'escape', 'command': ESCAPES.format(d=tmp_path), 'nodes': ['localhost'],
                                      'timeout_sec': 2 if how == 'timeout' else 60}, ex.config))
        pids = [read_pid(tmp_path / 'setsid.pid'), read_pid(tmp_path / 'fork.pid')]
        assert all(pid_alive(pid) for pid in pids)
        cgroup = ex.store.get_job(job_id)['cgroup']
        assert bool(cgroup) == (tree_mode == 'cgroup')
        if how == 'cancel':
            assert ex.cancel(job_id)
        job = ex.wait(job_id, timeout=20)
        expected = ('failed', 'timed out after 2 s') if how == 'timeout' else ('cancelled', 'cancelled by request')
        assert (job['status'], job['reason']) == expected
        assert job['attempt_list'][-1]['finished'] is not None
        assert [pid for pid in pids if pid_alive(pid)] == []
        assert not cgroup or not os.path.exists(cgroup)
    finally:
        ex.shutdown()


def test_a_job_whose_runner_died_is_stopped_whole_before_it_is_failed(tmp_path):
    first = _executor(tmp_path)
    job_id = first.submit(parse_job({'name': 'orphan', 'command': 'sleep 300 & echo $! > %s/child.pid; wait'
                                     % tmp_path, 'nodes': ['localhost']}, first.config))
    child = read_pid(tmp_path / 'child.pid')
    job = first.store.get_job(job_id)
    first.shutdown()                       # the scheduler is gone (as after kill -9) ...
    os.kill(job['pid'], signal.SIGKILL)    # ... and so is the attempt process; its child lives on
    wait_for(lambda: not pid_alive(job['pid']), what='the attempt process to die')
    assert pid_alive(child)
    second = _executor(tmp_path, serve_all=True)
    try:
        found = second.recover()
        assert found['failed'] == [job_id]
        assert not pid_alive(child), 'the child of a dead runner survived recovery'
        again = second.store.get_job(job_id)
        assert again['status'] == 'failed' and 'pid %d gone' % job['pid'] in again['reason']
        assert again['attempt_list'][0]['finished'] is not None
        assert second.recover() == {'reattached': [], 'ended': [], 'failed': [], 'requeued': []}   # once only
    finally:
        second.shutdown()


def test_the_limit_counts_reattached_jobs(tmp_path):
    times = tmp_path / 'times'
    times.mkdir()
    command = ('echo $(date +%s.%N) > {t}/$XUANWU_JOB_MARK.start; sleep {s}; '
               'echo $(date +%s.%N) > {t}/$XUANWU_JOB_MARK.end')
    first = _executor(tmp_path, limit=2)
    running = [first.submit(parse_job({'name': 'r%d' % i, 'command': command.format(t=times, s=2),
                                       'nodes': ['localhost']},
                                      first.config)) for i in range(2)]
    wait_for(lambda: len(list(times.glob('*.start'))) == 2, what='two jobs to start')
    first.shutdown()                        # their scheduler dies; their attempts run on
    second = Executor(first.config, Store(first.config.data_dir / 'jobs.db'), 2, serve_all=True)
    try:
        queued = [second.store.create_job(parse_job({'name': 'q%d' % i, 'command': command.format(t=times, s=0.3),
                                                     'nodes': ['localhost']}, first.config).to_dict(),
                                          'command', 'q%d' % i) for i in range(2)]
        found = second.recover()
        assert sorted(found['reattached']) == sorted(running) and sorted(found['requeued']) == sorted(queued)
        for job_id in running + queued:
            assert second.wait(job_id, timeout=30)['status'] == 'succeeded'
    finally:
        second.shutdown()
    spans = [(float((times / ('%s.start' % m)).read_text()), float((times / ('%s.end' % m)).read_text()))
             for m in [p.name[:-6] for p in times.glob('*.start')]]
    assert len(spans) == 4 and overlap(spans) == 2


def test_cancel_of_a_job_that_succeeded_while_its_runner_was_dead_keeps_succeeded(tmp_path):
    first = _executor(tmp_path)
    job_id = first.submit(parse_job({'name': 'quick', 'command': 'sleep 0.5', 'nodes': ['localhost']}, first.config))
    wait_for(lambda: first.store.get_job(job_id)['pid'], what='the attempt to start')
    first.shutdown()
    job = first.store.get_job(job_id)
    wait_for(lambda: os.path.isfile(os.path.join(job['artifact_dir'], 'exit.json')), what='the attempt to end')
    assert first.store.get_job(job_id)['status'] == 'running'      # nobody recorded it
    second = _executor(tmp_path)
    try:
        assert second.cancel(job_id) is False
        assert second.wait(job_id, timeout=10)['status'] == 'succeeded'
    finally:
        second.shutdown()


def test_kill_9_of_xuanwu_batch_then_run_again_resumes_it_exactly_once(tmp_path):
    config_path = write_config(tmp_path)
    runs = tmp_path / 'runs'
    runs.mkdir()
    batch = {'output_dir': 'out', 'max_concurrency': 2, 'timeout_sec': 60,
             'command': 'sh -c "echo run >> {runs}/$XUANWU_TASK_ID; sleep {sleep}"',
             'task_list': [{'task_id': 't%d' % i, 'params': {'runs': str(runs), 'sleep': 0.5}} for i in range(3)]}
    (tmp_path / 'batch.json').write_text(json.dumps(batch))
    first = cli(config_path, 'batch', str(tmp_path / 'batch.json'), start_new_session=True)
    wait_for(lambda: len(list(runs.iterdir())) >= 2, what='two tasks to start')
    first.kill()                            # kill -9: no clean-up at all
    first.communicate()
    store = Store(tmp_path / 'home' / 'jobs.db')
    assert store.open_batches()[0]['status'] == 'running'
    second = cli(config_path, 'batch', str(tmp_path / 'batch.json'), '--json')
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert 'resuming batch' in err
    summary = json.loads(out)
    assert summary['status'] == 'succeeded' and summary['counts']['succeeded'] == 3
    assert {p.name: p.read_text().count('run') for p in runs.iterdir()} == {'t%d' % i: 1 for i in range(3)}
    assert len(store.list_jobs(limit=100)) == 3 and store.open_batches() == []
    spans = [(a['started'], a['finished']) for j in store.list_jobs(limit=100) for a in store.list_attempts(j['id'])]
    assert overlap(spans) <= 2


def test_owner_of_a_shut_down_scheduler_is_dead_in_its_own_process(tmp_path):
    ex = _executor(tmp_path)
    owner = ex.owner
    assert runner.owner_alive(owner)
    ex.shutdown()
    assert not runner.owner_alive(owner) and not runner.owner_alive(None)
    assert not runner.owner_alive('1:not-its-start:x')


def _serve(config_path, token_file, port):
    return cli(config_path, 'serve', '--port', str(port), '--token-file', str(token_file), start_new_session=True)


def test_kill_9_of_the_service_mid_batch_and_a_restart_finish_the_batch_exactly_once(tmp_path):
    import socket

    import requests
    token = 'recovery-test-token-0123456789'
    token_file = tmp_path / 'token'
    token_file.write_text(token + '\n')
    os.chmod(token_file, 0o600)
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    base, auth = 'http://127.0.0.1:%d' % port, {'Authorization': 'Bearer ' + token}
    config_path = write_config(tmp_path)
    runs = tmp_path / 'runs'
    runs.mkdir()

    def up():
        try:
            return requests.get(base + '/health', timeout=1).ok
        except requests.RequestException:
            return False
    first = _serve(config_path, token_file, port)
    try:
        wait_for(up, timeout=30, what='the service')
        body = {'output_dir': 'crash', 'max_concurrency': 2, 'command': 'sh -c "echo run >> %s/{t}; sleep 0.8"' % runs,
                'task_list': [{'task_id': 't%d' % i, 'params': {'t': 't%d' % i}} for i in range(4)]}
        batch_id = requests.post(base + '/api/v1/batches', json=body, headers=auth, timeout=10).json()['batch_id']
        wait_for(lambda: len(list(runs.iterdir())) >= 2, what='two tasks to start')
    finally:
        first.kill()                        # kill -9 of the service, mid-batch
        first.communicate()
    second = _serve(config_path, token_file, port)
    try:
        wait_for(up, timeout=30, what='the service again')

        def ended():
            batch = requests.get('%s/api/v1/batches/%s' % (base, batch_id), headers=auth, timeout=10).json()
            return batch if batch['status'] in ('succeeded', 'failed', 'cancelled') else None
        batch = wait_for(ended, timeout=30, what='the batch to end')
    finally:
        second.terminate()
        second.communicate(timeout=20)
    assert batch['status'] == 'succeeded', batch
    assert {p.name: p.read_text().count('run') for p in runs.iterdir()} == {'t%d' % i: 1 for i in range(4)}
    assert os.path.isfile(os.path.join(batch['output_dir'], 'summary.json'))
    store = Store(tmp_path / 'home' / 'jobs.db')
    spans = [(a['started'], a['finished']) for j in store.list_jobs(limit=100) for a in store.list_attempts(j['id'])]
    assert len(spans) == 4 and overlap(spans) <= 2


def test_a_job_claimed_by_a_scheduler_that_died_while_starting_it_is_recovered_once(tmp_path):
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    spec = parse_job({'name': 'starting', 'command': 'true', 'nodes': ['localhost'], 'retry_count': 1}, cfg)
    job_id = store.create_job(spec.to_dict(), 'command', 'starting', max_attempts=2)
    dead = '999999:not-running:x'
    claimed = store.claim_next(dead, 4)      # a scheduler claimed it and died before it recorded a process
    assert (claimed['id'], claimed['status'], claimed['attempts'], claimed['pid']) == (job_id, 'running', 1, None)
    assert store.claim_next('another:x:y', 4) is None                   # claimed exactly once
    ex = Executor(cfg, store, 4, serve_all=True)
    try:
        found = ex.recover()
        assert found['requeued'] == [job_id] and found['failed'] == []
        job = ex.wait(job_id, timeout=20)
        # nothing of it ran: its attempt does not count against its retries
        assert (job['status'], job['attempts']) == ('succeeded', 1)
        assert [a['status'] for a in job['attempt_list']] == ['succeeded']
    finally:
        ex.shutdown()


def test_a_retry_waiting_in_the_store_runs_after_a_restart(tmp_path):
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    spec = parse_job({'name': 'waiting', 'command': 'true', 'nodes': ['localhost'], 'retry_count': 1}, cfg)
    job_id = store.create_job(spec.to_dict(), 'command', 'waiting', max_attempts=2)
    store.claim_next('999999:gone:x', 4)
    store.add_attempt(job_id, 1)
    store.finish_attempt(job_id, 1, 255, 'failed', 'transient', 'ssh could not reach a node')
    assert store.retry_later(job_id, '999999:gone:x', time.time() + 1.5)    # then the process died
    ex = Executor(cfg, store, 4, serve_all=True)
    try:
        assert ex.recover()['requeued'] == [job_id]
        assert store.claim_next('other:x:y', 4) is None            # not before its time
        job = ex.wait(job_id, timeout=20)
        assert (job['status'], job['attempts']) == ('succeeded', 2)
        assert job['attempt_list'][1]['started'] >= job['attempt_list'][0]['finished'] + 1.0
    finally:
        ex.shutdown()
