"""Integration: the OFED path of the rdma role against localhost (connection local), with a TEST-DOUBLE archive
made here (its mlnxofedinstall only records where it ran and installs an ofed_info test double that prints the
version). Only the role's preflight and ofed task files run: nothing outside the test's directory changes.

Proves that the archive is copied into a fresh private work directory, that the sha256 is checked on that copy and
that only that copy is unpacked (the original is never read again), that the directory is removed afterwards, and
that a fixed rdma_ofed_workdir planted by another user (or as a symlink) is refused before anything changes."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = 'MLNX_OFED_LINUX-24.10-1.1.4.0-debian12.1-x86_64'

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')

PLAYBOOK = [{
    'name': 'OFED from an archive (test)',
    'hosts': 'all',
    'gather_facts': False,
    'tasks': [
        {'name': 'Preflight', 'ansible.builtin.include_role': {'name': 'xuanwu.cluster.rdma', 'tasks_from': 'preflight'}},
        {'name': 'Install', 'ansible.builtin.include_role': {'name': 'xuanwu.cluster.rdma', 'tasks_from': 'ofed'}},
        {'name': 'Show what was unpacked', 'ansible.builtin.debug': {'msg': 'UNPACKED-SRC={{ __rdma_ofed_unpacked.src | default(\'none\') }}'}},
    ],
}]

INSTALLER = '''#!/bin/sh
# TEST DOUBLE of MLNX_OFED's mlnxofedinstall: records where it ran and its flags, installs an ofed_info test double.
echo "$0 $(pwd) $*" >> %(calls)s
printf '#!/bin/sh\\n# TEST DOUBLE of ofed_info\\necho "MLNX_OFED_LINUX-24.10-1.1.4.0:"\\n' > %(bin)s/ofed_info
chmod 0755 %(bin)s/ofed_info
'''


class Node(object):
    def __init__(self, tmp_path):
        self.tmp = str(tmp_path)
        self.bin = os.path.join(self.tmp, 'bin')
        self.calls = os.path.join(self.tmp, 'installer.calls')
        self.parent = os.path.join(self.tmp, 'scratch')   # stands in for /var/tmp: world-writable and sticky
        for folder in (self.bin, self.parent):
            os.mkdir(folder)
        os.chmod(self.parent, 0o1777)
        tree = os.path.join(self.tmp, 'tree', NAME)
        os.makedirs(tree)
        with open(os.path.join(tree, 'mlnxofedinstall'), 'w') as handle:
            handle.write(INSTALLER % {'calls': self.calls, 'bin': self.bin})
        os.chmod(os.path.join(tree, 'mlnxofedinstall'), 0o755)
        self.archive = os.path.join(self.tmp, NAME + '.tgz')
        with tarfile.open(self.archive, 'w:gz') as tar:
            tar.add(tree, arcname=NAME)
        with open(self.archive, 'rb') as handle:
            self.sha256 = hashlib.sha256(handle.read()).hexdigest()
        self.inventory = os.path.join(self.tmp, 'inventory.yml')
        with open(self.inventory, 'w') as handle:
            yaml.safe_dump({'all': {'hosts': {'localhost': {'ansible_connection': 'local',
                                                            'ansible_python_interpreter': sys.executable}}}}, handle)
        self.playbook = os.path.join(self.tmp, 'play.yml')
        with open(self.playbook, 'w') as handle:
            yaml.safe_dump(PLAYBOOK, handle, sort_keys=False)

    def play(self, check=False, **overrides):
        variables = {'rdma_stack': 'ofed', 'rdma_ofed_archive': self.archive, 'rdma_ofed_sha256': self.sha256,
                     'rdma_ofed_work_parent': self.parent}
        variables.update(overrides)
        extra = os.path.join(self.tmp, 'vars.json')
        with open(extra, 'w') as handle:
            json.dump(variables, handle)
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
                   ANSIBLE_CACHE_PLUGIN='memory', PATH=self.bin + os.pathsep + os.environ['PATH'])
        args = ['ansible-playbook', '-i', self.inventory, self.playbook, '-e', '@' + extra] + (['--check'] if check else [])
        proc = subprocess.run(args, cwd=self.tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=240, check=False)
        return proc.returncode, ' '.join(proc.stdout.split())

    def installer_calls(self):
        if not os.path.exists(self.calls):
            return []
        with open(self.calls) as handle:
            return handle.read().splitlines()


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


@pytest.mark.parametrize('where', ['node', 'controller', 'url'])
def test_the_archive_is_copied_verified_and_unpacked_only_from_the_private_copy(node, where):
    archive = {'node': node.archive, 'controller': node.archive, 'url': 'file://' + node.archive}[where]
    rc, out = node.play(rdma_ofed_archive=archive, rdma_ofed_archive_on_node=where == 'node')
    assert rc == 0, out[-4000:]
    private = re.escape(node.parent) + r'/xuanwu-ofed\.\w{8}'
    # The unpacked archive is the copy in the private directory, never the original path.
    src = re.search(r'UNPACKED-SRC=([^\s"\']+)', out).group(1)
    assert re.match(private + '/' + re.escape(NAME) + r'\.tgz$', src), src
    calls = node.installer_calls()
    assert len(calls) == 1 and re.match(private + '/' + NAME + '/mlnxofedinstall ' + private + '/' + NAME
                                        + ' --without-fw-update --force$', calls[0]), calls
    # Removed at the end; the original archive is untouched.
    assert os.listdir(node.parent) == []
    with open(node.archive, 'rb') as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == node.sha256


@pytest.mark.parametrize('where', ['node', 'controller', 'url'])
def test_a_wrong_sha256_stops_before_unpacking_and_names_both_hashes(node, where):
    archive = 'file://' + node.archive if where == 'url' else node.archive
    wrong = 'ab' * 32
    rc, out = node.play(rdma_ofed_archive=archive, rdma_ofed_archive_on_node=where == 'node', rdma_ofed_sha256=wrong)
    assert rc != 0
    assert 'rdma: REFUSED %s' % archive in out and 'its sha256 is %s but rdma_ofed_sha256 is %s' % (node.sha256, wrong) in out, out[-4000:]
    assert 'Nothing was unpacked or installed' in out
    assert node.installer_calls() == [] and os.listdir(node.parent) == []


def test_keep_workdir_keeps_the_private_directory_for_debugging(node):
    rc, out = node.play(rdma_ofed_keep_workdir=True)
    assert rc == 0, out[-4000:]
    kept = os.listdir(node.parent)
    assert len(kept) == 1 and oct(os.stat(os.path.join(node.parent, kept[0])).st_mode & 0o7777) == '0o700'


def test_check_mode_makes_and_copies_nothing(node):
    rc, out = node.play(check=True)
    assert rc == 0, out[-4000:]
    assert 'would copy %s into a private work directory, check its sha256, unpack that copy' % node.archive in out
    assert os.listdir(node.parent) == [] and node.installer_calls() == []


def plant_symlink(path, tmp):
    os.mkdir(os.path.join(tmp, 'elsewhere'))
    os.symlink(os.path.join(tmp, 'elsewhere'), path)


def plant_foreign(path, _tmp):
    os.mkdir(path, 0o755)
    os.chown(path, 65534, 65534)   # nobody


def plant_world_writable(path, _tmp):
    os.mkdir(path)
    os.chmod(path, 0o777)


@pytest.mark.skipif(os.geteuid() != 0, reason='planting a directory of another user needs root')
@pytest.mark.parametrize('plant, reason', [
    (plant_symlink, r'\(owner root \(uid 0\), mode 0777\) is a symlink \(to '),
    (plant_foreign, r'\(owner nobody \(uid 65534\), mode 0755\) is not owned by the running user root'),
    (plant_world_writable, r'\(owner root \(uid 0\), mode 0777\) is writable by its group or by others'),
])
def test_a_planted_fixed_workdir_is_refused_in_preflight(node, plant, reason):
    planted = os.path.join(node.tmp, 'xuanwu-ofed')
    plant(planted, node.tmp)
    rc, out = node.play(rdma_ofed_workdir=planted)
    assert rc != 0
    assert re.search(re.escape(planted) + ' ' + reason, out), out[-4000:]
    assert 'TASK [xuanwu.cluster.rdma : Read the installed OFED version]' not in out
    assert node.installer_calls() == [] and os.listdir(planted) == []
