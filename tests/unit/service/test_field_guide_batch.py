"""The field guide's batch (§6) through the API with its own field names, the only addition being the batch's
command template; the batch's own limit held with more tasks than it; one task per file of input_dir; the
log endpoint; batch cancel; retry_count on a single job. A real executor behind a real uvicorn."""
import json
import os
import socket
import sys
import threading
import time

import pytest
import requests
import uvicorn

from real_jobs import INVENTORY, config, overlap, pid_alive, read_pid, wait_for
from xuanwu.runner import Executor
from xuanwu.server import create_app
from xuanwu.store import Store

TOKEN = 'field-guide-batch-token-0123456789'
AUTH = {'Authorization': 'Bearer ' + TOKEN}
# §6 of the field guide, as printed
GUIDE_BATCH = {
    "input_dir": "./inputs",
    "output_dir": "./outputs",
    "max_concurrency": 4,
    "retry_count": 2,
    "timeout_sec": 3600,
    "task_list": [
        {"task_id": "task-001", "params": {"model": "small", "steps": 100}},
        {"task_id": "task-002", "params": {"model": "small", "steps": 200}}
    ]
}
TRAIN = '''import json, os, sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
start = time.time()
time.sleep(float(os.environ.get("XUANWU_PARAM_SLEEP", "0")))
out = os.environ["XUANWU_OUTPUT_DIR"]
with open(os.path.join(out, "trained.json"), "w") as handle:
    json.dump({"args": args, "model_env": os.environ.get("XUANWU_PARAM_MODEL"), "start": start, "end": time.time(),
               "cwd": os.getcwd()}, handle)
print("trained", args.get("--model"), args.get("--steps"))
'''


@pytest.fixture
def service(tmp_path):
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    executor = Executor(cfg, store, 4, serve_all=True)
    app = create_app(cfg, store, executor, TOKEN)
    batches = cfg.data_dir / 'batches'
    batches.mkdir(parents=True, exist_ok=True)
    (batches / 'train.py').write_text(TRAIN)
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, kwargs={'sockets': [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield {'base': 'http://127.0.0.1:%d' % sock.getsockname()[1], 'store': store, 'batches': batches,
           'executor': executor}
    server.should_exit = True
    thread.join(10)
    executor.shutdown()


def _post(service, path, body):
    return requests.post(service['base'] + path, json=body, headers=AUTH, timeout=10)


def _final_batch(service, batch_id, timeout=30):
    def final():
        batch = requests.get('%s/api/v1/batches/%s' % (service['base'], batch_id), headers=AUTH, timeout=10).json()
        return batch if batch['status'] in ('succeeded', 'failed', 'cancelled') else None
    return wait_for(final, timeout=timeout, what='batch %s to end' % batch_id)


def test_the_field_guides_batch_runs_with_a_command_template(service):
    body = dict(GUIDE_BATCH, command='%s train.py --model {model} --steps {steps}' % sys.executable)
    resp = _post(service, '/api/v1/batches', body)
    assert resp.status_code == 201, resp.text
    batch = _final_batch(service, resp.json()['batch_id'])
    assert batch['status'] == 'succeeded', batch
    summary = batch['summary']
    assert [(t['task_id'], t['status'], t['attempts']) for t in summary['tasks']] == [
        ('task-001', 'succeeded', 1), ('task-002', 'succeeded', 1)]
    outputs = service['batches'] / 'outputs'
    trained = json.loads((outputs / 'task-002' / 'trained.json').read_text())
    assert trained['args'] == {'--model': 'small', '--steps': '200'} and trained['model_env'] == 'small'
    assert trained['cwd'] == str(service['batches'])
    assert (outputs / 'task-001' / 'attempt-1' / 'stdout.txt').read_text() == 'trained small 100\n'
    assert json.loads((outputs / 'summary.json').read_text())['status'] == 'succeeded'


def test_a_batch_with_more_tasks_than_its_limit_never_runs_more_at_once(service):
    tasks = [{'task_id': 't%d' % i, 'params': {'model': 'm', 'steps': i, 'sleep': 0.3}} for i in range(5)]
    body = {'output_dir': 'limited', 'max_concurrency': 2, 'task_list': tasks,
            'command': '%s train.py --model {model} --steps {steps}' % sys.executable}
    batch = _final_batch(service, _post(service, '/api/v1/batches', body).json()['batch_id'])
    assert batch['status'] == 'succeeded'
    spans = [(r['start'], r['end']) for r in (json.loads((service['batches'] / 'limited' / t['task_id'] /
                                                          'trained.json').read_text()) for t in tasks)]
    assert overlap(spans) == 2      # the batch's limit, below the service's 4, held and used


def test_one_task_per_file_of_input_dir(service):
    inputs = service['batches'] / 'files'
    inputs.mkdir()
    for name in ('a.txt', 'b.txt'):
        (inputs / name).write_text(name.upper())
    body = {'input_dir': 'files', 'output_dir': 'per-file', 'command': 'cp {input_file} done-{input_name}'}
    batch = _final_batch(service, _post(service, '/api/v1/batches', body).json()['batch_id'])
    assert batch['status'] == 'succeeded' and [t['task_id'] for t in batch['summary']['tasks']] == ['a.txt', 'b.txt']
    assert (service['batches'] / 'done-b.txt').read_text() == 'B.TXT'


def test_the_log_endpoint_reads_ranges_and_tails(service):
    job_id = _post(service, '/api/v1/jobs', {'name': 'log', 'nodes': ['localhost'],
                                             'command': 'for i in 1 2 3; do echo line-$i; done'}).json()['job_id']
    wait_for(lambda: service['store'].get_job(job_id)['status'] == 'succeeded', what='the job')
    url = '%s/api/v1/jobs/%s/log' % (service['base'], job_id)
    whole = requests.get(url, headers=AUTH, timeout=10)
    assert whole.text == 'line-1\nline-2\nline-3\n' and whole.headers['X-Log-Size'] == '21'
    assert requests.get(url, params={'tail': 7}, headers=AUTH, timeout=10).text == 'line-3\n'
    part = requests.get(url, params={'offset': 7, 'length': 6}, headers=AUTH, timeout=10)
    assert part.text == 'line-2' and part.headers['X-Log-Offset'] == '7'
    assert requests.get(url, params={'attempt': 9}, headers=AUTH, timeout=10).status_code == 404
    assert requests.get(url, params={'offset': 1, 'tail': 1}, headers=AUTH, timeout=10).status_code == 422
    assert requests.get(url, timeout=10).status_code == 401


def test_batch_cancel_stops_running_tasks_and_starts_no_other(service, tmp_path):
    body = {'output_dir': 'cancelled', 'max_concurrency': 1,
            'command': 'sh -c "echo $$ > %s/{task}.pid; exec sleep 60"' % tmp_path,
            'task_list': [{'task_id': 't%d' % i, 'params': {'task': 't%d' % i}} for i in range(3)]}
    batch_id = _post(service, '/api/v1/batches', body).json()['batch_id']
    pid = read_pid(tmp_path / 't0.pid')
    resp = requests.post('%s/api/v1/batches/%s/cancel' % (service['base'], batch_id), headers=AUTH, timeout=30)
    assert resp.status_code == 202, resp.text
    batch = _final_batch(service, batch_id)
    assert batch['status'] == 'cancelled'
    assert [(t['task_id'], t['status']) for t in batch['summary']['tasks']] == [
        ('t0', 'cancelled'), ('t1', 'cancelled'), ('t2', 'cancelled')]
    assert not pid_alive(pid) and not (tmp_path / 't1.pid').exists()
    again = requests.post('%s/api/v1/batches/%s/cancel' % (service['base'], batch_id), headers=AUTH, timeout=10)
    assert again.status_code == 409


def test_retry_count_on_a_single_job(service):
    job_id = _post(service, '/api/v1/jobs', {'name': 'retry', 'nodes': ['localhost'], 'command': 'exit 7',
                                             'retry_count': 1, 'retry_on_exit_codes': [7]}).json()['job_id']

    def failed():
        job = service['store'].get_job(job_id)
        return job if job['status'] == 'failed' else None
    job = wait_for(failed, what='the job to fail')
    assert job['attempts'] == 2 and job['max_attempts'] == 2


def test_guide_batch_refusals_name_the_field(service):
    for body, field in ((dict(GUIDE_BATCH), 'task_list[0].params.playbook'),
                        (dict(GUIDE_BATCH, command='train {model} {missing}'), 'task_list[0].params.missing'),
                        (dict(GUIDE_BATCH, command='train {model}', input_dir='/etc'), 'input_dir')):
        resp = _post(service, '/api/v1/batches', body)
        assert resp.status_code == 422 and resp.json()['field'] == field, resp.text
    assert not os.path.exists(service['batches'] / 'outputs')


def test_the_guides_batch_as_printed_is_refused_with_how_to_write_it_here(service):
    # its params are neither a playbook job nor a command job: the answer says how our format runs them
    resp = _post(service, '/api/v1/batches', GUIDE_BATCH)
    assert resp.status_code == 422 and resp.json()['field'] == 'task_list[0].params.playbook', resp.text
    detail = resp.json()['detail']
    assert 'give the batch a command template' in detail, detail
    assert '"command": "python3 train.py --model {model} --steps {steps}"' in detail, detail
    assert 'docs/jobs.md' in detail
    # and that is the fix: the same batch with that key (its program this test's own) runs
    fixed = dict(GUIDE_BATCH, command='%s train.py --model {model} --steps {steps}' % sys.executable)
    resp = _post(service, '/api/v1/batches', fixed)
    assert resp.status_code == 201, resp.text
    assert _final_batch(service, resp.json()['batch_id'])['status'] == 'succeeded'


def test_secret_values_a_playbook_prints_are_masked_in_its_log_events_and_error(service, tmp_path):
    playbook = tmp_path / 'leaky.yml'
    playbook.write_text('- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n'
                        '    - ansible.builtin.debug: {msg: "the key is {{ api_key }}"}\n'
                        '    - ansible.builtin.fail: {msg: "failed with {{ api_key }}"}\n')
    service['executor'].config.playbooks['t-leaky'] = str(playbook)
    events = []
    service['executor'].on_event(lambda job_id, event: events.append(json.dumps(event, default=str)))
    job_id = _post(service, '/api/v1/jobs', {'name': 'leaky', 'playbook': 't-leaky', 'inventory': INVENTORY,
                                             'extra_vars': {'api_key': 'k-0123456789-secret'}}).json()['job_id']

    def failed():
        job = requests.get('%s/api/v1/jobs/%s' % (service['base'], job_id), headers=AUTH, timeout=10).json()
        return job if job['status'] == 'failed' else None
    job = wait_for(failed, what='the job')
    log = requests.get('%s/api/v1/jobs/%s/log' % (service['base'], job_id), headers=AUTH, timeout=10).text
    assert 'the key is ***' in log and 'k-0123456789-secret' not in log
    assert 'failed with ***' in job['error'] and 'k-0123456789-secret' not in json.dumps(job)
    assert job['spec']['extra_vars'] == {'api_key': '***'}
    assert any('the key is ***' in e for e in events) and not any('k-0123456789-secret' in e for e in events)


def test_a_task_that_leaves_a_fifo_and_a_socket_in_its_folder_still_ends_the_batch(service):
    # reading a FIFO blocks until someone writes it: copying the task's folder must not open it
    leave = "import os, socket; os.mkfifo('left.fifo'); socket.socket(socket.AF_UNIX).bind('left.sock')"
    # a task's own command runs in its attempt's folder, which the summary copies into output_dir/<task_id>/
    body = {'output_dir': 'odd-files', 'task_list': [{'task_id': 't1', 'params': {
        'name': 't1', 'nodes': ['localhost'], 'command': '%s -c "%s"' % (sys.executable, leave)}}]}
    batch = _final_batch(service, _post(service, '/api/v1/batches', body).json()['batch_id'])
    assert batch['status'] == 'succeeded', batch
    record = json.loads((service['batches'] / 'odd-files' / 't1' / 'job.json').read_text())
    assert record['not_copied'] == ['attempt-1/left.fifo (a FIFO)', 'attempt-1/left.sock (a Unix socket)']
    assert json.loads((service['batches'] / 'odd-files' / 'summary.json').read_text())['status'] == 'succeeded'


def test_an_input_file_named_like_the_summary_is_a_task_of_another_id(service):
    inputs = service['batches'] / 'named'
    inputs.mkdir()
    for name in ('summary.json', 'a.txt'):
        (inputs / name).write_text(name)
    body = {'input_dir': 'named', 'output_dir': 'named-out', 'command': 'cp {input_file} {input_name}.copy'}
    batch = _final_batch(service, _post(service, '/api/v1/batches', body).json()['batch_id'])
    assert batch['status'] == 'succeeded', batch
    assert [t['task_id'] for t in batch['summary']['tasks']] == ['a.txt', 'summary.json-2']
    summary = json.loads((service['batches'] / 'named-out' / 'summary.json').read_text())
    assert summary['status'] == 'succeeded' and len(summary['tasks']) == 2


def test_a_second_batch_into_an_output_dir_a_running_one_writes_is_refused(service):
    slow = {'output_dir': 'same', 'task_list': [{'task_id': 't1', 'params': {}}],
            'command': '%s -c "import time; time.sleep(2)"' % sys.executable}
    first = _post(service, '/api/v1/batches', slow)
    assert first.status_code == 201
    first_id = first.json()['batch_id']
    second = _post(service, '/api/v1/batches', dict(slow, task_list=[{'task_id': 'other', 'params': {}}]))
    assert second.status_code == 409 and second.json()['field'] == 'output_dir'
    assert 'is being written by batch %s (running)' % first_id in second.json()['detail']
    batch = _final_batch(service, first_id)
    assert batch['status'] == 'succeeded' and [t['task_id'] for t in batch['summary']['tasks']] == ['t1']
    assert not (service['batches'] / 'same' / 'other').exists()
    # once it has ended, the folder may be written again (a new run of the same batch)
    assert _post(service, '/api/v1/batches', slow).status_code == 201


def test_a_secret_named_template_parameter_is_masked_in_every_record(service):
    secret = 'hunter2-s3cret-value'
    body = {'output_dir': 'secret-param', 'command': '%s -c "import sys; sys.exit(0)" {db_password}' % sys.executable,
            'task_list': [{'task_id': 't1', 'params': {'db_password': secret}}]}
    batch_id = _post(service, '/api/v1/batches', body).json()['batch_id']
    batch = _final_batch(service, batch_id)
    assert batch['status'] == 'succeeded', batch
    job_id = batch['summary']['tasks'][0]['job_id']
    job = requests.get('%s/api/v1/jobs/%s' % (service['base'], job_id), headers=AUTH, timeout=10).json()
    shown = json.dumps(job) + json.dumps(batch)
    shown += (service['batches'] / 'secret-param' / 'summary.json').read_text()
    shown += (service['batches'] / 'secret-param' / 't1' / 'job.json').read_text()
    assert secret not in shown
    assert '***' in json.dumps(job['spec']['argv']) and '***' in job['spec']['command']
