"""The job service as a real ``xuanwu serve`` process on 127.0.0.1 with the real executor and ansible-runner:
authentication, hostile bodies, 200 concurrent submissions, cancel, the event stream, metrics, webhooks
and the field guide's client (§6). The service does not depend on the ansible-core version: one controller."""
import hashlib
import hmac
import http.server
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

# The service's packages (requirements/service.txt) are in the newest controller's venv only; elsewhere the
# module is skipped as a whole, as one_controller tests are.
requests = pytest.importorskip('requests', reason='one_controller: the service tests run with .venv only')
text_string_to_metric_families = pytest.importorskip('prometheus_client.parser').text_string_to_metric_families

from jobs_support import interruptible  # noqa: E402  pylint: disable=wrong-import-position
from service_cases import HOSTILE  # noqa: E402  pylint: disable=wrong-import-position
from service_process import (INVENTORY, Service, server_env, start_service, wait_gone,  # noqa: E402  pylint: disable=wrong-import-position
                             write_config, write_token)

pytestmark = pytest.mark.one_controller
WEBHOOK_SECRET = 'webhook-secret-of-the-integration-tests'


class Receiver(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers['Content-Length']))
        Receiver.received.append((self.headers.get('X-Xuanwu-Signature'), self.headers.get('X-Xuanwu-Timestamp'), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope='module')
def service(tmp_path_factory):
    receiver = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    folder = tmp_path_factory.mktemp('service')
    svc = start_service(folder, {'webhook_url': 'http://127.0.0.1:%d/hook' % receiver.server_address[1],
                                 'webhook_secret': WEBHOOK_SECRET})
    yield svc
    svc.stop()
    receiver.shutdown()
    log = svc.log()
    assert svc.token not in log, 'the token appears in the service log'
    assert 'Traceback' not in log and ' 500 ' not in log, 'a request failed inside the service'


def _job(name, playbook='succeed', **extra_vars):
    return {'name': name, 'playbook': playbook, 'inventory': INVENTORY, 'extra_vars': extra_vars}


@pytest.mark.parametrize('headers, query, status', [
    ({}, '', 401),
    ({'Authorization': 'Bearer itest-wrong-token-0123456789'}, '', 401),
    ({'Authorization': 'Basic dXNlcjpwYXNz'}, '', 401),
    (None, '?token={token}', 400),
    ('right', '?token={token}', 400),
], ids=['no-header', 'wrong-token', 'basic', 'query', 'query-and-header'])
def test_auth_refused(service, headers, query, status):
    if headers == 'right':
        headers = service.headers
    for method, path in (('POST', '/api/v1/jobs'), ('GET', '/api/v1/jobs'), ('GET', '/metrics')):
        resp = requests.request(method, service.base + path + query.format(token=service.token), headers=headers or {},
                                json=_job('auth'), timeout=30)
        assert resp.status_code == status, resp.text
        assert service.token not in resp.text
    assert service.get('/api/v1/jobs?limit=1000').json()['total'] == 0 or \
        'auth' not in [j['name'] for j in service.get('/api/v1/jobs?limit=1000').json()['jobs']]


def test_startup_refusals(tmp_path):
    config = write_config(tmp_path)
    loose = write_token(tmp_path, 0o644, 'loose-token')[1]
    cases = [(['--token-file', str(loose)], 'chmod 600 %s' % loose),
             (['--bind', '0.0.0.0', '--insecure-no-token'], 'refusing to serve on 0.0.0.0 without a token'),
             ([], 'no API token')]
    for args, message in cases:
        proc = subprocess.run([sys.executable, '-m', 'xuanwu.cli', '--config', str(config), 'serve', '--port', '1']
                              + args, capture_output=True, text=True, env=server_env(), timeout=60, check=False)
        assert proc.returncode == 4 and message in proc.stderr, (args, proc.returncode, proc.stderr)


@pytest.mark.parametrize('body, status, expect', [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_hostile_bodies(service, body, status, expect):
    resp = requests.post(service.base + '/api/v1/jobs', data=body, timeout=30,
                         headers=dict(service.headers, **{'Content-Type': 'application/json'}))
    assert resp.status_code == status, resp.text
    assert expect in resp.json()['detail'] and 'Traceback' not in resp.text


@pytest.mark.parametrize('body, field', [
    ({'output_dir': '/tmp/elsewhere', 'task_list': [{'task_id': 't', 'params': _job('t')}]}, 'output_dir'),
    ({'output_dir': '../../x', 'task_list': [{'task_id': 't', 'params': _job('t')}]}, 'output_dir'),
    ({'output_dir': 'o', 'input_dir': '/etc', 'task_list': [{'task_id': 't', 'params': _job('t')}]}, 'input_dir'),
    ({'output_dir': 'o', 'task_list': [{'task_id': '../t', 'params': _job('t')}]}, 'task_list[0].task_id'),
    ({'output_dir': 'o', 'task_list': [{'task_id': 't', 'params': dict(_job('t'), playbook='nope')}]},
     'task_list[0].params.playbook'),
    ({'output_dir': 'o', 'retry_count': 10 ** 30, 'task_list': [{'task_id': 't', 'params': _job('t')}]}, 'retry_count'),
], ids=['absolute-output', 'dotdot-output', 'absolute-input', 'task-id-path', 'task-playbook', 'huge-retry'])
def test_hostile_batches(service, body, field):
    resp = service.post('/api/v1/batches', body)
    assert resp.status_code == 422 and resp.json()['field'] == field, resp.text


def test_oversized_body(service):
    resp = requests.post(service.base + '/api/v1/jobs', data=b'{"name": "' + b'x' * (65 * 1024) + b'"}', timeout=30,
                         headers=dict(service.headers, **{'Content-Type': 'application/json'}))
    assert resp.status_code == 413 and '65536' in resp.json()['detail']


def test_200_concurrent_submissions_never_more_than_4_running(service):
    body = {'name': 'concurrent', 'command': 'true', 'nodes': ['localhost'], 'timeout_sec': 120}
    ids, errors = [], []

    def submit():
        try:
            ids.append(service.submit(body))
        except Exception as exc:  # pylint: disable=broad-except
            errors.append(repr(exc))
    threads = [threading.Thread(target=submit) for dummy in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(set(ids)) == 200
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        listed = service.get('/api/v1/jobs?limit=1000').json()['jobs']
        mine = [j for j in listed if j['id'] in set(ids)]
        if len(mine) == 200 and all(j['status'] in ('succeeded', 'failed', 'cancelled') for j in mine):
            break
        time.sleep(0.5)
    assert len(mine) == 200
    assert sorted(set(j['status'] for j in mine)) == ['succeeded'], [j for j in mine if j['status'] != 'succeeded'][:2]
    edges = sorted([(j['started'], 1) for j in mine] + [(j['finished'], -1) for j in mine], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for dummy, step in edges:
        running += step
        peak = max(peak, running)
    assert 2 <= peak <= 4, peak   # jobs did run side by side, never more than max_concurrency


def _sse(service, job_id, sink):
    with requests.get('%s/api/v1/jobs/%s/events' % (service.base, job_id), headers=service.headers, stream=True,
                      timeout=120) as resp:
        sink.append(resp.headers['Content-Type'])
        for line in resp.iter_lines(decode_unicode=True):
            if line.startswith('data: '):
                sink.append(json.loads(line[len('data: '):]))


def test_cancel_kills_the_process_tree(service, tmp_path):
    pid_file = tmp_path / 'sleep.pid'
    job_id = service.submit(_job('cancel-me', 'sleep', sleep_sec=300, pid_file=str(pid_file)))
    events = []
    stream = threading.Thread(target=_sse, args=(service, job_id, events))
    stream.start()
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, service.job(job_id)
        time.sleep(0.1)
    job = service.job(job_id)
    pgid, shell = job['pgid'], int(pid_file.read_text())
    assert job['status'] == 'running'
    os.kill(shell, 0)   # the play's shell runs
    resp = service.post('/api/v1/jobs/%s/cancel' % job_id)
    assert resp.status_code == 202, resp.text
    assert service.wait(job_id)['status'] == 'cancelled'
    assert wait_gone(os.killpg, pgid), 'the recorded process group %d lives on' % pgid
    # the play's shell (ansible-runner gives ansible-playbook a session of its own)
    assert wait_gone(os.kill, shell), 'the play\'s shell %d lives on' % shell
    stream.join(30)
    assert not stream.is_alive(), 'the event stream did not end at the final state'
    assert events[0].startswith('text/event-stream')
    states = [e['status'] for e in events[1:] if e['type'] == 'state']
    assert states[-1] == 'cancelled' and 'running' in states
    assert service.post('/api/v1/jobs/%s/cancel' % job_id).status_code == 409


def test_event_stream_of_a_job(service):
    job_id = service.submit(_job('streamed'))
    events = []
    _sse(service, job_id, events)
    ansible = [e['event'] for e in events[1:] if e['type'] == 'ansible']
    assert 'playbook_on_start' in ansible and 'playbook_on_stats' in ansible, events
    assert events[-1]['type'] == 'state' and events[-1]['status'] == 'succeeded'


def test_batch_retries_transient_failures_only(service, tmp_path):
    """Command jobs on localhost: 'flaky' exits 255 printing "Connection refused" on its first two runs, then passes;
    'broken' fails for good (exit 3). A command's own exit status is the user's: it is retried only because the batch
    names 255 in the task's retry_on_exit_codes (without it, tests/unit/service/test_failure_classes.py: permanent, run once)."""
    counter = tmp_path / 'flaky-count'
    flaky = ('n=$(cat %s 2>/dev/null || echo 0); n=$((n + 1)); echo $n > %s; '
             '[ $n -gt 2 ] || { echo "ssh: connect to host node7 port 22: Connection refused" >&2; exit 255; }'
             % (counter, counter))
    body = {'output_dir': 'retry-%d' % os.getpid(), 'max_concurrency': 2, 'retry_count': 2, 'timeout_sec': 120,
            'task_list': [{'task_id': 'flaky', 'params': {'command': flaky, 'nodes': ['localhost'], 'retry_on_exit_codes': [255]}},
                          {'task_id': 'broken', 'params': {'command': 'exit 3', 'nodes': ['localhost']}}]}
    resp = service.post('/api/v1/batches', body)
    assert resp.status_code == 201, resp.text
    batch_id = resp.json()['batch_id']
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        batch = service.get('/api/v1/batches/%s' % batch_id).json()
        if batch['status'] != 'running':
            break
        time.sleep(0.3)
    jobs = {j['task_id']: service.job(j['id']) for j in batch['jobs']}
    assert jobs['flaky']['status'] == 'succeeded' and jobs['flaky']['attempts'] == 3, jobs['flaky']
    assert [a['error_class'] for a in jobs['flaky']['attempt_list']][:2] == ['transient', 'transient']
    assert jobs['broken']['status'] == 'failed' and jobs['broken']['attempts'] == 1
    assert jobs['broken']['error_class'] == 'permanent'
    assert counter.read_text().strip() == '3'
    summary = json.loads(open(os.path.join(resp.json()['output_dir'], 'summary.json')).read())
    assert {t['task_id']: t['status'] for t in summary['tasks']} == {'flaky': 'succeeded', 'broken': 'failed'}


def test_metrics_count_the_jobs_and_webhooks_are_signed(service):
    job_id = service.submit(_job('observed'))
    service.wait(job_id)
    text = service.get('/metrics').text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    for state in ('queued', 'running', 'succeeded', 'failed', 'cancelled'):
        total = service.get('/api/v1/jobs?limit=1&status=%s' % state).json()['total']
        assert samples[('xuanwu_jobs', (('state', state),))] == total, state
    finished = sum(samples[('xuanwu_jobs_finished_total', (('state', s),))] for s in ('succeeded', 'failed', 'cancelled'))
    assert samples[('xuanwu_job_duration_seconds_count', ())] == finished >= 1
    assert samples[('xuanwu_job_attempts_total', ())] >= finished
    deadline = time.monotonic() + 30
    while job_id not in [json.loads(item[2])['job']['id'] for item in Receiver.received]:
        assert time.monotonic() < deadline, 'no webhook for %s' % job_id
        time.sleep(0.1)
    for signature, stamp, body in Receiver.received:
        expected = 'sha256=' + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(signature, expected)
        assert json.loads(body)['sent_at'] == int(stamp)


FIELD_GUIDE_CLIENT = '''
import requests, time
BASE_URL = "{base}"; TOKEN = "{token}"
def submit_job(job_config: dict) -> str:
    headers = {{"Authorization": f"Bearer {{TOKEN}}"}}
    resp = requests.post(f"{{BASE_URL}}/api/v1/jobs", json=job_config, headers=headers, timeout=30)
    resp.raise_for_status(); return resp.json()["job_id"]
def query_job(job_id: str) -> dict:
    headers = {{"Authorization": f"Bearer {{TOKEN}}"}}
    resp = requests.get(f"{{BASE_URL}}/api/v1/jobs/{{job_id}}", headers=headers, timeout=30)
    resp.raise_for_status(); return resp.json()
config = {{"name": "test-job", "command": "python train.py --max-steps 100",
          "nodes": {nodes}, "timeout_sec": 1800}}
job_id = submit_job(config)
while True:
    status = query_job(job_id)
    if status.get("status") in ("succeeded", "failed", "cancelled"): break
    time.sleep(0.2)
print(job_id, status["status"])
'''


def test_field_guide_client(tmp_path):
    """§6's client as written (BASE_URL and TOKEN filled in, a short sleep) against a service whose scheduler
    is Slurm: the job runs through srun on the two nodes of the example (tests/integration/slurm_double.py
    runs each node's task here). The nodes' login shell puts `python` on PATH and starts in a folder
    holding train.py, as on a training node."""
    import slurm_double
    home, work, slurm_bin = tmp_path / 'home', tmp_path / 'work', tmp_path / 'slurm-bin'
    for folder in (home, work, slurm_bin):
        folder.mkdir()
    (home / '.bash_profile').write_text('export PATH=%s:$PATH\ncd %s\n' % (os.path.dirname(sys.executable), work))
    (work / 'train.py').write_text(textwrap.dedent('''\
        import argparse, json, os
        parser = argparse.ArgumentParser()
        parser.add_argument('--max-steps', type=int, required=True)
        args = parser.parse_args()
        with open('trained.jsonl', 'a') as out:
            out.write(json.dumps({'steps': args.max_steps, 'node': os.environ['SLURMD_NODENAME']}) + '\\n')
        '''))
    nodes = ['192.168.1.10', '192.168.1.11']
    slurm_double.install(str(slurm_bin), {node: {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']} for node in nodes})
    svc = start_service(tmp_path, {'scheduler': 'slurm'},
                        env={'HOME': str(home), 'PATH': str(slurm_bin) + os.pathsep + os.environ['PATH']})
    try:
        client = FIELD_GUIDE_CLIENT.format(base=svc.base, token=svc.token, nodes=json.dumps(nodes))
        proc = subprocess.run([sys.executable, '-c', client], capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        job_id, status = proc.stdout.split()
        job = svc.job(job_id)
        assert status == 'succeeded', job
        trained = sorted((json.loads(line)['node'], json.loads(line)['steps'])
                         for line in (work / 'trained.jsonl').read_text().splitlines())
        assert trained == [('192.168.1.10', 100), ('192.168.1.11', 100)]
        assert job['kind'] == 'command' and job['info']['mode'] == 'slurm' and job['info']['ran_on'] == nodes
    finally:
        svc.stop()
    assert svc.token not in svc.log()


def test_the_log_of_a_command_job_over_ssh_on_two_nodes_by_node(tmp_path):
    """Two nodes (two sshd on 127.0.0.1, one port each): each node's output is asked for by ?node=; without it the
    service names the nodes; a node the job did not run on is 404."""
    import shutil
    from sshd_server import SSHD, Sshd, keygen
    if SSHD is None or shutil.which('ssh') is None:
        pytest.skip('needs sshd and ssh')
    client_key = keygen(tmp_path / 'client_key')
    (tmp_path / 'authorized_keys').write_text(client_key + '\n')
    known, config, daemons = [], [], []
    try:
        for name in ('node-a', 'node-b'):
            host_key = keygen(tmp_path / ('host_key_%s' % name))
            sshd = Sshd(tmp_path / name, [tmp_path / ('host_key_%s' % name)], tmp_path / 'authorized_keys')
            (tmp_path / name).mkdir()
            daemons.append(sshd.start())
            known.append('[127.0.0.1]:%d %s\n' % (sshd.port, host_key))
            config.append('Host %s\n  HostName 127.0.0.1\n  Port %d\n  IdentityFile %s\n  IdentitiesOnly yes\n'
                          '  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n'
                          % (name, sshd.port, tmp_path / 'client_key', tmp_path / 'known_hosts'))
        (tmp_path / 'known_hosts').write_text(''.join(known))
        (tmp_path / 'ssh_config').write_text(''.join(config))
        svc = start_service(tmp_path, {'ssh_config_file': str(tmp_path / 'ssh_config')})
        try:
            port = '${SSH_CONNECTION##* }'      # the port of the sshd that runs it: one per node
            job_id = svc.submit({'name': 'two-nodes', 'nodes': ['node-a', 'node-b'],
                                 'command': 'echo "out of port %s"; echo "err of %s" >&2' % (port, port)})
            job = svc.wait(job_id)
            assert (job['status'], job['info']['mode']) == ('succeeded', 'ssh')
            assert job['info']['ran_on'] == ['node-a', 'node-b']
            for name, sshd in zip(('node-a', 'node-b'), daemons):
                out = svc.get('/api/v1/jobs/%s/log' % job_id, params={'node': name})
                assert out.status_code == 200 and out.text == 'out of port %d\n' % sshd.port, out.text
                assert out.headers['X-Log-Node'] == name and out.headers['X-Log-Attempt'] == '1'
                err = svc.get('/api/v1/jobs/%s/log' % job_id, params={'node': name, 'stream': 'stderr'})
                assert err.text.endswith('err of %d\n' % sshd.port), err.text
            unnamed = svc.get('/api/v1/jobs/%s/log' % job_id)
            assert unnamed.status_code == 422 and unnamed.json()['nodes'] == ['node-a', 'node-b'], unnamed.text
            assert 'ran on 2 nodes: node-a, node-b' in unnamed.json()['detail']
            unknown = svc.get('/api/v1/jobs/%s/log' % job_id, params={'node': '../attempt.json'})
            assert unknown.status_code == 404 and "no node '../attempt.json'" in unknown.json()['detail'], unknown.text
        finally:
            svc.stop()
    finally:
        for sshd in daemons:
            sshd.stop()
    assert 'Traceback' not in svc.log()


def _cli(service, *argv, token_file=None):
    server = ['--server', service.base, '--token-file', str(token_file or service.token_file)]
    return subprocess.run([sys.executable, '-m', 'xuanwu.cli', argv[0]] + server + list(argv[1:]), capture_output=True,
                          text=True, env=server_env(), timeout=120, check=False)


def test_cli_against_the_service(service, tmp_path):
    """xuanwu run/jobs/show/cancel --server URL --token-file F: the local commands' output and exit codes."""
    done = _cli(service, 'run', '--command', 'true', '--nodes', 'localhost', '--name', 'cli-remote', '--json')
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert job['status'] == 'succeeded' and job['name'] == 'cli-remote'
    listed = _cli(service, 'jobs', '--status', 'succeeded', '--limit', '1000')
    assert listed.returncode == 0 and job['id'] in listed.stdout
    shown = _cli(service, 'show', job['id'])
    assert shown.returncode == 0 and shown.stdout.startswith('job %s (cli-remote, command): succeeded' % job['id'])
    sleeper = service.submit({'name': 'cli-cancel', 'command': 'sleep 300', 'nodes': ['localhost']})
    cancelled = _cli(service, 'cancel', sleeper)
    assert cancelled.returncode == 0 and 'cancelled' in cancelled.stdout
    assert service.wait(sleeper)['status'] == 'cancelled'
    again = _cli(service, 'cancel', sleeper)
    assert again.returncode == 1 and 'already cancelled' in again.stderr
    bad = _cli(service, 'run', '--playbook', 'nope', '--inventory', INVENTORY)
    assert bad.returncode == 4 and '422' in bad.stderr and 'playbook' in bad.stderr
    wrong = write_token(tmp_path, 0o600, 'wrong-token')[1]
    refused = _cli(service, 'jobs', token_file=wrong)
    assert refused.returncode == 4 and 'refused the token' in refused.stderr and service.token not in refused.stderr


def test_tls(tmp_path, monkeypatch):
    """--tls-cert/--tls-key: HTTPS with a certificate for 127.0.0.1; plain HTTP gets no answer; the CLI
    verifies the certificate with --ca-cert."""
    cert, key = tmp_path / 'cert.pem', tmp_path / 'key.pem'
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
                    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', str(key), '-out', str(cert)],
                   check=True, capture_output=True, timeout=60)
    config = write_config(tmp_path)
    token, token_file = write_token(tmp_path)
    svc = Service(tmp_path, config, token, token_file, args=['--tls-cert', str(cert), '--tls-key', str(key)])
    svc.base = svc.base.replace('http://', 'https://')
    monkeypatch.setenv('REQUESTS_CA_BUNDLE', str(cert))     # the helper's requests trust the test's certificate
    try:
        svc.start()
        assert svc.get('/api/v1/jobs').status_code == 200
        untrusting = requests.Session()
        untrusting.trust_env = False
        with pytest.raises(requests.exceptions.SSLError):
            untrusting.get(svc.base + '/health', timeout=10)
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(svc.base.replace('https://', 'http://') + '/health', timeout=10)
        listed = subprocess.run([sys.executable, '-m', 'xuanwu.cli', 'jobs', '--server', svc.base, '--token-file',
                                 str(token_file), '--ca-cert', str(cert)], capture_output=True, text=True,
                                env=server_env(), timeout=60, check=False)
        assert listed.returncode == 0 and listed.stdout.strip() == 'no jobs', listed.stderr
    finally:
        svc.stop()


def test_cli_run_interrupted_cancels_the_job_on_the_service(service):
    proc = subprocess.Popen([sys.executable, '-m', 'xuanwu.cli', 'run', '--server', service.base, '--token-file',
                             str(service.token_file), '--command', 'sleep 300', '--nodes', 'localhost', '--name',
                             'cli-interrupted'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=server_env(), preexec_fn=interruptible)
    deadline = time.monotonic() + 60
    while not [j for j in service.get('/api/v1/jobs?status=running').json()['jobs'] if j['name'] == 'cli-interrupted']:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert 'cancelling job' in err and ': cancelled' in out.splitlines()[0]
