"""A full disk while a job ends: its end is recorded once space returns, never left ``running`` for ever; a failed
COMMIT is not hidden by its ROLLBACK (issue 41). The full disk is simulated: SQLite's own error and ENOSPC."""
import errno
import sqlite3

import pytest

from real_jobs import config
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


def test_a_job_that_ends_on_a_full_disk_is_recorded_once_space_returns(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, 'RECORD_RETRY_FIRST_SEC', 0.05)
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    executor = Executor(cfg, store, 2, serve_all=False)
    real_record = Executor._write_record
    failures = {'store': 3, 'record': 2}
    full_store(monkeypatch, store, failures)

    def write_record(adir, record):
        if failures['record'] and 'finished' in record:     # the attempt's job.json at its end
            failures['record'] -= 1
            raise OSError(errno.ENOSPC, 'No space left on device')
        return real_record(adir, record)
    monkeypatch.setattr(Executor, '_write_record', staticmethod(write_record))
    try:
        job = executor.wait(executor.submit(parse_job({'name': 'full', 'nodes': ['localhost'], 'command': 'true'}, cfg)),
                            timeout=60)
    finally:
        executor.shutdown()
    assert job['status'] == 'succeeded' and failures == {'store': 0, 'record': 0}
    assert [a['status'] for a in job['attempt_list']] == ['succeeded']     # recorded once, not run again


def test_a_job_that_cannot_start_on_a_full_disk_is_recorded_and_retried_once_space_returns(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, 'RECORD_RETRY_FIRST_SEC', 0.05)
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    executor = Executor(cfg, store, 2, serve_all=False)
    real_record = Executor._write_record
    failures = {'start': 1, 'store': 2}
    full_store(monkeypatch, store, failures)

    def write_record(adir, record):
        if failures['start'] and 'finished' not in record:
            failures['start'] -= 1
            raise OSError(errno.ENOSPC, 'No space left on device')     # the attempt's job.json at its start
        return real_record(adir, record)
    monkeypatch.setattr(Executor, '_write_record', staticmethod(write_record))
    try:
        job = executor.wait(executor.submit(parse_job({'name': 'start-full', 'nodes': ['localhost'], 'command': 'true',
                                                       'retry_count': 1}, cfg)), timeout=60)
    finally:
        executor.shutdown()
    # the first attempt could not start (recorded once the store could write), the retry ran
    assert job['status'] == 'succeeded' and failures == {'start': 0, 'store': 0}
    assert [a['status'] for a in job['attempt_list']] == ['failed', 'succeeded']
