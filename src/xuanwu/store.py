"""SQLite store of jobs, their attempts and batches. Thread-safe: one connection per thread, WAL.

The store is the scheduler's memory: the queue (``queued`` jobs, with ``not_before`` while a retry waits),
who runs what (``owner``: the scheduler process, as pid and start time), each attempt's process tree
(``pid``/``pgid``, ``mark``, ``cgroup``) and the batches with their own limits. Any process that opens it
can take up the work of a scheduler that died (``claim_next``, ``adopt_job``, ``claim_batch_end``): every
move is one conditional UPDATE, so that exactly one process makes it. The file, its -wal and -shm are
0600 in a 0700 folder."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import sqlite3
import threading
import time
from pathlib import Path

from . import FINAL_STATES, STATES
from .secure import private_dir, touch_private

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, spec TEXT NOT NULL,
    status TEXT NOT NULL, reason TEXT, error_class TEXT, error TEXT,
    created REAL NOT NULL, started REAL, finished REAL, attempts INTEGER NOT NULL DEFAULT 0,
    pid INTEGER, pgid INTEGER, pid_start TEXT, artifact_dir TEXT, rc INTEGER, batch_id TEXT, task_id TEXT,
    max_attempts INTEGER NOT NULL DEFAULT 1, info TEXT, owner TEXT, not_before REAL, mark TEXT, cgroup TEXT);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status);
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs(batch_id);
CREATE TABLE IF NOT EXISTS attempts (
    job_id TEXT NOT NULL, n INTEGER NOT NULL, started REAL NOT NULL, finished REAL, rc INTEGER,
    status TEXT, error_class TEXT, error TEXT, artifact_dir TEXT, PRIMARY KEY (job_id, n));
CREATE INDEX IF NOT EXISTS attempts_open ON attempts(finished);
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
    created REAL NOT NULL, finished REAL, summary TEXT, output_dir TEXT, max_concurrency INTEGER, owner TEXT);
"""
# Columns added since the first schema: an older store gets them when it is opened.
ADDED_COLUMNS = {'jobs': ('owner TEXT', 'not_before REAL', 'mark TEXT', 'cgroup TEXT'),
                 'batches': ('max_concurrency INTEGER', 'owner TEXT')}
BATCH_STATES = ('running', 'cancelling', 'finishing', 'succeeded', 'failed', 'cancelled')
JOB_COLUMNS = ('kind', 'name', 'spec', 'status', 'reason', 'error_class', 'error', 'created', 'started',
               'finished', 'attempts', 'pid', 'pgid', 'pid_start', 'artifact_dir', 'rc', 'batch_id', 'task_id',
               'max_attempts', 'info', 'owner', 'not_before', 'mark', 'cgroup')
JSON_COLUMNS = ('spec', 'info', 'summary')
STORE_FILE = 'jobs.db'


class StoreError(RuntimeError):
    pass


class BatchConflict(StoreError):
    """An unfinished batch already writes to the output folder a new batch names."""

    def __init__(self, output_dir, batch_id, status):
        super().__init__('output_dir %s is being written by batch %s (%s): wait for it, cancel it, or name another '
                         'output_dir' % (output_dir, batch_id, status))


# The batches that still write to their output_dir.
OPEN_BATCH_SQL = ("SELECT * FROM batches WHERE output_dir = ? AND status IN ('running', 'cancelling', 'finishing') "
                  "ORDER BY created DESC")


def new_id(prefix: str = 'j') -> str:
    return '%s-%s' % (prefix, secrets.token_hex(6))


def disk_full(err: BaseException) -> bool:
    """True for the errors of a full disk or quota: SQLite's "database or disk is full", ENOSPC, EDQUOT."""
    if isinstance(err, sqlite3.OperationalError):
        return 'full' in str(err).lower()
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, getattr(errno, 'EDQUOT', errno.ENOSPC))


class Store:
    def __init__(self, path):
        self.path = Path(path)
        private_dir(self.path.parent)
        touch_private(self.path)    # SQLite gives its -wal and -shm the mode of the database file
        self._local = threading.local()
        self._write = threading.Lock()
        with self._write:
            conn = self._conn()
            conn.executescript(SCHEMA)
            for table, columns in ADDED_COLUMNS.items():
                have = {row[1] for row in conn.execute('PRAGMA table_info(%s)' % table)}
                for column in columns:
                    if column.split()[0] not in have:
                        conn.execute('ALTER TABLE %s ADD COLUMN %s' % (table, column))
        for suffix in ('-wal', '-shm'):
            side = Path(str(self.path) + suffix)
            if side.exists():
                os.chmod(side, 0o600)

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
        with self.transaction() as conn:
            return conn.execute(sql, args)

    @contextlib.contextmanager
    def transaction(self):
        """A connection inside BEGIN IMMEDIATE (the write lock of the database), committed at the end."""
        with self._write:
            conn = self._conn()
            conn.execute('BEGIN IMMEDIATE')
            try:
                yield conn
                conn.execute('COMMIT')
            except BaseException:
                # SQLite may have rolled back already (a full disk fails the COMMIT and ends the transaction): a
                # ROLLBACK that fails must not hide the error that made it necessary
                try:
                    conn.execute('ROLLBACK')
                except sqlite3.Error:
                    pass
                raise

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

    def claim_next(self, owner: str, limit: int, batch_id=None, job_id=None, now=None) -> dict | None:
        """Move the oldest runnable queued job to 'running' under ``owner`` and count its next attempt, unless
        ``limit`` jobs run already (every running job of the store counts, whoever runs it) or its batch runs
        its own max_concurrency; ``batch_id``/``job_id`` narrow the choice. The job, or None."""
        with self.transaction() as conn:
            now = time.time() if now is None else now     # inside the lock: after the end of a job it follows
            if conn.execute("SELECT COUNT(*) FROM jobs WHERE status = 'running'").fetchone()[0] >= limit:
                return None
            where, args = ["status = 'queued'", '(not_before IS NULL OR not_before <= ?)'], [now]
            if batch_id is not None:
                where.append('batch_id = ?')
                args.append(batch_id)
            if job_id is not None:
                where.append('id = ?')
                args.append(job_id)
            rows = conn.execute('SELECT id, batch_id FROM jobs WHERE %s ORDER BY created, rowid LIMIT 200'
                                % ' AND '.join(where), args).fetchall()
            full = set()
            for row in rows:
                if row['batch_id'] is not None:
                    if row['batch_id'] in full:
                        continue
                    batch = conn.execute('SELECT status, max_concurrency FROM batches WHERE id = ?',
                                         (row['batch_id'],)).fetchone()
                    if batch is not None and batch['status'] != 'running':
                        continue
                    if batch is not None and batch['max_concurrency']:
                        busy = conn.execute("SELECT COUNT(*) FROM jobs WHERE batch_id = ? AND status = 'running'",
                                            (row['batch_id'],)).fetchone()[0]
                        if busy >= batch['max_concurrency']:
                            full.add(row['batch_id'])
                            continue
                cur = conn.execute("UPDATE jobs SET status = 'running', owner = ?, started = COALESCE(started, ?), "
                                   "attempts = attempts + 1, mark = id || '-' || (attempts + 1), pid = NULL, "
                                   "pgid = NULL, pid_start = NULL, cgroup = NULL, not_before = NULL "
                                   "WHERE id = ? AND status = 'queued'", (owner, now, row['id']))
                if cur.rowcount == 1:
                    return self._row(conn.execute('SELECT * FROM jobs WHERE id = ?', (row['id'],)).fetchone())
        return None

    def adopt_job(self, job_id: str, old_owner, owner: str) -> bool:
        """Take over a running job whose scheduler (``old_owner``) died; False if another process did first."""
        cur = self._exec("UPDATE jobs SET owner = ? WHERE id = ? AND status = 'running' AND owner IS ?",
                         (owner, job_id, old_owner))
        return cur.rowcount == 1

    def final_with_open_attempt(self) -> list:
        """Final jobs whose last attempt is not recorded as ended (a cancel whose scheduler died before it stopped
        the attempt's tree): the jobs, each with ``open_attempt``."""
        rows = self._conn().execute(
            'SELECT jobs.*, attempts.n AS open_attempt FROM attempts JOIN jobs ON jobs.id = attempts.job_id '
            'WHERE attempts.finished IS NULL AND jobs.status IN (%s)' % ', '.join('?' * len(FINAL_STATES)),
            tuple(FINAL_STATES)).fetchall()
        return [self._row(r) for r in rows]

    def adopt_final_job(self, job_id: str, old_owner, owner: str) -> bool:
        """Take over the open attempt of a final job whose scheduler died; False if another process did first."""
        cur = self._exec('UPDATE jobs SET owner = ? WHERE id = ? AND owner IS ?', (owner, job_id, old_owner))
        return cur.rowcount == 1

    def retry_later(self, job_id: str, owner: str, not_before: float) -> bool:
        """Put a running job of ``owner`` back in the queue for its next attempt, not before ``not_before``."""
        cur = self._exec("UPDATE jobs SET status = 'queued', owner = NULL, not_before = ?, pid = NULL, pgid = NULL, "
                         "pid_start = NULL WHERE id = ? AND status = 'running' AND owner IS ?",
                         (not_before, job_id, owner))
        return cur.rowcount == 1

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

    def unclaim(self, job_id: str, owner: str) -> bool:
        """Put back in the queue a job of ``owner`` whose attempt never started a process (claimed by a scheduler
        that died before it launched it): its attempt is not counted; False if it changed meanwhile."""
        with self.transaction() as conn:
            row = conn.execute("SELECT attempts FROM jobs WHERE id = ? AND status = 'running' AND owner IS ? "
                               "AND pid IS NULL", (job_id, owner)).fetchone()
            if row is None:
                return False
            conn.execute('DELETE FROM attempts WHERE job_id = ? AND n = ?', (job_id, row['attempts']))
            conn.execute("UPDATE jobs SET status = 'queued', owner = NULL, attempts = attempts - 1 WHERE id = ?",
                         (job_id,))
        return True

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

    def add_attempt_if_missing(self, job_id: str, n: int, artifact_dir=None, started=None) -> None:
        self._exec('INSERT OR IGNORE INTO attempts (job_id, n, started, status, artifact_dir) VALUES (?, ?, ?, ?, ?)',
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
    def create_batch(self, spec: dict, name: str, output_dir=None, batch_id=None, max_concurrency=None,
                     jobs=()) -> str:
        """A batch and, in the same transaction, its jobs: ``jobs`` holds dicts of create_job's arguments."""
        batch_id = batch_id or new_id('b')
        now = time.time()
        with self.transaction() as conn:
            if output_dir is not None:
                # in the same transaction: two batches posted at once cannot both take the folder
                busy = conn.execute(OPEN_BATCH_SQL, (output_dir,)).fetchone()
                if busy is not None:
                    raise BatchConflict(output_dir, busy['id'], busy['status'])
            conn.execute('INSERT INTO batches (id, name, spec, status, created, output_dir, max_concurrency) '
                         'VALUES (?, ?, ?, ?, ?, ?, ?)',
                         (batch_id, name, json.dumps(spec), 'running', now, output_dir, max_concurrency))
            for i, job in enumerate(jobs):
                conn.execute('INSERT INTO jobs (id, kind, name, spec, status, created, batch_id, task_id, '
                             'max_attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                             (job.get('job_id') or new_id('j'), job['kind'], job['name'], json.dumps(job['spec']),
                              'queued', now + i * 1e-6, batch_id, job['task_id'], job.get('max_attempts', 1)))
        return batch_id

    def update_batch(self, batch_id: str, status: str, summary=None, owner=None) -> bool:
        """``owner``: only while the batch is 'finishing' under that scheduler (one that stopped while it wrote the
        summary, taken over since, changes nothing). Whether the batch was updated."""
        sql = 'UPDATE batches SET status = ?, summary = ?, finished = ? WHERE id = ?'
        args = [status, json.dumps(summary) if summary is not None else None,
                time.time() if status not in ('running', 'cancelling', 'finishing') else None, batch_id]
        if owner is not None:
            sql += " AND status = 'finishing' AND owner = ?"
            args.append(owner)
        return self._exec(sql, args).rowcount == 1

    def set_batch_status(self, batch_id: str, status: str, only_from=('running',)) -> bool:
        cur = self._exec('UPDATE batches SET status = ? WHERE id = ? AND status IN (%s)'
                         % ','.join('?' * len(only_from)), [status, batch_id] + list(only_from))
        return cur.rowcount == 1

    def mark_batch_cancelled(self, batch_id: str) -> bool:
        """The batch takes no new task (claim_next skips it) and its summary will say cancelled."""
        cur = self._exec("UPDATE batches SET status = 'cancelling', summary = ? WHERE id = ? AND status = 'running'",
                         (json.dumps({'cancel_requested': True}), batch_id))
        return cur.rowcount == 1

    def claim_batch_end(self, batch_id: str, owner: str, dead_owner=None, settle_sec: float = 15.0) -> bool:
        """Take the writing of a batch's summary: the batch is running or cancelling, all its jobs are final and
        their last attempts recorded (their trees gone; or final for ``settle_sec`` already, when nobody will
        record them), or it is 'finishing' under ``dead_owner``. Exactly one process gets True."""
        with self.transaction() as conn:
            left = conn.execute("SELECT COUNT(*) FROM jobs WHERE batch_id = ? AND status NOT IN ('succeeded', "
                                "'failed', 'cancelled')", (batch_id,)).fetchone()[0]
            if left:
                return False
            unsettled = conn.execute('SELECT COUNT(*) FROM attempts a JOIN jobs j ON a.job_id = j.id WHERE '
                                     'j.batch_id = ? AND a.finished IS NULL AND j.finished > ?',
                                     (batch_id, time.time() - settle_sec)).fetchone()[0]
            if unsettled:
                return False
            if dead_owner is not None:
                cur = conn.execute("UPDATE batches SET owner = ? WHERE id = ? AND status = 'finishing' AND owner = ?",
                                   (owner, batch_id, dead_owner))
            else:
                cur = conn.execute("UPDATE batches SET status = 'finishing', owner = ? WHERE id = ? AND status IN "
                                   "('running', 'cancelling')", (owner, batch_id))
            return cur.rowcount == 1

    def open_batches(self, batch_id=None) -> list:
        """Batches not yet final (running, cancelling, finishing)."""
        sql = "SELECT * FROM batches WHERE status IN ('running', 'cancelling', 'finishing')"
        args = []
        if batch_id is not None:
            sql += ' AND id = ?'
            args.append(batch_id)
        return [self._row(r) for r in self._conn().execute(sql, args).fetchall()]

    def find_open_batch(self, output_dir: str) -> dict | None:
        """The unfinished batch writing to ``output_dir`` (a batch file run again resumes it)."""
        row = self._conn().execute(OPEN_BATCH_SQL, (output_dir,)).fetchone()
        return self._row(row)

    def cancel_queued(self, batch_id: str, reason: str) -> list:
        """Cancel every queued job of a batch; their ids."""
        with self.transaction() as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM jobs WHERE batch_id = ? AND status = 'queued'",
                                              (batch_id,)).fetchall()]
            conn.execute("UPDATE jobs SET status = 'cancelled', reason = ?, finished = ? WHERE batch_id = ? AND "
                         "status = 'queued'", (reason, time.time(), batch_id))
        return ids

    def get_batch(self, batch_id: str) -> dict | None:
        batch = self._row(self._conn().execute('SELECT * FROM batches WHERE id = ?', (batch_id,)).fetchone())
        if batch is not None:
            batch['jobs'] = [{'id': j['id'], 'task_id': j['task_id'], 'status': j['status'], 'attempts': j['attempts']}
                             for j in self.list_jobs(batch_id=batch_id, limit=1000000)]
        return batch


def open_store(config) -> Store:
    """The store of a configuration (``xuanwu.config.Config``): ``<data_dir>/jobs.db``. The command and the
    service open it alike."""
    return Store(Path(config.data_dir) / STORE_FILE)
