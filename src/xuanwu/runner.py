"""Runs jobs: playbooks through ansible-runner, commands through Slurm, SSH or locally. Each attempt is
one process (``xuanwu._attempt``) in its own session, so that a timeout or a cancel kills its whole tree.

Layout of a job: ``<data_dir>/jobs/<job_id>/attempt-<n>/`` holds ``attempt.json`` (what runs),
``job.json`` (task id, nodes, timestamps, result, full error), ``output.log`` (the attempt process),
``exit.json`` (its result), ansible-runner's ``artifacts/<job_id>-<n>/`` (events, stdout, rc, status) and
``reports/`` (the run report of the collection's playbooks).
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

from . import FINAL_STATES, commands
from .config import Config
from .spec import JobSpec
from .store import Store

PERMANENT, TRANSIENT = 'permanent', 'transient'
# ansible-playbook's exit codes (TaskQueueManager): 2 a host failed (validate.yml's verdict), 4 a host was
# unreachable, 1 an error, 5 bad options, 99 interrupted, 250 unexpected. Only unreachable hosts are transient.
TRANSIENT_RC = {3, 4}
SRC = str(Path(__file__).resolve().parent.parent)
POLL = 0.1


def proc_start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, /proc/<pid>/stat field 22); None if gone."""
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii', errors='replace') as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rfind(')') + 2:].split()
    if fields and fields[0] == 'Z':
        return None
    return fields[19] if len(fields) > 19 else None


def alive(pid, start) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs (not a reused pid, not a zombie)."""
    return bool(pid) and start is not None and proc_start_time(int(pid)) == start


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(pgid: int, grace: float, proc=None) -> None:
    """SIGTERM the process group, then SIGKILL what is left after ``grace`` seconds. ``proc``: the group
    leader when it is our child, reaped while waiting (a zombie leader would keep the group alive)."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            proc.poll()
        if not group_alive(pgid):
            return
        time.sleep(POLL)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class _Attempt:
    """A running attempt: ours (``proc``) or one re-attached after a restart (``pid`` only)."""

    def __init__(self, job_id, n, adir, pid, start, proc=None, deadline=None, mode=None):
        self.job_id, self.n, self.adir, self.pid, self.start = job_id, n, Path(adir), pid, start
        self.proc, self.deadline, self.mode = proc, deadline, mode
        self.timed_out = False
        self.cancelled = False
        self.kill = threading.Event()

    def poll(self):
        if self.proc is not None:
            return self.proc.poll()
        return None if alive(self.pid, self.start) else -1


class Executor:
    def __init__(self, config: Config, store: Store, max_concurrency: int | None = None):
        self.config = config
        self.store = store
        self.max_concurrency = int(max_concurrency or config.max_concurrency)
        self._callbacks = []
        self._queue = queue.Queue()
        self._workers = []
        self._running = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watchers = []

    # events
    def on_event(self, callback: Callable[[str, dict], None]) -> None:
        """``callback(job_id, event)`` for every ansible-runner event and every state change."""
        self._callbacks.append(callback)

    def _emit(self, job_id: str, event: dict) -> None:
        for callback in list(self._callbacks):
            try:
                callback(job_id, event)
            except Exception:   # a broken listener must not stop the job
                traceback.print_exc()

    def _state(self, job_id: str, status: str, **extra) -> None:
        self._emit(job_id, dict(type='state', status=status, time=time.time(), **extra))

    # submission
    def _ensure_workers(self) -> None:
        with self._lock:
            while len(self._workers) < self.max_concurrency:
                worker = threading.Thread(target=self._work, name='xuanwu-worker-%d' % len(self._workers),
                                          daemon=True)
                worker.start()
                self._workers.append(worker)

    def submit(self, spec: JobSpec, batch_id=None, task_id=None, max_attempts: int = 1) -> str:
        """Queue ``spec``; returns its job id at once. ``max_attempts`` > 1 retries transient failures."""
        job_id = self.store.create_job(spec.to_dict(), spec.kind, spec.name, batch_id=batch_id, task_id=task_id,
                                       max_attempts=max(1, int(max_attempts)))
        self._state(job_id, 'queued')
        self._ensure_workers()
        self._queue.put(job_id)
        return job_id

    def run(self, spec: JobSpec) -> dict:
        """Run ``spec`` and wait for its end; returns the job record."""
        return self.wait(self.submit(spec))

    def wait(self, job_id: str, timeout: float | None = None) -> dict:
        """The job record once the job is final (and its last attempt recorded: a cancelled job's attempt is
        closed by its watcher a moment later), or as it is when ``timeout`` seconds passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.store.get_job(job_id)
            if job is None:
                return job
            if self.settled(job):
                return job
            if deadline is not None and time.monotonic() >= deadline:
                return job
            time.sleep(POLL * 2)

    def settled(self, job: dict) -> bool:
        """Whether ``job`` (a record with its attempt_list) is final and its last attempt recorded (its process
        tree gone), or final long enough that the attempt will not be recorded (its watcher is gone)."""
        if job['status'] not in FINAL_STATES:
            return False
        open_attempts = [a for a in job.get('attempt_list') or [] if a['finished'] is None]
        return not open_attempts or time.time() > job['finished'] + self.config.cancel_grace_sec + 5

    def shutdown(self, wait: bool = True) -> None:
        """Stop taking queued jobs; running attempts go on (a restarted executor re-attaches to them)."""
        self._stop.set()
        for stop in [None] * len(self._workers):     # one end mark per worker
            self._queue.put(stop)
        if wait:
            for worker in self._workers:
                worker.join()

    # cancel
    def cancel(self, job_id: str) -> bool:
        """Cancel a queued or running job (also one that another process runs); False if it is final/unknown."""
        job = self.store.get_job(job_id, with_attempts=False)
        if job is None or job['status'] in FINAL_STATES:
            return False
        if not self.store.finish_job(job_id, 'cancelled', reason='cancelled by request'):
            return False
        self._state(job_id, 'cancelled', reason='cancelled by request')
        with self._lock:
            att = self._running.get(job_id)
        if att is not None:
            att.cancelled = True
            att.kill.set()
            return True
        if job['status'] == 'running' and job.get('pgid') and alive(job.get('pid'), job.get('pid_start')):
            self._kill(job_id, job['kind'], int(job['pgid']), (job.get('info') or {}).get('mode'))
        return True

    def _kill(self, job_id: str, kind: str, pgid: int, mode, proc=None) -> None:
        if kind == 'command' and mode == 'slurm':
            commands.cancel_slurm(job_id)
        kill_group(pgid, self.config.cancel_grace_sec, proc)

    # workers
    def _work(self) -> None:
        while not self._stop.is_set():
            job_id = self._queue.get()
            if job_id is None:
                return
            try:
                self._execute(job_id)
            except Exception:   # a bug must not leave the job running forever: fail it with the stack
                error = traceback.format_exc()
                if self.store.finish_job(job_id, 'failed', reason='internal error of the executor',
                                         error_class=PERMANENT, error=error):
                    self._state(job_id, 'failed', reason='internal error of the executor')

    def backoff(self, n: int) -> float:
        """Seconds before attempt ``n`` (n >= 2): retry_backoff_sec * 2^(n-2)."""
        return self.config.retry_backoff_sec * (2 ** (n - 2))

    def _execute(self, job_id: str) -> None:
        job = self.store.get_job(job_id, with_attempts=False)
        if job is None or job['status'] in FINAL_STATES:
            return
        spec = JobSpec.from_dict(job['spec'])
        if not self.store.claim_job(job_id, started=job.get('started') or time.time()):
            return      # cancelled meanwhile, or another executor of the store took it
        self._state(job_id, 'running')
        result = None
        for n in range(int(job['attempts'] or 0) + 1, int(job['max_attempts']) + 1):
            if n > 1:
                delay = self.backoff(n)
                self._state(job_id, 'retrying', attempt=n, delay_sec=delay, previous=result)
                if self._sleep_unless_final(job_id, delay):
                    return
            if self.store.get_job(job_id, with_attempts=False)['status'] in FINAL_STATES:
                return
            result = self._attempt(job_id, n, spec, job)
            if result['status'] != 'failed' or result['error_class'] != TRANSIENT:
                break
        self._finish(job_id, result)

    def _sleep_unless_final(self, job_id: str, delay: float) -> bool:
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            if self.store.get_job(job_id, with_attempts=False)['status'] in FINAL_STATES:
                return True
            time.sleep(min(POLL * 2, max(0.0, deadline - time.monotonic())))
        return False

    def _finish(self, job_id: str, result: dict) -> None:
        if result['status'] == 'cancelled':
            return      # cancel() made the job final already
        fields = dict(rc=result['rc'], reason=result['reason'], error_class=result['error_class'],
                      error=result['error'])
        if self.store.finish_job(job_id, result['status'], **fields):
            self._state(job_id, result['status'], reason=result['reason'], error_class=result['error_class'])

    # one attempt
    def _attempt_params(self, job_id: str, n: int, spec: JobSpec, adir: Path) -> dict:
        params = {'kind': spec.kind, 'job_id': job_id, 'n': n, 'timeout_sec': spec.timeout_sec}
        if spec.kind == 'playbook':
            extravars = dict(spec.extra_vars)
            extravars.setdefault('xuanwu_reports_dir', str(adir / 'reports'))
            params.update(project_dir=str(self.config.project_root), playbook=spec.playbook_path,
                          inventory=spec.inventory, limit=spec.limit, ident='%s-%d' % (job_id, n),
                          extravars=extravars,
                          envvars=dict(spec.env, ANSIBLE_CONFIG=str(self.config.project_root / 'ansible.cfg')))
        else:
            params.update(command=spec.command, nodes=spec.nodes,
                          mode=commands.pick_mode(self.config.scheduler, spec.nodes),
                          ssh_config_file=self.config.ssh_config_file and str(self.config.ssh_config_file))
        return params

    def _attempt(self, job_id: str, n: int, spec: JobSpec, job: dict) -> dict:
        adir = Path(self.config.data_dir) / 'jobs' / job_id / ('attempt-%d' % n)
        adir.mkdir(parents=True, exist_ok=True)
        params = self._attempt_params(job_id, n, spec, adir)
        (adir / 'attempt.json').write_text(json.dumps(params, indent=2), encoding='utf-8')
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get('PYTHONPATH')])))
        if not shutil.which('ansible-playbook', path=env.get('PATH')):
            # the controller's ansible next to this Python (a venv that is not activated)
            env['PATH'] = os.pathsep.join(filter(None, [os.path.dirname(sys.executable), env.get('PATH')]))
        env.update(spec.env)
        started = time.time()
        self.store.add_attempt(job_id, n, artifact_dir=str(adir), started=started)
        record = {'job_id': job_id, 'name': spec.name, 'task_id': job.get('task_id'),
                  'batch_id': job.get('batch_id'), 'attempt': n, 'kind': spec.kind,
                  'nodes': spec.nodes if spec.kind == 'command' else {'inventory': spec.inventory,
                                                                      'limit': spec.limit},
                  'mode': params.get('mode'), 'started': started, 'timeout_sec': spec.timeout_sec,
                  'controller': os.uname().nodename}
        self._write_record(adir, record)
        with open(adir / 'output.log', 'ab') as log:
            proc = subprocess.Popen([sys.executable, '-m', 'xuanwu._attempt', str(adir)], stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(adir), env=env,
                                    start_new_session=True)
        start = proc_start_time(proc.pid)
        info = {'mode': params.get('mode'), 'attempt_dir': str(adir)}
        self.store.update_job(job_id, pid=proc.pid, pgid=proc.pid, pid_start=start, artifact_dir=str(adir),
                              attempts=n, info=info)
        att = _Attempt(job_id, n, adir, proc.pid, start, proc=proc, deadline=started + spec.timeout_sec,
                       mode=params.get('mode'))
        self._state(job_id, 'attempt_started', attempt=n, pid=proc.pid, artifact_dir=str(adir))
        return self._watch(att, spec, record)

    def _watch(self, att: _Attempt, spec: JobSpec, record: dict) -> dict:
        with self._lock:
            self._running[att.job_id] = att
        seen = set()
        rounds = 0
        try:
            while att.poll() is None:
                self._events(att, seen)
                rounds += 1
                if rounds % 10 == 1 and self._cancelled_elsewhere(att):
                    att.kill.set()  # a cancel that came before the process was recorded, or from elsewhere
                if att.kill.is_set():
                    break
                if att.deadline is not None and time.time() > att.deadline:
                    att.timed_out = True
                    break
                att.kill.wait(POLL)
            if att.timed_out or att.kill.is_set():
                self._kill(att.job_id, spec.kind, att.pid, att.mode, att.proc)
            elif att.proc is None:
                pass
            # whatever the attempt left in its group (a background child) goes with it
            try:
                os.killpg(att.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if att.proc is not None:
                att.proc.wait()
            self._events(att, seen)
        finally:
            with self._lock:
                self._running.pop(att.job_id, None)
        result = self._classify(att, spec)
        self.store.finish_attempt(att.job_id, att.n, result['rc'], result['status'], result['error_class'],
                                  result['error'])
        record.update(finished=time.time(), status=result['status'], rc=result['rc'],
                      error_class=result['error_class'], reason=result['reason'], error=result['error'],
                      report=result.get('report'), slurm_job_id=result.get('slurm_job_id'),
                      ran_on=result.get('ran_on'))
        self._write_record(att.adir, record)
        if result.get('report') or result.get('slurm_job_id') or result.get('ran_on'):
            job = self.store.get_job(att.job_id, with_attempts=False)
            info = dict(job.get('info') or {})
            info.update({k: result[k] for k in ('report', 'slurm_job_id', 'ran_on') if result.get(k)})
            self.store.update_job(att.job_id, info=info)
        self._state(att.job_id, 'attempt_finished', attempt=att.n, attempt_status=result['status'],
                    rc=result['rc'], error_class=result['error_class'])
        return result

    def _cancelled_elsewhere(self, att: _Attempt) -> bool:
        if self.store.get_job(att.job_id, with_attempts=False)['status'] == 'cancelled':
            att.cancelled = True
        return att.cancelled

    @staticmethod
    def _write_record(adir: Path, record: dict) -> None:
        tmp = adir / 'job.json.tmp'
        tmp.write_text(json.dumps(record, indent=2, default=str), encoding='utf-8')
        os.replace(tmp, adir / 'job.json')

    def _events(self, att: _Attempt, seen: set) -> None:
        folder = att.adir / 'artifacts' / ('%s-%d' % (att.job_id, att.n)) / 'job_events'
        try:
            names = os.listdir(folder)
        except OSError:
            return
        fresh = [nm for nm in names if nm.endswith('.json') and not nm.endswith('-partial.json') and nm not in seen]
        for name in sorted(fresh, key=lambda nm: int(nm.split('-', 1)[0]) if nm.split('-', 1)[0].isdigit() else 0):
            try:
                event = json.loads((folder / name).read_text(encoding='utf-8'))
            except (OSError, ValueError):
                continue    # still being written: read on the next round
            seen.add(name)
            self._emit(att.job_id, {'type': 'ansible', 'attempt': att.n, 'event': event.get('event'),
                                    'counter': event.get('counter'), 'stdout': event.get('stdout'),
                                    'host': (event.get('event_data') or {}).get('host'), 'data': event})

    def _classify(self, att: _Attempt, spec: JobSpec) -> dict:
        try:
            exit_info = json.loads((att.adir / 'exit.json').read_text(encoding='utf-8'))
        except (OSError, ValueError):
            exit_info = {}
        rc = exit_info.get('rc')
        if rc is None and att.proc is not None:
            rc = att.proc.returncode
        out = {'rc': rc, 'error': exit_info.get('error'), 'report': self._report(att.adir),
               'slurm_job_id': exit_info.get('slurm_job_id'), 'ran_on': exit_info.get('ran_on')}
        if self._cancelled_elsewhere(att):     # e.g. by xuanwu cancel in another process, which killed the group
            out.update(status='cancelled', error_class=None, reason='cancelled by request')
        elif att.timed_out:
            out.update(status='failed', error_class=TRANSIENT, reason='timed out after %d s' % spec.timeout_sec)
        elif rc == 0:
            out.update(status='succeeded', error_class=None, reason=None)
        elif not exit_info:
            out.update(status='failed', error_class=TRANSIENT,
                       reason='the attempt process ended without a result (rc %s: killed?)' % rc)
        elif spec.kind == 'command':
            transient = bool(exit_info.get('transient_hint'))
            hint = ' (node or connection failure)' if transient else ''
            out.update(status='failed', error_class=TRANSIENT if transient else PERMANENT,
                       reason='the command exited with %s%s' % (rc, hint))
            out['error'] = out['error'] or exit_info.get('stderr_tail')
        else:
            transient = rc in TRANSIENT_RC
            what = {2: 'a host failed', 4: 'a host was unreachable', 1: 'an error', 5: 'bad options',
                    250: 'an unexpected error'}.get(rc, 'an error')
            out.update(status='failed', error_class=TRANSIENT if transient else PERMANENT,
                       reason='ansible-playbook exited with %s (%s)' % (rc, what))
            out['error'] = out['error'] or self._stdout_tail(att)
        return out

    @staticmethod
    def _report(adir: Path):
        found = sorted((adir / 'reports').glob('*/report.json'))
        return str(found[-1].parent) if found else None

    @staticmethod
    def _stdout_tail(att: _Attempt):
        folder = att.adir / 'artifacts' / ('%s-%d' % (att.job_id, att.n))
        text = ''
        for name in ('stdout', 'stderr'):
            try:
                with open(folder / name, 'rb') as handle:
                    handle.seek(max(0, os.fstat(handle.fileno()).st_size - 8000))
                    text += handle.read().decode('utf-8', errors='replace')
            except OSError:
                pass
        return text or None

    # restart
    def recover(self) -> dict:
        """At start-up: re-attach to running jobs whose attempt process still runs, fail those whose process
        is gone (reading the result of those that ended meanwhile), re-queue the queued ones. Returns the job ids:
        {'reattached': [...], 'ended': [...], 'failed': [...], 'requeued': [...]}."""
        out = {'reattached': [], 'ended': [], 'failed': [], 'requeued': []}
        for job in self.store.list_jobs(status='running', limit=1000000):
            job_id = job['id']
            with self._lock:
                if job_id in self._running:
                    continue
            running = bool(job.get('pid')) and alive(job['pid'], job.get('pid_start'))
            ended = bool(job.get('artifact_dir')) and os.path.isfile(os.path.join(job['artifact_dir'], 'exit.json'))
            if running or ended:
                # still running: watch it to its end; ended while nobody watched: its exit.json is the result
                spec = JobSpec.from_dict(job['spec'])
                adir = Path(job['artifact_dir'])
                try:
                    record = json.loads((adir / 'job.json').read_text(encoding='utf-8'))
                except (OSError, ValueError):
                    record = {'job_id': job_id, 'attempt': job['attempts']}
                deadline = record.get('started', time.time()) + spec.timeout_sec
                att = _Attempt(job_id, int(job['attempts']), adir, int(job['pid']), job['pid_start'],
                               deadline=deadline, mode=(job.get('info') or {}).get('mode'))
                thread = threading.Thread(target=self._reattached, args=(att, spec, record, job), daemon=True)
                thread.start()
                self._watchers.append(thread)
                out['reattached' if running else 'ended'].append(job_id)
                self._state(job_id, 'reattached' if running else 'ended_unwatched', pid=job['pid'])
            else:
                reason = ('the service stopped while this job ran (pid %s gone); its artifacts: %s'
                          % (job.get('pid'), job.get('artifact_dir')))
                if self.store.finish_job(job_id, 'failed', reason=reason, error_class=TRANSIENT):
                    for attempt in self.store.list_attempts(job_id):
                        if attempt['finished'] is None:
                            self.store.finish_attempt(job_id, attempt['n'], None, 'failed', TRANSIENT, reason)
                    out['failed'].append(job_id)
                    self._state(job_id, 'failed', reason=reason)
        queued = self.store.list_jobs(status='queued', limit=1000000)
        if queued:
            self._ensure_workers()
        for job in reversed(queued):
            self._queue.put(job['id'])
            out['requeued'].append(job['id'])
        return out

    def _reattached(self, att: _Attempt, spec: JobSpec, record: dict, job: dict) -> None:
        result = self._watch(att, spec, record)
        if result['status'] == 'failed' and result['error_class'] == TRANSIENT \
                and int(job['attempts']) < int(job['max_attempts']):
            if self.store.requeue_job(att.job_id):
                self._queue.put(att.job_id)     # the remaining attempts run as usual
                self._ensure_workers()
            return
        self._finish(att.job_id, result)
