"""The HTTP API of xuanwu.server on a real uvicorn on 127.0.0.1, with the real store and an executor
double (tests/integration/test_service_*.py run the real executor and the `xuanwu serve` process)."""
import hashlib
import hmac
import http.server
import json
import os
import select
import socket
import threading
import time

import pytest
import requests
import uvicorn

from executor_double import ExecutorDouble
from service_cases import GOOD, HOSTILE
from xuanwu.config import Config
from xuanwu.metrics import Metrics
from xuanwu.server import create_app
from xuanwu.store import Store
from xuanwu.webhooks import Notifier

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOKEN = 'unit-test-token-0123456789abcdef'
AUTH = {'Authorization': 'Bearer ' + TOKEN}
LIMIT = 16384


class Receiver(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers['Content-Length']))
        Receiver.received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def _free_socket():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    return sock


@pytest.fixture(scope='module')
def service(tmp_path_factory):
    data = tmp_path_factory.mktemp('data')
    receiver = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    config = Config(project_root=ROOT, data_dir=data)
    store = Store(data / 'jobs.db')
    executor = ExecutorDouble(store)
    secret = b'webhook-secret-for-unit-tests'
    notifier = Notifier(secret, 'http://127.0.0.1:%d/hook' % receiver.server_address[1], backoff=0.05)
    app = create_app(config, store, executor, TOKEN, body_limit=LIMIT, notifier=notifier, metrics=Metrics())
    sock = _free_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, kwargs={'sockets': [sock]}, daemon=True)
    thread.start()
    base = 'http://127.0.0.1:%d' % sock.getsockname()[1]
    for dummy in range(200):
        if server.started:
            break
        time.sleep(0.05)
    yield {'base': base, 'store': store, 'executor': executor, 'secret': secret}
    server.should_exit = True
    thread.join(10)
    notifier.close()
    receiver.shutdown()


def _wait_final(base, job_id, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = requests.get('%s/api/v1/jobs/%s' % (base, job_id), headers=AUTH, timeout=10).json()
        if job['status'] in ('succeeded', 'failed', 'cancelled'):
            return job
        time.sleep(0.05)
    raise AssertionError('job %s not final after %ss' % (job_id, timeout))


def test_health_needs_no_token(service):
    resp = requests.get(service['base'] + '/health', timeout=10)
    assert resp.status_code == 200 and resp.json() == {'status': 'ok'}


@pytest.mark.parametrize('headers, query, status', [
    ({}, '', 401),
    ({'Authorization': 'Bearer wrong-token-0123456789abcdef'}, '', 401),
    ({'Authorization': 'Bearer ' + TOKEN[:-1]}, '', 401),
    ({'Authorization': 'Basic ' + TOKEN}, '', 401),
    ({'Authorization': TOKEN}, '', 401),
    ({}, '?token=' + TOKEN, 400),
    (AUTH, '?access_token=' + TOKEN, 400),
], ids=['none', 'wrong', 'prefix', 'basic', 'no-scheme', 'query', 'query-with-header'])
@pytest.mark.parametrize('method, path', [('GET', '/api/v1/jobs'), ('POST', '/api/v1/jobs'), ('GET', '/metrics'),
                                          ('GET', '/api/v1/jobs/j-000000000000/events')])
def test_auth_refused(service, headers, query, status, method, path):
    before = len(service['executor'].submitted)
    resp = requests.request(method, service['base'] + path + query, headers=headers, json=GOOD, timeout=10)
    assert resp.status_code == status, resp.text
    assert TOKEN not in resp.text
    assert ('Authorization header' in resp.json()['detail']) if status == 400 else resp.headers['WWW-Authenticate'] == 'Bearer'
    assert len(service['executor'].submitted) == before


@pytest.mark.parametrize('body, status, expect', [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_hostile_job_bodies(service, body, status, expect):
    before = len(service['executor'].submitted)
    resp = requests.post(service['base'] + '/api/v1/jobs', data=body, timeout=10,
                         headers=dict(AUTH, **{'Content-Type': 'application/json'}))
    assert resp.status_code == status, resp.text
    assert expect in resp.json()['detail'], resp.text
    assert 'Traceback' not in resp.text
    assert len(service['executor'].submitted) == before


def test_oversized_body_refused_by_length(service):
    resp = requests.post(service['base'] + '/api/v1/jobs', data=b'{' + b' ' * (LIMIT * 4) + b'}', headers=AUTH,
                         timeout=10)
    assert resp.status_code == 413 and 'limit of %d bytes' % LIMIT in resp.json()['detail']


def test_oversized_chunked_body_refused_without_reading_it_all(service):
    """A chunked body (no Content-Length): the 413 comes once the limit is passed, while the client could
    still send 10 MiB more."""
    host, port = service['base'][len('http://'):].split(':')
    sent = 0
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(('POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n'
                      'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n' % TOKEN).encode())
        answer = b''
        while sent < 10 * 1024 * 1024:
            try:
                sock.sendall(b'400\r\n' + b' ' * 1024 + b'\r\n')
            except OSError:
                break
            sent += 1024
            if select.select([sock], [], [], 0)[0]:
                answer = sock.recv(65536)
                break
    assert answer.startswith(b'HTTP/1.1 413'), answer[:200]
    # The answer came while 10 MiB were still to send (socket buffers hold some of what was sent unread).
    assert sent < 10 * 1024 * 1024


@pytest.mark.parametrize('query, field', [('?status=bogus', 'status'), ('?limit=0', 'limit'), ('?limit=x', 'limit'),
                                          ('?offset=-1', 'offset'), ('?limit=' + '9' * 400, 'limit')])
def test_list_query_errors_name_the_field(service, query, field):
    resp = requests.get(service['base'] + '/api/v1/jobs' + query, headers=AUTH, timeout=10)
    assert resp.status_code == 422 and resp.json()['field'] == field, resp.text


@pytest.mark.parametrize('path', ['/api/v1/jobs/j-000000000000', '/api/v1/jobs/..%2F..%2Fetc',
                                  '/api/v1/jobs/j-000000000000/events', '/api/v1/batches/b-000000000000'])
def test_unknown_ids_are_404(service, path):
    resp = requests.get(service['base'] + path, headers=AUTH, timeout=10)
    assert resp.status_code == 404 and 'detail' in resp.json()


def _submit(service, body):
    resp = requests.post(service['base'] + '/api/v1/jobs', json=body, headers=AUTH, timeout=10)
    assert resp.status_code == 201, resp.text
    assert resp.json()['status'] == 'queued'
    return resp.json()['job_id']


def test_submit_query_list(service):
    job_id = _submit(service, GOOD)
    job = _wait_final(service['base'], job_id)
    assert job['status'] == 'succeeded' and job['name'] == 'ok-1' and job['attempt_list'][0]['n'] == 1
    listed = requests.get(service['base'] + '/api/v1/jobs?status=succeeded&limit=1000', headers=AUTH, timeout=10).json()
    assert job_id in [j['id'] for j in listed['jobs']] and listed['total'] >= 1


def test_cancel_and_events_stream(service):
    job_id = _submit(service, dict(GOOD, name='hang-1'))
    stream = requests.get('%s/api/v1/jobs/%s/events' % (service['base'], job_id), headers=AUTH, stream=True, timeout=30)
    assert stream.headers['Content-Type'].startswith('text/event-stream')
    while requests.get('%s/api/v1/jobs/%s' % (service['base'], job_id), headers=AUTH, timeout=10).json()['status'] != 'running':
        time.sleep(0.05)
    resp = requests.post('%s/api/v1/jobs/%s/cancel' % (service['base'], job_id), headers=AUTH, timeout=10)
    assert resp.status_code == 202
    events = [json.loads(line[len('data: '):]) for line in stream.iter_lines(decode_unicode=True)
              if line.startswith('data: ')]
    assert [e['status'] for e in events if e['type'] == 'state'] == ['queued', 'running', 'attempt_started', 'cancelled']
    assert any(e['type'] == 'ansible' for e in events)
    again = requests.post('%s/api/v1/jobs/%s/cancel' % (service['base'], job_id), headers=AUTH, timeout=10)
    assert again.status_code == 409 and 'already cancelled' in again.json()['detail']


def test_events_of_a_finished_job_end(service):
    job_id = _submit(service, dict(GOOD, name='fail-1'))
    _wait_final(service['base'], job_id)
    resp = requests.get('%s/api/v1/jobs/%s/events' % (service['base'], job_id), headers=AUTH, timeout=10)
    states = [json.loads(line[6:])['status'] for line in resp.text.splitlines()
              if line.startswith('data: ') and '"type":"state"' in line]
    assert states[-1] == 'failed'


def test_webhook_signed(service):
    Receiver.received.clear()
    job_id = _submit(service, dict(GOOD, name='ok-hook'))
    _wait_final(service['base'], job_id)
    deadline = time.monotonic() + 10
    while not Receiver.received and time.monotonic() < deadline:
        time.sleep(0.05)
    headers, body = Receiver.received[0]
    expected = 'sha256=' + hmac.new(service['secret'], body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers['X-Xuanwu-Signature'], expected)
    payload = json.loads(body)
    assert payload['job']['id'] == job_id and payload['job']['status'] == 'succeeded'
    assert str(payload['sent_at']) == headers['X-Xuanwu-Timestamp']


def test_metrics_count_jobs(service):
    job_id = _submit(service, dict(GOOD, name='ok-metrics'))
    _wait_final(service['base'], job_id)
    text = requests.get(service['base'] + '/metrics', headers=AUTH, timeout=10).text
    values = dict(line.rsplit(' ', 1) for line in text.splitlines() if line and not line.startswith('#'))
    assert int(values['xuanwu_jobs{state="succeeded"}']) == service['store'].count_jobs('succeeded')
    assert int(values['xuanwu_jobs_finished_total{state="succeeded"}']) >= 1
    assert int(values['xuanwu_job_attempts_total']) >= 1
    assert int(values['xuanwu_job_duration_seconds_count']) == int(values['xuanwu_job_duration_seconds_bucket{le="+Inf"}'])


def _recorded_job(service, tmp_path, files, nodes=None, kind='command', mode='ssh'):
    """A finished job in the store whose last attempt's folder holds ``files`` ({name: text})."""
    adir = tmp_path / 'attempt-1'
    adir.mkdir(parents=True)
    for name, text in files.items():
        (adir / name).parent.mkdir(parents=True, exist_ok=True)
        (adir / name).write_text(text)
    spec = {'name': 'ok-recorded', 'command': 'hostname', 'nodes': nodes} if kind == 'command' else \
        {'name': 'ok-recorded', 'playbook': 't-succeed', 'inventory': 'inv'}
    store = service['store']
    job_id = store.create_job(spec, kind, 'ok-recorded')
    store.update_job(job_id, status='succeeded', attempts=1, info={'mode': mode})
    store.add_attempt(job_id, 1, str(adir))
    return job_id


def _log(service, job_id, **params):
    return requests.get('%s/api/v1/jobs/%s/log' % (service['base'], job_id), params=params, headers=AUTH, timeout=10)


def test_the_log_of_a_job_over_ssh_on_two_nodes_is_asked_for_by_node(service, tmp_path):
    job_id = _recorded_job(service, tmp_path, {'stdout-node-a.txt': 'from a\n', 'stdout-node-b.txt': 'from b\n',
                                               'stderr-node-a.txt': '', 'stderr-node-b.txt': 'warning on b\n'},
                           nodes=['node-a', 'node-b'])
    for node in ('node-a', 'node-b'):
        resp = _log(service, job_id, node=node)
        assert resp.status_code == 200 and resp.text == 'from %s\n' % node[-1], resp.text
        assert resp.headers['X-Log-Node'] == node and resp.headers['X-Log-Size'] == '7'
    resp = _log(service, job_id, node='node-b', stream='stderr', tail=8)
    assert (resp.text, resp.headers['X-Log-Node']) == ('ng on b\n', 'node-b')
    # without node: which node's output is meant cannot be guessed; the answer says which there are
    resp = _log(service, job_id)
    assert resp.status_code == 422 and resp.json()['field'] == 'node', resp.text
    assert resp.json()['nodes'] == ['node-a', 'node-b']
    assert 'ran on 2 nodes: node-a, node-b' in resp.json()['detail'] and '?node=' in resp.json()['detail']
    # a node the job did not run on: 404 naming it and the job's nodes; never a path of the request's text
    for node in ('node-c', '../../../etc/passwd', 'node-a.txt', ''):
        resp = _log(service, job_id, node=node)
        assert resp.status_code == 404 and resp.json()['field'] == 'node', resp.text
        assert repr(node) in resp.json()['detail'] and 'its nodes: node-a, node-b' in resp.json()['detail']


def test_the_log_of_a_one_node_job_needs_no_node_and_a_shared_one_takes_none(service, tmp_path):
    single = _recorded_job(service, tmp_path / 'single', {'stdout-gpu-1.txt': 'one\n'}, nodes=['gpu-1'])
    for params in ({}, {'node': 'gpu-1'}):
        resp = _log(service, single, **params)
        assert (resp.status_code, resp.text, resp.headers['X-Log-Node']) == (200, 'one\n', 'gpu-1')
    # Slurm: the nodes' tasks wrote one stdout.txt together; it cannot be split by node
    shared = _recorded_job(service, tmp_path / 'shared', {'stdout.txt': 'on n1\non n2\n'}, nodes=['n1', 'n2'],
                           mode='slurm')
    resp = _log(service, shared)
    assert resp.status_code == 200 and resp.text == 'on n1\non n2\n' and 'X-Log-Node' not in resp.headers
    resp = _log(service, shared, node='n1')
    assert resp.status_code == 422 and 'wrote one stdout together (slurm)' in resp.json()['detail'], resp.text
    playbook = _recorded_job(service, tmp_path / 'playbook', {}, kind='playbook')
    resp = _log(service, playbook, node='n1')
    assert resp.status_code == 404 and 'one output for all its hosts' in resp.json()['detail'], resp.text
