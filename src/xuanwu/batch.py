"""Batches: many jobs (tasks) with a concurrency limit, retries of transient failures, a timeout per task,
one log folder per task and a summary at the end.

``output_dir/<task_id>/`` holds ``job.json`` (task id, job id, nodes, timestamps, every attempt with its
error) and a copy of every attempt's folder (``attempt-<n>/``: the attempt's job.json, output.log,
ansible-runner's artifacts, stdout/stderr of commands); ``output_dir/summary.json`` lists every task.
"""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

from . import FINAL_STATES
from .spec import BatchSpec

POLL = 0.2


def _write_json(path: Path, data) -> None:
    tmp = path.with_name(path.name + '.tmp')
    tmp.write_text(json.dumps(data, indent=2, default=str), encoding='utf-8')
    os.replace(tmp, path)


def _collect(task, job: dict, folder: Path) -> dict:
    """Copy the job's attempt folders into the task's folder and write its job.json; the summary entry."""
    folder.mkdir(parents=True, exist_ok=True)
    attempts = job.get('attempt_list') or []
    for attempt in attempts:
        source = attempt.get('artifact_dir')
        if source and os.path.isdir(source):
            target = folder / ('attempt-%d' % attempt['n'])
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    last_error = next((a.get('error') for a in reversed(attempts) if a.get('error')), None)
    spec = job.get('spec') or {}
    entry = {
        'task_id': task.task_id, 'job_id': job['id'], 'status': job['status'], 'reason': job.get('reason'),
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
                  spec=spec)
    _write_json(folder / 'job.json', record)
    return entry


def run_batch(batch_spec: BatchSpec, executor, batch_id: str | None = None, cancel: threading.Event | None = None
              ) -> dict:
    """Run every task of ``batch_spec``, at most ``max_concurrency`` at once; blocks; returns the summary
    (also written to ``output_dir/summary.json``)."""
    store = executor.store
    out = Path(batch_spec.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if batch_id is None:
        batch_id = store.create_batch(batch_spec.to_dict(), batch_spec.name, output_dir=str(out))
    started = time.time()
    pending = list(batch_spec.tasks)
    running = {}
    entries = {}
    while pending or running:
        if cancel is not None and cancel.is_set():
            for job_id in running:
                executor.cancel(job_id)
            for task in pending:
                entries[task.task_id] = {'task_id': task.task_id, 'job_id': None, 'status': 'cancelled',
                                         'reason': 'the batch was cancelled before this task started',
                                         'error_class': None, 'attempts': 0, 'error': None}
            pending = []
        while pending and len(running) < batch_spec.max_concurrency:
            task = pending.pop(0)
            (out / task.task_id).mkdir(parents=True, exist_ok=True)
            job_id = executor.submit(task.job, batch_id=batch_id, task_id=task.task_id,
                                     max_attempts=batch_spec.retry_count + 1)
            running[job_id] = task
        time.sleep(POLL)
        for job_id in list(running):
            job = store.get_job(job_id)
            if executor.settled(job):
                task = running.pop(job_id)
                entries[task.task_id] = _collect(task, job, out / task.task_id)
    tasks = [entries[task.task_id] for task in batch_spec.tasks]
    counts = {state: sum(1 for t in tasks if t['status'] == state) for state in FINAL_STATES}
    status = 'succeeded' if counts['succeeded'] == len(tasks) else (
        'cancelled' if cancel is not None and cancel.is_set() else 'failed')
    summary = {'batch_id': batch_id, 'name': batch_spec.name, 'status': status, 'started': started,
               'finished': time.time(), 'output_dir': str(out), 'max_concurrency': batch_spec.max_concurrency,
               'retry_count': batch_spec.retry_count, 'timeout_sec': batch_spec.timeout_sec, 'counts': counts,
               'tasks': tasks}
    _write_json(out / 'summary.json', summary)
    store.update_batch(batch_id, status, summary)
    return summary


_CANCELS = {}


def start_batch(batch_spec: BatchSpec, executor) -> str:
    """Start ``run_batch`` in a thread (for the service); returns the batch id at once."""
    batch_id = executor.store.create_batch(batch_spec.to_dict(), batch_spec.name, output_dir=batch_spec.output_dir)
    cancel = threading.Event()
    _CANCELS[batch_id] = cancel

    def body():
        try:
            run_batch(batch_spec, executor, batch_id=batch_id, cancel=cancel)
        except Exception as exc:    # the batch record says so; the jobs keep their own states
            executor.store.update_batch(batch_id, 'failed', {'error': '%s: %s' % (type(exc).__name__, exc)})
        finally:
            _CANCELS.pop(batch_id, None)

    threading.Thread(target=body, name='xuanwu-batch-%s' % batch_id, daemon=True).start()
    return batch_id


def cancel_batch(batch_id: str) -> bool:
    """Cancel a batch started by ``start_batch`` in this process: no new task starts, running ones are cancelled."""
    event = _CANCELS.get(batch_id)
    if event is None:
        return False
    event.set()
    return True
