"""Helpers of the job runner's integration tests (tests/integration/test_jobs_*.py): a configuration whose
playbook registry holds the tiny test playbooks of playbooks/jobs/, and the ``xuanwu`` command line run as
a real process."""
import json
import os
import signal
import stat
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(ROOT, 'src')
JOBS = os.path.join(HERE, 'playbooks', 'jobs')
INVENTORY = os.path.join(JOBS, 'inventory')
TEST_PLAYBOOKS = {'t-succeed': 'succeed.yml', 't-fail': 'fail.yml', 't-sleep': 'sleep.yml', 't-flaky': 'flaky.yml'}


def interruptible():
    """``preexec_fn`` of a child that a test interrupts with SIGINT: SIGINT as a terminal's Ctrl-C delivers it. A
    command started in the background by a shell (CI, ``make test &``) has SIGINT ignored, a child inherits that,
    and Python keeps an ignored SIGINT ignored instead of raising KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def write_config(tmp_path, **extra):
    """A configuration file under ``tmp_path``; returns its path. Jobs live in ``tmp_path/home``."""
    data = {
        'data_dir': str(tmp_path / 'home'),
        'inventory_roots': [JOBS, os.path.join(ROOT, 'inventories')],
        'playbooks': dict((name, os.path.join(JOBS, f)) for name, f in TEST_PLAYBOOKS.items()),
        'scheduler': 'local',
        'retry_backoff_sec': 0.2,
        'cancel_grace_sec': 2,
    }
    data.update(extra)
    path = tmp_path / 'xuanwu.yml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


def env(path_prefix=None):
    out = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get('PYTHONPATH')])))
    if path_prefix:
        out['PATH'] = path_prefix + os.pathsep + out['PATH']
    return out


def cli_argv(config, *args):
    return [sys.executable, '-m', 'xuanwu.cli', '--config', config] + list(args)


def xuanwu(config, *args, path_prefix=None, timeout=120):
    """Run ``xuanwu --config CONFIG ARGS...``; the CompletedProcess (text)."""
    return subprocess.run(cli_argv(config, *args), cwd=ROOT, env=env(path_prefix), capture_output=True, text=True,
                          timeout=timeout, check=False)


def load(config):
    """Config, Store of ``config`` (a path)."""
    from xuanwu.config import Config
    from xuanwu.store import open_store
    cfg = Config.load(config)
    return cfg, open_store(cfg)


def wait_for(predicate, timeout=60, what='condition'):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError('timed out waiting for %s' % what)


def group_gone(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def open_to_others(folder):
    """'<mode> <path>' of each folder and regular file under ``folder`` that its owner's group or others may use."""
    found = []
    for top, dirs, files in os.walk(str(folder)):
        for path in [top] + [os.path.join(top, name) for name in files]:
            info = os.lstat(path)
            if (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)) and info.st_mode & 0o077:
                found.append('%04o %s' % (stat.S_IMODE(info.st_mode), os.path.relpath(path, str(folder))))
    return found
