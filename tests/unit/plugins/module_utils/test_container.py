"""The container smoke's pure parts: the command line, the parser of nvidia-smi -L (real outputs), the causes read
from real podman and docker errors, and the findings (each check made to fail). Fixtures: tests/fixtures/containers/."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue, _container, _workloads
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
FIX = os.path.join(ROOT, 'tests', 'fixtures', 'containers')
H200X4 = ['GPU-f0ecc684-38e2-f0a2-a5ca-d2c3460b88ae', 'GPU-8f519e31-f80a-acb4-f2a1-39500bb68db0',
          'GPU-210b4768-fdb5-c919-3601-93513e637edd', 'GPU-b164b3a7-ff0e-d62a-23b5-59999c70948f']
EXPECTED = {'vendor': 'nvidia', 'count': 4, 'uuids': H200X4}


def fixture(name):
    with open(os.path.join(FIX, name)) as handle:
        return handle.read()


def run(stdout='', stderr='', exit_code=0, **extra):
    out = {'engine': 'podman', 'image': 'cuda:12', 'command': 'podman run --rm --device nvidia.com/gpu=all cuda:12 nvidia-smi -L',
           'exit_code': exit_code, 'stdout': stdout, 'stderr': stderr, 'output_tail': (stdout + stderr)[-4000:],
           'timed_out': False, 'timeout_s': 120, 'expected': EXPECTED}
    out.update(extra)
    return out


def checks(findings):
    return [(f['check'], f['severity']) for f in findings]


# --- the command line ---------------------------------------------------------------------------------------

@pytest.mark.parametrize('engine, mode, flags', [
    ('podman', 'auto', ['--device', 'nvidia.com/gpu=all']),
    ('docker', 'auto', ['--gpus', 'all']),
    ('docker', 'cdi', ['--device', 'nvidia.com/gpu=all']),
    ('docker', 'runtime', ['--runtime', 'nvidia', '-e', 'NVIDIA_VISIBLE_DEVICES=all']),
    ('podman', 'gpus', ['--gpus', 'all']),
])
def test_gpu_flags_of_each_engine_and_mode(engine, mode, flags):
    assert _container.gpu_flags(engine, mode) == flags


def test_the_command_line_puts_engine_flags_before_the_image_and_the_command_after():
    argv = _container.run_argv('/usr/bin/podman', 'podman', 'cuda:12', 'cdi', ['nvidia.com/gpu=0', 'nvidia.com/gpu=1'],
                               ['--runtime=runc'], ['nvidia-smi', '-L'], 'never', 'xuanwu-smoke-1')
    assert argv == ['/usr/bin/podman', 'run', '--rm', '--name', 'xuanwu-smoke-1', '--pull', 'never', '--device', 'nvidia.com/gpu=0',
                    '--device', 'nvidia.com/gpu=1', '--runtime=runc', 'cuda:12', 'nvidia-smi', '-L']
    with pytest.raises(ValueError, match='gpu mode must be one of'):
        _container.gpu_flags('docker', 'magic')


# --- the parser -----------------------------------------------------------------------------------------------

def test_real_h200_output_is_one_gpu_with_its_uuid():
    parsed = _container.parse_gpu_list(fixture('nvidia-smi_-L_h200x1.txt'))
    assert parsed == {'gpus': [{'index': 0, 'name': 'NVIDIA H200', 'uuid': 'GPU-cdc41733-549b-16ec-4cf9-54766fcdadba', 'mig': []}]}


def test_mig_devices_belong_to_their_gpu_and_do_not_count_as_gpus():
    gpus = _container.parse_gpu_list(fixture('nvidia-smi_-L_a100x4-mig.txt'))['gpus']
    assert [g['index'] for g in gpus] == [0, 1, 2, 3]
    assert [(m['profile'], m['index']) for m in gpus[0]['mig']] == [('1g.20gb', i) for i in range(4)]
    assert gpus[0]['mig'][3]['uuid'] == 'MIG-930574a9-d43a-5d2b-95da-3e68384c8d6b' and gpus[1]['mig'] == []


@pytest.mark.parametrize('text, reason', [
    ('', 'no "GPU <n>: <name> (UUID: ...)" line'),
    (fixture('nvidia-smi_-L_nvml-unknown-error.txt'), "1 line(s) that nvidia-smi -L does not print"),
    (fixture('nvidia-smi_-L_h200x1.txt') + 'GPU zero: broken\n', "1 line(s) that nvidia-smi -L does not print"),
    ('  MIG 1g.20gb     Device  0: (UUID: MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a)\n', 'does not print'),
])
def test_output_that_is_not_nvidia_smi_l_is_a_parse_error_quoting_it(text, reason):
    with pytest.raises(ParseError) as err:
        _container.parse_gpu_list(text)
    assert reason in err.value.reason
    if text:
        assert text.strip().splitlines()[-1] in err.value.excerpt


def test_expected_gpus_from_the_probe_facts():
    facts = {'vendor': 'nvidia', 'count': 2, 'devices': [{'index': 0, 'uuid': 'GPU-a'}, {'index': 1, 'uuid': None}, 'junk']}
    assert _container.expected_from_facts(facts) == {'vendor': 'nvidia', 'count': 2, 'uuids': ['GPU-a']}
    assert _container.expected_from_facts(None) == {'vendor': None, 'count': None, 'uuids': []}
    assert _container.expected_from_facts({'count': True}) == {'vendor': 'nvidia', 'count': None, 'uuids': []}


# --- causes of a failed run, from real engine errors -------------------------------------------------------------

@pytest.mark.parametrize('name, key, words', [
    ('podman-4.3.1_run_cdi-unresolvable.stderr', 'cdi_unresolvable', 'nvidia-ctk cdi generate'),
    ('podman-4.4.1_run_cdi-unresolvable.stderr', 'cdi_unresolvable', 'nvidia-ctk cdi generate'),
    ('podman-4.3.1_run_pull-never_image-not-known.stderr', 'image_missing', 'xuanwu_container_image'),
    ('podman-4.3.1_run_image-pull-refused.stderr', 'image_missing', 'xuanwu_container_image'),
    ('podman-4.3.1_run_nvidia-smi-not-found.stderr', 'command_missing', 'nvidia-ctk cdi generate'),
    ('docker_run_gpus-no-device-driver.stderr', 'no_device_driver', 'nvidia-ctk runtime configure --runtime=docker'),
    ('docker_run_runtime-unknown.stderr', 'unknown_runtime', 'nvidia-ctk runtime configure'),
    ('docker-26_run_cdi-not-enabled.stderr', 'docker_cdi_disabled', '"features": {"cdi": true}'),
    ('nvidia-smi_-L_nvml-unknown-error.txt', 'nvml', 'daemon-reload'),
])
def test_each_real_failure_gets_its_cause_and_remediation(name, key, words):
    found = _container.cause(fixture(name))
    assert found['key'] == key and words in found['remediation']
    assert found['quote'] in fixture(name)


def test_an_unknown_error_has_no_cause():
    assert _container.cause('Error: something new went wrong') is None


# --- findings ---------------------------------------------------------------------------------------------------

def test_a_container_that_sees_every_gpu_of_the_host_passes():
    assert _container.evaluate(run(fixture('nvidia-smi_-L_h200x4-derived.txt')), 'gpu-a') == []


def test_a_container_that_sees_fewer_gpus_fails_naming_host_measured_and_expected():
    [f] = _container.evaluate(run(fixture('nvidia-smi_-L_h200x4-derived-gpu3-missing.txt')), 'gpu-a')
    assert (f['check'], f['severity'], f['host'], f['component']) == ('container.gpu_count', 'fail', 'gpu-a', 'podman run')
    assert (f['measured'], f['expected']) == ('3 GPU(s)', "4 GPU(s), the host's")
    assert 'gpu-a' in f['message'] and 'GPU-b164b3a7-ff0e-d62a-23b5-59999c70948f' in f['message'] and 'nvidia-ctk cdi generate' in f['remediation']


def test_the_same_count_of_other_gpus_fails_on_their_uuids():
    [f] = _container.evaluate(run(fixture('nvidia-smi_-L_h200x4-derived-gpu3-other-uuid.txt')), 'gpu-a')
    assert f['check'] == 'container.gpu_count' and f['measured'] == 'other GPU UUIDs'
    assert 'missing in the container: GPU-b164b3a7-ff0e-d62a-23b5-59999c70948f' in f['message']
    assert 'not on the host: GPU-b164b3a7-ff0e-d62a-23b5-59999c70948e' in f['message']


def test_without_host_uuids_the_count_alone_is_compared():
    assert _container.evaluate(run(fixture('nvidia-smi_-L_h200x4-derived-gpu3-other-uuid.txt'),
                                   expected={'vendor': 'nvidia', 'count': '4', 'uuids': []}), 'gpu-a') == []


@pytest.mark.parametrize('name, rc, key', [
    ('podman-4.3.1_run_cdi-unresolvable.stderr', 126, 'cdi_unresolvable'),
    ('docker_run_gpus-no-device-driver.stderr', 125, 'no_device_driver'),
    ('podman-4.3.1_run_pull-never_image-not-known.stderr', 125, 'image_missing'),
])
def test_a_run_that_fails_is_smoke_failed_with_the_cause(name, rc, key):
    [f] = _container.evaluate(run(stderr=fixture(name), exit_code=rc), 'gpu-b')
    assert f['check'] == 'container.smoke_failed' and f['severity'] == 'fail' and f['host'] == 'gpu-b'
    assert f['measured'] == 'exit code %d: %s' % (rc, key)
    assert _container.cause(fixture(name))['remediation'] == f['remediation']
    assert 'gpu-b' in f['message']


def test_an_unknown_failure_quotes_the_error_and_keeps_the_general_remediation():
    [f] = _container.evaluate(run(stderr='Error: something new went wrong\n', exit_code=1), 'gpu-b')
    assert f['measured'] == 'exit code 1' and 'something new went wrong' in f['message']
    assert f['remediation'] == _container.CHECKS['container.smoke_failed']['remediation']


def test_nvml_failing_in_the_container_is_smoke_failed():
    [f] = _container.evaluate(run(fixture('nvidia-smi_-L_nvml-unknown-error.txt'), exit_code=255), 'gpu-b')
    assert f['measured'] == 'exit code 255: nvml' and 'Unknown Error' in f['message']


def test_a_timed_out_run_is_smoke_failed():
    [f] = _container.evaluate(run(exit_code=124, timed_out=True, output_tail='Trying to pull cuda:12...'), 'gpu-b')
    assert f['check'] == 'container.smoke_failed' and f['measured'] == 'timed out after 120s' and 'Trying to pull' in f['message']


def test_output_that_is_not_understood_is_unparsable_quoting_it():
    [f] = _container.evaluate(run('hello from a wrapper\n'), 'gpu-c')
    assert f['check'] == 'container.unparsable' and 'hello from a wrapper' in f['message']


def test_no_engine_is_engine_missing():
    [f] = _container.evaluate(run(engine=None, exit_code=None, engine_missing=True, engine_wanted='podman or docker'), 'gpu-d')
    assert (f['check'], f['component'], f['measured']) == ('container.engine_missing', 'container engine', 'podman or docker not found')


@pytest.mark.parametrize('extra, words', [
    ({'exit_code': None, 'not_measured': 'container_smoke is not in the capture bundle'}, 'not in the capture bundle'),
    ({'exit_code': None, 'skipped': True}, 'the task was skipped'),
    ({'expected': {'vendor': 'amd', 'count': 8, 'uuids': []}}, 'AMD'),
    ({'expected': {'vendor': 'nvidia', 'count': 0, 'uuids': []}}, 'no NVIDIA GPU'),
    ({'expected': None}, 'did not count'),
])
def test_requested_and_not_measured_is_never_a_pass(extra, words):
    # the container printed every GPU; without a host to compare with, it is still no pass
    [f] = _container.evaluate(run(fixture('nvidia-smi_-L_h200x4-derived.txt'), **extra), 'gpu-e')
    assert (f['check'], f['severity']) == ('container.not_measured', 'fail') and words in f['message']


def test_the_workload_judge_and_summary_route_the_kind():
    good = run(fixture('nvidia-smi_-L_h200x4-derived.txt'), seconds=1.2)
    assert _workloads.evaluate('container_smoke', good, {}, 'gpu-a') == []
    kept = _workloads.summarise_run('container_smoke', good)
    assert kept['container'] == {'engine': 'podman', 'image': 'cuda:12', 'gpus_on_host': 4, 'gpus_in_container': 4}
    assert 'not_measured' not in kept
    failed = _workloads.summarise_run('container_smoke', run(stderr=fixture('podman-4.3.1_run_cdi-unresolvable.stderr'), exit_code=126))
    assert failed['container']['cause'] == 'cdi_unresolvable'
    amd = _workloads.summarise_run('container_smoke', run(exit_code=None, not_measured='AMD host'))
    assert amd['not_measured'] == 'AMD host'


def test_every_container_check_is_in_the_catalogue_with_a_remediation():
    for check in _container.CHECKS:
        assert _catalogue.CATALOGUE[check]['remediation']
    assert 'nvidia-ctk cdi generate' in _catalogue.CATALOGUE['container.smoke_failed']['remediation']
