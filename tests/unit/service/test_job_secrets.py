"""Secrets stay in: a job's clean environment, extra_vars never on a command line, private files, redacted
records and webhooks; a second local user reads nothing of the data folder. Real, short jobs."""
import json
import os
import pwd
import shutil
import stat
import subprocess
import threading

import pytest

from real_jobs import INVENTORY, config
from xuanwu.runner import Executor
from xuanwu.server import public_job
from xuanwu.spec import parse_job
from xuanwu.store import Store
from xuanwu.webhooks import webhook_job

TOKEN = 'service-token-that-must-stay-0123456789'
PASSWORD = 'become-pw-never-in-argv-4711'


@pytest.fixture
def executor(tmp_path, monkeypatch):
    monkeypatch.setenv('XUANWU_API_TOKEN', TOKEN)
    monkeypatch.setenv('XUANWU_WEBHOOK_SECRET', 'hook-secret-0123456789')
    monkeypatch.setenv('DEPLOY_PASSWORD', 'deploy-pw-0123456789')
    monkeypatch.setenv('SOME_SERVICE_SETTING', 'not-for-jobs')
    monkeypatch.setenv('LC_TIME', 'C')
    cfg = config(tmp_path)
    ex = Executor(cfg, Store(cfg.data_dir / 'jobs.db'), 2, serve_all=False)
    yield ex
    ex.shutdown()


def _all_modes(root):
    for folder, dirs, files in os.walk(root):
        yield folder, stat.S_IMODE(os.lstat(folder).st_mode), True
        for name in files:
            path = os.path.join(folder, name)
            yield path, stat.S_IMODE(os.lstat(path).st_mode), False


def test_a_command_job_gets_a_clean_environment_and_private_files(executor):
    cfg = executor.config
    job = executor.run(parse_job({'name': 'env', 'command': 'env', 'nodes': ['localhost']}, cfg))
    assert job['status'] == 'succeeded', job
    out = open(os.path.join(job['artifact_dir'], 'stdout.txt'), encoding='utf-8').read()
    variables = dict(line.split('=', 1) for line in out.splitlines() if '=' in line)
    for leaked in ('XUANWU_API_TOKEN', 'XUANWU_WEBHOOK_SECRET', 'DEPLOY_PASSWORD', 'SOME_SERVICE_SETTING'):
        assert leaked not in variables
    assert TOKEN not in out and 'deploy-pw' not in out
    assert variables['PATH'] and variables['LC_TIME'] == 'C' and variables['XUANWU_JOB_MARK'] == '%s-1' % job['id']
    # data folder 0700, every folder under it 0700, every file 0600 (jobs.db, -wal, -shm, logs, attempt.json)
    modes = list(_all_modes(cfg.data_dir))
    assert {os.path.basename(p) for p, dummy, is_dir in modes if not is_dir} >= {
        'jobs.db', 'jobs.db-wal', 'jobs.db-shm', 'stdout.txt', 'stderr.txt', 'attempt.json', 'exit.json', 'job.json',
        'output.log'}
    for path, mode, is_dir in modes:
        assert mode == (0o700 if is_dir else 0o600), (path, oct(mode))


def test_extra_vars_reach_ansible_through_a_private_file_never_argv_store_or_records(executor):
    cfg = executor.config
    seen_in_argv, done = [], threading.Event()

    def watch_ps():    # what any local user sees in ps, while the job runs
        while not done.is_set():
            for pid in os.listdir('/proc'):
                try:
                    with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                        if PASSWORD.encode() in handle.read():
                            seen_in_argv.append(pid)
                except OSError:
                    pass
    watcher = threading.Thread(target=watch_ps, daemon=True)
    watcher.start()
    try:
        job = executor.run(parse_job({'name': 'pb', 'playbook': 't-succeed', 'inventory': INVENTORY, 'extra_vars': {
            'ansible_become_password': PASSWORD, 'model': 'small'}}, cfg))
    finally:
        done.set()
        watcher.join()
    assert job['status'] == 'succeeded', job
    assert seen_in_argv == []
    adir = job['artifact_dir']
    command = json.load(open(os.path.join(adir, 'artifacts', '%s-1' % job['id'], 'command'), encoding='utf-8'))
    assert '@%s' % os.path.join(adir, 'env', 'extravars') in command['command']
    assert TOKEN not in json.dumps(command) and PASSWORD not in json.dumps(command)
    extravars = os.path.join(adir, 'env', 'extravars')
    assert json.load(open(extravars, encoding='utf-8'))['ansible_become_password'] == PASSWORD
    assert stat.S_IMODE(os.stat(extravars).st_mode) == 0o600
    # not in the store (database and its WAL), the attempt's record, its attempt.json, the API's view
    for name in ('jobs.db', 'jobs.db-wal'):
        assert PASSWORD.encode() not in open(cfg.data_dir / name, 'rb').read()
    for name in ('job.json', 'attempt.json'):
        assert PASSWORD not in open(os.path.join(adir, name), encoding='utf-8').read()
    shown = public_job(executor.store.get_job(job['id']))
    assert shown['spec']['extra_vars'] == {'ansible_become_password': '***', 'model': 'small'}
    assert 'owner' not in shown and 'mark' not in shown


def test_a_webhook_carries_ids_status_and_links_not_the_spec(executor):
    cfg = executor.config
    job = executor.run(parse_job({'name': 'hook', 'command': 'echo %s' % PASSWORD, 'nodes': ['localhost'],
                                  'webhook_url': 'https://receiver.example/hook'}, cfg))
    body = json.dumps(webhook_job(job))
    assert PASSWORD not in body and 'spec' not in json.loads(body) and 'webhook_url' not in body
    sent = json.loads(body)
    assert (sent['id'], sent['status']) == (job['id'], 'succeeded')
    assert sent['links'] == {'self': '/api/v1/jobs/%s' % job['id'], 'log': '/api/v1/jobs/%s/log' % job['id'],
                             'events': '/api/v1/jobs/%s/events' % job['id']}


OTHER_USER = 'xuanwu-test-other'


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to create a second local user')
def test_a_second_local_user_reads_nothing_of_the_data_folder(executor, tmp_path):
    if subprocess.run(['id', OTHER_USER], capture_output=True, check=False).returncode != 0:
        subprocess.run(['useradd', '--no-create-home', '--shell', '/usr/sbin/nologin', OTHER_USER], check=True)
    other = pwd.getpwnam(OTHER_USER)
    cfg = executor.config
    job = executor.run(parse_job({'name': 'out', 'command': 'echo private-output', 'nodes': ['localhost']}, cfg))
    assert job['status'] == 'succeeded'
    os.chmod(tmp_path, 0o755)      # the folders above the data folder are open, as a home's parent is
    targets = [str(cfg.data_dir / 'jobs.db'), str(cfg.data_dir / 'jobs.db-wal'),
               os.path.join(job['artifact_dir'], 'stdout.txt'), os.path.join(job['artifact_dir'], 'attempt.json')]
    probe = ('import os, sys\n'
             'opened = []\n'
             'for path in sys.argv[1:]:\n'
             '    try:\n'
             '        os.listdir(path) if os.path.isdir(path) else open(path, "rb").read()\n'
             '        opened.append(path)\n'
             '    except PermissionError:\n'
             '        pass\n'
             'print("\\n".join(opened))\n')
    python = shutil.which('python3', path='/usr/bin:/bin')   # one the other user may run
    if python is None:
        pytest.skip('no system python3 for the second user')
    result = subprocess.run([python, '-c', probe, str(cfg.data_dir), str(cfg.data_dir / 'jobs')] + targets,
                            user=other.pw_uid, group=other.pw_gid, extra_groups=[], capture_output=True, text=True,
                            check=True, cwd='/')
    assert result.stdout.strip() == '', 'the other user read: %s' % result.stdout
