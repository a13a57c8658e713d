"""xuanwu's configuration and command line on bad input: exit 4, one clear line, nothing run."""
import json
import os

import pytest

from xuanwu import cli
from xuanwu.config import Config, ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
INVENTORY = os.path.join(ROOT, 'tests', 'integration', 'playbooks', 'jobs', 'inventory')


@pytest.mark.parametrize('text,words', [
    ('scheduler: pbs\n', 'scheduler'),
    ('max_concurrency: 0\n', 'max_concurrency: must be an integer >= 1'),
    ('workers: 3\n', 'unknown key(s) workers'),
    ('- a\n', 'must be a mapping'),
    ('a: [\n', 'not valid YAML'),
    ('playbooks: [site.yml]\n', 'playbooks: must be a mapping'),
    ('retry_backoff_sec: -1\n', 'retry_backoff_sec'),
])
def test_bad_configuration_files(tmp_path, text, words):
    path = tmp_path / 'xuanwu.yml'
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        Config.load(str(path))
    assert words in str(err.value) and '\n' not in str(err.value)


def _config(tmp_path):
    path = tmp_path / 'xuanwu.yml'
    path.write_text(json.dumps({'data_dir': str(tmp_path / 'home'), 'inventory_roots': [INVENTORY],
                                'playbooks': {'t-succeed': os.path.join(INVENTORY, '..', 'succeed.yml')}}))
    return str(path)


GOOD_TASK = {'task_id': 'task-001', 'params': {'playbook': 't-succeed', 'inventory': INVENTORY}}
BAD_BATCH_FILES = [
    ({'workers': 2}, 'workers: unknown key'),
    ({'max_concurrency': -4}, 'max_concurrency: must be between 1 and 1024, got -4'),
    ({'task_list': [GOOD_TASK, GOOD_TASK]}, "task_list[1].task_id: duplicate task id 'task-001'"),
    ({'task_list': [dict(GOOD_TASK, task_id='../../etc')]}, 'task_list[0].task_id:'),
    ({'task_list': [{'task_id': 'x'}]}, 'task_list[0].params: missing'),
    ({'task_list': [GOOD_TASK, {'task_id': 'b', 'params': {'playbook': 't-succeed', 'inventory': '/etc'}}]},
     'task_list[1].params.inventory:'),
    ({'task_list': None}, 'task_list: must be a list'),
]


@pytest.mark.parametrize('changes,message', BAD_BATCH_FILES, ids=[case[1].split(':')[0] for case in BAD_BATCH_FILES])
def test_bad_batch_files_exit_4_with_one_line_and_run_nothing(tmp_path, capsys, changes, message):
    batch = {'output_dir': './out', 'max_concurrency': 2, 'retry_count': 1, 'task_list': [GOOD_TASK]}
    batch.update(changes)
    path = tmp_path / 'batch.json'
    path.write_text(json.dumps(batch))
    assert cli.main(['--config', _config(tmp_path), 'batch', str(path)]) == 4
    out, err = capsys.readouterr()
    assert out == '' and err.count('\n') == 1 and err.startswith('xuanwu batch: ') and message in err
    assert not (tmp_path / 'out').exists()
    assert not (tmp_path / 'home' / 'jobs.db').exists()


@pytest.mark.parametrize('args,message', [
    (['run'], 'give a job file, or --playbook'),
    (['run', '--playbook', 'nope', '--inventory', INVENTORY], "playbook: unknown playbook 'nope'"),
    (['run', '--playbook', 't-succeed', '--inventory', '/etc'], 'inventory:'),
    (['run', '--command', 'true', '--nodes', ''], 'nodes: must be a list'),
    (['run', '--playbook', 't-succeed', '--inventory', INVENTORY, '-e', 'novalue'], '--extra-vars: expected'),
    (['run', '/no/such/job.yml'], 'cannot read'),
    (['batch', '/no/such/batch.json'], 'cannot read'),
    (['show', 'j-000000000000'], 'no job j-000000000000'),
    (['cancel', 'j-000000000000'], 'no job j-000000000000'),
])
def test_bad_commands_exit_4(tmp_path, capsys, args, message):
    assert cli.main(['--config', _config(tmp_path)] + args) == 4
    out, err = capsys.readouterr()
    assert out == '' and err.count('\n') == 1 and message in err


def test_token_file_is_private_and_never_overwritten(tmp_path, capsys):
    path = tmp_path / 'token'
    assert cli.main(['--config', _config(tmp_path), 'token', '--output', str(path)]) == 0
    token = path.read_text().strip()
    assert os.stat(path).st_mode & 0o777 == 0o600 and len(token) >= 40 and token not in capsys.readouterr().out
    assert cli.main(['--config', _config(tmp_path), 'token', '--output', str(path)]) == 4
    assert path.read_text().strip() == token


def test_diff_wraps_the_run_diff(tmp_path, capsys):
    """xuanwu diff is xuanwu-run-diff: the same exit status and JSON on two run folders of real report data."""
    import test_rundiff as runs     # its run folders (the module next to this one)
    a = runs.make_run(str(tmp_path / 'a'), 'ra', ['n1', 'n2'], runs.RUN2, {'n1': {}, 'n2': {}})
    b = runs.make_run(str(tmp_path / 'b'), 'rb', ['n1', 'n3'], runs.RUN3, {'n1': {}, 'n3': {}})
    assert cli.main(['--config', _config(tmp_path), 'diff', a, b, '--json']) == 1
    got = json.loads(capsys.readouterr().out)
    assert got['only_in_a'] == ['n2'] and got['only_in_b'] == ['n3']
    assert cli.main(['--config', _config(tmp_path), 'diff', a, a]) == 0
    capsys.readouterr()
    assert cli.main(['--config', _config(tmp_path), 'diff', a, str(tmp_path / 'none')]) == 2
    assert 'not a folder' in capsys.readouterr().err


def test_jobs_lists_newest_first_and_filters_by_status(tmp_path, capsys):
    from xuanwu.store import Store
    store = Store(tmp_path / 'home' / 'jobs.db')
    old = store.create_job({}, 'command', 'old')
    new = store.create_job({}, 'playbook', 'new')
    store.update_job(old, created=1.0)
    store.finish_job(new, 'failed', reason='ansible-playbook exited with 2 (a host failed)')
    config = _config(tmp_path)
    assert cli.main(['--config', config, 'jobs', '--json']) == 0
    assert [job['id'] for job in json.loads(capsys.readouterr().out)] == [new, old]
    assert cli.main(['--config', config, 'jobs', '--status', 'failed']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(new + '  failed')
    assert lines[0].endswith('(ansible-playbook exited with 2 (a host failed))')
    assert cli.main(['--config', config, 'jobs', '--status', 'running']) == 0
    assert capsys.readouterr().out == 'no jobs\n'


def test_a_batch_above_the_configured_limit_never_runs_more_than_it(tmp_path, capsys):
    """docs/jobs.md: max_concurrency of the configuration counts every job of the store; a batch's own limit can only
    lower it. A batch asking for 6 under a configuration of 2 runs 2 at once."""
    import sys
    config = tmp_path / 'xuanwu.yml'
    config.write_text(json.dumps({'data_dir': str(tmp_path / 'home'), 'max_concurrency': 2}))
    (tmp_path / 'span.py').write_text('import json, sys, time\nstart = time.time()\ntime.sleep(0.6)\n'
                                      'open(sys.argv[1], "w").write(json.dumps([start, time.time()]))\n')
    batch = {'output_dir': './out', 'max_concurrency': 6, 'command': '%s span.py {out}' % sys.executable,
             'task_list': [{'task_id': 't%d' % i, 'params': {'out': str(tmp_path / ('t%d.json' % i))}} for i in range(6)]}
    path = tmp_path / 'batch.json'
    path.write_text(json.dumps(batch))
    assert cli.main(['--config', str(config), 'batch', str(path)]) == 0, capsys.readouterr()
    spans = [json.loads((tmp_path / ('t%d.json' % i)).read_text()) for i in range(6)]
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _end in spans)
    assert most == 2, spans
