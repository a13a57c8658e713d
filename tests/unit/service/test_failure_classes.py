"""Retry classes per mode: a command's own exit status and stderr are the user's (permanent unless the job
lists the status in retry_on_exit_codes); only the transport is transient (the ssh client's own failure,
Slurm's node failures). ansible-playbook's parse errors are permanent with their own reason. A value that
becomes an argument cannot start with "-"."""
import os
import stat

import pytest

from real_jobs import INVENTORY, config
from xuanwu import commands
from xuanwu.runner import Executor, classify_playbook
from xuanwu.spec import SpecError, parse_batch, parse_job
from xuanwu.store import Store


@pytest.fixture
def executor(tmp_path):
    playbook = tmp_path / 'missing-collection.yml'
    playbook.write_text('- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n'
                        '    - nonexistent_ns.nonexistent_coll.nothing: {}\n')
    cfg = config(tmp_path, playbooks={'t-parse': str(playbook)})
    ex = Executor(cfg, Store(cfg.data_dir / 'jobs.db'), 2, serve_all=False)
    yield ex
    ex.shutdown()


def test_a_commands_own_255_and_connection_refused_are_permanent(executor):
    job = executor.run(parse_job({'name': 'own', 'nodes': ['localhost'], 'retry_count': 2, 'command':
                                  'echo "ssh: connect to host node7 port 22: Connection refused" >&2; exit 255'},
                                 executor.config))
    assert (job['status'], job['error_class'], job['attempts']) == ('failed', 'permanent', 1)
    assert job['reason'] == 'the command exited with 255'
    job = executor.run(parse_job({'name': 'seven', 'nodes': ['localhost'], 'retry_count': 2,
                                  'command': 'echo Connection refused >&2; exit 7'}, executor.config))
    assert (job['status'], job['error_class'], job['attempts']) == ('failed', 'permanent', 1)


def test_exit_statuses_named_transient_are_retried(executor):
    job = executor.run(parse_job({'name': 'listed', 'nodes': ['localhost'], 'retry_count': 1,
                                  'retry_on_exit_codes': [7], 'command': 'exit 7'}, executor.config))
    assert (job['status'], job['error_class'], job['attempts']) == ('failed', 'transient', 2)
    assert 'retry_on_exit_codes' in job['reason']
    assert [a['error_class'] for a in job['attempt_list']] == ['transient', 'transient']


def test_a_missing_collection_is_a_permanent_parse_error_never_retried(executor):
    job = executor.run(parse_job({'name': 'parse', 'playbook': 't-parse', 'inventory': INVENTORY, 'retry_count': 2},
                                 executor.config))
    assert (job['status'], job['rc'], job['error_class'], job['attempts']) == ('failed', 4, 'permanent', 1)
    assert 'parse error' in job['reason'] and 'unreachable' not in job['reason']
    assert 'nonexistent_ns.nonexistent_coll' in job['error']


def test_playbook_exit_statuses():
    assert classify_playbook(4, True)['error_class'] == 'transient'
    assert classify_playbook(4, False)['error_class'] == 'permanent'
    assert 'usage error' in classify_playbook(5, False)['reason']
    assert classify_playbook(2, False) == {'status': 'failed', 'error_class': 'permanent',
                                           'reason': 'ansible-playbook exited with 2 (a host failed)'}


def _fake_ssh(folder):
    """An ssh that fails as the client does for node 'down', and runs the command locally for any other."""
    script = folder / 'ssh'
    script.write_text('#!/bin/bash\n'
                      'while [ "$1" != "--" ]; do shift; done; shift; node=$1; shift\n'
                      'if [ "$node" = down ]; then\n'
                      '  echo "ssh: connect to host down port 22: Connection refused" >&2; exit 255\n'
                      'fi\n'
                      'exec bash -c "$*"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize('nodes, command, expected', [
    (['up', 'down'], 'true', ('transient', 255)),
    (['up'], 'echo "Connection refused" >&2; exit 255', ('permanent', 255)),
    (['up'], 'exit 3', ('permanent', 3)),
], ids=['client-failure', 'remote-255', 'remote-3'])
def test_ssh_mode_transient_only_for_the_clients_own_failure(tmp_path, monkeypatch, nodes, command, expected):
    _fake_ssh(tmp_path)
    monkeypatch.setenv('PATH', '%s%s%s' % (tmp_path, os.pathsep, os.environ['PATH']))
    adir = tmp_path / 'attempt'
    adir.mkdir()
    out = commands.run_command(adir, {'nodes': nodes, 'command': command, 'mode': 'ssh', 'job_id': 'j-1'})
    decided = commands.classify(out)
    assert (decided['error_class'], out['rc']) == expected
    if expected[0] == 'transient':
        assert 'ssh could not reach down' in decided['reason']


def test_slurm_mode_transient_only_for_sruns_own_lines():
    user = {'mode': 'slurm', 'rc': 1, 'transport_failure': False}
    assert commands.classify(user)['error_class'] == 'permanent'
    assert commands.SLURM_TRANSIENT.search('srun: error: Node failure on gpu-node01')
    assert not commands.SLURM_TRANSIENT.search('my job printed: Node failure on gpu-node01')


@pytest.mark.parametrize('data, field', [
    ({'name': 'l', 'playbook': 't-succeed', 'inventory': INVENTORY, 'limit': '-vvvv'}, 'limit'),
    ({'name': 'l', 'playbook': 't-succeed', 'inventory': INVENTORY, 'limit': '--become'}, 'limit'),
    ({'name': 'c', 'command': 'true', 'nodes': ['localhost'], 'retry_on_exit_codes': [0]}, 'retry_on_exit_codes[0]'),
    ({'name': 'c', 'command': 'true', 'nodes': ['localhost'], 'retry_count': 99}, 'retry_count'),
    ({'name': 'c', 'command': 'true', 'nodes': ['-oProxyCommand=x']}, 'nodes[0]'),
])
def test_values_that_become_arguments_cannot_be_options(tmp_path, data, field):
    with pytest.raises(SpecError) as err:
        parse_job(data, config(tmp_path))
    assert err.value.field == field


@pytest.mark.parametrize('params, field, words', [
    ({'model': '-rf', 'steps': 1}, 'task_list[0].params.model', 'starts with "-"'),
    ({'model': 'small'}, 'task_list[0].params.steps', 'missing'),
    ({'model': ['a'], 'steps': 1}, 'task_list[0].params.model', 'string or a number'),
])
def test_template_parameters_are_checked(tmp_path, params, field, words):
    batch = {'output_dir': 'out', 'command': 'python train.py --model {model} --steps {steps}',
             'task_list': [{'task_id': 't1', 'params': params}]}
    with pytest.raises(SpecError) as err:
        parse_batch(batch, config(tmp_path), base_dir=str(tmp_path))
    assert err.value.field == field and words in str(err.value)


def test_a_runner_that_cannot_start_is_a_transient_failure_retried(executor, monkeypatch):
    from xuanwu import runner
    real, calls = runner.subprocess.Popen, []

    def flaky_popen(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise OSError(24, 'Too many open files')
        return real(*args, **kwargs)
    monkeypatch.setattr(runner.subprocess, 'Popen', flaky_popen)
    job = executor.run(parse_job({'name': 'start', 'nodes': ['localhost'], 'retry_count': 1, 'command': 'true'},
                                 executor.config))
    assert (job['status'], job['attempts'], len(calls)) == ('succeeded', 2, 2)
    first = job['attempt_list'][0]
    assert (first['status'], first['error_class']) == ('failed', 'transient') and 'Too many open files' in first['error']


def test_retry_on_timeout_is_a_boolean_given_per_job_or_for_a_batch(tmp_path):
    cfg = config(tmp_path)
    assert parse_job({'name': 'j', 'nodes': ['localhost'], 'command': 'true'}, cfg).retry_on_timeout is False
    assert parse_job({'name': 'j', 'nodes': ['localhost'], 'command': 'true', 'retry_on_timeout': True},
                     cfg).retry_on_timeout is True
    with pytest.raises(SpecError, match='retry_on_timeout: must be true or false'):
        parse_job({'name': 'j', 'nodes': ['localhost'], 'command': 'true', 'retry_on_timeout': 'yes'}, cfg)
    batch = parse_batch({'output_dir': str(tmp_path / 'out'), 'retry_on_timeout': True, 'task_list': [
        {'task_id': 'a', 'params': {'command': 'true', 'nodes': ['localhost']}},
        {'task_id': 'b', 'params': {'command': 'true', 'nodes': ['localhost'], 'retry_on_timeout': False}}]}, cfg)
    assert [t.job.retry_on_timeout for t in batch.tasks] == [True, False]
    batch = parse_batch({'output_dir': str(tmp_path / 'out'), 'command': 'echo {x}', 'retry_on_timeout': True,
                         'task_list': [{'task_id': 'a', 'params': {'x': '1'}}]}, cfg)
    assert batch.tasks[0].job.retry_on_timeout is True


def test_a_timeout_is_permanent_unless_the_job_asks_for_its_retry(executor):
    job = executor.run(parse_job({'name': 'slow', 'nodes': ['localhost'], 'retry_count': 1, 'timeout_sec': 1,
                                  'command': 'sleep 30'}, executor.config))
    assert (job['status'], job['error_class'], job['attempts'], job['reason']) == ('failed', 'permanent', 1, 'timed out after 1 s')
    job = executor.run(parse_job({'name': 'slow', 'nodes': ['localhost'], 'retry_count': 1, 'timeout_sec': 1,
                                  'retry_on_timeout': True, 'command': 'sleep 30'}, executor.config))
    assert (job['status'], job['error_class'], job['attempts']) == ('failed', 'transient', 2)


def test_a_node_that_accepts_tcp_and_never_answers_is_a_transient_failure(tmp_path):
    """The real ssh client against a real listener that accepts and stays silent: "Connection timed out during banner
    exchange", exit 255: the node's failure, retried as docs/jobs.md says, not the command's."""
    import shutil
    import socket
    import threading
    if shutil.which('ssh') is None:
        pytest.skip('no ssh client')
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    held = []

    def accept():
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return
    threading.Thread(target=accept, daemon=True).start()
    config_file = tmp_path / 'ssh_config'
    config_file.write_text('Host silent\n  HostName 127.0.0.1\n  Port %d\n  ConnectTimeout 2\n'
                           '  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n' % listener.getsockname()[1])
    adir = tmp_path / 'attempt'
    adir.mkdir()
    try:
        out = commands.run_command(adir, {'nodes': ['silent'], 'command': 'true', 'mode': 'ssh', 'job_id': 'j-1',
                                          'ssh_config_file': str(config_file)})
    finally:
        listener.close()
    assert out['rc'] == 255 and 'banner exchange' in (adir / 'stderr-silent.txt').read_text()
    decided = commands.classify(out)
    assert decided['error_class'] == 'transient' and 'ssh could not reach silent' in decided['reason']
