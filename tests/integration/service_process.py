"""Starts ``xuanwu serve`` as a real process on a free loopback port for the service's integration tests:
a configuration with the job runner's test playbooks, a token file of mode 0600, the service's log in
a file, and helpers to call the API."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import requests
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, 'src')
if SRC not in sys.path:
    sys.path.insert(0, SRC)
JOBS = os.path.join(ROOT, 'tests', 'integration', 'playbooks', 'jobs')
TEST_PLAYBOOKS = {name: 'tests/integration/playbooks/jobs/%s.yml' % name for name in ('succeed', 'fail', 'sleep', 'flaky')}
INVENTORY = 'tests/integration/playbooks/jobs/inventory'
FINAL = ('succeeded', 'failed', 'cancelled')


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def write_config(folder, **settings):
    """A configuration file in ``folder`` (a pathlib.Path); ``settings`` override the defaults here."""
    config = {'project_root': ROOT, 'data_dir': str(folder / 'data'), 'scheduler': 'local', 'max_concurrency': 4,
              'default_timeout_sec': 120, 'retry_backoff_sec': 0.2, 'cancel_grace_sec': 2,
              'inventory_roots': ['tests/integration/playbooks/jobs/inventory', 'inventories'],
              'playbooks': dict(TEST_PLAYBOOKS)}
    config.update(settings)
    path = folder / 'xuanwu.yml'
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)        # it may hold webhook_secret: the service refuses a config file others can read
    return path


def write_token(folder, mode=0o600, name='token'):
    token = 'itest-' + os.urandom(16).hex()
    path = folder / name
    path.write_text(token + '\n')
    os.chmod(path, mode)
    return token, path


def server_env(extra=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get('PYTHONPATH')])))
    env.pop('XUANWU_API_TOKEN', None)
    env.update(extra or {})
    return env


class Service:
    """One ``xuanwu serve`` process; ``start`` waits for /health."""

    def __init__(self, folder, config, token, token_file, args=(), env=None):  # pylint: disable=too-many-arguments
        self.folder, self.config, self.token, self.token_file = folder, config, token, token_file
        self.port = free_port()
        self.base = 'http://127.0.0.1:%d' % self.port
        self.args, self.env = list(args), dict(env or {})
        self.log_path = folder / ('service-%d.log' % self.port)
        self.proc = None

    @property
    def headers(self):
        return {'Authorization': 'Bearer %s' % self.token}

    def command(self):
        return [sys.executable, '-m', 'xuanwu.cli', '--config', str(self.config), 'serve', '--port', str(self.port),
                '--token-file', str(self.token_file)] + self.args

    def start(self, timeout=30):
        with open(self.log_path, 'ab') as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, cwd=str(self.folder),
                                         env=server_env(self.env), start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError('xuanwu serve exited %s:\n%s' % (self.proc.returncode, self.log()))
            try:
                if requests.get(self.base + '/health', timeout=2).status_code == 200:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        raise AssertionError('xuanwu serve not up after %ss:\n%s' % (timeout, self.log()))

    def log(self):
        return self.log_path.read_text(errors='replace') if self.log_path.exists() else ''

    def kill9(self):
        """SIGKILL the service process only (its jobs run in their own sessions and live on)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def get(self, path, **kwargs):
        return requests.get(self.base + path, headers=self.headers, timeout=30, **kwargs)

    def post(self, path, body=None, **kwargs):
        return requests.post(self.base + path, json=body, headers=self.headers, timeout=30, **kwargs)

    def submit(self, body):
        resp = self.post('/api/v1/jobs', body)
        assert resp.status_code == 201, resp.text
        return resp.json()['job_id']

    def job(self, job_id):
        resp = self.get('/api/v1/jobs/%s' % job_id)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def wait(self, job_id, timeout=60, states=FINAL):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if job['status'] in states:
                return job
            time.sleep(0.1)
        raise AssertionError('job %s is %s after %ss:\n%s'
                             % (job_id, json.dumps(self.job(job_id))[:2000], timeout, self.log()[-3000:]))


def start_service(tmp_path, config_settings=None, args=(), env=None):
    """A started Service in ``tmp_path``. Its HOME is a fresh folder there unless ``env`` names one, so that
    command jobs' login shells (bash -l) read no developer dotfiles."""
    home = tmp_path / 'home'
    home.mkdir(exist_ok=True)
    env = dict({'HOME': str(home)}, **(env or {}))
    config = write_config(tmp_path, **(config_settings or {}))
    token, token_file = write_token(tmp_path)
    return Service(tmp_path, config, token, token_file, args=args, env=env).start()


def wait_gone(kill, ident, timeout=30):
    """True once ``kill(ident, 0)`` (os.kill or os.killpg) finds no such process, within ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            kill(ident, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
