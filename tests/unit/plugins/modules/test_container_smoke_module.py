"""container_smoke run as Ansible runs a module, against a REAL podman with stand-in GPUs (tests/podman_standin.py: a
tiny local image made with podman import, no registry, and a CDI spec under /var/run/cdi/ whose devices are stand-in
device nodes and whose common edits mount a test double of nvidia-smi listing the devices podman injected). Each
result is judged with the collection's checks. Also: no engine on the PATH, check mode, replay, bad options."""
import json
import os
import shutil
import sys
import uuid

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _container
from podman_standin import KIND, RUN_ARGS, missing, no_smoke_containers, stand_in_gpus
from test_bundle_modules import DEMO, run_module

UUIDS = ['GPU-00000000-0000-4000-8000-00000000000%d' % i for i in range(2)]
HOST_GPUS = {'vendor': 'nvidia', 'count': 2, 'devices': [{'index': i, 'uuid': u} for i, u in enumerate(UUIDS)]}


@pytest.fixture(scope='module')
def podman_gpu(tmp_path_factory):
    """(image, tmp dir): the local image and the CDI spec of two stand-in GPUs, removed afterwards."""
    if missing():
        pytest.skip(missing())
    tmp = tmp_path_factory.mktemp('podman-smoke')
    with stand_in_gpus(tmp, UUIDS) as image:
        yield image, tmp


def smoke(tmp_path, image, **args):
    base = {'image': image, 'engine': 'podman', 'cdi_devices': ['%s=all' % KIND], 'run_args': RUN_ARGS, 'host_gpus': HOST_GPUS,
            'timeout': 60}
    base.update(args)
    return run_module(tmp_path, 'container_smoke', base)


def test_real_podman_with_every_stand_in_gpu_passes(tmp_path, podman_gpu):
    image, _tmp = podman_gpu
    result = smoke(tmp_path, image)
    assert result['exit_code'] == 0, result
    assert result['engine'] == 'podman' and '--device %s=all' % KIND in result['command']
    assert [g['uuid'] for g in result['gpus']] == UUIDS
    assert _container.evaluate(result, 'node1') == []
    assert no_smoke_containers()


def test_real_podman_with_one_stand_in_gpu_fails_the_count(tmp_path, podman_gpu):
    image, _tmp = podman_gpu
    result = smoke(tmp_path, image, cdi_devices=['%s=0' % KIND])
    assert result['exit_code'] == 0, result
    [f] = _container.evaluate(result, 'node1')
    assert (f['check'], f['measured'], f['expected']) == ('container.gpu_count', '1 GPU(s)', "2 GPU(s), the host's")
    assert 'missing in the container: %s' % UUIDS[1] in f['message']


def test_real_podman_with_an_unresolvable_cdi_device_is_smoke_failed(tmp_path, podman_gpu):
    image, _tmp = podman_gpu
    result = smoke(tmp_path, image, cdi_devices=['xuanwu-absent.invalid/gpu=all'])
    assert result['exit_code'] not in (0, None), result
    assert 'unresolvable CDI devices xuanwu-absent.invalid/gpu=all' in result['stderr']
    [f] = _container.evaluate(result, 'node1')
    assert f['check'] == 'container.smoke_failed' and f['measured'].endswith(': cdi_unresolvable')
    assert 'nvidia-ctk cdi generate' in f['remediation'] and 'xuanwu-absent.invalid/gpu=all' in f['remediation']


@pytest.mark.parametrize('pull', ['never', None])
def test_real_podman_with_an_unknown_image_is_smoke_failed(tmp_path, podman_gpu, pull):
    args = {'pull': pull} if pull else {}
    result = smoke(tmp_path, 'localhost/xuanwu-absent-%s:1' % uuid.uuid4().hex[:8], **args)
    assert result['exit_code'] not in (0, None), result
    [f] = _container.evaluate(result, 'node1')
    assert f['check'] == 'container.smoke_failed' and f['measured'].endswith(': image_missing'), f
    assert 'xuanwu_container_image' in f['remediation']


def test_real_podman_run_past_the_bound_is_stopped_and_its_container_removed(tmp_path, podman_gpu):
    image, _tmp = podman_gpu
    result = smoke(tmp_path, image, command=['/bin/sleep', '60'], timeout=3)
    assert result['timed_out'] is True and result['exit_code'] in (124, 137, -9), result
    [f] = _container.evaluate(result, 'node1')
    assert f['check'] == 'container.smoke_failed' and f['measured'] == 'timed out after 3s'
    assert no_smoke_containers()


def test_check_mode_runs_with_the_image_there_and_reports_not_measured_without(tmp_path, podman_gpu):
    image, _tmp = podman_gpu
    ran = smoke(tmp_path, image, _ansible_check_mode=True)
    assert ran['exit_code'] == 0 and '--pull never' in ran['command'] and _container.evaluate(ran, 'node1') == []
    absent = smoke(tmp_path, 'localhost/xuanwu-absent-%s:1' % uuid.uuid4().hex[:8], _ansible_check_mode=True)
    assert absent['exit_code'] is None and 'check mode: the image' in absent['not_measured']
    [f] = _container.evaluate(absent, 'node1')
    assert f['check'] == 'container.not_measured'


def test_no_engine_on_the_path_is_engine_missing(tmp_path, monkeypatch):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    os.symlink(shutil.which('timeout'), str(bindir / 'timeout'))
    monkeypatch.setenv('PATH', str(bindir))
    result = run_module(tmp_path, 'container_smoke', {'image': 'cuda:12', 'host_gpus': HOST_GPUS})
    assert result['engine_missing'] is True and result['engine_wanted'] == 'podman or docker' and result['exit_code'] is None
    [f] = _container.evaluate(result, 'node1')
    assert f['check'] == 'container.engine_missing'


def test_an_amd_host_runs_nothing(tmp_path):
    result = run_module(tmp_path, 'container_smoke', {'image': 'cuda:12', 'host_gpus': {'vendor': 'amd', 'count': 8, 'devices': []}})
    assert result['exit_code'] is None and "the host's GPUs are AMD" in result['not_measured'] and result['command'] == ''


def test_a_replayed_run_reads_the_bundle_entry(tmp_path):
    bundle = tmp_path / 'bundle'
    shutil.copytree(DEMO, str(bundle))
    fixtures = os.path.join(os.path.dirname(DEMO), '..', '..', 'tests', 'fixtures', 'containers')
    shutil.copy(os.path.join(fixtures, 'nvidia-smi_-L_h200x4-derived.txt'), str(bundle / 'container_smoke.txt'))
    manifest = json.loads((bundle / 'manifest.json').read_text())
    manifest['probes'].append({'probe': 'container_smoke', 'command': 'docker run --rm --gpus all cuda:12 nvidia-smi -L', 'rc': 0,
                               'file': 'container_smoke.txt'})
    (bundle / 'manifest.json').write_text(json.dumps(manifest))
    gpus = {'vendor': 'nvidia', 'count': 4, 'devices': []}
    result = run_module(tmp_path, 'container_smoke', {'replay_dir': str(bundle), 'host_gpus': gpus})
    assert result['engine'] == 'docker' and len(result['gpus']) == 4 and _container.evaluate(result, 'n') == []
    missing = run_module(tmp_path, 'container_smoke', {'replay_dir': str(bundle), 'replay_key': 'other', 'host_gpus': gpus})
    assert missing['not_measured'] == 'other is not in the capture bundle'


@pytest.mark.parametrize('args, message', [
    ({'host_gpus': HOST_GPUS}, 'one of the following is required: image, replay_dir'),
    ({'image': 'x', 'timeout': 0}, 'timeout must be a positive number of seconds'),
    ({'image': 'x', 'gpu_mode': 'magic'}, 'value of gpu_mode must be one of'),
    ({'image': 'x', 'command': []}, 'command and cdi_devices must not be empty'),
])
def test_bad_options_are_a_clear_error(tmp_path, args, message):
    result = run_module(tmp_path, 'container_smoke', args)
    assert result['failed'] and message in result['msg']


def test_the_module_file_runs_on_the_target_python():
    assert sys.version_info >= (3, 8)


def test_two_test_runs_at_once_use_their_own_cdi_kind():
    """podman refuses a CDI kind that two specs define: another test process (a second checkout testing at the same
    moment) gets a kind of its own."""
    import subprocess
    import podman_standin
    other = subprocess.run([sys.executable, '-c', 'import podman_standin; print(podman_standin.KIND)'],
                           cwd=os.path.dirname(os.path.abspath(podman_standin.__file__)), stdout=subprocess.PIPE, universal_newlines=True, check=True)
    assert other.stdout.strip() != KIND and other.stdout.strip().endswith('.invalid/gpu')
