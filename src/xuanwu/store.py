"""SQLite store of jobs, their attempts and batches. Thread-safe: one connection per thread, WAL."""
from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from pathlib import Path

from . import FINAL_STATES, STATES

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, spec TEXT NOT NULL,
    status TEXT NOT NULL, reason TEXT, error_class TEXT, error TEXT,
    created REAL NOT NULL, started REAL, finished REAL, attempts INTEGER NOT NULL DEFAULT 0,
    pid INTEGER, pgid INTEGER, pid_start TEXT, artifact_dir TEXT, rc INTEGER, batch_id TEXT, task_id TEXT,
    max_attempts INTEGER NOT NULL DEFAULT 1, info TEXT);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status);
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs(batch_id);
CREATE TABLE IF NOT EXISTS attempts (
    job_id TEXT NOT NULL, n INTEGER NOT NULL, started REAL NOT NULL, finished REAL, rc INTEGER,
    status TEXT, error_class TEXT, error TEXT, artifact_dir TEXT, PRIMARY KEY (job_id, n));
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
    created REAL NOT NULL, finished REAL, summary TEXT, output_dir TEXT);
"""
JOB_COLUMNS = ('kind', 'name', 'spec', 'status', 'reason', 'error_class', 'error', 'created', 'started',
               'finished', 'attempts', 'pid', 'pgid', 'pid_start', 'artifact_dir', 'rc', 'batch_id', 'task_id',
               'max_attempts', 'info')
JSON_COLUMNS = ('spec', 'info', 'summary')


class StoreError(RuntimeError):
    pass


def new_id(prefix: str = 'j') -> str:
    return '%s-%s' % (prefix, secrets.token_hex(6))


class Store:
    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._write = threading.Lock()
        with self._write:
            conn = self._conn()
            conn.executescript(SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, 'conn', None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None, check_same_thread=True)
            conn.row_factory = sqlite3.Row
            conn.execute('PRAGMA journal_mode=WAL')
            conn.execute('PRAGMA busy_timeout=30000')
            conn.execute('PRAGMA synchronous=NORMAL')
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, 'conn', None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _exec(self, sql: str, args=()):
        with self._write:
            conn = self._conn()
            conn.execute('BEGIN IMMEDIATE')
            try:
                cur = conn.execute(sql, args)
                conn.execute('COMMIT')
            except BaseException:
                conn.execute('ROLLBACK')
                raise
            return cur

    @staticmethod
    def _row(row) -> dict | None:
        if row is None:
            return None
        out = dict(row)
        for key in JSON_COLUMNS:
            if out.get(key) is not None:
                out[key] = json.loads(out[key])
        return out

    # jobs
    def create_job(self, spec: dict, kind: str, name: str, batch_id=None, task_id=None, max_attempts=1,
                   job_id=None) -> str:
        job_id = job_id or new_id('j')
        self._exec('INSERT INTO jobs (id, kind, name, spec, status, created, batch_id, task_id, max_attempts) '
                   'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                   (job_id, kind, name, json.dumps(spec), 'queued', time.time(), batch_id, task_id, max_attempts))
        return job_id

    def get_job(self, job_id: str, with_attempts: bool = True) -> dict | None:
        job = self._row(self._conn().execute('SELECT * FROM jobs WHERE id = ?', (job_id,)).fetchone())
        if job is not None and with_attempts:
            job['attempt_list'] = self.list_attempts(job_id)
        return job

    def list_jobs(self, status=None, limit: int = 100, offset: int = 0, batch_id=None) -> list:
        where, args = [], []
        if status is not None:
            if status not in STATES:
                raise StoreError('status must be one of %s, got %r' % (', '.join(STATES), status))
            where.append('status = ?')
            args.append(status)
        if batch_id is not None:
            where.append('batch_id = ?')
            args.append(batch_id)
        sql = 'SELECT * FROM jobs%s ORDER BY created DESC, id LIMIT ? OFFSET ?' % (
            ' WHERE ' + ' AND '.join(where) if where else '')
        rows = self._conn().execute(sql, args + [int(limit), int(offset)]).fetchall()
        return [self._row(r) for r in rows]

    def count_jobs(self, status=None) -> int:
        if status is None:
            return self._conn().execute('SELECT COUNT(*) FROM jobs').fetchone()[0]
        return self._conn().execute('SELECT COUNT(*) FROM jobs WHERE status = ?', (status,)).fetchone()[0]

    def update_job(self, job_id: str, **fields) -> None:
        bad = sorted(set(fields) - set(JOB_COLUMNS))
        if bad:
            raise StoreError('unknown job column(s): %s' % ', '.join(bad))
        if 'status' in fields and fields['status'] not in STATES:
            raise StoreError('unknown status %r' % fields['status'])
        for key in JSON_COLUMNS:
            if key in fields and fields[key] is not None:
                fields[key] = json.dumps(fields[key])
        cols = sorted(fields)
        self._exec('UPDATE jobs SET %s WHERE id = ?' % ', '.join('%s = ?' % c for c in cols),
                   [fields[c] for c in cols] + [job_id])

    def claim_job(self, job_id: str, **fields) -> bool:
        """Move a queued job to 'running'; False if it is not queued any more (cancelled, or claimed by another
        executor on the same store)."""
        cols = sorted(fields)
        cur = self._exec('UPDATE jobs SET status = ?%s WHERE id = ? AND status = ?'
                         % ''.join(', %s = ?' % c for c in cols),
                         ['running'] + [fields[c] for c in cols] + [job_id, 'queued'])
        return cur.rowcount == 1

    def requeue_job(self, job_id: str) -> bool:
        """Put a running job back in the queue (its next attempt); False if it is final meanwhile."""
        cur = self._exec('UPDATE jobs SET status = ? WHERE id = ? AND status = ?', ('queued', job_id, 'running'))
        return cur.rowcount == 1

    def finish_job(self, job_id: str, status: str, **fields) -> bool:
        """Move a job that is not yet final to the final ``status``; False if it already was final."""
        if status not in FINAL_STATES:
            raise StoreError('not a final state: %r' % status)
        fields.setdefault('finished', time.time())
        for key in JSON_COLUMNS:
            if key in fields and fields[key] is not None:
                fields[key] = json.dumps(fields[key])
        cols = sorted(fields)
        cur = self._exec('UPDATE jobs SET status = ?, %s WHERE id = ? AND status NOT IN (%s)'
                         % (', '.join('%s = ?' % c for c in cols), ','.join('?' * len(FINAL_STATES))),
                         [status] + [fields[c] for c in cols] + [job_id] + list(FINAL_STATES))
        return cur.rowcount == 1

    # attempts
    def add_attempt(self, job_id: str, n: int, artifact_dir=None, started=None) -> None:
        self._exec('INSERT INTO attempts (job_id, n, started, status, artifact_dir) VALUES (?, ?, ?, ?, ?)',
                   (job_id, n, started or time.time(), 'running', artifact_dir))

    def finish_attempt(self, job_id: str, n: int, rc, status: str, error_class=None, error=None,
                       finished=None) -> None:
        self._exec('UPDATE attempts SET finished = ?, rc = ?, status = ?, error_class = ?, error = ? '
                   'WHERE job_id = ? AND n = ?',
                   (finished or time.time(), rc, status, error_class, error, job_id, n))

    def list_attempts(self, job_id: str) -> list:
        rows = self._conn().execute('SELECT * FROM attempts WHERE job_id = ? ORDER BY n', (job_id,)).fetchall()
        return [dict(r) for r in rows]

    def mark_orphans(self, reason: str) -> list:
        """Fail every job still 'running' (its process is gone); ``reason`` may hold {pid} and {artifact_dir}.
        Returns the ids marked."""
        marked = []
        for job in self.list_jobs(status='running', limit=1000000):
            text = reason.format(pid=job.get('pid'), artifact_dir=job.get('artifact_dir'))
            if self.finish_job(job['id'], 'failed', reason=text, error_class='transient'):
                for attempt in self.list_attempts(job['id']):
                    if attempt['finished'] is None:
                        self.finish_attempt(job['id'], attempt['n'], None, 'failed', 'transient', text)
                marked.append(job['id'])
        return marked

    # batches
    def create_batch(self, spec: dict, name: str, output_dir=None, batch_id=None) -> str:
        batch_id = batch_id or new_id('b')
        self._exec('INSERT INTO batches (id, name, spec, status, created, output_dir) VALUES (?, ?, ?, ?, ?, ?)',
                   (batch_id, name, json.dumps(spec), 'running', time.time(), output_dir))
        return batch_id

    def update_batch(self, batch_id: str, status: str, summary=None) -> None:
        self._exec('UPDATE batches SET status = ?, summary = ?, finished = ? WHERE id = ?',
                   (status, json.dumps(summary) if summary is not None else None,
                    time.time() if status != 'running' else None, batch_id))

    def get_batch(self, batch_id: str) -> dict | None:
        batch = self._row(self._conn().execute('SELECT * FROM batches WHERE id = ?', (batch_id,)).fetchone())
        if batch is not None:
            batch['jobs'] = [{'id': j['id'], 'task_id': j['task_id'], 'status': j['status'], 'attempts': j['attempts']}
                             for j in self.list_jobs(batch_id=batch_id, limit=1000000)]
        return batch
