"""provision.yml: batches (serial), the plan in check mode, bad input stopped before anything runs."""
import shutil
import subprocess
import sys

import pytest
import yaml

from test_validate_playbook import playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def inventory(tmp_path, **host_vars):
    hosts = dict(('node%d' % i, {}) for i in range(1, 4))
    base = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'xuanwu_profile': 'h200x4-nvlink'}
    base.update(host_vars)
    path = tmp_path / 'inventory.yml'
    path.write_text(yaml.safe_dump({'all': {'vars': base, 'hosts': hosts}}))
    return str(path)


def installed(package, admindir=None):
    """Whether dpkg has ``package`` installed. `dpkg-query -W` alone exits 0 for any package dpkg
    knows, installed or not ('unknown ok not-installed', 'deinstall ok config-files'): the
    status is what says it."""
    args = ['dpkg-query'] + (['--admindir=%s' % admindir] if admindir else []) + ['-W', '-f=${Status}', package]
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    return proc.returncode == 0 and proc.stdout.strip() == 'install ok installed'


@pytest.mark.skipif(shutil.which('dpkg-query') is None, reason='dpkg-query is on apt systems')
@pytest.mark.parametrize('status, want', [
    ('install ok installed', True),
    ('unknown ok not-installed', False),
    ('deinstall ok config-files', False),
    ('install ok half-configured', False),
])
def test_installed_reads_the_status_not_the_exit_code(tmp_path, status, want):
    (tmp_path / 'status').write_text('Package: chrony\nStatus: %s\nPriority: optional\nSection: net\n'
                                     'Architecture: amd64\nVersion: 4.3-2\nDescription: stand-in entry\n' % status)
    (tmp_path / 'updates').mkdir()
    (tmp_path / 'info').mkdir()
    known = subprocess.run(['dpkg-query', '--admindir=%s' % tmp_path, '-W', 'chrony'], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False).returncode
    assert known == 0, 'dpkg knows the package in every state: its exit code cannot tell installed from not'
    assert installed('chrony', admindir=str(tmp_path)) is want


@pytest.mark.skipif(shutil.which('apt-get') is None, reason='the chrony role plan is exercised on an apt system')
def test_check_mode_plans_in_batches_and_changes_nothing(tmp_path):
    had_chrony = installed('chrony')
    inv = inventory(tmp_path, xuanwu_provision=['chrony'], chrony_servers=['ntp1.example.internal'])
    rc, out = playbook('-i', inv, 'playbooks/provision.yml', '--check', '--diff', '-e', 'xuanwu_serial=1')
    assert rc == 0, out[-4000:]
    assert out.count('PLAY [Provision the nodes in batches]') == 3, 'one batch per host with serial 1'
    assert 'xuanwu.cluster.chrony' in out
    recap = out[out.rindex('PLAY RECAP'):]
    assert all('changed=0' not in line for line in recap.splitlines() if line.startswith('node')) or had_chrony
    assert installed('chrony') == had_chrony, 'check mode installed something'


def test_unknown_role_name_is_refused_before_anything_runs(tmp_path):
    inv = inventory(tmp_path, xuanwu_provision=['chronyd'])
    rc, out = playbook('-i', inv, 'playbooks/provision.yml', '--check')
    assert rc != 0
    assert "variable 'xuanwu_provision' has str ('chronyd'), which is not one of: chrony, firewall" in out, out[-3000:]
    assert 'Provision the nodes in batches' not in out


@pytest.mark.both_controllers
def test_batch_settings_as_the_docs_type_them(tmp_path):
    inv = inventory(tmp_path)
    rc, out = playbook('-i', inv, 'playbooks/provision.yml', '--check', '-e', 'xuanwu_serial=1', '-e', 'xuanwu_max_fail_percentage=10')
    assert rc == 0, out[-3000:]
    assert 'must be of type' not in out
    assert out.count('PLAY [Provision the nodes in batches]') == 3, 'one batch per host with serial 1'
    rc, out = playbook('-i', inv, 'playbooks/provision.yml', '--check', '-e', 'xuanwu_serial=10%', '-e', 'xuanwu_max_fail_percentage=ten')
    assert rc != 0
    assert "variable 'xuanwu_max_fail_percentage' must be of type int (a whole number such as 30), got str ('ten')" in out, out[-3000:]
    assert 'Provision the nodes in batches' not in out
    # a batch size Ansible cannot take is refused by the preflight, not by an "Unexpected Exception" (rc 250) later
    rc, out = playbook('-i', inv, 'playbooks/provision.yml', '--check', '-e', 'xuanwu_serial=banana')
    assert rc == 2, out[-3000:]
    assert "variable 'xuanwu_serial' has 'banana', which must be a number of hosts" in out, out[-3000:]
    assert 'Unexpected Exception' not in out and 'Provision the nodes in batches' not in out
