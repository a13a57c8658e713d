"""The run history database (_history): round trip, a re-run replaces, unusable files are clear errors naming
the path, two processes writing at once, file and folder modes."""
import multiprocessing
import os
import sqlite3
import stat
import threading

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _history

GIB = 1 << 30


def report(run_id, started, figures, status='pass', findings=None, playbook='validate'):
    """A report.json dict: ``figures`` {host: busbw at 1 GiB of all_reduce_perf}."""
    hosts = {}
    for host, busbw in figures.items():
        hosts[host] = {
            'status': status, 'profile': 'h200x2-nvlink', 'findings': list(findings or []),
            'workloads': [{'kind': 'nccl_tests', 'component': 'all_reduce_perf', 'seconds': 19.5, 'avg_busbw_gbps': 120.1,
                           'busbw_gbps': {str(GIB): busbw, str(2 * GIB): busbw + 10, '8': 0.0, '1024': float('nan')}},
                          {'kind': 'ddp_smoke', 'component': 'ddp_smoke', 'seconds': 30.0,
                           'result': {'step_time_ms_median': 41.5, 'tokens_per_s': 1200, 'ok': True}}],
        }
    return {'run_id': run_id, 'started_at': started, 'finished_at': started, 'playbook': playbook,
            'collection': {'name': 'xuanwu.cluster', 'version': '0.1.0'}, 'hosts': hosts}


FINDING = {'host': 'a', 'check': 'gpu.nvlink_pair', 'component': 'gpu1<->gpu2', 'severity': 'fail', 'measured': 'NV12',
           'expected': 'NV18', 'message': 'm', 'remediation': 'r'}


def test_round_trip(tmp_path):
    db = str(tmp_path / 'h.sqlite')
    _history.record(db, report('r1', '2026-11-01T00:00:00Z', {'a': 320.5, 'b': 324.0}, findings=[FINDING]))
    _history.record(db, report('r2', '2026-11-02T00:00:00Z', {'a': 321.5, 'b': 325.0}))
    assert [r['run_id'] for r in _history.runs(db)] == ['r2', 'r1']
    assert _history.runs(db)[0]['hosts'] == 2 and _history.runs(db)[0]['collection_version'] == '0.1.0'
    assert [(h['run_id'], h['busbw_gbps'], h['status']) for h in _history.host_history(db, 'a', 'all_reduce_perf', GIB)] == [
        ('r2', 321.5, 'pass'), ('r1', 320.5, 'pass')]
    got = _history.recent_busbw(db, exclude_run_id='r2', min_bytes=GIB)
    assert got == {'a': {'all_reduce_perf': {GIB: [('r1', 320.5)], 2 * GIB: [('r1', 330.5)]}},
                   'b': {'all_reduce_perf': {GIB: [('r1', 324.0)], 2 * GIB: [('r1', 334.0)]}}}
    stored = _history.findings_of(db, 'r1')
    assert [dict((k, f[k]) for k in ('host', 'check', 'component', 'measured', 'expected')) for f in stored] == [
        {'host': 'a', 'check': 'gpu.nvlink_pair', 'component': 'gpu1<->gpu2', 'measured': 'NV12', 'expected': 'NV18'},
        {'host': 'b', 'check': 'gpu.nvlink_pair', 'component': 'gpu1<->gpu2', 'measured': 'NV12', 'expected': 'NV18'}]
    conn = sqlite3.connect(db)
    # a NaN is not a figure; the workloads' scalar figures are kept
    assert conn.execute('SELECT count(*) FROM busbw WHERE size_bytes = 1024').fetchone() == (0,)
    assert conn.execute("SELECT value FROM workload_figures WHERE run_id = 'r1' AND host = 'a' AND name = 'step_time_ms_median'"
                        ).fetchone() == (41.5,)


def test_newest_runs_per_host_healthy_only_and_per_profile(tmp_path):
    db = str(tmp_path / 'h.sqlite')
    for n in range(1, 8):
        _history.record(db, report('r%d' % n, '2026-11-%02dT00:00:00Z' % n, {'a': 300.0 + n}, status='fail' if n == 6 else 'pass'))
    got = _history.recent_busbw(db, exclude_run_id='r7', per_host_runs=3, min_bytes=GIB)
    assert got['a']['all_reduce_perf'][GIB] == [('r5', 305.0), ('r4', 304.0), ('r3', 303.0)]   # r6 failed: not a baseline
    assert _history.recent_busbw(db, profile='other') == {}
    assert _history.recent_busbw(str(tmp_path / 'missing.sqlite')) == {}
    assert not os.path.exists(str(tmp_path / 'missing.sqlite'))


def test_a_run_id_recorded_again_replaces_its_rows(tmp_path):
    db = str(tmp_path / 'h.sqlite')
    _history.record(db, report('r1', '2026-11-01T00:00:00Z', {'a': 300.0, 'b': 301.0}, findings=[FINDING]))
    _history.record(db, report('r1', '2026-11-01T00:00:00Z', {'a': 310.0}))
    assert [r['run_id'] for r in _history.runs(db)] == ['r1'] and _history.runs(db)[0]['hosts'] == 1
    assert [h['busbw_gbps'] for h in _history.host_history(db, 'a', 'all_reduce_perf', GIB)] == [310.0]
    assert _history.host_history(db, 'b', 'all_reduce_perf', GIB) == [] and _history.findings_of(db, 'r1') == []


def _garbage(path):
    with open(path, 'wb') as handle:
        handle.write(b'this is not a database, but a report someone saved here\n' * 100)


def _foreign(path):
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE inventory (host TEXT)')
    conn.commit()
    conn.close()


def _newer(path):
    _history.record(path, report('r1', 't', {'a': 1.0}))
    conn = sqlite3.connect(path)
    conn.execute('PRAGMA user_version = %d' % (_history.SCHEMA_VERSION + 1))
    conn.close()


@pytest.mark.parametrize('make, reason', [(_garbage, 'is not a usable history database'),
                                          (_foreign, 'is an SQLite database of another program'),
                                          (_newer, 'has schema version 2')])
def test_an_unusable_file_is_a_clear_error_naming_the_path(tmp_path, make, reason):
    db = str(tmp_path / 'h.sqlite')
    make(db)
    for call in (lambda: _history.record(db, report('r9', 't', {'a': 1.0})), lambda: _history.runs(db),
                 lambda: _history.recent_busbw(db)):
        with pytest.raises(_history.HistoryError) as err:
            call()
        assert db in str(err.value) and reason in str(err.value)


def test_a_symlink_is_refused(tmp_path):
    target = tmp_path / 'elsewhere.sqlite'
    target.write_bytes(b'')
    os.symlink(str(target), str(tmp_path / 'h.sqlite'))
    with pytest.raises(_history.HistoryError, match='is a symlink'):
        _history.record(str(tmp_path / 'h.sqlite'), report('r1', 't', {'a': 1.0}))


def test_modes_file_0600_new_folder_0700(tmp_path):
    db = str(tmp_path / 'new' / 'deeper' / 'h.sqlite')
    _history.record(db, report('r1', 't', {'a': 1.0}))
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(db)).st_mode) == 0o700
    os.chmod(db, 0o644)     # a file that was readable by others is made private again
    _history.record(db, report('r2', 't', {'a': 1.0}))
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600


def _writer(db, prefix, count, barrier):
    barrier.wait()
    for n in range(count):
        _history.record(db, report('%s-%02d' % (prefix, n), '2026-11-01T00:00:%02dZ' % n,
                                   dict(('host%02d' % h, 300.0 + h) for h in range(20))))


def test_two_runs_writing_at_once_both_land(tmp_path):
    db = str(tmp_path / 'h.sqlite')
    ctx = multiprocessing.get_context('spawn')
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(db, prefix, 15, barrier)) for prefix in ('x', 'y')]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [proc.exitcode for proc in procs] == [0, 0]
    runs = _history.runs(db)
    assert len(runs) == 30 and all(r['hosts'] == 20 for r in runs)
    conn = sqlite3.connect(db)
    assert conn.execute('SELECT count(*) FROM busbw').fetchone() == (30 * 20 * 3,)   # 1 GiB, 2 GiB and 8 B; NaN is left out
    assert conn.execute('PRAGMA integrity_check').fetchone() == ('ok',)


class _Interleaved(object):
    """A connection that lets another run create the database right after this one's first read of its identity."""

    def __init__(self, conn, db):
        self.conn, self.db, self.other = conn, db, None

    def execute(self, sql, *args):
        result = self.conn.execute(sql, *args)
        if sql == 'PRAGMA application_id' and self.other is None:
            self.other = threading.Thread(target=lambda: _history._connect(self.db, create=True).close())
            self.other.start()
            self.other.join(2)      # it finishes here unless this read holds the file (the fix: one transaction)
        return result


def test_a_creation_between_the_identity_reads_is_not_taken_for_another_program(tmp_path):
    db = str(tmp_path / 'h.sqlite')
    _history._prepare_path(db)
    conn = sqlite3.connect(db, timeout=_history.BUSY_TIMEOUT_S, isolation_level=None)
    wrapped = _Interleaved(conn, db)
    _history._check_or_create(wrapped, db)      # raised "an SQLite database of another program" before the fix
    wrapped.other.join(60)
    assert not wrapped.other.is_alive()
    assert conn.execute('PRAGMA application_id').fetchone()[0] == _history.APPLICATION_ID
    conn.close()
