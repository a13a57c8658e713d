"""The monitoring roles' decisions through ansible-playbook on the controller, without installing anything:
dcgm_exporter on a host without NVIDIA GPUs (skipped with a message, or failed with dcgm_exporter_require_gpu) and
on a host with one (it goes on to install), and the inputs the roles refuse with a clear message (prometheus's
retention under 30 days, a bad duration, a node_exporter archive install without its checksum)."""
import json
import shutil

import pytest
import yaml

from test_validate_playbook import playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def run_role(tmp_path, role, *extra, **role_vars):
    """Include ``role`` on localhost; returns (rc, output, the role's dcgm_exporter_state or None)."""
    state = tmp_path / 'state.json'
    play = [{'name': 'Role', 'hosts': 'node1', 'gather_facts': False,
             'tasks': [{'name': 'The role', 'ansible.builtin.include_role': {'name': 'xuanwu.cluster.' + role}},
                       {'name': 'Keep the state', 'ansible.builtin.copy': {
                           'content': '{{ dcgm_exporter_state | default(None) | to_json }}', 'dest': str(state), 'mode': '0600'},
                        'check_mode': False}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    variables = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
    variables.update(role_vars)
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump({'all': {'hosts': {'node1': variables}}}))
    rc, out = playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), *extra)
    assert 'Traceback' not in out, out[-3000:]
    return rc, out, (json.loads(state.read_text()) if state.exists() else None)


def flat(out):
    """The output with its line breaks and YAML quoting undone (the callbacks of ansible-core 2.16 and 2.19 fold
    and quote a long message differently)."""
    return ' '.join(out.replace("''", "'").split())


def gpu_dir(tmp_path, count):
    """A stand-in for /proc/driver/nvidia/gpus with ``count`` GPUs (one folder per PCI address)."""
    folder = tmp_path / 'gpus'
    folder.mkdir()
    for index in range(count):
        (folder / ('0000:%02x:00.0' % (0x18 + index))).mkdir()
    return ['-e', '__dcgm_exporter_gpu_dir=%s' % folder]


@pytest.mark.both_controllers
@pytest.mark.parametrize('mode', [[], ['--check']])
def test_dcgm_exporter_skips_a_host_without_gpus_and_says_so(tmp_path, mode):
    rc, out, state = run_role(tmp_path, 'dcgm_exporter', *(gpu_dir(tmp_path, 0) + mode))
    assert rc == 0, out[-3000:]
    assert state['gpus'] == 0 and state['installed'] is False
    assert 'no NVIDIA GPU' in state['reason'] and 'node1' in state['reason']
    assert 'dcgm-exporter not installed on node1: no NVIDIA GPU' in flat(out)
    assert 'skipped (dcgm_exporter_require_gpu: true makes this an error)' in flat(out)
    assert 'Write dcgm-exporter' not in out


def test_dcgm_exporter_fails_a_host_without_gpus_when_required(tmp_path):
    rc, out, state = run_role(tmp_path, 'dcgm_exporter', *gpu_dir(tmp_path, 0), dcgm_exporter_require_gpu=True)
    assert rc != 0
    assert state is None
    assert 'dcgm-exporter not installed on node1: no NVIDIA GPU' in flat(out)
    assert 'dcgm_exporter_require_gpu is true' in flat(out)


def test_dcgm_exporter_goes_on_to_install_on_a_host_with_gpus(tmp_path):
    # the program is missing (nothing is installed by this test): the role says what to install
    rc, out, state = run_role(tmp_path, 'dcgm_exporter', *gpu_dir(tmp_path, 2), dcgm_exporter_install_method='binary',
                              dcgm_exporter_binary=str(tmp_path / 'no-such-dcgm-exporter'), dcgm_exporter_require_gpu=True)
    assert rc != 0
    assert '%s is not on node1' % (tmp_path / 'no-such-dcgm-exporter') in flat(out)
    assert 'set dcgm_exporter_packages' in flat(out)
    assert 'no NVIDIA GPU' not in out


@pytest.mark.parametrize('role_vars, message', [
    ({'prometheus_retention_time': '7d'}, 'prometheus_retention_time is 7d (7.0 days): the validation\'s results must stay '
                                          'at least 30 days'),
    ({'prometheus_retention_time': '30 days'}, 'prometheus_retention_time is 30 days, not a Prometheus duration'),
    ({'prometheus_retention_time': '0'}, 'prometheus_retention_time is 0, which keeps nothing'),
    ({'prometheus_scrape_timeout': '30s'}, 'with the timeout not longer than the interval'),
    ({'prometheus_install_method': 'archive'}, 'the archive install needs prometheus_archive_sha256'),
])
def test_prometheus_refuses_bad_input(tmp_path, role_vars, message):
    rc, out, _state = run_role(tmp_path, 'prometheus', **role_vars)
    assert rc != 0
    assert message in flat(out), out[-3000:]


def test_prometheus_accepts_a_short_retention_only_when_told(tmp_path):
    # it passes the retention check and stops at the next one (the archive install without a checksum)
    rc, out, _state = run_role(tmp_path, 'prometheus', prometheus_retention_time='2d', prometheus_retention_allow_short=True,
                               prometheus_install_method='archive')
    assert rc != 0
    assert 'the archive install needs prometheus_archive_sha256' in flat(out)
    assert 'must stay at least 30 days' not in flat(out)


@pytest.mark.parametrize('role_vars, message', [
    ({'node_exporter_install_method': 'archive'}, 'the archive install needs node_exporter_archive_sha256'),
    ({'node_exporter_port': 70000}, 'node_exporter_port is 1-65535'),
    ({'node_exporter_textfile_dir': 'relative/dir'}, 'node_exporter_textfile_dir is an absolute path'),
])
def test_node_exporter_refuses_bad_input(tmp_path, role_vars, message):
    rc, out, _state = run_role(tmp_path, 'node_exporter', **role_vars)
    assert rc != 0
    assert message in flat(out), out[-3000:]
