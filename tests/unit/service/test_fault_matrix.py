"""The crash-and-fault matrix: each stateful step of a job and a batch (submit, start, launch, running/log, finish,
settle, retry, cancel, summary) under kill -9 of the service at that step and under a full disk there (the write of
that step fails as ENOSPC does), then a restarted service on the same store; plus odd files in a task's folder and
two services on one store. Every job ends in exactly one final state with a reason that says what happened; nothing
is lost, and nothing runs more often than its retry policy allows (each run of a task appends a line to a file).

The faults are armed through the service's XUANWU_FAILPOINT (xuanwu._failpoint); a real full disk (a small tmpfs)
is in test_disk_full.py."""
import json
import os
import subprocess
import sys

import pytest

from real_jobs import ROOT, config, env, pid_alive
from xuanwu import FINAL_STATES
from xuanwu.store import Store

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fault_driver.py')


def drive(tmp_path, *args, fault=None, timeout=90):
    extra = {'XUANWU_FAILPOINT': fault} if fault else {}
    done = subprocess.run([sys.executable, DRIVER, str(tmp_path)] + list(args), env=env(**extra), cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, check=False)
    return done


def job_spec(runs, sleep=0.3, **extra):
    """A job that appends one line per run to ``runs`` then works ``sleep`` s; ``fail_first``: the first run exits
    3, which ``retry_on_exit_codes`` makes transient."""
    fail_first = extra.pop('fail_first', False)
    command = 'echo run >> %s; sleep %s' % (runs, sleep)
    if fail_first:
        command += '; [ "$(wc -l < %s)" -ge 2 ] || exit 3' % runs
    return dict({'name': 'matrix', 'nodes': ['localhost'], 'command': command, 'timeout_sec': 60}, **extra)


def runs_of(path) -> int:
    try:
        return path.read_text().count('run')
    except FileNotFoundError:
        return 0


def jobs_of(tmp_path) -> list:
    store = Store(config(tmp_path).data_dir / 'jobs.db')
    return [store.get_job(j['id']) for j in store.list_jobs(limit=1000)]


def assert_settled(job):
    """One final state, every attempt closed, a reason unless it succeeded."""
    assert job['status'] in FINAL_STATES, job
    assert all(a['finished'] is not None and a['status'] in FINAL_STATES for a in job['attempt_list']), job
    assert job['status'] == 'succeeded' or job['reason'], job
    assert len(job['attempt_list']) == job['attempts'] <= job['max_attempts'], job


# (step, fault, what runs): what the job and its runs must be after the fault and a restart
JOB_CASES = [
    # the job is stored or it is not: never half
    ('submit', 'kill', 'job', {'jobs': 0, 'runs': 0}),
    ('submit', 'enospc', 'job', {'jobs': 0, 'runs': 0, 'refused': True}),
    # claimed, no process yet: queued again, its attempt not counted, runs once
    ('start', 'kill', 'job', {'status': 'succeeded', 'runs': 1, 'attempts': 1}),
    ('start', 'enospc', 'job', {'status': 'failed', 'runs': 0, 'attempts': 1, 'reason': 'could not be started'}),
    ('start', 'enospc', 'retry1', {'status': 'succeeded', 'runs': 1, 'attempts': 2}),
    # a process runs that the store does not know: stopped by its marker, failed (no retry left) with why
    ('launch', 'kill', 'job', {'status': 'failed', 'runs': (0, 1), 'attempts': 1, 'reason': 'service stopped'}),
    ('launch', 'enospc', 'job', {'status': 'failed', 'runs': (0, 1), 'attempts': 1,
                                 'reason': 'could not be started'}),
    # the attempt runs and writes its log while the service dies: re-attached, runs once
    ('running', 'kill', 'job', {'status': 'succeeded', 'runs': 1, 'attempts': 1}),
    # ended, not recorded: the restart reads exit.json; a full disk: recorded once space returns
    ('finish', 'kill', 'job', {'status': 'succeeded', 'runs': 1, 'attempts': 1}),
    ('finish', 'enospc', 'job', {'status': 'succeeded', 'runs': 1, 'attempts': 1, 'clean': True}),
    ('settle', 'kill', 'job', {'status': 'succeeded', 'runs': 1, 'attempts': 1}),
    ('settle', 'enospc', 'job', {'status': 'succeeded', 'runs': 1, 'attempts': 1, 'clean': True}),
    # a transient failure whose retry is being decided when the service dies: retried once, not twice
    ('settle', 'kill', 'retry', {'status': 'succeeded', 'runs': 2, 'attempts': 2}),
    ('finish', 'kill', 'retry', {'status': 'succeeded', 'runs': 2, 'attempts': 2}),
    # cancelled in the store, the tree not yet stopped: the restart stops it and closes the attempt
    ('cancel', 'kill', 'cancel', {'status': 'cancelled', 'runs': 1, 'attempts': 1, 'reason': 'cancelled by the test',
                                  'stopped': True}),
]


@pytest.mark.parametrize('step,fault,what,expect', JOB_CASES,
                         ids=['%s-%s-%s' % case[:3] for case in JOB_CASES])
def test_a_job_under_a_fault_at_each_step_ends_once_with_its_reason(tmp_path, step, fault, what, expect):
    runs = tmp_path / 'runs'
    spec = job_spec(runs, sleep=30 if what == 'cancel' else 0.3, fail_first=what == 'retry',
                    retry_count=1 if what in ('retry', 'retry1') else 0,
                    retry_on_exit_codes=[3] if what == 'retry' else [])
    mode = 'cancel' if what == 'cancel' else 'job'
    first = drive(tmp_path, mode, json.dumps(spec), fault='%s:%s' % (step, fault))
    killed = first.returncode == -9
    if fault == 'kill':
        assert killed, (first.returncode, first.stdout, first.stderr)
    if expect.get('refused'):
        assert first.returncode == 4 and 'No space left on device' in first.stdout, first.stdout
    elif not killed:
        assert first.returncode == 0, (first.returncode, first.stdout, first.stderr[-3000:])
    if expect.get('clean'):     # a full disk at the record: retried in the same process, nothing for a restart
        assert 'cannot be recorded' in first.stderr, first.stderr
    second = drive(tmp_path, 'serve')
    assert second.returncode == 0, (second.stdout, second.stderr[-3000:])
    jobs = jobs_of(tmp_path)
    if 'jobs' in expect:
        assert len(jobs) == expect['jobs'] and runs_of(runs) == expect['runs'], jobs
        return
    assert len(jobs) == 1, jobs
    job = jobs[0]
    assert_settled(job)
    assert job['status'] == expect['status'], job
    assert job['attempts'] == expect['attempts'], job
    allowed = expect['runs'] if isinstance(expect['runs'], tuple) else (expect['runs'],)
    assert runs_of(runs) in allowed, (runs_of(runs), job)
    if expect.get('reason'):
        assert expect['reason'] in job['reason'], job['reason']
    if expect.get('stopped'):
        attempt = job['attempt_list'][-1]
        assert attempt['status'] == 'cancelled', attempt
        assert not pid_alive(int(job['pid'])), 'the cancelled job still runs (pid %s)' % job['pid']


BATCH_CASES = [('summary', 'kill'), ('summary', 'enospc')]


@pytest.mark.parametrize('step,fault', BATCH_CASES, ids=['%s-%s' % case for case in BATCH_CASES])
def test_a_batch_under_a_fault_at_its_summary_ends_once(tmp_path, step, fault):
    runs = tmp_path / 'runs'
    runs.mkdir()
    batch = {'output_dir': str(tmp_path / 'out'), 'max_concurrency': 2, 'timeout_sec': 60,
             'command': 'sh -c "echo run >> {runs}/$XUANWU_TASK_ID"',
             'task_list': [{'task_id': 't%d' % i, 'params': {'runs': str(runs)}} for i in range(3)]}
    first = drive(tmp_path, 'batch', json.dumps(batch), fault='%s:%s' % (step, fault))
    assert first.returncode == (-9 if fault == 'kill' else 0), (first.returncode, first.stderr[-3000:])
    second = drive(tmp_path, 'serve')
    assert second.returncode == 0, second.stderr[-3000:]
    store = Store(config(tmp_path).data_dir / 'jobs.db')
    assert store.open_batches() == []
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    assert summary['status'] == 'succeeded' and summary['counts']['succeeded'] == 3, summary
    assert {p.name: runs_of(p) for p in runs.iterdir()} == {'t0': 1, 't1': 1, 't2': 1}
    for job in jobs_of(tmp_path):
        assert_settled(job)


def test_odd_files_in_a_task_folder_neither_hang_nor_fail_the_batch(tmp_path):
    """A FIFO, a Unix socket, a dangling link, a link loop, a name that is not UTF-8 and an unreadable folder: the
    batch ends, the summary names what was not copied."""
    script = tmp_path / 'odd.py'
    script.write_text(ODD_FILES)
    # a task's own command runs in its attempt's folder, which the summary copies into output_dir/<task_id>/
    batch = {'output_dir': str(tmp_path / 'out'), 'max_concurrency': 2, 'timeout_sec': 60, 'task_list': [
        {'task_id': 'odd', 'params': {'nodes': ['localhost'], 'command': '%s %s' % (sys.executable, script)}}]}
    done = drive(tmp_path, 'batch', json.dumps(batch), timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    assert summary['status'] == 'succeeded', summary
    record = json.loads((tmp_path / 'out' / 'odd' / 'job.json').read_text())
    not_copied = ' '.join(record['not_copied'])
    assert 'a FIFO' in not_copied and 'a Unix socket' in not_copied, record['not_copied']
    copied = tmp_path / 'out' / 'odd' / 'attempt-1'
    assert os.path.islink(copied / 'dangling') and os.path.islink(copied / 'loop-a')


ODD_FILES = r'''
import os, socket
os.mkfifo("fifo")
sock = socket.socket(socket.AF_UNIX)
sock.bind("sock")
os.symlink("nowhere", "dangling")
os.symlink("loop-b", "loop-a")
os.symlink("loop-a", "loop-b")
open(b"not-utf8-\xff\xfe", "w").write("x")
os.mkdir("locked")
open("locked/inside", "w").write("x")
os.chmod("locked", 0)
'''


def test_two_services_on_one_store_run_every_job_once(tmp_path):
    """Two services take jobs from one store at once: each job runs once, on one of them."""
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    from xuanwu.spec import parse_job
    runs = tmp_path / 'runs'
    runs.mkdir()
    ids = [store.create_job(parse_job(job_spec(runs / ('j%d' % i), sleep=0.1), cfg).to_dict(), 'command', 'j%d' % i)
           for i in range(12)]
    services = [subprocess.Popen([sys.executable, DRIVER, str(tmp_path), 'serve'], env=env(), cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _one in range(2)]
    for service in services:
        out, err = service.communicate(timeout=90)
        assert service.returncode == 0, err[-3000:]
    jobs = [store.get_job(i) for i in ids]
    for job in jobs:
        assert_settled(job)
        assert job['status'] == 'succeeded' and job['attempts'] == 1, job
    assert {p.name: runs_of(p) for p in runs.iterdir()} == {'j%d' % i: 1 for i in range(12)}
    owners = {j['owner'] for j in jobs}
    assert len(owners) >= 1
