"""Runs jobs: playbooks through ansible-runner, commands through Slurm, SSH or locally. Each attempt is
one process (``xuanwu._attempt``) in its own session and, where cgroup v2 allows it, its own cgroup, so
that a timeout or a cancel kills its whole tree (xuanwu.proctree).

The scheduler is durable: the queue, the limits, the batches and the retries live in the store. An
``Executor`` runs one scheduler thread that starts queued jobs while fewer than ``max_concurrency`` jobs
of the store run (whoever runs them; a batch also has its own limit), watches its attempts, and takes
over the jobs and batches of a scheduler process that died (``owner``: pid and start time): a job whose
attempt process still runs is watched again, any other has its whole tree stopped before it is
failed or retried. Every such move is one conditional UPDATE of the store, so exactly one process
makes it. A batch's summary (a copy of every task's folders) is written by a thread of its own, so that
the scheduler goes on starting, watching, timing out and cancelling the other jobs meanwhile.

Layout of a job: ``<data_dir>/jobs/<job_id>/attempt-<n>/`` holds ``attempt.json`` (what runs),
``job.json`` (task id, nodes, timestamps, result, full error), ``output.log`` (the attempt process),
``exit.json`` (its result), ansible-runner's ``env/extravars`` and ``artifacts/<job_id>-<n>/`` (events,
stdout, rc, status) and ``reports/`` (the run report of the collection's playbooks); all of it only for
the service's user (folders 0700, files 0600).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

from . import FINAL_STATES, _failpoint, commands, proctree
from .batch import write_summary
from .config import Config
from .secure import (job_environment, private_dir, private_tree, redact_helpers, redact_spec, redact_vars,
                     secret_vars, write_private)
from .spec import BatchSpec, JobSpec
from .store import BatchConflict, Store, disk_full, new_id

# A job's end that cannot be recorded because the disk is full is tried again, from this delay up to that one.
RECORD_RETRY_FIRST_SEC = 1.0
RECORD_RETRY_MAX_SEC = 30.0
# A batch summary that could not be written (a full disk, a folder it cannot read) is tried again, from this delay up to
# that one; the batch stays 'finishing' meanwhile.
SUMMARY_RETRY_FIRST_SEC = 2.0
SUMMARY_RETRY_MAX_SEC = 120.0


def free_bytes(path) -> int | None:
    """Bytes free for this user on the file system of ``path``; None when it cannot be read."""
    try:
        st = os.statvfs(str(path))
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def unwritten_result(adir: Path) -> str | None:
    """Why an attempt that ended left no exit.json, when it says so: it began to write it (exit.json.tmp is there)
    and could not finish, which is a full disk (or quota) in practice. None when there is no such sign."""
    if (adir / 'exit.json').exists() or not (adir / 'exit.json.tmp').exists():
        return None
    free = free_bytes(adir)
    state = ('the disk is full: %d bytes free there now' % free if free is not None and free < 1024 * 1024
             else 'the disk was full or over quota: %s bytes free there now' % free)
    return ('the attempt ended but could not write its result (%s); whether its work succeeded is unknown: '
            'look at %s' % (state, adir))


PERMANENT, TRANSIENT = 'permanent', 'transient'
SRC = str(Path(__file__).resolve().parent.parent)
POLL = 0.1
ADOPT_EVERY = 1.0
# Empty cgroups of attempts that no running job has are looked for this often (and when the scheduler recovers).
CGROUP_SWEEP_EVERY = 60.0
# An empty attempt cgroup of a job this store does not know (a service of another data dir in the same cgroup) is
# removed only this long after it was made: that service may be about to move its attempt into it.
FOREIGN_CGROUP_SEC = 600.0
SECRET_VARS = 'secret-vars.json'
# Schedulers of this process that run (their owner ids); a shut-down one is dead for the others.
_LIVE_OWNERS: set = set()


def proc_start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, /proc/<pid>/stat field 22); None if gone."""
    fields = proctree.stat_fields(pid)
    if fields is None:
        return None
    if fields and fields[0] == 'Z':
        return None
    return fields[19] if len(fields) > 19 else None


def alive(pid, start) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs (not a reused pid, not a zombie)."""
    return bool(pid) and start is not None and proc_start_time(int(pid)) == start


def owner_alive(owner: str | None) -> bool:
    """Whether the scheduler ``owner`` (``pid:start:nonce``) still runs."""
    if not owner:
        return False
    try:
        pid, start, dummy = owner.split(':', 2)
        pid = int(pid)
    except ValueError:
        return False
    if pid == os.getpid():
        return owner in _LIVE_OWNERS
    return alive(pid, start)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Attempt:
    """A running attempt: ours (``proc``) or one re-attached after its scheduler died (``pid`` only)."""

    def __init__(self, job: dict, spec: JobSpec, n: int, adir, pid, start, proc=None, deadline=None, mode=None,
                 record=None):
        self.job_id, self.spec, self.n, self.adir = job['id'], spec, n, Path(adir)
        self.batch_id, self.max_attempts = job.get('batch_id'), int(job.get('max_attempts') or 1)
        self.pid, self.start, self.proc, self.deadline, self.mode = pid, start, proc, deadline, mode
        self.mark, self.cgroup = job.get('mark') or '%s-%d' % (job['id'], n), job.get('cgroup')
        self.record = record or {'job_id': job['id'], 'attempt': n}
        self.timed_out = self.cancelled = self.unreachable = False
        self.stopping = None
        self.seen: set = set()
        self.secrets: list | None = None    # values of its secret extra_vars, masked in what is shown

    def poll(self):
        if self.proc is not None:
            return self.proc.poll()
        return None if alive(self.pid, self.start) else -1

    def reap(self):
        if self.proc is not None:
            self.proc.poll()


class Executor:
    def __init__(self, config: Config, store: Store, max_concurrency: int | None = None, serve_all: bool = True):
        """``serve_all``: run and take over every job of the store (the service); else only the jobs and
        batches this executor submitted or resumed (the command line)."""
        self.config = config
        self.store = store
        self.max_concurrency = int(max_concurrency or config.max_concurrency)
        self.serve_all = serve_all
        self.owner = '%d:%s:%s' % (os.getpid(), proc_start_time(os.getpid()), secrets.token_hex(4))
        _LIVE_OWNERS.add(self.owner)
        self._callbacks = []
        self._running: dict = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = None
        self._scope_jobs: set = set()
        self._scope_batches: set = set()
        self._last_adopt = 0.0
        self._last_batches = 0.0
        self._last_cgroups = 0.0
        self._summaries: dict = {}          # batch id: the thread writing its summary (one at a time)
        self._summary_retry: dict = {}      # batch id: (monotonic time of its next try, delay) after a failed one

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
    def _ensure_loop(self) -> None:
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._loop, name='xuanwu-scheduler', daemon=True)
                self._thread.start()
        self._wake.set()

    def _stored_spec(self, job_id: str, spec: JobSpec) -> dict:
        """The spec as the store keeps it: secret-looking extra_vars go to a 0600 file of the job's folder,
        the store holds them masked."""
        data = spec.to_dict()
        hidden = secret_vars(spec.extra_vars)
        if hidden:
            folder = private_dir(Path(self.config.data_dir) / 'jobs' / job_id)
            private_dir(Path(self.config.data_dir) / 'jobs')
            write_private(folder / SECRET_VARS, json.dumps(hidden))
            data['extra_vars'] = redact_vars(spec.extra_vars)
        return data

    def submit(self, spec: JobSpec, batch_id=None, task_id=None, max_attempts: int | None = None) -> str:
        """Queue ``spec``; returns its job id at once. ``max_attempts`` (default: the spec's retry_count + 1)
        > 1 retries transient failures."""
        if max_attempts is None:
            max_attempts = int(getattr(spec, 'retry_count', 0) or 0) + 1
        job_id = new_id('j')
        _failpoint.hit('submit')
        self.store.create_job(self._stored_spec(job_id, spec), spec.kind, spec.name, batch_id=batch_id,
                              task_id=task_id, max_attempts=max(1, int(max_attempts)), job_id=job_id)
        self._scope_jobs.add(job_id)
        self._state(job_id, 'queued')
        self._ensure_loop()
        return job_id

    def submit_batch(self, batch_spec: BatchSpec) -> str:
        """Store a batch and all its tasks as queued jobs (one transaction); its id. The scheduler runs them."""
        out = private_dir(batch_spec.output_dir)
        busy = self.store.find_open_batch(str(out))
        if busy is not None:     # before a task folder is made; create_batch checks again in its transaction
            raise BatchConflict(out, busy['id'], busy['status'])
        jobs = []
        for task in batch_spec.tasks:
            job_id = new_id('j')
            private_dir(out / task.task_id)
            jobs.append({'job_id': job_id, 'kind': task.job.kind, 'name': task.job.name,
                         'spec': self._stored_spec(job_id, task.job), 'task_id': task.task_id,
                         'max_attempts': batch_spec.retry_count + 1})
        stored = batch_spec.to_dict()
        stored['tasks'] = [{'task_id': t.task_id, 'job': redact_spec(t.job.to_dict())} for t in batch_spec.tasks]
        batch_id = self.store.create_batch(stored, batch_spec.name, output_dir=str(out),
                                           max_concurrency=batch_spec.max_concurrency, jobs=jobs)
        self._scope_batches.add(batch_id)
        self._ensure_loop()
        return batch_id

    def resume_batch(self, batch_id: str) -> None:
        """Take up an unfinished batch (the command line run again on its file)."""
        self._scope_batches.add(batch_id)
        self._last_adopt = 0.0
        self._ensure_loop()

    def run(self, spec: JobSpec) -> dict:
        """Run ``spec`` and wait for its end; returns the job record."""
        return self.wait(self.submit(spec))

    def wait(self, job_id: str, timeout: float | None = None) -> dict:
        """The job record once the job is final (and its last attempt recorded), or as it is when ``timeout``
        seconds passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.store.get_job(job_id)
            if job is None or self.settled(job):
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
        """Stop the scheduler; running attempts go on (the next scheduler on the store takes them over)."""
        self._stop.set()
        self._wake.set()
        _LIVE_OWNERS.discard(self.owner)
        if wait and self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(30)
        if wait:
            # a summary being written stops before its next file; its batch stays 'finishing' under this scheduler,
            # which is dead now: the next one writes it
            with self._lock:
                writers = list(self._summaries.values())
            deadline = time.monotonic() + 30
            for thread in writers:
                thread.join(max(0.0, deadline - time.monotonic()))

    def running_count(self) -> int:
        with self._lock:
            return len(self._running)

    # cancel
    def cancel(self, job_id: str, reason: str = 'cancelled by request') -> bool:
        """Cancel a queued or running job (also one that another process runs, or ran before it died); False
        if it is final or unknown, or it turns out to have ended already (its result is recorded then)."""
        job = self.store.get_job(job_id, with_attempts=False)
        if job is None or job['status'] in FINAL_STATES:
            return False
        orphan = job['status'] == 'running' and job.get('owner') != self.owner and not owner_alive(job.get('owner'))
        if orphan and self._settle_ended_orphan(job):
            return False
        if not self.store.finish_job(job_id, 'cancelled', reason=reason):
            return False
        _failpoint.hit('cancel')
        self._state(job_id, 'cancelled', reason=reason)
        self._wake.set()
        if orphan:
            # nobody watches it: stop its tree here, and close its attempt
            self._stop_tree(job, self.config.cancel_grace_sec)
            self.store.finish_attempt(job_id, int(job['attempts'] or 0), None, 'cancelled', None, reason)
        return True

    def _settle_ended_orphan(self, job: dict) -> bool:
        """A running job whose scheduler died and whose attempt ended meanwhile: record the result (when it is
        final: succeeded, or failed with no retry left or permanently). True when the job is final now."""
        adir = self._adir(job['id'], int(job['attempts'] or 0))
        if not (adir / 'exit.json').is_file():
            return False
        deadline = time.monotonic() + 5     # it wrote its result and is exiting
        while alive(job.get('pid'), job.get('pid_start')) and time.monotonic() < deadline:
            time.sleep(POLL)
        if not self.store.adopt_job(job['id'], job.get('owner'), self.owner):
            return True     # another process took it over
        att = self._attempt_of(job)
        self._stop_and_finish(att, 0)
        current = self.store.get_job(job['id'], with_attempts=False)
        return current['status'] in FINAL_STATES

    def cancel_batch(self, batch_id: str, reason: str = 'the batch was cancelled') -> bool:
        """No task of the batch starts any more, running ones are cancelled (their trees killed); False if the
        batch is unknown or final."""
        batch = self.store.get_batch(batch_id)
        if batch is None or batch['status'] not in ('running', 'cancelling'):
            return False
        self.store.mark_batch_cancelled(batch_id)
        for job_id in self.store.cancel_queued(batch_id, reason + ' before this task started'):
            self._state(job_id, 'cancelled', reason=reason)
        for job in self.store.list_jobs(status='running', batch_id=batch_id, limit=1000000):
            self.cancel(job['id'], reason=reason)
        self._wake.set()
        return True

    # the scheduler
    def _in_scope(self, job: dict) -> bool:
        return self.serve_all or job['id'] in self._scope_jobs or job.get('batch_id') in self._scope_batches

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._tick()
            except Exception:   # the scheduler goes on; the store holds the truth
                traceback.print_exc()
            self._wake.wait(POLL)
            self._wake.clear()

    def _tick(self) -> None:
        now = time.monotonic()
        self._watch_all()
        if now - self._last_adopt >= ADOPT_EVERY:
            self._last_adopt = now
            self._adopt_orphans({'reattached': [], 'ended': [], 'failed': [], 'requeued': []})
        if now - self._last_cgroups >= CGROUP_SWEEP_EVERY:
            self._last_cgroups = now
            self.remove_stale_cgroups()
        self._start_queued()
        if now - self._last_batches >= 0.3:
            self._last_batches = now
            self._end_batches()

    def _start_queued(self) -> None:
        if self.serve_all:
            filters = [{}]
        else:
            filters = [{'job_id': j} for j in list(self._scope_jobs)] + \
                      [{'batch_id': b} for b in list(self._scope_batches)]
        for where in filters:
            while not self._stop.is_set():
                job = self.store.claim_next(self.owner, self.max_concurrency, **where)
                if job is None:
                    break
                self._state(job['id'], 'running', attempt=job['attempts'])
                try:
                    _failpoint.hit('start')
                    self._launch(job)
                except Exception:   # the attempt could not start: a transient failure of the launcher
                    self._launch_failed(job, traceback.format_exc())

    def _launch_failed(self, job: dict, error: str) -> None:
        n = int(job['attempts'])
        proctree.kill_tree(None, job['mark'], None, 0)     # whatever did start of it
        with self._lock:
            self._running.pop(job['id'], None)
        reason = 'the attempt could not be started: %s' % error.strip().splitlines()[-1]

        def record():
            self.store.add_attempt_if_missing(job['id'], n, str(self._adir(job['id'], n)))
            self.store.finish_attempt(job['id'], n, None, 'failed', TRANSIENT, error)
            self._after_attempt(job['id'], n, int(job['max_attempts']),
                                {'status': 'failed', 'error_class': TRANSIENT, 'reason': reason, 'rc': None,
                                 'error': error})
        try:
            record()
        except (sqlite3.OperationalError, OSError) as err:
            if not disk_full(err):
                raise
            # a full disk (the launch failed for it too): recorded once space returns, by a thread of its own, so
            # that the scheduler goes on watching the other jobs meanwhile
            threading.Thread(target=self._until_written, args=(record, job['id']), daemon=True,
                             name='xuanwu-record-%s' % job['id']).start()

    def _adir(self, job_id: str, n: int) -> Path:
        return Path(self.config.data_dir) / 'jobs' / job_id / ('attempt-%d' % n)

    def backoff(self, n: int) -> float:
        """Seconds before attempt ``n`` (n >= 2): retry_backoff_sec * 2^(n-2)."""
        return self.config.retry_backoff_sec * (2 ** (n - 2))

    # one attempt
    def _attempt_params(self, job_id: str, n: int, spec: JobSpec, adir: Path) -> dict:
        params = {'kind': spec.kind, 'job_id': job_id, 'n': n, 'timeout_sec': spec.timeout_sec}
        if spec.kind == 'playbook':
            extravars = dict(spec.extra_vars)
            extravars.setdefault('xuanwu_reports_dir', str(adir / 'reports'))
            # the run record (validate.yml's launch kit, a rollout's record) with the attempt too
            extravars.setdefault('xuanwu_runs_dir', str(adir / 'runs'))
            hidden = Path(self.config.data_dir) / 'jobs' / job_id / SECRET_VARS
            # the secret values stay in their own file; the attempt merges them into env/extravars
            params.update(project_dir=str(self.config.project_root), playbook=spec.playbook_path,
                          inventory=spec.inventory, limit=spec.limit, ident='%s-%d' % (job_id, n),
                          extravars=extravars, secret_vars_file=str(hidden) if hidden.is_file() else None)
        else:
            params.update(command=spec.command, argv=spec.argv, nodes=spec.nodes, cwd=spec.cwd,
                          mode=commands.pick_mode(self.config.scheduler, spec.nodes),
                          ssh_config_file=self.config.ssh_config_file and str(self.config.ssh_config_file))
        return params

    def _launch(self, job: dict) -> None:
        job_id, n = job['id'], int(job['attempts'])
        spec = JobSpec.from_dict(job['spec'])
        adir = self._adir(job_id, n)
        private_dir(adir.parent.parent)
        private_dir(adir.parent)
        private_dir(adir)
        params = self._attempt_params(job_id, n, spec, adir)
        cgroup = proctree.make_cgroup('xuanwu-%s' % job['mark'])
        try:
            self._start_attempt(job, spec, n, adir, params, cgroup)
        except BaseException:
            proctree.remove_cgroup(cgroup)
            raise

    def _start_attempt(self, job: dict, spec: JobSpec, n: int, adir: Path, params: dict, cgroup) -> None:
        job_id = job['id']
        params['cgroup'] = cgroup
        write_private(adir / 'attempt.json', json.dumps(params, indent=2))
        extra = {'PYTHONPATH': os.pathsep.join(filter(None, [SRC, os.environ.get('PYTHONPATH')])),
                 proctree.MARK_ENV: job['mark']}
        if spec.kind == 'playbook':
            # a checkout's ansible.cfg; an installed collection has none: Ansible's own search for a configuration
            # applies, and ansible-playbook finds the collection where this process did (xuanwu.collection)
            ansible_cfg = self.config.project_root / 'ansible.cfg'
            if ansible_cfg.is_file():
                extra['ANSIBLE_CONFIG'] = str(ansible_cfg)
            elif os.environ.get('ANSIBLE_COLLECTIONS_PATH'):
                extra['ANSIBLE_COLLECTIONS_PATH'] = os.environ['ANSIBLE_COLLECTIONS_PATH']
        env = job_environment(spec.env, extra)
        if not shutil.which('ansible-playbook', path=env.get('PATH')):
            # the controller's ansible next to this Python (a venv that is not activated)
            env['PATH'] = os.pathsep.join(filter(None, [os.path.dirname(sys.executable), env.get('PATH')]))
        started = time.time()
        self.store.add_attempt_if_missing(job_id, n, str(adir), started)
        record = {'job_id': job_id, 'name': spec.name, 'task_id': job.get('task_id'),
                  'batch_id': job.get('batch_id'), 'attempt': n, 'kind': spec.kind,
                  'nodes': spec.nodes if spec.kind == 'command' else {'inventory': spec.inventory,
                                                                      'limit': spec.limit},
                  'mode': params.get('mode'), 'started': started, 'timeout_sec': spec.timeout_sec,
                  'controller': os.uname().nodename}
        self._write_record(adir, record)
        log = os.open(str(adir / 'output.log'), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            proc = subprocess.Popen([sys.executable, '-m', 'xuanwu._attempt', str(adir)], stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(adir), env=env,
                                    start_new_session=True)
        finally:
            os.close(log)
        start = proc_start_time(proc.pid)
        _failpoint.hit('launch')
        info = {'mode': params.get('mode'), 'attempt_dir': str(adir)}
        self.store.update_job(job_id, pid=proc.pid, pgid=proc.pid, pid_start=start, artifact_dir=str(adir),
                              info=info, cgroup=cgroup)
        job = dict(job, cgroup=cgroup)
        att = _Attempt(job, spec, n, adir, proc.pid, start, proc=proc, deadline=started + spec.timeout_sec,
                       mode=params.get('mode'), record=record)
        with self._lock:
            self._running[job_id] = att
        self._state(job_id, 'attempt_started', attempt=n, pid=proc.pid, artifact_dir=str(adir))

    def _watch_all(self) -> None:
        with self._lock:
            attempts = [a for a in self._running.values() if a.stopping is None]
        for att in attempts:
            self._events(att)
            _failpoint.hit('running')
            job = self.store.get_job(att.job_id, with_attempts=False)
            if job is None or job['status'] in FINAL_STATES:
                att.cancelled = job is None or job['status'] == 'cancelled'
                self._begin_stop(att, self.config.cancel_grace_sec)
            elif att.poll() is not None:
                self._begin_stop(att, 0)
            elif att.deadline is not None and time.time() > att.deadline:
                att.timed_out = True
                self._begin_stop(att, self.config.cancel_grace_sec)

    def _begin_stop(self, att: _Attempt, grace: float) -> None:
        att.stopping = threading.Thread(target=self._stop_and_finish, args=(att, grace),
                                        name='xuanwu-stop-%s' % att.job_id, daemon=True)
        att.stopping.start()

    def _stop_tree(self, job: dict, grace: float, proc=None) -> None:
        if job.get('kind') == 'command' and (job.get('info') or {}).get('mode') == 'slurm':
            commands.cancel_slurm(job['id'])
        n = int(job.get('attempts') or 0)
        proctree.kill_tree(job.get('pgid'), job.get('mark') or '%s-%d' % (job['id'], n), job.get('cgroup'), grace,
                           reap=proc.poll if proc is not None else None)
        proctree.remove_cgroup(job.get('cgroup'))
        if n:
            private_tree(self._adir(job['id'], n))

    def _stop_and_finish(self, att: _Attempt, grace: float) -> None:
        """Stop what is left of the attempt's tree (everything, when it timed out or was cancelled; background
        children when it ended), record the attempt, then retry it or finish the job."""
        try:
            if (att.timed_out or att.cancelled) and att.spec.kind == 'command' and att.mode == 'slurm':
                commands.cancel_slurm(att.job_id)
            proctree.kill_tree(att.pid, att.mark, att.cgroup, grace, reap=att.reap)
            proctree.remove_cgroup(att.cgroup)
            if att.proc is not None:
                att.proc.wait()
            private_tree(att.adir)      # what the attempt made with an explicit mode (its umask is 077) is private too
            self._events(att)
            result = self._classify(att)
            self._until_written(lambda: self._record_end(att, result), att.job_id)
        except Exception:   # a bug must not leave the job running forever: fail it with the stack
            error = traceback.format_exc()
            if self.store.finish_job(att.job_id, 'failed', reason='internal error of the executor',
                                     error_class=PERMANENT, error=error):
                self._state(att.job_id, 'failed', reason='internal error of the executor')
        finally:
            with self._lock:
                self._running.pop(att.job_id, None)
            self._wake.set()

    def _until_written(self, write: Callable[[], None], job_id: str) -> None:
        """``write()``, again and again while the disk is full (the store or a record cannot be written): the job's end
        is recorded once space returns, never lost and never left running. Other errors are raised."""
        delay = RECORD_RETRY_FIRST_SEC
        while True:
            try:
                write()
                return
            except (sqlite3.OperationalError, OSError) as err:
                if not disk_full(err) or self._stop.is_set():
                    raise
                sys.stderr.write('xuanwu: job %s ended but cannot be recorded (%s); trying again in %g s\n'
                                 % (job_id, err, delay))
                time.sleep(delay)
                delay = min(delay * 2, RECORD_RETRY_MAX_SEC)

    def _record_end(self, att: _Attempt, result: dict) -> None:
        """Record an attempt's end in the store and its job.json, then retry it or finish the job; every step may be
        done again (after a full disk) without effect."""
        _failpoint.hit('finish')
        self.store.finish_attempt(att.job_id, att.n, result['rc'], result['status'], result['error_class'],
                                  result['error'])
        att.record.update(finished=time.time(), status=result['status'], rc=result['rc'],
                          error_class=result['error_class'], reason=result['reason'], error=result['error'],
                          report=result.get('report'), slurm_job_id=result.get('slurm_job_id'),
                          ran_on=result.get('ran_on'))
        self._write_record(att.adir, att.record)
        if result.get('report') or result.get('slurm_job_id') or result.get('ran_on'):
            job = self.store.get_job(att.job_id, with_attempts=False)
            info = dict(job.get('info') or {})
            info.update({k: result[k] for k in ('report', 'slurm_job_id', 'ran_on') if result.get(k)})
            self.store.update_job(att.job_id, info=info)
        self._state(att.job_id, 'attempt_finished', attempt=att.n, attempt_status=result['status'],
                    rc=result['rc'], error_class=result['error_class'])
        _failpoint.hit('settle')
        self._after_attempt(att.job_id, att.n, att.max_attempts, result)

    def _after_attempt(self, job_id: str, n: int, max_attempts: int, result: dict) -> None:
        if result['status'] == 'cancelled':
            return      # cancel() made the job final already
        if result['status'] == 'failed' and result['error_class'] == TRANSIENT and n < max_attempts:
            delay = self.backoff(n + 1)
            if self.store.retry_later(job_id, self.owner, time.time() + delay):
                self._state(job_id, 'retrying', attempt=n + 1, delay_sec=delay,
                            previous={k: result.get(k) for k in ('rc', 'reason', 'error_class')})
                return
        fields = dict(rc=result['rc'], reason=result['reason'], error_class=result['error_class'],
                      error=result['error'])
        if self.store.finish_job(job_id, result['status'], **fields):
            self._state(job_id, result['status'], reason=result['reason'], error_class=result['error_class'])

    @staticmethod
    def _write_record(adir: Path, record: dict) -> None:
        shown = dict(record)
        if isinstance(shown.get('spec'), dict):
            shown['spec'] = redact_spec(shown['spec'])
        write_private(adir / 'job.json', json.dumps(shown, indent=2, default=str))

    def _events(self, att: _Attempt) -> None:
        folder = att.adir / 'artifacts' / ('%s-%d' % (att.job_id, att.n)) / 'job_events'
        try:
            names = os.listdir(folder)
        except OSError:
            return
        fresh = [nm for nm in names if nm.endswith('.json') and not nm.endswith('-partial.json')
                 and nm not in att.seen]
        for name in sorted(fresh, key=lambda nm: int(nm.split('-', 1)[0]) if nm.split('-', 1)[0].isdigit() else 0):
            try:
                event = json.loads((folder / name).read_text(encoding='utf-8'))
            except (OSError, ValueError):
                continue    # still being written: read on the next round
            att.seen.add(name)
            if event.get('event') == 'runner_on_unreachable':
                att.unreachable = True
            event = redact_helpers.redact(event, self._secrets(att))
            self._emit(att.job_id, {'type': 'ansible', 'attempt': att.n, 'event': event.get('event'),
                                    'counter': event.get('counter'), 'stdout': event.get('stdout'),
                                    'host': (event.get('event_data') or {}).get('host'), 'data': event})

    def _secrets(self, att: _Attempt) -> list:
        """The values of the job's secret extra_vars (kept in its 0600 secret-vars.json)."""
        if att.secrets is None:
            path = Path(self.config.data_dir) / 'jobs' / att.job_id / SECRET_VARS
            try:
                values = json.loads(path.read_text(encoding='utf-8')).values()
            except (OSError, ValueError):
                values = ()
            att.secrets = [json.dumps(v) if not isinstance(v, str) else v for v in values if v not in (None, '')]
        return att.secrets

    def _classify(self, att: _Attempt) -> dict:
        spec = att.spec
        try:
            exit_info = json.loads((att.adir / 'exit.json').read_text(encoding='utf-8'))
        except (OSError, ValueError):
            exit_info = {}
        rc = exit_info.get('rc')
        if rc is None and att.proc is not None:
            rc = att.proc.returncode
        out = {'rc': rc, 'error': exit_info.get('error'), 'report': self._report(att.adir),
               'slurm_job_id': exit_info.get('slurm_job_id'), 'ran_on': exit_info.get('ran_on')}
        job = self.store.get_job(att.job_id, with_attempts=False)
        if att.cancelled or (job is not None and job['status'] == 'cancelled'):
            out.update(status='cancelled', error_class=None, reason='cancelled by request')
        elif att.timed_out:
            # the job's own time ran out: permanent, unless the job says a timeout is worth a retry
            if spec.retry_on_timeout:
                out.update(status='failed', error_class=TRANSIENT,
                           reason='timed out after %d s (retry_on_timeout)' % spec.timeout_sec)
            else:
                out.update(status='failed', error_class=PERMANENT, reason='timed out after %d s' % spec.timeout_sec)
        elif rc == 0:
            out.update(status='succeeded', error_class=None, reason=None)
        elif not exit_info:
            out.update(status='failed', error_class=TRANSIENT,
                       reason=unwritten_result(att.adir) or
                       'the attempt process ended without a result (rc %s: killed?)' % rc)
        elif exit_info.get('launch_error'):
            what = 'command' if spec.kind == 'command' else 'playbook run'
            out.update(status='failed', error_class=TRANSIENT, reason='the attempt could not start its %s' % what)
        elif spec.kind == 'command':
            out.update(commands.classify(exit_info, spec.retry_on_exit_codes))
            out['error'] = out['error'] or exit_info.get('stderr_tail')
        else:
            out.update(classify_playbook(rc, att.unreachable))
            out['error'] = out['error'] or self._stdout_tail(att)
        if out['error']:    # what the store keeps and the API shows: no secret value, no URL password
            out['error'] = redact_helpers.redact_text(out['error'], self._secrets(att))
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

    # taking over
    def _attempt_of(self, job: dict) -> _Attempt:
        n = int(job['attempts'] or 0)
        adir = self._adir(job['id'], n)
        spec = JobSpec.from_dict(job['spec'])
        try:
            record = json.loads((adir / 'job.json').read_text(encoding='utf-8'))
        except (OSError, ValueError):
            record = {'job_id': job['id'], 'attempt': n}
        started = record.get('started') or job.get('started') or time.time()
        return _Attempt(job, spec, n, adir, job.get('pid'), job.get('pid_start'), deadline=started + spec.timeout_sec,
                        mode=(job.get('info') or {}).get('mode'), record=record)

    def recover(self) -> dict:
        """Take over at once the running jobs whose scheduler died (re-attach those whose attempt process still
        runs, read the result of those that ended meanwhile, stop the tree of any other and fail or retry it)
        and start the scheduler for the queued ones. Returns the job ids: {'reattached': [...], 'ended': [...],
        'failed': [...], 'requeued': [...]} ('requeued': queued jobs, and failed ones with attempts left)."""
        out = {'reattached': [], 'ended': [], 'failed': [], 'requeued': []}
        self._adopt_orphans(out)
        self.remove_stale_cgroups()
        self._last_cgroups = time.monotonic()
        out['requeued'] += [j['id'] for j in self.store.list_jobs(status='queued', limit=1000000)
                            if self._in_scope(j) and j['id'] not in out['requeued']]
        self._last_adopt = time.monotonic()
        self._ensure_loop()
        return out

    def remove_stale_cgroups(self) -> list:
        """Remove the empty attempt cgroups (``xuanwu-<job id>-<n>`` in this process's cgroup) that no running job of
        the store has: one a scheduler made and was killed before it recorded it stays empty for ever otherwise. One of
        a job the store does not know (another store's) goes only FOREIGN_CGROUP_SEC after it was made; a cgroup with
        a process or a child cgroup, or of another name, is never touched. Returns the folders removed."""
        # listed before the store is read: a cgroup is made after its job is claimed (running, with its mark), so
        # one listed here whose job is about to start is a running job's below
        found = proctree.attempt_cgroups()
        if not found:
            return []
        running = {job.get('mark') for job in self.store.list_jobs(status='running', limit=1000000)}
        stale = [folder for folder, job_id, mark, age in found if mark not in running and
                 (age > FOREIGN_CGROUP_SEC or self.store.get_job(job_id, with_attempts=False) is not None)]
        removed = proctree.remove_empty_cgroups(stale)
        if removed:
            sys.stderr.write('xuanwu: removed %d empty cgroup(s) of attempts no running job has: %s\n'
                             % (len(removed), ', '.join(os.path.basename(f) for f in removed)))
        return removed

    def _adopt_orphans(self, out: dict) -> None:
        for job in self.store.list_jobs(status='running', limit=1000000):
            if job.get('owner') == self.owner or owner_alive(job.get('owner')) or not self._in_scope(job):
                continue
            with self._lock:
                if job['id'] in self._running:
                    continue
            if not self.store.adopt_job(job['id'], job.get('owner'), self.owner):
                continue    # another process took it over first
            self._adopt(job, out)
        for job in self.store.final_with_open_attempt():
            # cancelled (or failed) in the store by a scheduler that died before it stopped the attempt's tree
            if job.get('owner') == self.owner or owner_alive(job.get('owner')) or not self._in_scope(job):
                continue
            with self._lock:
                if job['id'] in self._running:
                    continue
            if int(job['open_attempt']) != int(job['attempts'] or 0) or \
                    not self.store.adopt_final_job(job['id'], job.get('owner'), self.owner):
                continue
            att = self._attempt_of(job)
            att.cancelled = job['status'] == 'cancelled'
            with self._lock:
                self._running[job['id']] = att
            out['ended'].append(job['id'])
            self._state(job['id'], 'ended_unwatched', pid=job.get('pid'))
            self._begin_stop(att, self.config.cancel_grace_sec)

    def _adopt(self, job: dict, out: dict) -> None:
        job_id = job['id']
        att = self._attempt_of(job)
        if alive(job.get('pid'), job.get('pid_start')):
            with self._lock:
                self._running[job_id] = att
            out['reattached'].append(job_id)
            self._state(job_id, 'reattached', pid=job['pid'])
            return
        if (att.adir / 'exit.json').is_file():
            with self._lock:
                self._running[job_id] = att
            out['ended'].append(job_id)
            self._state(job_id, 'ended_unwatched', pid=job.get('pid'))
            self._begin_stop(att, 0)    # its background children go; its exit.json is the result
            return
        if job.get('pid') is None and not (att.adir / 'output.log').exists():
            # claimed by a scheduler that died before it started the attempt's process: nothing ran, nothing counts
            if self.store.unclaim(job_id, self.owner):
                out['requeued'].append(job_id)
                self._state(job_id, 'queued', reason='its scheduler stopped before the attempt started; queued again')
                return
        # the attempt process is gone without a result: stop what it left, then fail or retry the attempt
        self._stop_tree(job, self.config.cancel_grace_sec)
        reason = unwritten_result(att.adir) or (
            'the service stopped while this job ran (pid %s gone); its artifacts: %s'
            % (job.get('pid'), job.get('artifact_dir') or att.adir))
        n = int(job['attempts'] or 0)
        self.store.add_attempt_if_missing(job_id, n, str(att.adir))
        self.store.finish_attempt(job_id, n, None, 'failed', TRANSIENT, reason)
        self._after_attempt(job_id, n, int(job['max_attempts'] or 1),
                            {'status': 'failed', 'error_class': TRANSIENT, 'reason': reason, 'rc': None,
                             'error': None})
        current = self.store.get_job(job_id, with_attempts=False)
        out['requeued' if current['status'] == 'queued' else 'failed'].append(job_id)

    # batches
    def _end_batches(self) -> None:
        for batch in self.store.open_batches():
            batch_id = batch['id']
            if self._stop.is_set() or not (self.serve_all or batch_id in self._scope_batches):
                continue
            with self._lock:
                if batch_id in self._summaries:
                    continue    # being written
                retry = self._summary_retry.get(batch_id)
            if batch['status'] == 'finishing':
                if batch.get('owner') == self.owner:
                    # ours: written just now (this list may be older), or again once the delay of a failed try passed
                    if retry is None or time.monotonic() < retry[0]:
                        continue
                elif owner_alive(batch.get('owner')) or \
                        not self.store.claim_batch_end(batch_id, self.owner, dead_owner=batch.get('owner')):
                    continue
            elif not self.store.claim_batch_end(batch_id, self.owner, settle_sec=self.config.cancel_grace_sec + 5):
                continue
            self._begin_summary(batch_id)

    def _begin_summary(self, batch_id: str) -> None:
        """Write the summary of a batch this scheduler claimed in a thread of its own: copying the tasks' folders (may
        be gigabytes) must not hold the scheduler, which goes on starting, watching, timing out and cancelling jobs."""
        thread = threading.Thread(target=self._write_summary, args=(batch_id,), daemon=True,
                                  name='xuanwu-summary-%s' % batch_id)
        with self._lock:
            self._summaries[batch_id] = thread
        thread.start()

    def _write_summary(self, batch_id: str) -> None:
        """write_summary; when it fails (a full disk, a folder it cannot read, a bug), the batch stays 'finishing' and
        the summary is written again later, after 2 s, then twice as long each time up to 2 min (each try is a line on
        standard error); when the scheduler stops meanwhile, the next one writes it."""
        retry = None
        try:
            write_summary(self.store, batch_id, owner=self.owner, stop=self._stop)
        except Exception as err:   # the scheduler goes on; the batch is not left 'finishing' for ever
            if self._stop.is_set():
                sys.stderr.write('xuanwu: the summary of batch %s is left to the next scheduler (this one stops)\n'
                                 % batch_id)
            else:
                with self._lock:
                    last = self._summary_retry.get(batch_id)
                delay = SUMMARY_RETRY_FIRST_SEC if last is None else min(last[1] * 2, SUMMARY_RETRY_MAX_SEC)
                retry = (time.monotonic() + delay, delay)
                why = str(err) if isinstance(err, (OSError, sqlite3.Error)) else traceback.format_exc().strip()
                sys.stderr.write('xuanwu: the summary of batch %s could not be written (%s); trying again in %g s\n'
                                 % (batch_id, why, delay))
        with self._lock:
            self._summaries.pop(batch_id, None)
            if retry is None:
                self._summary_retry.pop(batch_id, None)
            else:
                self._summary_retry[batch_id] = retry
        self._wake.set()


def classify_playbook(rc: int, unreachable: bool) -> dict:
    """status, error_class and reason of a failed ansible-playbook run. rc 4 is a host that was unreachable
    (transient) only when a runner_on_unreachable event says so; else ansible-playbook could not parse the
    playbook or load what it needs (a missing collection or role), which no retry mends."""
    if rc == 4 and unreachable:
        return {'status': 'failed', 'error_class': TRANSIENT,
                'reason': 'ansible-playbook exited with 4 (a host was unreachable)'}
    what = {1: 'an error', 2: 'a host failed', 3: 'a host was unreachable',
            4: 'a parse error: the playbook, a role or a collection it needs could not be loaded',
            5: 'a usage error: bad or incomplete options', 99: 'interrupted', 250: 'an unexpected error'}
    return {'status': 'failed', 'error_class': TRANSIENT if rc == 3 else PERMANENT,
            'reason': 'ansible-playbook exited with %s (%s)' % (rc, what.get(rc, 'an error'))}
