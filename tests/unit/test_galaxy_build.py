"""The collection artifact: ``ansible-galaxy collection build`` of this checkout (galaxy.yml's ``build_ignore``).

It holds what Ansible loads and what a user reads (plugins, roles, playbooks, profiles, meta/runtime.yml, docs,
changelogs) and none of the development tree: the controller package (src/), benchmarks, tests, Molecule
scenarios, development scripts. Nothing in it names a file of those at run time, so an installed collection
misses nothing.
"""
import ast
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEFT_OUT = ('src', 'bench', 'tests', 'molecule', 'scripts', 'pyproject.toml', 'Makefile')
KEPT = ('MANIFEST.json', 'FILES.json', 'README.md', 'meta/runtime.yml', 'plugins/modules', 'plugins/module_utils',
        'plugins/action', 'plugins/filter', 'roles', 'playbooks', 'profiles', 'changelogs', 'docs', 'site.yml',
        'validate.yml')
MAX_BYTES = 2 * 1024 * 1024
# a path into the development tree: "tests/fixtures", "{{ playbook_dir }}/../src"; not "nccl-tests/..." nor a bare
# word ('src' is also a key of `ip route`)
DEV_PATH = re.compile(r'(?<![\w.-])(?:src|bench|tests|molecule|scripts)/|\.\./(?:src|bench|tests|molecule|scripts)\b')


def _galaxy():
    """ansible-galaxy of the venv that runs the tests (.venv/bin), else the one on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), 'ansible-galaxy')
    return here if os.access(here, os.X_OK) else shutil.which('ansible-galaxy')


@pytest.fixture(name='artifact', scope='module')
def fixture_artifact(tmp_path_factory):
    """(path of the built tarball, {member name: TarInfo}) with the members' names relative to the collection."""
    galaxy = _galaxy()
    if not galaxy:
        pytest.skip('no ansible-galaxy in this venv or on PATH')
    out = tmp_path_factory.mktemp('galaxy-build')
    proc = subprocess.run([galaxy, 'collection', 'build', '--output-path', str(out), ROOT], capture_output=True,
                          text=True, check=False, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = [str(p) for p in out.iterdir() if p.name.endswith('.tar.gz')]
    with tarfile.open(path) as tar:
        members = {m.name[2:] if m.name.startswith('./') else m.name: m for m in tar.getmembers()}
    return path, members


def test_the_artifact_holds_the_collection_and_no_development_tree(artifact):
    path, members = artifact
    size = os.path.getsize(path)
    print('%s: %d bytes (%.2f MiB), %d members' % (os.path.basename(path), size, size / 1048576.0, len(members)))
    top = set(name.split('/', 1)[0] for name in members)
    assert not top & set(LEFT_OUT), 'left out by build_ignore, yet built in: %s' % sorted(top & set(LEFT_OUT))
    assert [k for k in KEPT if k not in members] == []
    assert any(n.startswith('plugins/modules/') and n.endswith('.py') for n in members)
    assert any(n.startswith('roles/') and n.endswith('/tasks/main.yml') for n in members)
    assert not [n for n in members if '__pycache__' in n or n.endswith('.pyc') or n.split('/', 1)[0].startswith('.venv')]
    assert size < MAX_BYTES, 'the artifact grew to %d bytes: does build_ignore miss a new development folder?' % size


def _code(name, text):
    """What of a file's text can act at run time: YAML and templates without their comments, Python's strings
    other than docstrings."""
    if name.endswith('.py'):
        tree = ast.parse(text, name)
        docs = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    docs.add(id(first.value))
        return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                and id(n) not in docs]
    text = re.sub(r'\{#.*?#\}', '', text, flags=re.S)
    return [re.sub(r'(^|\s)#.*$', '', line).rstrip() for line in text.splitlines()]


def test_nothing_in_the_artifact_names_a_file_it_left_out(artifact):
    path, members = artifact
    found = []
    with tarfile.open(path) as tar:
        for name, member in sorted(members.items()):
            if not member.isfile() or not name.endswith(('.py', '.yml', '.yaml', '.j2', '.cfg')):
                continue
            if name.split('/', 1)[0] not in ('plugins', 'roles', 'playbooks', 'profiles', 'meta') and '/' in name:
                continue
            text = tar.extractfile(member).read().decode('utf-8')
            found += ['%s: %s' % (name, piece.strip()[:120]) for piece in _code(name, text) if DEV_PATH.search(piece)]
    assert found == []


def test_the_finder_of_paths_into_the_development_tree():
    assert DEV_PATH.search('src: "{{ playbook_dir }}/../scripts/x.sh"')
    assert DEV_PATH.search("open(os.path.join(root, 'tests/fixtures/a'))")
    assert DEV_PATH.search("path: '{{ role_path }}/../../tests'")
    assert not DEV_PATH.search('url: https://github.com/NVIDIA/nccl-tests/archive/v2.tar.gz')
    assert not DEV_PATH.search('src') and not DEV_PATH.search('- name: Copy the workload scripts')
    assert _code('a.yml', '# tests/unit/x.py keeps it\nkey: 1  # see bench/x.md\n') == ['', 'key: 1']
    assert _code('a.py', '"""tests/x"""\nX = "src/y"  # bench/z\n') == ['src/y']
