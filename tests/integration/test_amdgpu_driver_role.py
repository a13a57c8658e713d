"""The amdgpu_driver role on this machine, through ansible-playbook with a local connection: its preflight
refusals (amdgpu blacklisted in modprobe.d or on the kernel command line, nomodeset, bad inputs), which change
nothing, and its reboot decision in keep mode against a stand-in sysfs directory and stand-in module files
(tests/fixtures/standin-debs/standin-ko.py: an ELF file with only a .modinfo section, so that the real modinfo
reads its srcversion). Then a rollout (site.yml, the Slurm double) whose node needs a reboot for amdgpu: without
xuanwu_allow_reboot it stays drained "reboot required". Nothing here installs a package."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from test_site_rollout import RUN, Cluster, latest
from test_validate_playbook import ROOT, playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')
needs_modinfo = pytest.mark.skipif(shutil.which('modinfo') is None and not os.path.exists('/usr/sbin/modinfo'),
                                   reason='modinfo (kmod) is not installed')
STANDIN_KO = os.path.join(ROOT, 'tests', 'fixtures', 'standin-debs', 'standin-ko.py')
RUNNING = '5C1D2E7B9A0F34C6D8E1B27'   # srcversion of the "loaded" module
OTHER = '9E04B7A1C3D58F62E0A7B19'     # srcversion of another build of the same version


class Node(object):
    """A stand-in node: modprobe.d directory, kernel command line, the loaded module's sysfs directory, module files."""

    def __init__(self, tmp_path):
        self.dir = tmp_path
        self.modprobe = tmp_path / 'modprobe.d'
        self.modprobe.mkdir()
        self.cmdline = tmp_path / 'cmdline'
        self.cmdline.write_text('BOOT_IMAGE=/boot/vmlinuz-6.8.0-60-generic root=UUID=2f6c ro quiet splash\n')
        self.sysfs = tmp_path / 'sys-module-amdgpu'

    def loaded(self, srcversion, version='6.12.12'):
        self.sysfs.mkdir(exist_ok=True)
        (self.sysfs / 'srcversion').write_text(srcversion + '\n')
        (self.sysfs / 'version').write_text(version + '\n')

    def module(self, name, *fields):
        path = self.dir / name
        subprocess.run([sys.executable, STANDIN_KO, str(path)] + list(fields), check=True)
        return str(path)

    def role_vars(self, **extra):
        values = {'amdgpu_driver_modprobe_dirs': [str(self.modprobe)], 'amdgpu_driver_cmdline_file': str(self.cmdline),
                  'amdgpu_driver_sysfs_module_dir': str(self.sysfs), 'amdgpu_driver_module': str(self.dir / 'none.ko'),
                  # never reached: a refusal comes first, and keep configures nothing
                  'amdgpu_driver_repo_url': 'http://127.0.0.1:9/amdgpu/', 'amdgpu_driver_repo_key_url': 'http://127.0.0.1:9/key.asc'}
        values.update(extra)
        return values

    def apply(self, *args, **role_vars):
        shown = ('FACTS {{ {"required": amdgpu_driver_reboot_required, "reason": amdgpu_driver_reboot_reason, '
                 '"installed": amdgpu_driver_installed_module, "running": amdgpu_driver_running_module, '
                 '"blockers": amdgpu_driver_blockers} | to_json }} END')
        play = [{'name': 'amdgpu_driver', 'hosts': 'all', 'gather_facts': True, 'gather_subset': ['min'],
                 'tasks': [{'name': 'Apply the role', 'ansible.builtin.include_role': {'name': 'xuanwu.cluster.amdgpu_driver'}},
                           {'name': 'Show the facts', 'ansible.builtin.debug': {'msg': shown}}]}]
        (self.dir / 'play.yml').write_text(yaml.safe_dump(play))
        inv = {'all': {'hosts': {'node01': {}}, 'vars': dict({'ansible_connection': 'local',
                                                              'ansible_python_interpreter': '{{ ansible_playbook_python }}'},
                                                             **self.role_vars(**role_vars))}}
        (self.dir / 'inventory.yml').write_text(yaml.safe_dump(inv))
        return playbook('-i', str(self.dir / 'inventory.yml'), str(self.dir / 'play.yml'), *args)


def facts(out):
    flat = ' '.join(out.split())
    assert 'FACTS ' in flat, out[-3000:]
    return json.loads(flat.split('FACTS ', 1)[1].split(' END', 1)[0])


# ---- preflight: refusals before anything is configured (check mode as well, so that nothing could change)
REFUSALS = [
    ('modprobe.d blacklist', {'blacklist-amdgpu.conf': '# keep the GPUs off\nblacklist amdgpu\n'}, None,
     '"blacklist amdgpu" in {modprobe}/blacklist-amdgpu.conf'),
    ('modprobe.d install false', {'gpu-off.conf': 'install amdgpu /bin/false\n'}, None,
     '"install amdgpu /bin/false" in {modprobe}/gpu-off.conf'),
    ('modprobe.d options modeset=0', {'amdgpu.conf': 'options amdgpu modeset=0\n'}, None, 'amdgpu.modeset=0'),
    ('cmdline modprobe.blacklist', {}, 'BOOT_IMAGE=/vmlinuz ro modprobe.blacklist=nouveau,amdgpu\n',
     'amdgpu in modprobe.blacklist= or module_blacklist= on the kernel command line'),
    ('cmdline module_blacklist', {}, 'BOOT_IMAGE=/vmlinuz ro module_blacklist=amdgpu\n',
     'amdgpu in modprobe.blacklist= or module_blacklist= on the kernel command line'),
    ('cmdline nomodeset', {}, 'BOOT_IMAGE=/vmlinuz ro nomodeset\n', 'nomodeset on the kernel command line without amdgpu.modeset=1'),
    ('cmdline amdgpu.modeset=0', {}, 'BOOT_IMAGE=/vmlinuz ro amdgpu.modeset=0\n', 'amdgpu.modeset=0'),
]


@pytest.mark.parametrize('case, files, cmdline, message', REFUSALS, ids=[r[0] for r in REFUSALS])
def test_install_is_refused_when_amdgpu_is_kept_from_loading(tmp_path, case, files, cmdline, message):
    node = Node(tmp_path)
    for name, text in files.items():
        (node.modprobe / name).write_text(text)
    if cmdline:
        node.cmdline.write_text(cmdline)
    rc, out = node.apply('--check')
    flat = ' '.join(out.split())
    assert rc != 0, out[-3000:]
    assert 'amdgpu_driver: amdgpu is kept from loading on node01: ' in flat, out[-3000:]
    assert message.format(modprobe=node.modprobe) in flat, out[-3000:]
    assert 'Nothing was changed' in flat
    assert 'Configure AMD' not in out.split('Refuse to install a driver that the node keeps from loading')[1], 'went on after refusing'


def test_a_hidden_file_and_nomodeset_with_amdgpu_modeset_1_are_no_blockers(tmp_path):
    node = Node(tmp_path)
    hidden_dir = tmp_path / 'lib-modprobe.d'
    hidden_dir.mkdir()
    (hidden_dir / 'gpu.conf').write_text('blacklist amdgpu\n')    # hidden by the same-named file of the first directory
    (node.modprobe / 'gpu.conf').write_text('# amdgpu allowed here\nblacklist nouveau\n')
    node.cmdline.write_text('BOOT_IMAGE=/vmlinuz ro nomodeset amdgpu.modeset=1\n')
    rc, out = node.apply(amdgpu_driver_manage='keep', amdgpu_driver_modprobe_dirs=[str(node.modprobe), str(hidden_dir)])
    assert rc == 0, out[-3000:]
    assert facts(out)['blockers'] == []


def test_keep_reports_the_blockers_without_failing(tmp_path):
    node = Node(tmp_path)
    (node.modprobe / 'blacklist-amdgpu.conf').write_text('blacklist amdgpu\n')
    rc, out = node.apply(amdgpu_driver_manage='keep')
    assert rc == 0, out[-3000:]
    assert facts(out)['blockers'] == ['"blacklist amdgpu" in %s/blacklist-amdgpu.conf' % node.modprobe]


@pytest.mark.parametrize('role_vars, message', [
    ({'amdgpu_driver_version': '1:6.12.12.60402-2187269.24.04'}, 'amdgpu_driver_version amdgpu-dkms\'s VERSION-BUILD'),
    ({'amdgpu_driver_version': '6.12.12.60402'}, 'amdgpu_driver_version amdgpu-dkms\'s VERSION-BUILD'),
    ({'amdgpu_driver_rocm_release': 'latest'}, 'amdgpu_driver_rocm_release a ROCm release such as "6.4.2" (got \'latest\')'),
    ({'amdgpu_driver_manage': 'upgrade'}, 'value of amdgpu_driver_manage must be one of: install, keep, got: upgrade'),
    ({'amdgpu_driver_modprobe_dirs': ['etc/modprobe.d']}, 'absolute paths for the sysfs directory'),
])
def test_bad_inputs_are_refused_with_the_variable_named(tmp_path, role_vars, message):
    rc, out = Node(tmp_path).apply('--check', **role_vars)
    assert rc != 0
    # the yaml callback of older ansible-core doubles the quotes of a single-quoted message
    assert message in ' '.join(out.split()).replace("''", "'"), out[-3000:]


# ---- the reboot decision (keep: nothing is installed or configured)
@needs_modinfo
def test_the_same_srcversion_needs_no_reboot(tmp_path):
    node = Node(tmp_path)
    node.loaded(RUNNING)
    module = node.module('amdgpu.ko', 'version=6.12.12', 'srcversion=' + RUNNING, 'name=amdgpu')
    rc, out = node.apply(amdgpu_driver_manage='keep', amdgpu_driver_module=module)
    assert rc == 0, out[-3000:]
    result = facts(out)
    assert result['required'] is False and result['reason'].startswith('no reboot required: the running amdgpu module is the installed')
    assert result['installed'] == {'filename': module, 'version': '6.12.12', 'srcversion': RUNNING}
    assert result['running'] == {'version': '6.12.12', 'srcversion': RUNNING}


@needs_modinfo
def test_another_build_of_the_same_version_needs_a_reboot(tmp_path):
    node = Node(tmp_path)
    node.loaded(RUNNING)
    module = node.module('amdgpu.ko', 'version=6.12.12', 'srcversion=' + OTHER, 'name=amdgpu')
    rc, out = node.apply(amdgpu_driver_manage='keep', amdgpu_driver_module=module)
    assert rc == 0, out[-3000:]
    result = facts(out)
    assert result['required'] is True
    assert result['reason'] == ('reboot required: the running amdgpu module has srcversion %s (version 6.12.12), the installed one '
                                'is %s (srcversion %s, version 6.12.12)' % (RUNNING, module, OTHER)), result


@needs_modinfo
def test_no_loaded_module_needs_a_reboot(tmp_path):
    node = Node(tmp_path)
    module = node.module('amdgpu.ko', 'version=6.12.12', 'srcversion=' + OTHER)
    rc, out = node.apply(amdgpu_driver_manage='keep', amdgpu_driver_module=module)
    assert rc == 0, out[-3000:]
    result = facts(out)
    assert result['required'] is True and result['running'] == {}
    assert result['reason'].startswith('reboot required: no amdgpu kernel module is loaded (%s is missing)' % node.sysfs)


@needs_modinfo
def test_the_in_tree_module_alone_is_no_driver_of_ours(tmp_path):
    node = Node(tmp_path)
    node.loaded(RUNNING)
    module = node.module('amdgpu.ko', 'intree=Y', 'srcversion=' + OTHER, 'name=amdgpu')
    rc, out = node.apply(amdgpu_driver_manage='keep', amdgpu_driver_module=module)
    assert rc == 0, out[-3000:]
    result = facts(out)
    assert result['required'] is False and result['installed'] == {}
    assert result['reason'] == 'no amdgpu-dkms package and no out-of-tree amdgpu module is installed'


# ---- the rollout consumes amdgpu_driver's decision
def rollout(tmp_path, installed):
    """site.yml on one replayed node whose xuanwu_provision is amdgpu_driver (keep), the loaded module RUNNING."""
    node = Node(tmp_path)
    node.loaded(RUNNING)
    module = node.module('amdgpu.ko', 'version=6.12.12', 'srcversion=' + installed, 'name=amdgpu')
    settings = dict(node.role_vars(amdgpu_driver_manage='keep', amdgpu_driver_module=module), xuanwu_provision=['amdgpu_driver'],
                    xuanwu_reboot_required_file=str(tmp_path / 'no-reboot-required-file'))
    (tmp_path / 'extra.yml').write_text(yaml.safe_dump(settings))
    (tmp_path / 'rollout').mkdir()
    cluster = Cluster(tmp_path / 'rollout', ['node1'])
    rc, out = cluster.run('-e', 'xuanwu_serial=1', '-e', '@%s' % (tmp_path / 'extra.yml'))
    return cluster, rc, out


@needs_modinfo
def test_a_rollout_whose_node_needs_a_reboot_for_amdgpu_leaves_it_drained(tmp_path):
    cluster, rc, out = rollout(tmp_path, OTHER)
    assert rc == 2, out[-4000:]
    state = cluster.nodes()['node1']
    assert 'DRAIN' in state['state'] and state['reason'] == 'xuanwu %s: reboot required' % RUN, state
    entry = latest(cluster.state())['node1']
    assert entry['outcome'] == 'reboot_required', entry
    assert entry['reasons'][0].startswith('reboot required: reboot required: the running amdgpu module has srcversion %s' % RUNNING), entry
    assert 'TASK [Reboot the drained node]' in out and 'Probe and judge the node' not in out.split('Reboot the drained node')[1]


@needs_modinfo
def test_a_rollout_whose_amdgpu_module_is_the_running_one_returns_the_node(tmp_path):
    cluster, rc, out = rollout(tmp_path, RUNNING)
    assert rc == 0, out[-4000:]
    assert cluster.nodes()['node1'] == {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}
    assert latest(cluster.state())['node1']['outcome'] == 'passed'
