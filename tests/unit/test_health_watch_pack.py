"""Role health_watch sends the collection's module_utils to a node as one archive (roles/health_watch/files/
pack_module_utils.py, unarchived there): only the *.py files, an empty __init__.py at every package level, root's,
0644/0755, each file with its own modification time; GNU tar finds no difference after extracting it (what
ansible.builtin.unarchive asks before it changes anything), also once Python wrote its bytecode cache there; and the
command's import of _health works from the extracted tree with the standard library alone (no Ansible on a node),
as does its validation of a profile (_profile, _profile_schema)."""
import glob
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'roles', 'health_watch', 'files', 'pack_module_utils.py')
SOURCE = os.path.join(ROOT, 'plugins', 'module_utils')
PACKAGE = 'ansible_collections/xuanwu/cluster/plugins/module_utils'


@pytest.fixture(scope='module')
def packed():
    out = subprocess.run([sys.executable, SCRIPT, SOURCE], check=True, stdout=subprocess.PIPE, universal_newlines=True)
    path = out.stdout.strip()
    yield path
    os.unlink(path)


def test_the_archive_holds_every_py_file_and_nothing_else(packed):
    with tarfile.open(packed) as tar:
        members = dict((m.name.rstrip('/'), m) for m in tar.getmembers())
    sources = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SOURCE, '*.py')))
    assert '_health.py' in sources
    files = sorted(n.split('/')[-1] for n, m in members.items() if m.isfile() and n.startswith(PACKAGE + '/'))
    assert files == sorted(set(sources) | {'__init__.py'})
    parts = PACKAGE.split('/')
    folders = ['/'.join(parts[:i]) for i in range(1, len(parts) + 1)]
    assert sorted(n for n, m in members.items() if m.isdir()) == sorted(folders)
    for folder in folders:
        assert members[folder + '/__init__.py'].size == 0 or folder == PACKAGE
    for name, member in members.items():
        assert (member.uid, member.gid, member.uname, member.gname) == (0, 0, 'root', 'root')
        assert member.mode == (0o755 if member.isdir() else 0o644), name
        if member.isfile() and name.split('/')[-1] in sources:
            assert member.mtime == int(os.stat(os.path.join(SOURCE, name.split('/')[-1])).st_mtime)
    assert not any('__pycache__' in n or n.endswith('.pyc') for n in members)


def test_the_same_files_make_the_same_bytes(packed):
    again = subprocess.run([sys.executable, SCRIPT, SOURCE], check=True, stdout=subprocess.PIPE,
                           universal_newlines=True).stdout.strip()
    try:
        with open(packed, 'rb') as one, open(again, 'rb') as two:
            assert one.read() == two.read()
    finally:
        os.unlink(again)


def test_a_folder_that_is_not_the_collections_module_utils_is_refused(tmp_path):
    (tmp_path / 'x.py').write_text('')
    out = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=False)
    assert out.returncode != 0 and 'no _health.py' in out.stderr and out.stdout == ''


@pytest.mark.skipif(not shutil.which('tar'), reason='no tar')
def test_unarchive_finds_nothing_to_change_after_extracting_and_the_command_imports_with_the_stdlib_alone(packed, tmp_path):
    home = tmp_path / '0.1.0'
    home.mkdir()
    subprocess.run(['tar', '-x', '-z', '-f', packed, '-C', str(home)], check=True)
    # what the command does: isolated mode, no site-packages (a node has no Ansible)
    code = ("import sys; sys.path.insert(0, %r); from ansible_collections.xuanwu.cluster.plugins.module_utils import _health; "
            "sys.exit(0 if _health.main(['xuanwu-health', '--help']) == 0 else 1)" % str(home))
    run = subprocess.run([sys.executable, '-I', '-S', '-c', code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=False)
    assert run.returncode == 0, run.stderr
    assert 'usage: xuanwu-health' in run.stdout
    assert glob.glob(str(home / PACKAGE / '__pycache__' / '_health.*.pyc'))    # the bytecode cache, written there
    diff = subprocess.run(['tar', '--diff', '-z', '-f', packed, '-C', str(home)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    # as another user than root, the files are that user's (Ansible unarchives as root)
    lines = [line for line in diff.stdout.splitlines() if os.geteuid() == 0 or not line.endswith(('Uid differs', 'Gid differs'))]
    assert (lines, diff.stderr) == ([], '')
    assert diff.returncode == 0 or os.geteuid() != 0


@pytest.mark.skipif(not shutil.which('tar'), reason='no tar')
def test_the_profile_validates_from_the_extracted_tree_with_the_stdlib_alone(packed, tmp_path):
    """xuanwu-health --check-config validates the node's profile: _profile and its schema (_profile_schema) are in the
    archive and import without Ansible; the renderers of docs/profiles.md (_profile_docs) are not loaded."""
    subprocess.run(['tar', '-x', '-z', '-f', packed, '-C', str(tmp_path)], check=True)
    code = ("import sys; sys.path.insert(0, %r); from ansible_collections.xuanwu.cluster.plugins.module_utils import _profile; "
            "profile = _profile.validate_profile({'schema_version': 1, 'name': 'node'}, 'node.yml'); "
            "print(profile['name'], ' '.join(sorted(m.rsplit('.', 1)[-1] for m in sys.modules if '._profile' in m)))"
            % str(tmp_path))
    run = subprocess.run([sys.executable, '-I', '-S', '-c', code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=False)
    assert (run.returncode, run.stdout, run.stderr) == (0, 'node _profile _profile_schema\n', '')
