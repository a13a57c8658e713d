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

from hostcases import by_host, case_hosts, recap
from test_site_rollout import RUN, Cluster, latest
from test_validate_playbook import ROOT, playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')
needs_modinfo = pytest.mark.skipif(shutil.which('modinfo') is None and not os.path.exists('/usr/sbin/modinfo'),
                                   reason='modinfo (kmod) is not installed')
STANDIN_KO = os.path.join(ROOT, 'tests', 'fixtures', 'standin-debs', 'standin-ko.py')
RUNNING = '5C1D2E7B9A0F34C6D8E1B27'   # srcversion of the "loaded" module
OTHER = '9E04B7A1C3D58F62E0A7B19'     # srcversion of another build of the same version

SHOWN = ('FACTS {{ {"required": amdgpu_driver_reboot_required, "reason": amdgpu_driver_reboot_reason, '
         '"installed": amdgpu_driver_installed_module, "running": amdgpu_driver_running_module, '
         '"blockers": amdgpu_driver_blockers} | to_json }} END')


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


def facts(out):
    flat = ' '.join(out.split())
    assert 'FACTS ' in flat, out[-3000:]
    return json.loads(flat.split('FACTS ', 1)[1].split(' END', 1)[0])


def apply_many(tmp_path, nodes, *args):
    """One run of the role on several stand-in nodes ({host: (Node, role variables)}): {host: its result text}, the recap."""
    play = [{'name': 'amdgpu_driver', 'hosts': 'all', 'gather_facts': True, 'gather_subset': ['min'],
             'tasks': [{'name': 'Apply the role', 'ansible.builtin.include_role': {'name': 'xuanwu.cluster.amdgpu_driver'}},
                       {'name': 'Show the facts', 'ansible.builtin.debug': {'msg': SHOWN}}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    hosts = dict((name, node.role_vars(**role_vars)) for name, (node, role_vars) in nodes.items())
    inv = {'all': {'hosts': hosts, 'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inv))
    rc, out = playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), *args)
    return rc, out, by_host(out), recap(out)


def node_in(tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    return Node(folder)


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


BAD_INPUTS = [
    ({'amdgpu_driver_version': '1:6.12.12.60402-2187269.24.04'}, 'amdgpu_driver_version amdgpu-dkms\'s VERSION-BUILD'),
    ({'amdgpu_driver_version': '6.12.12.60402'}, 'amdgpu_driver_version amdgpu-dkms\'s VERSION-BUILD'),
    ({'amdgpu_driver_rocm_release': 'latest'}, 'amdgpu_driver_rocm_release a ROCm release such as "6.4.2" (got \'latest\')'),
    ({'amdgpu_driver_manage': 'upgrade'}, 'value of amdgpu_driver_manage must be one of: install, keep, got: upgrade'),
    ({'amdgpu_driver_modprobe_dirs': ['etc/modprobe.d']}, 'absolute paths for the sysfs directory'),
]


def test_install_is_refused_when_amdgpu_is_kept_from_loading_and_bad_inputs_with_the_variable_named(tmp_path):
    """One check-mode run: a node per way of keeping amdgpu from loading, each refused naming where, and a node per bad
    input, each refused naming the variable; nothing changed."""
    nodes, refusals = {}, {}
    for name, (case, files, cmdline, message) in zip(case_hosts('kept', REFUSALS), REFUSALS):
        node = node_in(tmp_path, name)
        for filename, text in files.items():
            (node.modprobe / filename).write_text(text)
        if cmdline:
            node.cmdline.write_text(cmdline)
        nodes[name] = (node, {})
        refusals[name] = (case, message.format(modprobe=node.modprobe))
    bad = dict(zip(case_hosts('bad', BAD_INPUTS), BAD_INPUTS))
    nodes.update((name, (node_in(tmp_path, name), role_vars)) for name, (role_vars, _m) in bad.items())
    rc, out, texts, counts = apply_many(tmp_path, nodes, '--check')
    assert rc != 0
    for name, (case, message) in refusals.items():
        assert counts[name]['failed'] == 1 and counts[name]['changed'] == 0, (case, texts.get(name))
        assert 'amdgpu_driver: amdgpu is kept from loading on %s: ' % name in texts[name], (case, texts[name])
        assert message in texts[name] and 'Nothing was changed' in texts[name], (case, texts[name])
        assert 'FACTS ' not in texts[name], 'went on after refusing: %s' % case
    for name, (role_vars, message) in bad.items():
        assert counts[name]['failed'] == 1 and counts[name]['changed'] == 0, (role_vars, texts.get(name))
        # the yaml callback of older ansible-core doubles the quotes of a single-quoted message
        assert message in texts[name].replace("''", "'"), (role_vars, texts[name])


# ---- the reboot decision (keep: nothing is installed or configured)
@needs_modinfo
def test_blockers_in_keep_mode_and_the_reboot_decision(tmp_path):
    """One run in keep mode (nothing installed or configured), a stand-in node per case: blockers reported without
    failing, a hidden file and nomodeset with amdgpu.modeset=1 no blockers; the reboot decision from the loaded module's
    sysfs directory and the installed module file."""
    nodes = {}
    # a hidden file (the same name in the first directory wins) and nomodeset with amdgpu.modeset=1: no blockers
    hidden = node_in(tmp_path, 'hidden')
    hidden_dir = tmp_path / 'hidden' / 'lib-modprobe.d'
    hidden_dir.mkdir()
    (hidden_dir / 'gpu.conf').write_text('blacklist amdgpu\n')
    (hidden.modprobe / 'gpu.conf').write_text('# amdgpu allowed here\nblacklist nouveau\n')
    hidden.cmdline.write_text('BOOT_IMAGE=/vmlinuz ro nomodeset amdgpu.modeset=1\n')
    nodes['hidden'] = (hidden, {'amdgpu_driver_modprobe_dirs': [str(hidden.modprobe), str(hidden_dir)]})
    # keep reports a blocker without failing
    blocked = node_in(tmp_path, 'blocked')
    (blocked.modprobe / 'blacklist-amdgpu.conf').write_text('blacklist amdgpu\n')
    nodes['blocked'] = (blocked, {})
    modules = {}
    for name, loaded, fields in (('same', True, ('version=6.12.12', 'srcversion=' + RUNNING, 'name=amdgpu')),
                                 ('rebuilt', True, ('version=6.12.12', 'srcversion=' + OTHER, 'name=amdgpu')),
                                 ('unloaded', False, ('version=6.12.12', 'srcversion=' + OTHER)),
                                 ('intree', True, ('intree=Y', 'srcversion=' + OTHER, 'name=amdgpu'))):
        node = node_in(tmp_path, name)
        if loaded:
            node.loaded(RUNNING)
        modules[name] = node.module('amdgpu.ko', *fields)
        nodes[name] = (node, {'amdgpu_driver_module': modules[name]})
    for _node, role_vars in nodes.values():
        role_vars['amdgpu_driver_manage'] = 'keep'
    rc, out, texts, counts = apply_many(tmp_path, nodes)
    assert rc == 0 and all(c['failed'] == 0 for c in counts.values()), out[-3000:]
    result = dict((name, facts(texts[name])) for name in nodes)
    assert result['hidden']['blockers'] == []
    assert result['blocked']['blockers'] == ['"blacklist amdgpu" in %s/blacklist-amdgpu.conf' % blocked.modprobe]
    # the same srcversion: no reboot
    same = result['same']
    assert same['required'] is False and same['reason'].startswith('no reboot required: the running amdgpu module is the installed')
    assert same['installed'] == {'filename': modules['same'], 'version': '6.12.12', 'srcversion': RUNNING}
    assert same['running'] == {'version': '6.12.12', 'srcversion': RUNNING}
    # another build of the same version: a reboot
    assert result['rebuilt']['required'] is True
    assert result['rebuilt']['reason'] == ('reboot required: the running amdgpu module has srcversion %s (version 6.12.12), the installed one '
                                           'is %s (srcversion %s, version 6.12.12)' % (RUNNING, modules['rebuilt'], OTHER)), result['rebuilt']
    # no loaded module: a reboot
    assert result['unloaded']['required'] is True and result['unloaded']['running'] == {}
    assert result['unloaded']['reason'].startswith('reboot required: no amdgpu kernel module is loaded (%s is missing)' % nodes['unloaded'][0].sysfs)
    # the in-tree module alone is no driver of ours
    assert result['intree']['required'] is False and result['intree']['installed'] == {}
    assert result['intree']['reason'] == 'no amdgpu-dkms package and no out-of-tree amdgpu module is installed'


# ---- the rollout consumes amdgpu_driver's decision
@needs_modinfo
def test_a_rollout_drains_the_node_that_needs_a_reboot_for_amdgpu_and_returns_the_one_whose_module_is_running(tmp_path):
    """site.yml, one node a batch, on two replayed nodes whose xuanwu_provision is amdgpu_driver (keep), both with the
    module RUNNING loaded: node1's installed module is that one (returned to the scheduler), node2's another build
    (left drained "reboot required"; no xuanwu_allow_reboot)."""
    host_vars = {}
    for name, installed in (('node1', RUNNING), ('node2', OTHER)):
        node = node_in(tmp_path, name)
        node.loaded(RUNNING)
        module = node.module('amdgpu.ko', 'version=6.12.12', 'srcversion=' + installed, 'name=amdgpu')
        host_vars[name] = node.role_vars(amdgpu_driver_module=module)
    settings = {'amdgpu_driver_manage': 'keep', 'xuanwu_provision': ['amdgpu_driver'],
                'xuanwu_reboot_required_file': str(tmp_path / 'no-reboot-required-file')}
    (tmp_path / 'extra.yml').write_text(yaml.safe_dump(settings))
    (tmp_path / 'rollout').mkdir()
    cluster = Cluster(tmp_path / 'rollout', ['node1', 'node2'], host_vars=host_vars)
    rc, out = cluster.run('-e', 'xuanwu_serial=1', '-e', '@%s' % (tmp_path / 'extra.yml'))
    assert rc == 2, out[-4000:]
    nodes = cluster.nodes()
    assert nodes['node1'] == {'state': 'IDLE', 'reason': '', 'partitions': ['gpu']}, nodes
    assert 'DRAIN' in nodes['node2']['state'] and nodes['node2']['reason'] == 'xuanwu %s: reboot required' % RUN, nodes
    outcomes = latest(cluster.state())
    assert outcomes['node1']['outcome'] == 'passed', outcomes
    assert outcomes['node2']['outcome'] == 'reboot_required', outcomes
    assert outcomes['node2']['reasons'][0].startswith(
        'reboot required: reboot required: the running amdgpu module has srcversion %s' % RUNNING), outcomes
    assert 'TASK [Reboot the drained node]' in out and 'Probe and judge the node' not in out.split('Reboot the drained node')[1]
