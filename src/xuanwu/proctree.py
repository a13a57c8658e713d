"""The process tree of one attempt, and how to stop all of it.

Each attempt runs in a cgroup v2 folder of its own where the service may create one (the attempt process
moves itself there before it starts anything): ``cgroup.kill`` stops every process in it, whatever session
or process group a child made for itself (``setsid``, a double fork). Elsewhere the tree is tracked: the
attempt's session and process group, and every process whose environment carries the attempt's marker
(``XUANWU_JOB_MARK=<job id>-<n>``, inherited by whatever the attempt starts, ``setsid`` children included).
A stop freezes what it finds (SIGSTOP), looks again until nothing new appears, then SIGTERMs, waits the
grace period and SIGKILLs what is left.

An attempt's cgroup is ``xuanwu-<job id>-<n>`` in the service's own cgroup (``cgroup_parent``). One that a service
made and could not record (it was killed in between) is empty and named by no running job: ``attempt_cgroups`` lists
the folders of that name, ``remove_empty_cgroups`` removes those that are empty (the kernel refuses to remove one
that has a process or a child cgroup); the executor decides which (``runner.Executor.remove_stale_cgroups``).
"""
from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

MARK_ENV = 'XUANWU_JOB_MARK'
POLL = 0.05
# The folder attempts' cgroups are made in; None: this process's own cgroup v2 (the tests name a folder of theirs).
CGROUP_PARENT: str | None = None
# The name of an attempt's cgroup: xuanwu-<mark> (the mark is <job id>-<attempt>); no other folder is ever removed.
CGROUP_NAME = re.compile(r'^xuanwu-(j-[0-9a-f]{12})-([0-9]{1,9})$')


def _cgroup_v2_root() -> Path | None:
    for candidate in ('/sys/fs/cgroup', '/sys/fs/cgroup/unified'):
        if os.path.isfile(os.path.join(candidate, 'cgroup.procs')) and \
                os.path.isfile(os.path.join(candidate, 'cgroup.max.depth')):
            return Path(candidate)
    return None


def own_cgroup() -> Path | None:
    """The cgroup v2 folder of this process, or None (no cgroup v2)."""
    root = _cgroup_v2_root()
    if root is None:
        return None
    try:
        with open('/proc/self/cgroup', encoding='ascii') as handle:
            for line in handle:
                if line.startswith('0::'):
                    return root / line[3:].strip().lstrip('/')
    except OSError:
        return None
    return None


def cgroup_parent() -> Path | None:
    """The folder attempts' cgroups are made in: ``CGROUP_PARENT`` when set, else this process's own cgroup."""
    return Path(CGROUP_PARENT) if CGROUP_PARENT else own_cgroup()


def make_cgroup(name: str) -> str | None:
    """A new cgroup v2 folder ``name`` in this process's own (``cgroup_parent``), for one attempt; None where it
    cannot be made (no cgroup v2, no permission, cgroup.kill missing)."""
    base = cgroup_parent()
    if base is None:
        return None
    folder = base / name
    try:
        folder.mkdir(mode=0o755, exist_ok=True)
    except OSError:
        return None
    if not (folder / 'cgroup.kill').exists():
        remove_cgroup(str(folder))
        return None
    return str(folder)


def join_cgroup(folder: str | None) -> bool:
    """Move this process into ``folder`` (done by the attempt process before it starts anything)."""
    if not folder:
        return False
    try:
        with open(os.path.join(folder, 'cgroup.procs'), 'w', encoding='ascii') as handle:
            handle.write(str(os.getpid()))
        return True
    except OSError:
        return False


def remove_cgroup(folder: str | None) -> None:
    """Remove an attempt's cgroup folder once its last process is gone (waits up to a second for that)."""
    if not folder:
        return
    for dummy in range(20):
        try:
            os.rmdir(folder)
            return
        except FileNotFoundError:
            return
        except OSError:     # still populated: a process of it is exiting
            time.sleep(POLL)


def attempt_cgroups() -> list:
    """(folder, job id, mark, age in seconds) of each folder of ``cgroup_parent`` named as an attempt's cgroup
    (``CGROUP_NAME``), whether or not it is in use; [] without cgroups."""
    base = cgroup_parent()
    if base is None:
        return []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    now, found = time.time(), []
    for entry in entries:
        match = CGROUP_NAME.match(entry.name)
        if match is None:
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        found.append((entry.path, match.group(1), entry.name[len('xuanwu-'):], age))
    return found


def remove_empty_cgroups(folders) -> list:
    """Remove each of ``folders`` that is empty (rmdir: one with a process or a child cgroup stays); the removed."""
    removed = []
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            continue
        removed.append(folder)
    return removed


def _cgroup_pids(folder: str) -> set:
    try:
        with open(os.path.join(folder, 'cgroup.procs'), encoding='ascii') as handle:
            return {int(line) for line in handle if line.strip()}
    except OSError:
        return set()


def stat_fields(pid: int):
    """The fields of /proc/<pid>/stat after the command name (field 3 on: state first), or None if gone."""
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii', errors='replace') as handle:
            text = handle.read()
    except OSError:
        return None
    return text[text.rfind(')') + 2:].split()


def _stat(pid: int):
    """(state, pgid, sid) of ``pid``, or None."""
    fields = stat_fields(pid)
    return None if fields is None else (fields[0], int(fields[2]), int(fields[3]))


def _has_mark(pid: int, mark: bytes) -> bool:
    try:
        with open('/proc/%d/environ' % pid, 'rb') as handle:
            return mark in handle.read().split(b'\0')
    except OSError:
        return False


def tree_pids(sid: int | None = None, mark: str | None = None, cgroup: str | None = None) -> set:
    """The live processes of an attempt: in its cgroup, its session or process group (``sid``: the attempt
    process leads both), or carrying its marker. Zombies are left out (they are gone but for the reaping)."""
    found = set(_cgroup_pids(cgroup)) if cgroup else set()
    needle = ('%s=%s' % (MARK_ENV, mark)).encode() if mark else None
    me = os.getpid()
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me:
            continue
        info = _stat(pid)
        if info is None or info[0] in ('Z', 'X'):
            continue
        if sid and (info[1] == sid or info[2] == sid):
            found.add(pid)
        elif needle is not None and _has_mark(pid, needle):
            found.add(pid)
    found.discard(me)
    return {pid for pid in found if (_stat(pid) or ('X',))[0] not in ('Z', 'X')}


def _signal(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(sid: int | None, mark: str | None, cgroup: str | None, grace: float, reap=None) -> None:
    """Stop the whole tree: SIGTERM, then after ``grace`` seconds SIGKILL. ``reap()``: called while waiting
    (the attempt process, when it is our child, must be reaped to leave the tree)."""
    if cgroup and os.path.exists(os.path.join(cgroup, 'cgroup.kill')) and grace <= 0:
        _cgroup_kill(cgroup)
    pids = _frozen_tree(sid, mark, cgroup)
    _signal(pids, signal.SIGTERM)
    _signal(pids, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if reap is not None:
            reap()
        if not tree_pids(sid, mark, cgroup):
            break
        time.sleep(POLL)
    for dummy in range(50):
        if cgroup:
            _cgroup_kill(cgroup)
        left = tree_pids(sid, mark, cgroup)
        if reap is not None:
            reap()
        if not left:
            break
        _signal(left, signal.SIGKILL)
        time.sleep(POLL)
    # the killed members are zombies until their parent (or init) reaps them: wait a moment for that, so
    # that the process group is gone when the caller records the end
    deadline = time.monotonic() + 2.0
    while sid and time.monotonic() < deadline:
        if reap is not None:
            reap()
        _reap_own_zombies(sid)
        try:
            os.killpg(sid, 0)
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(POLL)


def _reap_own_zombies(pgid: int) -> None:
    """Reap the zombies of process group ``pgid`` that are this process's children (an attempt whose
    scheduler in this process stopped watching it); others are their parent's or init's to reap."""
    me = os.getpid()
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, encoding='ascii', errors='replace') as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] == 'Z' and int(fields[1]) == me and int(fields[2]) == pgid:
            try:
                os.waitpid(int(name), os.WNOHANG)
            except ChildProcessError:
                pass


def _cgroup_kill(cgroup: str) -> None:
    try:
        with open(os.path.join(cgroup, 'cgroup.kill'), 'w', encoding='ascii') as handle:
            handle.write('1')
    except OSError:
        pass


def _frozen_tree(sid, mark, cgroup) -> set:
    """The tree with every member stopped (SIGSTOP), looked for again until no new member appears: a process
    that forks while it is being stopped cannot leave a child behind."""
    stopped: set = set()
    for dummy in range(20):
        fresh = tree_pids(sid, mark, cgroup) - stopped
        if not fresh:
            break
        _signal(fresh, signal.SIGSTOP)
        stopped |= fresh
    return stopped


def tree_alive(sid: int | None, mark: str | None, cgroup: str | None) -> bool:
    return bool(tree_pids(sid, mark, cgroup))
