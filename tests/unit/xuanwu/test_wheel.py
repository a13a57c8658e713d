"""The controller package as a user of the collection gets it: the wheel of ``make wheel`` (scripts/build-wheel.sh).

- Its version is galaxy.yml's (and ``xuanwu.__version__``); its dependencies' ranges hold the releases tested here
  (requirements/*.txt) and ansible-core's is the collection's ``requires_ansible``.
- The wheel declares (Requires-Dist) every distribution whose modules its code imports: a module left out fails.
- Installed into a new venv outside the checkout (no PYTHONPATH to src/, the working directory elsewhere), with the
  collection installed from its tarball by ansible-galaxy: ``xuanwu --help``, ``xuanwu-run-diff --help``, a playbook
  job of the installed collection's playbook and inventory (the demo: exit 2, its report written), ``xuanwu-run-diff``
  on that job's run record; with no collection to be found, one line saying what is needed, exit 4.

The new venv sees the packages of the venv that runs the tests through a .pth file (nothing is downloaded); pip
installs the wheel into it with --ignore-installed, so that the development venv's editable install is neither used
nor touched.
"""
import ast
import json
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[3]
# imported by the package, provided by no distribution of its own: the collection (xuanwu.collection)
NOT_DISTRIBUTIONS = frozenset(('xuanwu', 'ansible_collections'))


def _pyproject():
    with open(ROOT / 'pyproject.toml', 'rb') as handle:
        return tomllib.load(handle)['project']


def _name(name):
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r'[-_.]+', '-', name).lower()


def _pins():
    """{distribution: version} of every ``name==version`` line of requirements/*.txt (several when they differ)."""
    pins = {}
    for path in sorted((ROOT / 'requirements').glob('*.txt')):
        for line in path.read_text(encoding='utf-8').splitlines():
            match = re.match(r'^([A-Za-z0-9._-]+)(?:\[[^\]]*\])?==([0-9][^\s;#]*)', line.strip())
            if match:
                pins.setdefault(_name(match.group(1)), set()).add(match.group(2))
    return pins


def test_the_package_version_is_the_collections():
    import xuanwu
    with open(ROOT / 'galaxy.yml', encoding='utf-8') as handle:
        galaxy = yaml.safe_load(handle)['version']
    assert _pyproject()['version'] == galaxy == xuanwu.__version__


def test_the_declared_ranges_hold_the_releases_tested():
    pins = _pins()
    found = []
    for text in _pyproject()['dependencies']:
        req = Requirement(text)
        tested = pins.get(_name(req.name))
        assert tested, '%s: no pin in requirements/*.txt, so no release of it is tested' % req.name
        assert req.specifier, '%s: no range' % req.name
        found += ['%s==%s not in %s' % (req.name, v, req.specifier) for v in sorted(tested) if v not in req.specifier]
    assert found == []
    with open(ROOT / 'meta' / 'runtime.yml', encoding='utf-8') as handle:
        requires_ansible = SpecifierSet(yaml.safe_load(handle)['requires_ansible'])
    core = [Requirement(t) for t in _pyproject()['dependencies'] if _name(Requirement(t).name) == 'ansible-core']
    assert [r.specifier for r in core] == [requires_ansible]


def third_party_imports(sources):
    """{top-level module: [file, ...]} of the absolute imports of ``sources`` ({file name: text}) that are neither the
    standard library nor NOT_DISTRIBUTIONS, imports inside functions included."""
    found = {}
    for name, text in sorted(sources.items()):
        for node in ast.walk(ast.parse(text, name)):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split('.')[0]
                if top not in sys.stdlib_module_names and top not in NOT_DISTRIBUTIONS:
                    found.setdefault(top, []).append(name)
    return found


def missing_dependencies(imports, requires_dist, providers):
    """The modules of ``imports`` that no distribution of ``requires_dist`` (Requires-Dist lines) provides, as
    'module (imported by files): reason'. ``providers``: {module: [distribution, ...]}, as
    importlib.metadata.packages_distributions() of an environment where the package runs."""
    declared = {_name(Requirement(line).name) for line in requires_dist}
    out = []
    for module, files in sorted(imports.items()):
        dists = sorted({_name(d) for d in providers.get(module, ())})
        if not dists:
            out.append('%s (imported by %s): no distribution installed here provides it' % (module, ', '.join(files)))
        elif not set(dists) & declared:
            out.append('%s (imported by %s): its distribution %s is not declared' % (
                module, ', '.join(files), ' or '.join(dists)))
    return out


def test_a_dependency_left_out_is_found():
    sources = {'a.py': 'import os\nimport yaml\nfrom . import b\nfrom xuanwu.c import d\n',
               'b.py': 'def f():\n    from fastapi import FastAPI\n    import ansible_collections.x\n'}
    imports = third_party_imports(sources)
    assert imports == {'yaml': ['a.py'], 'fastapi': ['b.py']}
    providers = {'yaml': ['PyYAML'], 'fastapi': ['fastapi']}
    assert missing_dependencies(imports, ['pyyaml<7,>=6', 'FastAPI>=0.1'], providers) == []
    assert missing_dependencies(imports, ['PyYAML'], providers) == [
        'fastapi (imported by b.py): its distribution fastapi is not declared']
    assert missing_dependencies({'nowhere': ['c.py']}, [], {}) == [
        'nowhere (imported by c.py): no distribution installed here provides it']


@pytest.fixture(name='wheel', scope='module')
def fixture_wheel(tmp_path_factory):
    """The wheel that ``make wheel`` builds, built here by the same script into a temporary folder."""
    out = tmp_path_factory.mktemp('dist')
    proc = subprocess.run(['bash', str(ROOT / 'scripts' / 'build-wheel.sh'), str(out)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHON=sys.executable), timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    name = 'xuanwu-%s-py3-none-any.whl' % _pyproject()['version']
    assert sorted(p.name for p in out.iterdir()) == [name]
    return out / name


def test_the_wheel_declares_every_distribution_it_imports(wheel):
    version = _pyproject()['version']
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        meta = whl.read('xuanwu-%s.dist-info/METADATA' % version).decode('utf-8')
        entry_points = whl.read('xuanwu-%s.dist-info/entry_points.txt' % version).decode('utf-8')
        sources = {n: whl.read(n).decode('utf-8') for n in names if n.startswith('xuanwu/') and n.endswith('.py')}
    assert {'xuanwu/cli.py', 'xuanwu/rundiff.py', 'xuanwu/console.py', 'xuanwu/server.py'} <= set(sources)
    assert not [n for n in names if '__pycache__' in n or n.endswith('.pyc')]
    requires = [line.split(':', 1)[1].strip() for line in meta.splitlines() if line.startswith('Requires-Dist:')]
    assert requires, meta
    imports = third_party_imports(sources)
    assert {'yaml', 'fastapi', 'uvicorn', 'ansible_runner'} <= set(imports)
    assert missing_dependencies(imports, requires, metadata.packages_distributions()) == []
    assert re.search(r'^xuanwu = xuanwu\.console:xuanwu$', entry_points, re.M), entry_points
    assert re.search(r'^xuanwu-run-diff = xuanwu\.console:run_diff$', entry_points, re.M), entry_points


def _run(argv, env, cwd, timeout=120):
    return subprocess.run([str(a) for a in argv], env=env, cwd=str(cwd), capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_the_installed_wheel_runs_outside_the_checkout(wheel, tmp_path):
    bindir = Path(sys.executable).parent
    galaxy = bindir / 'ansible-galaxy'
    if not os.access(galaxy, os.X_OK) or not os.access(bindir / 'ansible-playbook', os.X_OK):
        pytest.skip('no ansible-galaxy and ansible-playbook next to %s' % sys.executable)
    # the collection, installed from its tarball
    built = tmp_path / 'built'
    proc = _run([galaxy, 'collection', 'build', '--output-path', built, ROOT], os.environ, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tarball,) = built.iterdir()
    collections = tmp_path / 'collections'
    proc = _run([galaxy, 'collection', 'install', '--offline', '--no-deps', '-p', collections, tarball], os.environ,
                tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    installed = collections / 'ansible_collections' / 'xuanwu' / 'cluster'
    # a new venv that sees the test venv's packages (.pth), the wheel installed into it
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True, timeout=120)
    python = venv / 'bin' / 'python'
    site = _run([python, '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], os.environ, tmp_path)
    (Path(site.stdout.strip()) / 'xuanwu_test_deps.pth').write_text(sysconfig.get_paths()['purelib'] + '\n')
    proc = _run([python, '-m', 'pip', 'install', '--no-deps', '--no-index', '--ignore-installed',
                 '--disable-pip-version-check', wheel], os.environ, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Ansible's commands on the PATH, and no other xuanwu than the venv's
    ansible_bin = tmp_path / 'ansible-bin'
    ansible_bin.mkdir()
    for tool in ('ansible', 'ansible-playbook', 'ansible-galaxy', 'ansible-config', 'ansible-inventory'):
        if (bindir / tool).exists():
            (ansible_bin / tool).symlink_to(bindir / tool)
    path = [str(venv / 'bin'), str(ansible_bin)] + [
        d for d in os.environ.get('PATH', '').split(os.pathsep)
        if d and not os.path.exists(os.path.join(d, 'xuanwu')) and not os.path.exists(os.path.join(d, 'xuanwu-run-diff'))]
    home, work, none = tmp_path / 'home', tmp_path / 'work', tmp_path / 'no-collections'
    for folder in (home, work, none):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('XUANWU_', 'ANSIBLE_', 'PYTHON', 'VIRTUAL_ENV'))}
    env.update(HOME=str(home), PATH=os.pathsep.join(path), ANSIBLE_COLLECTIONS_PATH=str(collections))
    assert not str(work).startswith(str(ROOT) + os.sep)

    # every module of the installed package imports (the service's FastAPI and uvicorn too), the collection's
    # redaction from the installed collection
    proc = _run([python, '-c', 'import importlib, pkgutil, xuanwu\n'
                 'names = sorted(m.name for m in pkgutil.iter_modules(xuanwu.__path__))\n'
                 'modules = [importlib.import_module("xuanwu." + n) for n in names]\n'
                 'print(len(names), xuanwu.__file__, importlib.import_module("xuanwu.secure").redact_helpers.__file__)'],
                env, work)
    assert proc.returncode == 0, proc.stderr
    count, package, redaction = proc.stdout.split()
    assert int(count) == len([n for n in os.listdir(ROOT / 'src' / 'xuanwu') if n.endswith('.py')]) - 1
    assert package.startswith(str(venv) + os.sep), package
    assert redaction == str(installed / 'plugins' / 'module_utils' / '_redact.py')

    proc = _run(['xuanwu', '--help'], env, work)
    assert proc.returncode == 0 and proc.stdout.startswith('usage: xuanwu'), proc.stdout + proc.stderr
    proc = _run(['xuanwu', 'serve', '--help'], env, work)
    assert proc.returncode == 0 and '--token-file' in proc.stdout, proc.stdout + proc.stderr
    proc = _run(['xuanwu-run-diff', '--help'], env, work)
    assert proc.returncode == 0 and proc.stdout.startswith('usage: xuanwu-run-diff'), proc.stdout + proc.stderr

    # a playbook job: the installed collection's validate.yml on its demo inventory (three nodes fail on purpose)
    proc = _run(['xuanwu', 'run', '--playbook', 'validate', '--inventory', 'inventories/demo', '--json'], env, work,
                timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    job = json.loads(proc.stdout)
    assert job['status'] == 'failed' and job['reason'] == 'ansible-playbook exited with 2 (a host failed)', job
    assert job['spec']['playbook_path'] == str(installed / 'playbooks' / 'validate.yml')
    assert job['spec']['inventory'] == str(installed / 'inventories' / 'demo')
    attempt = Path(job['info']['attempt_dir'])
    assert attempt.is_relative_to(home / '.local' / 'state' / 'xuanwu')
    assert json.loads((attempt / 'attempt.json').read_text())['project_dir'] == str(installed)
    assert job['info'].get('report'), 'no report.json: %s' % job['attempt_list'][-1].get('error')
    report = json.loads((Path(job['info']['report']) / 'report.json').read_text())
    assert sorted(h for h, r in report['hosts'].items() if r['status'] == 'fail') == [
        'gpu-node02', 'gpu-node03', 'gpu-node04']
    (record,) = (attempt / 'runs').iterdir()
    proc = _run(['xuanwu-run-diff', record, record], env, work)
    assert (proc.returncode, proc.stdout.splitlines()[-1:]) == (0, ['no difference']), proc.stdout + proc.stderr
    assert sorted(os.listdir(work)) == []

    # no collection anywhere it looks: what it needs, one line, nothing ran
    env['ANSIBLE_COLLECTIONS_PATH'] = str(none)
    proc = _run(['xuanwu', 'jobs'], env, work)
    assert proc.returncode == 4 and proc.stdout == '', proc.stdout + proc.stderr
    assert proc.stderr.startswith('xuanwu: the collection xuanwu.cluster was not found') and proc.stderr.count('\n') == 1
    assert str(none / 'ansible_collections' / 'xuanwu' / 'cluster') in proc.stderr
    assert 'ANSIBLE_COLLECTIONS_PATH' in proc.stderr and 'ansible-galaxy collection install' in proc.stderr
    proc = _run(['xuanwu-run-diff', record, record], env, work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
