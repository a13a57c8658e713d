"""A batch's summary is written by a thread of its own, with real jobs: while it copies a task's gigabyte, the
scheduler goes on starting other jobs; a summary that fails (a full disk) is written again later; one that a
shutdown interrupts is written by the next scheduler, once."""
import errno
import os
import shutil
import threading
import time

from real_jobs import config, wait_for
from xuanwu import batch, runner
from xuanwu.runner import Executor
from xuanwu.spec import parse_batch, parse_job
from xuanwu.store import Store

GIB = 1024 ** 3


def _batch(cfg, tmp_path, *commands):
    return parse_batch({'output_dir': 'out', 'task_list': [
        {'task_id': 't%d' % i, 'params': {'command': command, 'nodes': ['localhost']}}
        for i, command in enumerate(commands)]}, cfg, base_dir=str(tmp_path))


def _final(store, batch_id, timeout=60.0):
    def final():
        found = store.get_batch(batch_id)
        return found if found['status'] in ('succeeded', 'failed', 'cancelled') else None
    return wait_for(final, timeout=timeout, what='batch %s to end' % batch_id)


def test_a_summary_copying_a_gigabyte_holds_no_other_job(tmp_path, monkeypatch):
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    executor = Executor(cfg, store, 4, serve_all=False)
    copying, spans = threading.Event(), []
    real_copy = batch.copy_attempt

    def timed_copy(*args, **kwargs):
        start = time.time()
        copying.set()
        try:
            return real_copy(*args, **kwargs)
        finally:
            spans.append((start, time.time()))
    monkeypatch.setattr(batch, 'copy_attempt', timed_copy)
    try:
        # real bytes, not a sparse file (whose copy may take no time): a gigabyte in the task's attempt folder
        batch_id = executor.submit_batch(_batch(cfg, tmp_path, 'head -c 1G /dev/zero > big'))
        assert copying.wait(60), 'the summary never began'
        submitted = time.time()
        other = executor.submit(parse_job({'name': 'other', 'nodes': ['localhost'], 'command': 'true'}, cfg))
        done = _final(store, batch_id)
        job = executor.wait(other, timeout=30)
        assert done['status'] == 'succeeded' and job['status'] == 'succeeded', (done, job)
        copied = tmp_path / 'out' / 't0' / 'attempt-1' / 'big'
        assert copied.stat().st_size == GIB and copied.stat().st_blocks * 512 >= GIB    # copied, and not sparse
        (copy_start, copy_end), = spans
        started = job['attempt_list'][0]['started']
        # the other job started while the gigabyte was being copied, at once: the scheduler was not held by the copy
        # (before, it started only once the copy had ended)
        print('copy %.3f s, the other job started %.3f s after its submission'
              % (copy_end - copy_start, started - submitted))
        assert started < copy_end
        assert started - submitted < (copy_end - copy_start) / 3
    finally:
        executor.shutdown()
        shutil.rmtree(cfg.data_dir / 'jobs', ignore_errors=True)     # the gigabyte and its copy, at once
        shutil.rmtree(tmp_path / 'out', ignore_errors=True)


def test_a_summary_that_cannot_be_written_is_written_again_later(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(runner, 'SUMMARY_RETRY_FIRST_SEC', 0.2, raising=False)
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    executor = Executor(cfg, store, 4, serve_all=False)
    failures = {'left': 2}
    real_copy = batch.copy_attempt

    def full_disk(*args, **kwargs):
        if failures['left']:
            failures['left'] -= 1
            raise OSError(errno.ENOSPC, 'No space left on device')
        return real_copy(*args, **kwargs)
    monkeypatch.setattr(batch, 'copy_attempt', full_disk)
    try:
        batch_id = executor.submit_batch(_batch(cfg, tmp_path, 'echo one', 'echo two'))
        done = _final(store, batch_id, timeout=30)
        # and the scheduler still runs jobs
        job = executor.run(parse_job({'name': 'after', 'nodes': ['localhost'], 'command': 'true'}, cfg))
    finally:
        executor.shutdown()
    assert done['status'] == 'succeeded' and failures == {'left': 0} and job['status'] == 'succeeded'
    assert (tmp_path / 'out' / 't1' / 'attempt-1' / 'stdout.txt').read_text() == 'two\n'
    err = capfd.readouterr().err
    assert ('xuanwu: the summary of batch %s could not be written ([Errno %d] No space left on device); trying again '
            'in 0.2 s' % (batch_id, errno.ENOSPC)) in err, err
    assert 'trying again in 0.4 s' in err and 'Traceback' not in err


def test_a_summary_interrupted_by_shutdown_is_written_by_the_next_scheduler(tmp_path, monkeypatch):
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    first = Executor(cfg, store, 4, serve_all=True)
    entered, release, calls = threading.Event(), threading.Event(), []
    real_copy = batch.copy_attempt

    def held(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 1:
            entered.set()
            release.wait(30)
        return real_copy(*args, **kwargs)
    monkeypatch.setattr(batch, 'copy_attempt', held)
    batch_id = first.submit_batch(_batch(cfg, tmp_path, 'echo one', 'echo two'))
    try:
        assert entered.wait(60), 'the summary never began'
        first.shutdown(wait=False)      # while it copies the first task's folder
        release.set()
    finally:
        release.set()
        first.shutdown()
    left = store.get_batch(batch_id)
    assert left['status'] == 'finishing' and left['owner'] == first.owner, left
    assert not (tmp_path / 'out' / 'summary.json').exists()
    second = Executor(cfg, store, 4, serve_all=True)
    try:
        second.recover()
        done = _final(store, batch_id, timeout=30)
    finally:
        second.shutdown()
    assert done['status'] == 'succeeded' and done['owner'] == second.owner
    assert [t['status'] for t in done['summary']['tasks']] == ['succeeded', 'succeeded']
    for task, text in (('t0', 'one\n'), ('t1', 'two\n')):
        assert (tmp_path / 'out' / task / 'attempt-1' / 'stdout.txt').read_text() == text
    assert os.path.isfile(tmp_path / 'out' / 'summary.json')
