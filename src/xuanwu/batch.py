"""Batches: many jobs (tasks) with a concurrency limit, retries of transient failures, a timeout per task,
one log folder per task and a summary at the end.

A batch and all its tasks are stored at once (``Executor.submit_batch``); the scheduler of whichever
process serves the store (``xuanwu serve``, or ``xuanwu batch`` run again on the same file) runs them,
never more than the batch's ``max_concurrency`` at once, and writes the summary exactly once when the
last task is final (``write_summary``, in a thread of its own: copying gigabytes of task folders must not
hold the scheduler).

``output_dir/<task_id>/`` holds ``job.json`` (task id, job id, nodes, timestamps, every attempt with its
error) and a copy of every attempt's folder (``attempt-<n>/``: the attempt's job.json, output.log,
ansible-runner's artifacts, stdout/stderr of commands); ``output_dir/summary.json`` lists every task.
Everything there is for the service's user only (folders 0700, files 0600).
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import threading
import time
from pathlib import Path

from . import FINAL_STATES, _failpoint
from .secure import private_dir, redact_spec, write_private
from .spec import BatchSpec

POLL = 0.2


class Interrupted(Exception):
    """The scheduler writing a summary stops: the batch stays ``finishing`` and the next scheduler writes it (copying
    a folder again is harmless)."""


def _write_json(path: Path, data) -> None:
    write_private(path, json.dumps(data, indent=2, default=str))


def _kind(mode: int) -> str | None:
    """What a file that is not copied is (None: a regular file, a folder or a symbolic link, which are)."""
    for test, name in ((stat.S_ISFIFO, 'a FIFO'), (stat.S_ISSOCK, 'a Unix socket'), (stat.S_ISCHR, 'a character device'),
                       (stat.S_ISBLK, 'a block device')):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode) else 'a special file'


def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Interrupted('the scheduler stops')


def copy_attempt(source: str, target: Path, stop: threading.Event | None = None) -> list:
    """Copy an attempt's folder: regular files, folders and symbolic links (as links). A FIFO, a socket or a device
    that a task left there is not opened (reading a FIFO blocks until someone writes it: the batch would never end);
    each is named in the list returned (``path (kind)``), which job.json keeps. ``stop`` set: Interrupted before the
    next file."""
    skipped = []

    def copy(src, dst, **kwargs):
        _check(stop)    # not an OSError: copytree lets it through at once instead of collecting it
        return shutil.copy2(src, dst, **kwargs)

    def ignore(folder, names):
        left = []
        for name in names:
            path = os.path.join(folder, name)
            try:
                kind = _kind(os.lstat(path).st_mode)
            except OSError as err:
                kind = 'unreadable (%s)' % (err.strerror or err)
            if kind:
                left.append(name)
                skipped.append('%s (%s)' % (os.path.relpath(path, source), kind))
        return left

    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True, ignore=ignore, copy_function=copy)
    return skipped


def _collect(task_id: str, job: dict, folder: Path, stop: threading.Event | None = None) -> dict:
    """Copy the job's attempt folders into the task's folder and write its job.json; the summary entry."""
    private_dir(folder)
    attempts = job.get('attempt_list') or []
    not_copied = []
    for attempt in attempts:
        source = attempt.get('artifact_dir')
        if source and os.path.isdir(source):
            target = folder / ('attempt-%d' % attempt['n'])
            not_copied += ['attempt-%d/%s' % (attempt['n'], path) for path in copy_attempt(source, target, stop)]
    last_error = next((a.get('error') for a in reversed(attempts) if a.get('error')), None)
    spec = redact_spec(job.get('spec') or {})
    entry = {
        'task_id': task_id, 'job_id': job['id'], 'status': job['status'], 'reason': job.get('reason'),
        'error_class': job.get('error_class'), 'attempts': len(attempts), 'rc': job.get('rc'),
        'created': job.get('created'), 'started': job.get('started'), 'finished': job.get('finished'),
        'log_dir': str(folder), 'error': job.get('error') or last_error,
        'report': (job.get('info') or {}).get('report'),
    }
    record = dict(entry, kind=job.get('kind'), controller=os.uname().nodename,
                  nodes=spec.get('nodes') if job.get('kind') == 'command'
                  else {'inventory': spec.get('inventory'), 'limit': spec.get('limit')},
                  slurm_job_id=(job.get('info') or {}).get('slurm_job_id'),
                  attempt_list=[{k: a.get(k) for k in ('n', 'started', 'finished', 'rc', 'status', 'error_class',
                                                       'error')} for a in attempts],
                  spec=spec, not_copied=not_copied)
    _write_json(folder / 'job.json', record)
    return entry


def write_summary(store, batch_id: str, owner: str | None = None, stop: threading.Event | None = None) -> dict:
    """Collect every task of a batch whose jobs are all final, write ``summary.json`` and make the batch final.
    Called by the one scheduler that claimed the batch's end (Store.claim_batch_end), ``owner``: the batch is made
    final only while it still is that scheduler's. ``stop`` set: Interrupted, the batch left ``finishing``."""
    batch = store.get_batch(batch_id)
    spec = batch['spec']
    out = private_dir(batch['output_dir'])
    jobs = {j['task_id']: store.get_job(j['id']) for j in batch['jobs']}
    tasks = []
    for task in spec['tasks']:
        job = jobs[task['task_id']]
        _check(stop)
        tasks.append(_collect(task['task_id'], job, out / task['task_id'], stop))
    counts = {state: sum(1 for t in tasks if t['status'] == state) for state in FINAL_STATES}
    cancel_requested = bool((batch.get('summary') or {}).get('cancel_requested'))
    status = 'succeeded' if counts['succeeded'] == len(tasks) else ('cancelled' if cancel_requested else 'failed')
    started = min((t['started'] for t in tasks if t.get('started')), default=batch['created'])
    summary = {'batch_id': batch_id, 'name': batch['name'], 'status': status, 'created': batch['created'],
               'started': started, 'finished': time.time(), 'output_dir': str(out),
               'max_concurrency': spec['max_concurrency'], 'retry_count': spec['retry_count'],
               'timeout_sec': spec['timeout_sec'], 'counts': counts, 'tasks': tasks}
    _check(stop)
    _failpoint.hit('summary')
    _write_json(out / 'summary.json', summary)
    store.update_batch(batch_id, status, summary, owner=owner)
    return summary


def run_batch(batch_spec: BatchSpec, executor, batch_id: str | None = None, cancel: threading.Event | None = None
              ) -> dict:
    """Run every task of ``batch_spec`` (or resume the stored batch ``batch_id``), at most ``max_concurrency``
    at once; blocks; returns the summary (also written to ``output_dir/summary.json``). ``cancel`` set: the
    batch is cancelled (no task starts any more, running ones are cancelled)."""
    store = executor.store
    if batch_id is None:
        batch_id = executor.submit_batch(batch_spec)
    else:
        executor.resume_batch(batch_id)
    cancelled = False
    while True:
        batch = store.get_batch(batch_id)
        if batch['status'] in FINAL_STATES:
            return batch['summary']
        if cancel is not None and cancel.is_set() and not cancelled:
            cancelled = True
            executor.cancel_batch(batch_id)
        time.sleep(POLL)
