"""Helpers of the service's unit tests that run real, short jobs: a configuration with the tiny test
playbooks, a real executor, process checks, and the ``xuanwu`` command line as a process."""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SRC = os.path.join(ROOT, 'src')
JOBS = os.path.join(ROOT, 'tests', 'integration', 'playbooks', 'jobs')
INVENTORY = os.path.join(JOBS, 'inventory')


def config(tmp_path, **extra):
    from xuanwu.config import Config
    values = dict(project_root=ROOT, data_dir=str(tmp_path / 'home'), scheduler='local', retry_backoff_sec=0.1,
                  cancel_grace_sec=1, inventory_roots=[JOBS],
                  playbooks={'t-succeed': os.path.join(JOBS, 'succeed.yml'), 't-fail': os.path.join(JOBS, 'fail.yml')})
    values.update(extra)
    return Config(**values)


def write_config(tmp_path, **extra) -> str:
    import yaml
    cfg = config(tmp_path, **extra)
    data = {'data_dir': str(cfg.data_dir), 'scheduler': 'local', 'retry_backoff_sec': 0.1, 'cancel_grace_sec': 1,
            'inventory_roots': [JOBS], 'playbooks': cfg.playbooks}
    data.update(extra)
    path = tmp_path / 'xuanwu.yml'
    path.write_text(yaml.safe_dump(data))
    os.chmod(path, 0o600)
    return str(path)


def env(**extra):
    out = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get('PYTHONPATH')])))
    out.update(extra)
    return out


def cli(config_path, *args, **popen):
    """``xuanwu --config CONFIG ARGS`` as a process of this checkout's code (a Popen)."""
    popen.setdefault('env', env())
    return subprocess.Popen([sys.executable, '-m', 'xuanwu.cli', '--config', config_path] + list(args), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def wait_for(predicate, timeout=20.0, what='the condition'):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError('%s: not within %ss' % (what, timeout))


def pid_alive(pid: int) -> bool:
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii') as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] not in ('Z', 'X')
    except OSError:
        return False


def read_pid(path) -> int:
    return int(wait_for(lambda: os.path.isfile(path) and open(path, encoding='ascii').read().strip(),
                        what='pid file %s' % path))


def overlap(intervals) -> int:
    """The most intervals (start, end) open at one moment."""
    points = sorted([(s, 1) for s, e in intervals] + [(e, -1) for s, e in intervals], key=lambda p: (p[0], p[1]))
    most = now = 0
    for dummy, step in points:
        now += step
        most = max(most, now)
    return most
