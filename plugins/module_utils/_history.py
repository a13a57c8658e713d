# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run history: every validation run's figures in one SQLite file on the controller (docs/fleet-history.md).

Pure Python and the standard library's ``sqlite3``; no Ansible imports. ``record`` stores a run from its
report (the ``report.json`` shape of docs/report-format.md): the run, per host its status and profile, per
check its findings, per collective and size its bus bandwidth, and the workloads' scalar figures. A run id
recorded again replaces the old rows (a re-run). ``recent_busbw`` reads what the fleet and regression checks
compare with.

The schema is versioned (``PRAGMA user_version``) and marked as this collection's (``PRAGMA application_id``);
a missing file is created (mode 0600, its folder 0700 when it has to be made). A file that is not an SQLite
database, another program's database, or one written by a newer schema raises ``HistoryError`` naming the
path. Writers take the write lock at the start of their transaction (``BEGIN IMMEDIATE``) and wait up to
``BUSY_TIMEOUT_S`` for another run's transaction to end, so two runs that finish at once both land.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os
import sqlite3

SCHEMA_VERSION = 1
# 'XWHI': the file is this collection's history (PRAGMA application_id, a signed 32-bit integer)
APPLICATION_ID = 0x58574849
BUSY_TIMEOUT_S = 60.0
FILE_MODE = 0o600
DIR_MODE = 0o700
HEALTHY = ('pass', 'warn')

_TABLES = (
    '''CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, started_at TEXT, finished_at TEXT,
        playbook TEXT, collection_version TEXT)''',
    '''CREATE TABLE hosts (
        run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL,
        status TEXT, profile TEXT, PRIMARY KEY (run_id, host))''',
    '''CREATE TABLE findings (
        run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL,
        check_id TEXT NOT NULL, severity TEXT, component TEXT, measured TEXT, expected TEXT)''',
    '''CREATE TABLE busbw (
        run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL,
        kind TEXT, component TEXT NOT NULL, size_bytes INTEGER NOT NULL, busbw_gbps REAL NOT NULL,
        PRIMARY KEY (run_id, host, component, size_bytes))''',
    '''CREATE TABLE workload_figures (
        run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL,
        kind TEXT, component TEXT, name TEXT NOT NULL, value REAL NOT NULL)''',
    'CREATE INDEX busbw_host ON busbw (host, component, size_bytes)',
    'CREATE INDEX runs_order ON runs (started_at, seq)',
)
_RUN_TABLES = ('workload_figures', 'busbw', 'findings', 'hosts', 'runs')


class HistoryError(Exception):
    """The history file cannot be used: the message names the path and why."""


def _number(value):
    """A finite float, or None (strings, booleans, NaN and infinities are not figures)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _json(value):
    return None if value is None else json.dumps(value, sort_keys=True, default=str)


def _prepare_path(db_path):
    """Make the folder (0700) and the file (0600) when missing; never through a symlink."""
    folder = os.path.dirname(os.path.abspath(db_path))
    try:
        if not os.path.isdir(folder):
            os.makedirs(folder, DIR_MODE)
        if os.path.islink(db_path):
            raise HistoryError('history database %s is a symlink: refused (point xuanwu_history_db at the file itself)' % db_path)
        fd = os.open(db_path, os.O_RDWR | os.O_CREAT | getattr(os, 'O_NOFOLLOW', 0), FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
        finally:
            os.close(fd)
    except (IOError, OSError) as err:
        raise HistoryError('cannot open the history database %s: %s' % (db_path, err))


def _connect(db_path, create):
    if not create and not os.path.exists(db_path):
        return None
    _prepare_path(db_path)
    try:
        conn = sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as err:
        raise HistoryError('cannot open the history database %s: %s' % (db_path, err))
    try:
        conn.execute('PRAGMA foreign_keys = ON')
        _check_or_create(conn, db_path)
    except sqlite3.DatabaseError as err:
        conn.close()
        raise HistoryError('%s is not a usable history database (%s): move it aside or point xuanwu_history_db elsewhere'
                           % (db_path, err))
    except HistoryError:
        conn.close()
        raise
    return conn


def _identity(conn):
    """(application_id, user_version, tables), read in one transaction: read one by one, another run's creation
    could commit between them (application_id still 0, its tables already there: "another program's file")."""
    conn.execute('BEGIN')
    try:
        return (conn.execute('PRAGMA application_id').fetchone()[0], conn.execute('PRAGMA user_version').fetchone()[0],
                conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0])
    finally:
        conn.execute('COMMIT')


def _check_or_create(conn, db_path):
    app_id, version, tables = _identity(conn)
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise HistoryError('history database %s has schema version %d; this collection reads up to %d: '
                               'use the newer collection or another file' % (db_path, version, SCHEMA_VERSION))
        return
    if app_id != 0 or version != 0 or tables:
        raise HistoryError('%s is an SQLite database of another program (application_id %d, user_version %d, %d table(s)), '
                           'not a xuanwu.cluster history: point xuanwu_history_db elsewhere' % (db_path, app_id, version, tables))
    conn.execute('BEGIN IMMEDIATE')
    try:
        # another run may have made it while this one waited for the lock
        if conn.execute('PRAGMA application_id').fetchone()[0] != APPLICATION_ID:
            for statement in _TABLES:
                conn.execute(statement)
            conn.execute('PRAGMA application_id = %d' % APPLICATION_ID)
            conn.execute('PRAGMA user_version = %d' % SCHEMA_VERSION)
        conn.execute('COMMIT')
    except Exception:
        conn.execute('ROLLBACK')
        raise


def _rows_of(report):
    """The rows of one report, per table."""
    run_id = report['run_id']
    rows = dict((table, []) for table in _RUN_TABLES)
    for host, entry in sorted((report.get('hosts') or {}).items()):
        rows['hosts'].append((run_id, host, entry.get('status'), entry.get('profile')))
        for f in entry.get('findings') or []:
            rows['findings'].append((run_id, host, f.get('check'), f.get('severity'), _json(f.get('component')),
                                     _json(f.get('measured')), _json(f.get('expected'))))
        seen = set()
        for run in entry.get('workloads') or []:
            component = run.get('component') or run.get('kind')
            for size, busbw in sorted((run.get('busbw_gbps') or {}).items()):
                value = _number(busbw)
                if value is None or not str(size).isdigit() or (component, int(size)) in seen:
                    continue
                seen.add((component, int(size)))
                rows['busbw'].append((run_id, host, run.get('kind'), component, int(size), value))
            figures = dict(run.get('result') or {})
            figures.update(avg_busbw_gbps=run.get('avg_busbw_gbps'), seconds=run.get('seconds'))
            for name, value in sorted(figures.items()):
                value = _number(value)
                if value is not None:
                    rows['workload_figures'].append((run_id, host, run.get('kind'), component, name, value))
    return rows


def record(db_path, report):
    """Store the run of ``report`` (a report.json dict) in ``db_path``, in one transaction.

    A run id that is already there is replaced (its old rows are deleted first): a re-run of a run id
    keeps only its newest figures. Raises ``HistoryError``.
    """
    rows = _rows_of(report)
    conn = _connect(db_path, create=True)
    try:
        conn.execute('BEGIN IMMEDIATE')
        try:
            for table in _RUN_TABLES:
                conn.execute('DELETE FROM %s WHERE run_id = ?' % table, (report['run_id'],))
            seq = conn.execute('SELECT coalesce(max(seq), 0) + 1 FROM runs').fetchone()[0]
            conn.execute('INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)', (
                report['run_id'], seq, report.get('started_at'), report.get('finished_at'), report.get('playbook'),
                (report.get('collection') or {}).get('version')))
            for table in _RUN_TABLES[:-1]:
                if rows[table]:
                    marks = ', '.join('?' * len(rows[table][0]))
                    conn.executemany('INSERT INTO %s VALUES (%s)' % (table, marks), rows[table])
            conn.execute('COMMIT')
        except Exception:
            conn.execute('ROLLBACK')
            raise
    except sqlite3.Error as err:
        raise HistoryError('cannot record run %s in the history database %s: %s' % (report.get('run_id'), db_path, err))
    finally:
        conn.close()
    return seq


# runs newest first: by start time, then by the order they were recorded
_ORDER = 'coalesce(r.started_at, \'\') DESC, r.seq DESC'


def _query(db_path, sql, params):
    conn = _connect(db_path, create=False)
    if conn is None:
        return []
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.Error as err:
        raise HistoryError('cannot read the history database %s: %s' % (db_path, err))
    finally:
        conn.close()


def check(db_path):
    """Raise ``HistoryError`` when ``db_path`` exists and is not a usable history database."""
    conn = _connect(db_path, create=False)
    if conn is not None:
        conn.close()


def runs(db_path):
    """[{run_id, started_at, finished_at, playbook, collection_version, hosts}], newest first."""
    rows = _query(db_path, 'SELECT r.run_id, r.started_at, r.finished_at, r.playbook, r.collection_version, '
                           '(SELECT count(*) FROM hosts h WHERE h.run_id = r.run_id) FROM runs r ORDER BY ' + _ORDER, ())
    keys = ('run_id', 'started_at', 'finished_at', 'playbook', 'collection_version', 'hosts')
    return [dict(zip(keys, row)) for row in rows]


def recent_busbw(db_path, exclude_run_id=None, per_host_runs=5, profile=None, min_bytes=0, healthy_only=True):
    """The newest ``per_host_runs`` figures of every host, collective and size (``size_bytes >= min_bytes``)
    from runs other than ``exclude_run_id`` where the host's status was pass or warn (``healthy_only``).

    Returns {host: {component: {size: [(run_id, busbw), ...newest first]}}}; {} when the file does not exist.
    """
    sql = ('SELECT host, component, size_bytes, run_id, busbw_gbps FROM ('
           ' SELECT b.host, b.component, b.size_bytes, b.run_id, b.busbw_gbps, ROW_NUMBER() OVER ('
           '  PARTITION BY b.host, b.component, b.size_bytes ORDER BY ' + _ORDER + ') AS n'
           ' FROM busbw b JOIN runs r ON r.run_id = b.run_id JOIN hosts h ON h.run_id = b.run_id AND h.host = b.host'
           ' WHERE b.run_id != ? AND b.size_bytes >= ? AND (? IS NULL OR h.profile = ?)'
           '  AND (? = 0 OR h.status IN (%s))'
           ') WHERE n <= ? ORDER BY host, component, size_bytes, n' % ', '.join('?' * len(HEALTHY)))
    params = (exclude_run_id or '', int(min_bytes), profile, profile, 1 if healthy_only else 0) + HEALTHY + (int(per_host_runs),)
    out = {}
    for host, component, size, run_id, busbw in _query(db_path, sql, params):
        out.setdefault(host, {}).setdefault(component, {}).setdefault(size, []).append((run_id, busbw))
    return out


def host_history(db_path, host, component, size_bytes, limit=20):
    """One host's figures of one collective and size, newest first: [{run_id, started_at, status, busbw_gbps}]."""
    rows = _query(db_path, 'SELECT r.run_id, r.started_at, h.status, b.busbw_gbps FROM busbw b'
                           ' JOIN runs r ON r.run_id = b.run_id JOIN hosts h ON h.run_id = b.run_id AND h.host = b.host'
                           ' WHERE b.host = ? AND b.component = ? AND b.size_bytes = ? ORDER BY ' + _ORDER + ' LIMIT ?',
                  (host, component, int(size_bytes), int(limit)))
    return [dict(zip(('run_id', 'started_at', 'status', 'busbw_gbps'), row)) for row in rows]


def findings_of(db_path, run_id, host=None):
    """The findings recorded for a run (and host): [{host, check, severity, component, measured, expected}]."""
    rows = _query(db_path, 'SELECT host, check_id, severity, component, measured, expected FROM findings'
                           ' WHERE run_id = ? AND (? IS NULL OR host = ?) ORDER BY host, check_id', (run_id, host, host))
    out = []
    for row in rows:
        out.append(dict(zip(('host', 'check', 'severity'), row[:3]),
                        **dict((k, None if v is None else json.loads(v)) for k, v in zip(('component', 'measured', 'expected'), row[3:]))))
    return out
