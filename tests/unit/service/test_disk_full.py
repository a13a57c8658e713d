"""A full disk while a job ends: its end is recorded once space returns, never left ``running`` for ever; a failed
COMMIT is not hidden by its ROLLBACK. Simulated (SQLite's own error, ENOSPC) for each step, and real: the data dir
on a small tmpfs that a job's output fills."""
import errno
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from real_jobs import ROOT, config, env, wait_for
from xuanwu import runner
from xuanwu.runner import Executor, disk_full
from xuanwu.spec import parse_job
from xuanwu.store import Store


def full_store(monkeypatch, store, failures):
    """``store.finish_attempt`` fails as SQLite does on a full disk, ``failures['store']`` times, then writes."""
    real = store.finish_attempt

    def finish_attempt(*args, **kwargs):
        if failures['store']:
            failures['store'] -= 1
            raise sqlite3.OperationalError('database or disk is full')
        return real(*args, **kwargs)
    monkeypatch.setattr(store, 'finish_attempt', finish_attempt)


def test_a_failed_commit_is_not_hidden_by_its_rollback(tmp_path):
    store = Store(tmp_path / 'jobs.db')
    with pytest.raises(sqlite3.OperationalError, match='database or disk is full'):
        with store.transaction() as conn:
            conn.execute('ROLLBACK')    # what SQLite does itself when a full disk fails the write
            raise sqlite3.OperationalError('database or disk is full')
    with store.transaction() as conn:   # and the store still works
        conn.execute('SELECT 1')


def test_the_errors_of_a_full_disk():
    assert disk_full(sqlite3.OperationalError('database or disk is full'))
    assert disk_full(OSError(errno.ENOSPC, 'No space left on device'))
    assert not disk_full(sqlite3.OperationalError('database is locked'))
    assert not disk_full(OSError(errno.EACCES, 'Permission denied'))


def full_executor(tmp_path, monkeypatch, failures, record_key, at_end):
    """An executor whose store fails ``failures['store']`` times and whose attempt job.json (at its end when ``at_end``,
    else at its start) fails ``failures[record_key]`` times, as on a full disk."""
    monkeypatch.setattr(runner, 'RECORD_RETRY_FIRST_SEC', 0.05)
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    real_record = Executor._write_record
    full_store(monkeypatch, store, failures)

    def write_record(adir, record):
        if failures[record_key] and ('finished' in record) == at_end:
            failures[record_key] -= 1
            raise OSError(errno.ENOSPC, 'No space left on device')
        return real_record(adir, record)
    monkeypatch.setattr(Executor, '_write_record', staticmethod(write_record))
    return cfg, Executor(cfg, store, 2, serve_all=False)


def test_a_job_that_ends_on_a_full_disk_is_recorded_once_space_returns(tmp_path, monkeypatch):
    failures = {'store': 3, 'record': 2}
    cfg, executor = full_executor(tmp_path, monkeypatch, failures, 'record', at_end=True)
    try:
        job = executor.wait(executor.submit(parse_job({'name': 'full', 'nodes': ['localhost'], 'command': 'true'}, cfg)),
                            timeout=60)
    finally:
        executor.shutdown()
    assert job['status'] == 'succeeded' and failures == {'store': 0, 'record': 0}
    assert [a['status'] for a in job['attempt_list']] == ['succeeded']     # recorded once, not run again


def test_a_job_that_cannot_start_on_a_full_disk_is_recorded_and_retried_once_space_returns(tmp_path, monkeypatch):
    failures = {'start': 1, 'store': 2}
    cfg, executor = full_executor(tmp_path, monkeypatch, failures, 'start', at_end=False)
    try:
        job = executor.wait(executor.submit(parse_job({'name': 'start-full', 'nodes': ['localhost'], 'command': 'true',
                                                       'retry_count': 1}, cfg)), timeout=60)
    finally:
        executor.shutdown()
    # the first attempt could not start (recorded once the store could write), the retry ran
    assert job['status'] == 'succeeded' and failures == {'start': 0, 'store': 0}
    assert [a['status'] for a in job['attempt_list']] == ['failed', 'succeeded']


# --- a real full disk: the data dir on a small tmpfs of its own ---------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB tmpfs mounted for the test (root only: skipped, saying why, where mounting is not allowed)."""
    mount = tmp_path / 'disk'
    mount.mkdir()
    done = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=16m,mode=0700', 'tmpfs', str(mount)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30, check=False)
    if done.returncode != 0:
        pytest.skip('a real full disk needs a tmpfs of its own, and mounting one is not allowed here: %s'
                    % done.stdout.strip())
    try:
        yield mount
    finally:
        subprocess.run(['umount', '-l', str(mount)], timeout=30, check=False)


def fill(folder, leave: int = 0):
    """Fill the file system of ``folder`` up to ``leave`` bytes free with one file; its path."""
    filler = folder / 'filler'
    with open(filler, 'wb') as handle:
        chunk = b'\0' * 65536
        try:
            while runner.free_bytes(folder) > leave + len(chunk):
                handle.write(chunk)
                handle.flush()
            handle.write(b'\0' * max(0, runner.free_bytes(folder) - leave))
            handle.flush()
        except OSError as err:
            assert disk_full(err), err
    return filler


def test_a_job_whose_output_fills_a_real_disk_is_failed_with_that_reason_once_space_returns(small_disk, monkeypatch):
    monkeypatch.setattr(runner, 'RECORD_RETRY_FIRST_SEC', 0.1)
    monkeypatch.setattr(runner, 'RECORD_RETRY_MAX_SEC', 0.5)
    cfg = config(small_disk)
    store = Store(cfg.data_dir / 'jobs.db')
    executor = Executor(cfg, store, 2, serve_all=False)
    filler = fill(small_disk, leave=3 * 1024 * 1024)
    try:
        spec = parse_job({'name': 'floods', 'nodes': ['localhost'], 'command': 'head -c 40000000 /dev/zero'}, cfg)
        job_id = executor.submit(spec)
        adir = cfg.data_dir / 'jobs' / job_id / 'attempt-1'
        wait_for((adir / 'exit.json.tmp').exists, 30, 'the attempt trying to write its result')
        assert runner.free_bytes(small_disk) < 65536
        time.sleep(1.0)     # the executor tries to record the end meanwhile: the job is not final, nor lost
        job = store.get_job(job_id)
        assert job['status'] == 'running', job
        filler.unlink()     # space returns
        job = executor.wait(job_id, timeout=30)
    finally:
        executor.shutdown()
    assert job['status'] == 'failed' and job['error_class'] == 'transient', job
    assert 'could not write its result' in job['reason'] and 'disk' in job['reason'], job['reason']
    assert [a['status'] for a in job['attempt_list']] == ['failed']     # recorded once


def test_a_restart_after_a_real_full_disk_says_the_result_was_not_written(small_disk):
    """The service died while the disk was full and the job's end unrecorded: the next one names the full disk,
    not "the service stopped while this job ran"."""
    cfg = config(small_disk)
    store = Store(cfg.data_dir / 'jobs.db')
    filler = fill(small_disk, leave=3 * 1024 * 1024)
    done = subprocess.run([sys.executable, '-c', DIES_WHEN_FULL, str(small_disk)], env=env(XUANWU_TEST_ROOT=ROOT),
                          timeout=120,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    assert done.returncode == -9, done.stdout
    job_id = re.search(r'^JOB=(\S+)$', done.stdout, re.M).group(1)
    filler.unlink()
    executor = Executor(cfg, Store(cfg.data_dir / 'jobs.db'), 2, serve_all=True)
    try:
        executor.recover()
        job = executor.wait(job_id, timeout=30)
    finally:
        executor.shutdown()
    assert job['status'] == 'failed', job
    assert 'could not write its result' in job['reason'] and 'service stopped' not in job['reason'], job['reason']
    assert len(job['attempt_list']) == 1


# The first service: a job floods the disk, its end cannot be written, and the service is killed (-9) then.
DIES_WHEN_FULL = '''
import os, signal, sys, time
from pathlib import Path
sys.path.insert(0, os.path.join(os.environ.get("XUANWU_TEST_ROOT", "."), "tests", "unit", "service"))
from real_jobs import config
from xuanwu.runner import Executor
from xuanwu.spec import parse_job
from xuanwu.store import Store
cfg = config(Path(sys.argv[1]))
executor = Executor(cfg, Store(cfg.data_dir / "jobs.db"), 2, serve_all=True)
job_id = executor.submit(parse_job({"name": "floods", "nodes": ["localhost"],
                                    "command": "head -c 40000000 /dev/zero"}, cfg))
print("JOB=" + job_id, flush=True)
adir = cfg.data_dir / "jobs" / job_id / "attempt-1"
deadline = time.monotonic() + 60
while not (adir / "exit.json.tmp").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.5)
os.kill(os.getpid(), signal.SIGKILL)
'''


def test_a_submission_on_a_real_full_disk_is_refused_with_507_and_why(small_disk):
    import requests
    import uvicorn

    from xuanwu.server import create_app
    cfg = config(small_disk)
    store = Store(cfg.data_dir / 'jobs.db')
    executor = Executor(cfg, store, 2, serve_all=True)
    token = 'disk-full-token-0123456789abcdef'
    app = create_app(cfg, store, executor, token)
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, kwargs={'sockets': [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, 20, 'the service')
    base = 'http://127.0.0.1:%d' % sock.getsockname()[1]
    auth = {'Authorization': 'Bearer ' + token}
    # a job of 8 KB: more than SQLite's write-ahead log can take in the pages it already has
    body = {'name': 'full', 'nodes': ['localhost'], 'command': 'echo %s' % ('x' * 8000)}
    try:
        filler = fill(small_disk)
        answers = [requests.post(base + '/api/v1/jobs', json=body, headers=auth, timeout=20) for _try in range(20)]
        refused = [a for a in answers if a.status_code != 201]
        assert refused, 'a full disk accepted 20 jobs'
        for answer in refused:
            assert answer.status_code == 507, answer.text
            assert 'disk is full' in answer.json()['detail'] and answer.headers['Retry-After'] == '60', answer.text
        filler.unlink()
        answer = requests.post(base + '/api/v1/jobs', json=body, headers=auth, timeout=20)
        assert answer.status_code == 201, answer.text
        assert executor.wait(answer.json()['job_id'], timeout=30)['status'] == 'succeeded'
    finally:
        server.should_exit = True
        thread.join(10)
        executor.shutdown()
