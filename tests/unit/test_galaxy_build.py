"""The collection artifact: ``ansible-galaxy collection build`` of this checkout (galaxy.yml's ``build_ignore``).

It holds what Ansible loads and what a user reads (plugins, roles, playbooks, profiles, meta/runtime.yml, docs,
changelogs), what an execution environment needs (meta/execution-environment.yml, requirements.txt, bindep.txt) and
none of the development tree: the controller package (src/), benchmarks, tests, Molecule scenarios, development
scripts, the development venvs' pins (requirements/), the checkout's ansible.cfg, the linters' settings. Nothing in it
names a file of those at run time, so an installed collection misses nothing. galaxy.yml declares every other
collection that the code calls, with a range that holds the versions tested here; meta/runtime.yml the controllers
tested; docs/install/requirements.yml names this release and those versions. The GPU-host runner
(files/gpu-host-run.sh) is in it and runs from an installed collection; the controller package is a wheel of its
own (tests/unit/xuanwu/test_wheel.py).
"""
import ast
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

from collection_artifact import INSTALL_DIR, build, collections_called, galaxy_yml, installed, manifest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEFT_OUT = ('src', 'bench', 'tests', 'molecule', 'scripts', 'pyproject.toml', 'Makefile', 'requirements', 'ansible.cfg',
            '.ansible-lint', '.yamllint', '.gitignore')
KEPT = ('MANIFEST.json', 'FILES.json', 'README.md', 'meta/runtime.yml', 'plugins/modules', 'plugins/module_utils',
        'plugins/action', 'plugins/filter', 'roles', 'playbooks', 'profiles', 'changelogs', 'docs', 'site.yml',
        'validate.yml', 'meta/execution-environment.yml', 'requirements.txt', 'bindep.txt', 'docs/install/requirements.yml',
        'docs/install/execution-environment.yml', 'files/gpu-host-run.sh')
# Everything at the top of the artifact: what a user needs. A new entry is for users (add it here) or for development
# (add it to galaxy.yml's build_ignore).
TOP = ('MANIFEST.json', 'FILES.json', 'README.md', 'site.yml', 'validate.yml', 'requirements.txt', 'bindep.txt',
       'changelogs', 'dashboards', 'docs', 'files', 'inventories', 'meta', 'playbooks', 'plugins', 'profiles', 'roles')
# the GPU-host runner, run from an installed collection (docs/development.md); scripts/gpu-host-run.sh of a checkout
RUNNER = 'files/gpu-host-run.sh'
MAX_BYTES = 2 * 1024 * 1024
# a path into the development tree: "tests/fixtures", "{{ playbook_dir }}/../src"; not "nccl-tests/..." nor a bare
# word ('src' is also a key of `ip route`)
DEV_PATH = re.compile(r'(?<![\w.-])(?:src|bench|tests|molecule|scripts|requirements)/'
                      r'|\.\./(?:src|bench|tests|molecule|scripts|requirements)\b')


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
    path = build(tmp_path_factory.mktemp('galaxy-build'), galaxy)
    with tarfile.open(path) as tar:
        members = {m.name[2:] if m.name.startswith('./') else m.name: m for m in tar.getmembers()}
    return path, members


def test_the_artifact_holds_the_collection_and_no_development_tree(artifact):
    path, members = artifact
    size = os.path.getsize(path)
    print('%s: %d bytes (%.2f MiB), %d members' % (os.path.basename(path), size, size / 1048576.0, len(members)))
    top = set(name.split('/', 1)[0] for name in members)
    assert not top & set(LEFT_OUT), 'left out by build_ignore, yet built in: %s' % sorted(top & set(LEFT_OUT))
    assert sorted(top - set(TOP)) == [], 'new at the top of the artifact: for users (TOP) or development (build_ignore)?'
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
    assert DEV_PATH.search('pip install -r requirements/controller.txt')


def test_the_artifact_carries_what_an_execution_environment_reads(artifact):
    path, members = artifact
    with tarfile.open(path) as tar:
        meta = yaml.safe_load(tar.extractfile(members['meta/execution-environment.yml']).read())
        assert meta['version'] == 1 and sorted(meta['dependencies']) == ['python', 'system']
        for name in meta['dependencies'].values():
            lines = tar.extractfile(members[name]).read().decode('utf-8').splitlines()
            assert [line for line in lines if line.split('#')[0].strip()], '%s lists nothing' % name


def test_galaxy_yml_declares_every_collection_the_code_calls():
    called = collections_called()
    declared = galaxy_yml()['dependencies']
    assert sorted(called) == sorted(declared), 'called: %s; declared in galaxy.yml: %s' % (called, sorted(declared))
    assert {'ansible.posix', 'community.crypto', 'community.general'} <= set(called)


def test_each_dependency_range_holds_the_version_tested_here():
    from ansible.galaxy.dependency_resolution.versioning import meets_requirements
    tested = {}
    for collection, spec in sorted(galaxy_yml()['dependencies'].items()):
        source = installed(collection)
        if source is None:
            pytest.skip('no installed copy of %s here (make setup installs the community bundle)' % collection)
        tested[collection] = manifest(source)['version']
        assert meets_requirements(tested[collection], spec), (collection, tested[collection], spec)
        # below the next major: a new major may break a role
        major = int(tested[collection].split('.')[0])
        assert not meets_requirements('%d.0.0' % (major + 1), spec), (collection, spec)
    # the site's example names this release and the tested dependencies, each a tarball
    with open(os.path.join(INSTALL_DIR, 'requirements.yml')) as handle:
        entries = yaml.safe_load(handle)['collections']
    assert all(entry.get('type') == 'file' for entry in entries), entries
    meta = galaxy_yml()
    want = ['%s-%s-%s.tar.gz' % (meta['namespace'], meta['name'], meta['version'])]
    want += ['%s-%s.tar.gz' % (c.replace('.', '-'), v) for c, v in sorted(tested.items())]
    assert [entry['name'] for entry in entries] == want


def test_requires_ansible_is_the_range_of_the_tested_controllers():
    from packaging.specifiers import SpecifierSet
    with open(os.path.join(ROOT, 'meta', 'runtime.yml')) as handle:
        spec = SpecifierSet(yaml.safe_load(handle)['requires_ansible'])
    pins = []
    for name in sorted(os.listdir(os.path.join(ROOT, 'requirements'))):
        with open(os.path.join(ROOT, 'requirements', name)) as handle:
            pins += re.findall(r'^ansible-core==([0-9.]+)', handle.read(), re.M)
    assert len(pins) >= 2 and all(spec.contains(pin) for pin in pins), (str(spec), pins)
    assert spec.contains('2.16.0') and spec.contains('2.19.99') and not spec.contains('2.15.13')
    assert not spec.contains('2.20.0'), 'a controller newer than those tested (requirements/controller*.txt)'


def test_the_gpu_host_runner_is_in_the_artifact_and_executable(artifact):
    _path, members = artifact
    assert members[RUNNER].isfile() and members[RUNNER].mode & 0o111 == 0o111
    # the checkout's old path runs the same file
    with open(os.path.join(ROOT, 'scripts', 'gpu-host-run.sh'), encoding='utf-8') as handle:
        assert '/../files/gpu-host-run.sh"' in handle.read()


def _stand_in_venv(folder):
    """A GPU venv whose ansible-playbook prints its working directory, collections path and arguments."""
    (folder / 'bin').mkdir(parents=True)
    stub = folder / 'bin' / 'ansible-playbook'
    stub.write_text('#!/bin/sh\n[ "$1" = --version ] && { echo "ansible-playbook [core 2.19.14]"; exit 0; }\n'
                    'printf "cwd=%s\\ncollections=%s\\n" "$PWD" "$ANSIBLE_COLLECTIONS_PATH"\n'
                    'for a in "$@"; do printf "arg=%s\\n" "$a"; done\n')
    stub.chmod(0o755)
    return folder


def _runner(script, argv, cwd, **env):
    """(rc, {key: [values]} of the stand-in's lines, stderr) of ``bash script argv`` in ``cwd``."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(('ANSIBLE_', 'GPU_VENV', 'WHEELS', 'INVENTORY'))}
    environ.update(env)
    proc = subprocess.run(['bash', str(script)] + [str(a) for a in argv], cwd=str(cwd), env=environ,
                          capture_output=True, text=True, check=False, timeout=60)
    lines = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition('=')
        if sep and key in ('cwd', 'collections', 'arg'):
            lines.setdefault(key, []).append(value)
    return proc.returncode, lines, proc.stderr


def _tree(top):
    return sorted((str(p.relative_to(top)), p.stat().st_mtime_ns) for p in top.rglob('*'))


def test_the_gpu_host_runner_runs_from_an_installed_collection(artifact, tmp_path):
    path, _members = artifact
    collections = tmp_path / 'collections'
    installed = collections / 'ansible_collections' / 'xuanwu' / 'cluster'
    installed.mkdir(parents=True)
    with tarfile.open(path) as tar:
        tar.extractall(str(installed), filter='data')
    home, work = tmp_path / 'home', tmp_path / 'work'
    home.mkdir()
    venv = _stand_in_venv(work / '.venv-gpu-host')
    before = _tree(installed)
    rc, got, err = _runner(installed / RUNNER, ['playbooks/validate.yml', '-e', 'xuanwu_profile=h100x1'], work,
                           HOME=str(home), INVENTORY='inventories/gpu-host')
    assert rc == 0, err
    # run in the current folder, the collection first on the collections path, its playbook and inventory
    assert got['cwd'] == [str(work)]
    assert got['collections'] == ['%s:%s/.ansible/collections:/usr/share/ansible/collections' % (collections, home)]
    assert got['arg'] == ['-i', str(installed / 'inventories' / 'gpu-host'), '-c', 'local', '-e',
                          'ansible_connection=local', '-e', 'ansible_python_interpreter=%s/bin/python' % venv,
                          str(installed / 'playbooks' / 'validate.yml'), '-e', 'xuanwu_profile=h100x1']
    assert _tree(installed) == before, 'the runner wrote into the installed collection'
    # a playbook by its FQCN; the caller's collections path after the collection's
    rc, got, err = _runner(installed / RUNNER, ['xuanwu.cluster.validate'], work, HOME=str(home),
                           ANSIBLE_COLLECTIONS_PATH='/opt/site-collections')
    assert rc == 0, err
    assert got['collections'] == ['%s:/opt/site-collections' % collections]
    assert got['arg'][:2] == ['-i', 'localhost,'] and got['arg'][-1] == 'xuanwu.cluster.validate'
    # no venv and no wheels to make one: what is missing, where
    rc, got, err = _runner(installed / RUNNER, ['playbooks/validate.yml'], tmp_path, HOME=str(home))
    assert rc == 1 and 'no ansible-core wheel under wheels/gpu-host (in %s)' % tmp_path in err, err
    rc, got, err = _runner(installed / RUNNER, ['playbooks/nothing.yml'], work, HOME=str(home))
    assert rc == 2 and 'no playbook at playbooks/nothing.yml' in err, err
    # a copy not under ansible_collections/xuanwu/cluster: Ansible would not find it as xuanwu.cluster
    loose = tmp_path / 'loose'
    with tarfile.open(path) as tar:
        tar.extractall(str(loose), filter='data')
    rc, got, err = _runner(loose / RUNNER, ['playbooks/validate.yml'], work, HOME=str(home))
    assert rc == 2 and 'ansible_collections/xuanwu/cluster' in err, err


def test_the_gpu_host_runner_of_the_checkout(tmp_path):
    venv = _stand_in_venv(tmp_path / 'venv')
    rc, got, err = _runner(os.path.join(ROOT, 'scripts', 'gpu-host-run.sh'), ['playbooks/validate.yml'], tmp_path,
                           GPU_VENV=str(venv), INVENTORY='inventories/gpu-host')
    assert rc == 0, err
    assert got['cwd'] == [ROOT] and got['collections'] == [os.path.join(ROOT, '.collections')]
    assert got['arg'][:2] == ['-i', os.path.join(ROOT, 'inventories', 'gpu-host')]
    assert got['arg'][-1] == os.path.join(ROOT, 'playbooks', 'validate.yml')
