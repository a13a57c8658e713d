"""xuanwu.spec: job and batch validation. Bad input raises SpecError naming the field, and nothing else escapes
(hypothesis)."""
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from xuanwu.spec import SpecError, parse_batch, parse_job

LAB = 'inventories/lab'
OK_PLAYBOOK = {'name': 'v1', 'playbook': 'tiny', 'inventory': LAB}
OK_COMMAND = {'name': 'test-job', 'command': 'python train.py --max-steps 100',
              'nodes': ['192.168.1.10', '192.168.1.11'], 'timeout_sec': 1800}

# (job, field named by the error, words of the message)
BAD_JOBS = [
    ({}, 'playbook', 'a job needs playbook'),
    (dict(OK_PLAYBOOK, command='true'), 'command', 'not both'),
    (dict(OK_PLAYBOOK, playbook='../../etc/passwd.yml'), 'playbook', 'unknown playbook'),
    (dict(OK_PLAYBOOK, playbook='/abs/site.yml'), 'playbook', 'never a path'),
    (dict(OK_PLAYBOOK, inventory='../../../etc'), 'inventory', 'outside the inventory roots'),
    (dict(OK_PLAYBOOK, inventory='inventories/lab/../../..'), 'inventory', 'outside the inventory roots'),
    (dict(OK_PLAYBOOK, inventory='inventories/missing'), 'inventory', 'does not exist'),
    ({'name': 'x', 'playbook': 'tiny'}, 'inventory', 'missing'),
    (dict(OK_PLAYBOOK, name='../x'), 'name', 'does not match'),
    (dict(OK_PLAYBOOK, name='a' * 65), 'name', 'does not match'),
    (dict(OK_PLAYBOOK, name=7), 'name', 'non-empty string'),
    (dict(OK_PLAYBOOK, timeout_sec=0), 'timeout_sec', 'between 1 and'),
    (dict(OK_PLAYBOOK, timeout_sec=True), 'timeout_sec', 'integer'),
    (dict(OK_PLAYBOOK, timeout_sec=1.5), 'timeout_sec', 'integer'),
    (dict(OK_PLAYBOOK, limit='a b'), 'limit', 'host pattern'),
    (dict(OK_PLAYBOOK, extra_vars=[]), 'extra_vars', 'object'),
    (dict(OK_PLAYBOOK, extra_vars={'1bad': 1}), 'extra_vars', 'valid identifier'),
    (dict(OK_PLAYBOOK, nodes=['a']), 'nodes', 'unknown key'),
    (dict(OK_PLAYBOOK, webhook_url='file:///etc/passwd'), 'webhook_url', 'http'),
    (dict(OK_COMMAND, nodes=[]), 'nodes', 'list of 1 to'),
    (dict(OK_COMMAND, nodes=['a', 'a']), 'nodes', 'twice'),
    (dict(OK_COMMAND, nodes=['-oProxyCommand=x']), 'nodes[0]', 'host name'),
    ({'name': 'c', 'command': 'true'}, 'nodes', 'missing'),
    (dict(OK_COMMAND, command=''), 'command', 'non-empty'),
    (dict(OK_COMMAND, inventory=LAB), 'inventory', 'unknown key'),
    ([], 'job', 'object'),
]


@pytest.mark.parametrize('data,field,words', BAD_JOBS, ids=[c[1] + ':' + c[2] for c in BAD_JOBS])
def test_bad_jobs_name_the_field(config, data, field, words):
    with pytest.raises(SpecError) as err:
        parse_job(data, config)
    assert err.value.field == field
    assert words in str(err.value) and '\n' not in str(err.value)
    assert str(err.value).startswith(field + ': ')


def test_a_playbook_job_resolves_its_playbook_and_inventory(config):
    job = parse_job(dict(OK_PLAYBOOK, limit='n1', extra_vars={'a': 1}), config)
    assert job.kind == 'playbook' and job.timeout_sec == config.default_timeout_sec
    assert job.playbook_path.endswith('/tests/integration/playbooks/jobs/succeed.yml')
    assert job.inventory == os.path.realpath(os.path.join(str(config.inventory_roots[0]), 'lab'))
    assert job.to_dict()['extra_vars'] == {'a': 1}


def test_the_field_guides_command_job(config):
    job = parse_job(OK_COMMAND, config)
    assert (job.kind, job.nodes, job.timeout_sec) == ('command', OK_COMMAND['nodes'], 1800)
    assert json.loads(json.dumps(job.to_dict()))['command'] == OK_COMMAND['command']


def _batch(tmp_path, **changes):
    data = {'input_dir': './inputs', 'output_dir': './outputs', 'max_concurrency': 4, 'retry_count': 2,
            'timeout_sec': 3600,
            'task_list': [{'task_id': 'task-001', 'params': dict(OK_PLAYBOOK, extra_vars={'model': 'small', 'steps': 100})},
                          {'task_id': 'task-002', 'params': dict(OK_COMMAND)}]}
    (tmp_path / 'inputs').mkdir(exist_ok=True)
    data.update(changes)
    return data


def test_the_field_guides_batch_shape(config, tmp_path):
    batch = parse_batch(_batch(tmp_path), config, base_dir=str(tmp_path))
    assert (batch.max_concurrency, batch.retry_count, batch.timeout_sec) == (4, 2, 3600)
    assert batch.output_dir == str(tmp_path / 'outputs') and batch.input_dir == str(tmp_path / 'inputs')
    first, second = batch.tasks
    assert first.job.name == 'v1' and first.job.extra_vars['xuanwu_input_dir'] == str(tmp_path / 'inputs')
    assert second.job.env == {'XUANWU_INPUT_DIR': str(tmp_path / 'inputs')} and second.job.timeout_sec == 1800
    params = {'playbook': 'tiny', 'inventory': LAB}
    named = parse_batch(_batch(tmp_path, task_list=[{'task_id': 't-9', 'params': params}]), config, str(tmp_path))
    assert (named.tasks[0].job.name, named.tasks[0].job.timeout_sec) == ('t-9', 3600)


BAD_BATCHES = [
    ({'workers': 2}, 'workers', 'unknown key'),
    ({'max_concurrency': -1}, 'max_concurrency', 'between 1 and'),
    ({'max_concurrency': 0}, 'max_concurrency', 'between 1 and'),
    ({'retry_count': -1}, 'retry_count', 'between 0 and'),
    ({'timeout_sec': 'soon'}, 'timeout_sec', 'integer'),
    ({'task_list': []}, 'task_list', 'list of 1 to'),
    ({'task_list': [{'task_id': 'a', 'params': OK_COMMAND}, {'task_id': 'a', 'params': OK_COMMAND}]},
     'task_list[1].task_id', 'duplicate task id'),
    ({'task_list': [{'task_id': '../escape', 'params': OK_COMMAND}]}, 'task_list[0].task_id', 'no paths'),
    ({'task_list': [{'task_id': 'summary.json', 'params': OK_COMMAND}]}, 'task_list[0].task_id', 'reserved'),
    ({'task_list': [{'task_id': 'a/b', 'params': OK_COMMAND}]}, 'task_list[0].task_id', 'no paths'),
    ({'task_list': [{'params': OK_COMMAND}]}, 'task_list[0].task_id', 'missing'),
    ({'task_list': [{'task_id': 'a'}]}, 'task_list[0].params', 'missing'),
    ({'task_list': [{'task_id': 'a', 'params': {'model': 'small', 'steps': 100}}]}, 'task_list[0].params.playbook',
     'a job needs playbook'),
    ({'task_list': [{'task_id': 'a', 'params': OK_COMMAND, 'retries': 1}]}, 'task_list[0].retries', 'unknown key'),
    ({'input_dir': './nowhere'}, 'input_dir', 'not a folder'),
    ({'output_dir': None}, 'output_dir', 'non-empty string'),
]


@pytest.mark.parametrize('changes,field,words', BAD_BATCHES, ids=[c[1] + ':' + c[2] for c in BAD_BATCHES])
def test_bad_batches_name_the_field(config, tmp_path, changes, field, words):
    with pytest.raises(SpecError) as err:
        parse_batch(_batch(tmp_path, **changes), config, base_dir=str(tmp_path))
    assert err.value.field == field and words in str(err.value) and '\n' not in str(err.value)


def test_a_batch_without_output_dir_or_tasks(config, tmp_path):
    for key in ('output_dir', 'task_list'):
        data = _batch(tmp_path)
        del data[key]
        with pytest.raises(SpecError) as err:
            parse_batch(data, config, base_dir=str(tmp_path))
        assert err.value.field == key


JOB_KEYS = ['name', 'playbook', 'inventory', 'limit', 'extra_vars', 'timeout_sec', 'command', 'nodes', 'webhook_url']
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20) | st.sampled_from(
    ['tiny', LAB, 'validate', '../..', 'localhost', 'n1', '/etc', 'inventories/lab/hosts.yml'])
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                           max_size=3), max_leaves=8)
JOBS = st.dictionaries(st.sampled_from(JOB_KEYS) | st.text(max_size=8), VALUES, max_size=7)
BATCH_KEYS = ['name', 'input_dir', 'output_dir', 'max_concurrency', 'retry_count', 'timeout_sec', 'task_list']
TASKS = st.lists(st.fixed_dictionaries({}, optional={'task_id': st.text(max_size=10) | st.sampled_from(['t1', '..']),
                                                     'params': JOBS}), max_size=3)
BATCHES = st.dictionaries(st.sampled_from(BATCH_KEYS), VALUES | TASKS, max_size=7)


# parse_job/parse_batch do not change the configuration: one per test is enough
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=JOBS | VALUES)
def test_fuzz_parse_job_raises_only_spec_errors(config, data):
    try:
        job = parse_job(data, config)
    except SpecError as exc:
        assert exc.field and '\n' not in str(exc)
    else:
        assert job.kind in ('playbook', 'command') and json.dumps(job.to_dict())


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=BATCHES | VALUES)
def test_fuzz_parse_batch_raises_only_spec_errors(config, tmp_path, data):
    try:
        batch = parse_batch(data, config, base_dir=str(tmp_path))
    except SpecError as exc:
        assert exc.field and '\n' not in str(exc)
    else:
        assert batch.tasks and json.dumps(batch.to_dict())
