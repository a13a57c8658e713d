"""Batches on real ansible-runner: the field guide's batch file shape, the concurrency limit, retries of
transient failures only, per-task log folders and summary.json."""
import json
import shutil
import signal
import subprocess

import pytest

from jobs_support import INVENTORY, ROOT, cli_argv, env, group_gone, interruptible, load, read_json, wait_for, write_config, xuanwu

pytestmark = [pytest.mark.one_controller,
              pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')]


def _overlap(intervals):
    """The largest number of (start, end) intervals open at one moment."""
    edges = sorted([(span[0], 1) for span in intervals] + [(span[1], -1) for span in intervals])
    most = now = 0
    for edge in edges:
        now += edge[1]
        most = max(most, now)
    return most


def test_ctrl_c_cancels_a_batch_and_still_writes_its_summary(tmp_path):
    config = write_config(tmp_path)
    tasks = [{'task_id': 'task-%d' % n, 'params': {'command': 'echo $$ > %s/pid-%d; exec sleep 60' % (tmp_path, n),
                                                   'nodes': ['localhost']}} for n in range(3)]
    (tmp_path / 'batch.yml').write_text(json.dumps({'output_dir': 'out', 'max_concurrency': 2, 'task_list': tasks}))
    runner = subprocess.Popen(cli_argv(config, 'batch', str(tmp_path / 'batch.yml')), cwd=ROOT, env=env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    try:
        pids = [tmp_path / 'pid-0', tmp_path / 'pid-1']
        wait_for(lambda: all(p.exists() and p.read_text().strip() for p in pids), what='two tasks to start')
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=60)
    finally:
        runner.kill()
    assert runner.returncode == 3, out + err
    summary = read_json(tmp_path / 'out' / 'summary.json')
    assert summary['status'] == 'cancelled'
    assert [(t['task_id'], t['status'], t['attempts']) for t in summary['tasks']] == [
        ('task-0', 'cancelled', 1), ('task-1', 'cancelled', 1), ('task-2', 'cancelled', 0)]
    store = load(config)[1]
    for task in summary['tasks'][:2]:
        assert group_gone(store.get_job(task['job_id'])['pgid'])
    assert not (tmp_path / 'pid-2').exists()


def test_a_batch_retries_transient_failures_only_within_its_concurrency(tmp_path):
    config = write_config(tmp_path)
    (tmp_path / 'inputs').mkdir()
    (tmp_path / 'inputs' / 'data.txt').write_text('input-data\n')
    outputs = tmp_path / 'outputs'
    playbook = {'inventory': INVENTORY}
    batch = {
        'input_dir': './inputs', 'output_dir': './outputs', 'max_concurrency': 2, 'retry_count': 2, 'timeout_sec': 120,
        'task_list': [
            {'task_id': 'task-001', 'params': dict(playbook, playbook='t-succeed', extra_vars={
                'model': 'small', 'steps': 100, 'out_file': str(tmp_path / 'task-001.json')})},
            {'task_id': 'task-002', 'params': dict(playbook, playbook='t-flaky', extra_vars={
                'counter_file': str(outputs / 'task-002' / 'counter'), 'fail_times': 2})},
            {'task_id': 'task-003', 'params': dict(playbook, playbook='t-fail')},
            {'task_id': 'task-004', 'params': {'command': 'cat "$XUANWU_INPUT_DIR/data.txt"', 'nodes': ['localhost']}},
        ]}
    (tmp_path / 'batch.json').write_text(json.dumps(batch))
    done = xuanwu(config, 'batch', str(tmp_path / 'batch.json'), timeout=240)
    assert done.returncode == 2, done.stdout + done.stderr        # task-003 failed
    summary = read_json(outputs / 'summary.json')
    tasks = dict((t['task_id'], t) for t in summary['tasks'])
    assert [t['task_id'] for t in summary['tasks']] == ['task-001', 'task-002', 'task-003', 'task-004']
    assert dict((k, (t['status'], t['attempts'], t['error_class'])) for k, t in tasks.items()) == {
        'task-001': ('succeeded', 1, None),
        'task-002': ('succeeded', 3, None),         # unreachable twice (transient), then passed
        'task-003': ('failed', 1, 'permanent'),     # a failed task is not retried
        'task-004': ('succeeded', 1, None)}
    assert summary['status'] == 'failed' and summary['counts'] == {'succeeded': 3, 'failed': 1, 'cancelled': 0}
    assert 'the test playbook fails on purpose' in tasks['task-003']['error']
    assert (outputs / 'task-002' / 'counter').read_text().strip() == '3'
    # the task's params reached the playbook, the input folder the playbook and the command
    assert read_json(tmp_path / 'task-001.json') == {'model': 'small', 'steps': 100,
                                                     'input_dir': str(tmp_path / 'inputs')}
    assert (outputs / 'task-004' / 'attempt-1' / 'stdout.txt').read_text() == 'input-data\n'
    # one log folder per task: task id, nodes, timestamps, every attempt with its full error
    record = read_json(outputs / 'task-002' / 'job.json')
    assert record['task_id'] == 'task-002' and record['nodes'] == {'inventory': INVENTORY, 'limit': None}
    assert [(a['n'], a['status'], a['error_class'], a['rc']) for a in record['attempt_list']] == [
        (1, 'failed', 'transient', 4), (2, 'failed', 'transient', 4), (3, 'succeeded', None, 0)]
    assert 'unreachable-node' in record['attempt_list'][0]['error']
    assert all(a['started'] < a['finished'] for a in record['attempt_list'])
    for n in (1, 2, 3):
        attempt = read_json(outputs / 'task-002' / ('attempt-%d' % n) / 'job.json')
        assert (attempt['task_id'], attempt['attempt']) == ('task-002', n)
        artifacts = outputs / 'task-002' / ('attempt-%d' % n) / 'artifacts' / ('%s-%d' % (attempt['job_id'], n))
        assert (artifacts / 'rc').read_text().strip() == ('0' if n == 3 else '4')
    assert read_json(outputs / 'task-004' / 'job.json')['nodes'] == ['localhost']
    # never more than max_concurrency attempts at once, read from the recorded times of every attempt
    store = load(config)[1]
    attempts = [(a['started'], a['finished']) for j in store.list_jobs(batch_id=summary['batch_id'])
                for a in store.list_attempts(j['id'])]
    assert len(attempts) == 6 and _overlap(attempts) <= 2
    assert store.get_batch(summary['batch_id'])['status'] == 'failed'
