"""A scheduler killed (-9) between making an attempt's cgroup and recording it leaves an empty ``xuanwu-<mark>``
cgroup; the next scheduler on the store removes it when it recovers, and empty attempt cgroups that no running job
has on its rounds, never a cgroup in use or of another name.

The cgroups are real where this machine lets the tests make one (a cgroup v2 folder of the test's own, given to the
executor as ``proctree.CGROUP_PARENT``); elsewhere that folder is a plain one of the test's, in which a cgroup is a
folder and one "with a process" a folder that holds a file (neither can be removed by rmdir)."""
import os
import secrets
import signal
import subprocess
import sys
import time

import pytest

from real_jobs import HERE, config, env
from xuanwu import proctree
from xuanwu.runner import FOREIGN_CGROUP_SEC, Executor
from xuanwu.spec import parse_job
from xuanwu.store import Store


@pytest.fixture(params=['cgroup', 'folder'])
def cgroup_parent(request, tmp_path, monkeypatch):
    """The folder the executors make attempts' cgroups in: a real cgroup v2 of the test's own, or a plain folder."""
    if request.param == 'cgroup':
        own = proctree.own_cgroup()
        parent = own / ('pytest-xuanwu-%s' % secrets.token_hex(4)) if own is not None else None
        try:
            parent.mkdir()
        except (AttributeError, OSError) as exc:
            pytest.skip('no cgroup v2 folder can be made here (%s): the plain folder case runs instead' % exc)
        if not (parent / 'cgroup.procs').exists():
            parent.rmdir()
            pytest.skip('%s is not a cgroup v2 folder' % parent)
    else:
        parent = tmp_path / 'cgroups'
        parent.mkdir()
    monkeypatch.setattr(proctree, 'CGROUP_PARENT', str(parent))
    yield parent
    if request.param == 'cgroup':
        # a job that a failed test left running still has its cgroup for a moment: wait for it, never leave the folder
        deadline = time.monotonic() + 20
        while parent.exists() and time.monotonic() < deadline:
            for child in [c for c in parent.iterdir() if c.is_dir()] + [parent]:
                try:
                    child.rmdir()
                except OSError:
                    time.sleep(0.1)


def _attempt_cgroups(parent):
    return sorted(p.name for p in parent.iterdir() if p.is_dir() and p.name.startswith('xuanwu-'))


# The first scheduler: it makes its job's cgroup and is killed (-9) before it records it in the store.
KILLED_AFTER_THE_CGROUP = '''
import os, signal, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from real_jobs import config
from xuanwu import proctree
from xuanwu.runner import Executor
from xuanwu.spec import parse_job
from xuanwu.store import Store


def made_then_killed(name):
    os.mkdir(os.path.join(sys.argv[2], name))
    os.kill(os.getpid(), signal.SIGKILL)


proctree.make_cgroup = made_then_killed
cfg = config(Path(sys.argv[1]))
executor = Executor(cfg, Store(cfg.data_dir / "jobs.db"), 2, serve_all=True)
executor.submit(parse_job({"name": "launching", "nodes": ["localhost"], "command": "echo ran"}, cfg))
time.sleep(60)
'''


def test_the_cgroup_of_a_scheduler_killed_while_it_launched_is_removed_when_the_next_one_recovers(
        tmp_path, cgroup_parent):
    done = subprocess.run([sys.executable, '-c', KILLED_AFTER_THE_CGROUP, str(tmp_path), str(cgroup_parent), HERE],
                          env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                          check=False)
    assert done.returncode == -signal.SIGKILL, done.stdout
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    [job_id] = [job['id'] for job in store.list_jobs()]
    left = _attempt_cgroups(cgroup_parent)
    assert left == ['xuanwu-%s-1' % job_id], left
    executor = Executor(cfg, store, 2, serve_all=True)
    start_loop = executor._ensure_loop
    # the scheduler's loop, which recover() starts last, starts after the check: the job's new attempt may make a
    # cgroup of the very same name (xuanwu-<id>-1: the killed one was never recorded) as soon as it runs
    executor._ensure_loop = lambda: None
    try:
        executor.recover()
        assert _attempt_cgroups(cgroup_parent) == [], 'the empty cgroup of the killed launch is still there'
        executor._ensure_loop = start_loop
        start_loop()
        job = executor.wait(job_id, timeout=30)
    finally:
        executor.shutdown()
    assert job['status'] == 'succeeded', job
    assert _attempt_cgroups(cgroup_parent) == []


def test_only_empty_attempt_cgroups_that_no_running_job_has_are_removed(tmp_path, monkeypatch):
    parent = tmp_path / 'cgroups'
    parent.mkdir()
    monkeypatch.setattr(proctree, 'CGROUP_PARENT', str(parent))
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    spec = parse_job({'name': 'c', 'command': 'true', 'nodes': ['localhost']}, cfg).to_dict()
    running = store.create_job(spec, 'command', 'running')
    store.claim_next('999999:gone:x', 4)                     # running, mark <id>-1, its cgroup not made yet ...
    ended = store.create_job(spec, 'command', 'ended')
    store.finish_job(ended, 'failed', reason='test')
    busy = store.create_job(spec, 'command', 'busy')
    store.finish_job(busy, 'failed', reason='test')
    foreign_old, foreign_new = 'j-%s' % ('a' * 12), 'j-%s' % ('b' * 12)   # jobs of another store
    names = {'xuanwu-%s-1' % running: 'kept: its job runs (its attempt is about to move in)',
             'xuanwu-%s-2' % ended: 'removed: its job ended', 'xuanwu-%s-1' % ended: 'removed: an older attempt',
             'xuanwu-%s-1' % busy: 'kept: a process is in it',
             'xuanwu-%s-1' % foreign_old: 'removed: another store\'s, made long ago',
             'xuanwu-%s-1' % foreign_new: 'kept: another store\'s, made just now',
             'xuanwu-probe': 'kept: not an attempt\'s name', 'xuanwu-%s-1.bak' % ended: 'kept: not an attempt\'s name',
             'system.slice': 'kept: not ours'}
    for name in names:
        (parent / name).mkdir()
    (parent / ('xuanwu-%s-1' % busy) / 'cgroup.procs').write_text('4242\n')
    long_ago = time.time() - FOREIGN_CGROUP_SEC - 60
    os.utime(parent / ('xuanwu-%s-1' % foreign_old), (long_ago, long_ago))
    os.symlink(str(tmp_path), str(parent / ('xuanwu-%s-3' % ended)))      # a link is no cgroup: never followed
    executor = Executor(cfg, store, 2, serve_all=True)
    try:
        removed = sorted(os.path.basename(f) for f in executor.remove_stale_cgroups())
    finally:
        executor.shutdown()
    assert removed == sorted(n for n, why in names.items() if why.startswith('removed')), removed
    assert sorted(os.listdir(parent)) == sorted([n for n, why in names.items() if why.startswith('kept')] +
                                                ['xuanwu-%s-3' % ended])
    assert os.path.isdir(str(tmp_path))
