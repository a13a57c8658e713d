"""How the xuanwu package's modules import each other and the collection's code.

- The modules of src/xuanwu import each other without a circle, counting the imports inside functions too (a lazy
  import hides a circle from Python until the day the order of imports changes).
- Nothing under src/ or scripts/ loads a Python file by its path (``spec_from_file_location``, ``exec_module``,
  ``runpy.run_path``, ...): the collection's code is imported as ``ansible_collections.xuanwu.cluster``
  (``xuanwu.collection``), the package's own as ``xuanwu``.
"""
import ast
import os
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PACKAGE_DIR = os.path.join(ROOT, 'src', 'xuanwu')
PACKAGE = 'xuanwu'
# The calls that run a file's code without importing it by name.
LOADS_BY_PATH = frozenset(('spec_from_file_location', 'spec_from_loader', 'SourceFileLoader', 'SourcelessFileLoader',
                           'ExtensionFileLoader', 'exec_module', 'load_module', 'load_source', 'run_path', 'exec',
                           'execfile'))


def _modules():
    """{module name: path} of every src/xuanwu/*.py; the package itself is ``xuanwu`` (__init__.py)."""
    out = {}
    for name in sorted(os.listdir(PACKAGE_DIR)):
        if name.endswith('.py'):
            module = PACKAGE if name == '__init__.py' else '%s.%s' % (PACKAGE, name[:-3])
            out[module] = os.path.join(PACKAGE_DIR, name)
    return out


def imports_of(module, tree, modules):
    """The modules of the package that ``module`` imports anywhere in ``tree`` (top level, functions, classes):
    ``from .x import y`` and ``from xuanwu.x import y`` name x; ``from . import x`` names x when x is a module of the
    package, else the package (a name of __init__.py); ``import xuanwu.x`` names x."""
    package = module if module == PACKAGE else module.rsplit('.', 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = '.'.join(package.split('.')[:len(package.split('.')) - node.level + 1])
                base = '%s.%s' % (base, node.module) if node.module else base
            else:
                base = node.module or ''
            if base not in modules:
                continue
            for alias in node.names:
                sub = '%s.%s' % (base, alias.name)
                found.add(sub if sub in modules else base)
    found.discard(module)
    return found


def import_graph():
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        with open(path, encoding='utf-8') as handle:
            graph[module] = imports_of(module, ast.parse(handle.read(), path), modules)
    return graph


def cycles(graph):
    """Every circle of ``graph`` as a list of modules, the first repeated at the end; [] when it has none."""
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = 'open'
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 'open':
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 'done'

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_the_cycle_finder_sees_lazy_and_relative_imports():
    modules = {'xuanwu': '', 'xuanwu.a': '', 'xuanwu.b': '', 'xuanwu.c': ''}
    lazy = ast.parse('from . import FINAL_STATES\ndef f():\n    from .b import g\n')
    assert imports_of('xuanwu.a', lazy, modules) == {'xuanwu', 'xuanwu.b'}
    assert imports_of('xuanwu.b', ast.parse('from . import c\nimport xuanwu.a\n'), modules) == {'xuanwu.c', 'xuanwu.a'}
    assert cycles({'xuanwu.a': {'xuanwu.b'}, 'xuanwu.b': {'xuanwu.c'}, 'xuanwu.c': {'xuanwu.a'}}) == [
        ['xuanwu.a', 'xuanwu.b', 'xuanwu.c', 'xuanwu.a']]
    assert cycles({'xuanwu.a': {'xuanwu.b'}, 'xuanwu.b': set()}) == []


def test_the_package_imports_have_no_cycle():
    graph = import_graph()
    assert 'xuanwu.cli' in graph and 'xuanwu.server' in graph and graph['xuanwu.cli'] >= {'xuanwu.store'}
    assert cycles(graph) == [], 'import circles in src/xuanwu (lazy imports count too): %s' % cycles(graph)


def _python_files(top):
    for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs[:] = [d for d in dirs if d != '__pycache__' and not d.endswith('.egg-info')]
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith('.py'):
                yield path
            elif '.' not in name:      # a script without extension: Python by its first line
                with open(path, 'rb') as handle:
                    if b'python' in handle.readline():
                        yield path


def loads_by_path(source, path='<text>'):
    """The lines of ``source`` that call one of LOADS_BY_PATH, as 'line: call'."""
    out = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', None)
            if name in LOADS_BY_PATH:
                out.append('%d: %s' % (node.lineno, name))
    return out


def test_the_finder_of_loads_by_path():
    assert loads_by_path('import importlib.util\nspec = importlib.util.spec_from_file_location("m", p)\n'
                         'spec.loader.exec_module(m)\n') == ['2: spec_from_file_location', '3: exec_module']
    assert loads_by_path('import runpy\nrunpy.run_path(p)\nexec(open(p).read())\n') == ['2: run_path', '3: exec']
    assert loads_by_path('from xuanwu.rundiff import main\nmain([])\n') == []


@pytest.mark.parametrize('top', ['src', 'scripts'])
def test_nothing_loads_a_file_by_its_path(top):
    paths = list(_python_files(top))
    assert paths
    found = {}
    for path in paths:
        with open(path, encoding='utf-8') as handle:
            hits = loads_by_path(handle.read(), path)
        if hits:
            found[os.path.relpath(path, ROOT)] = hits
    assert found == {}, 'import these as modules instead of loading their files: %s' % found


def _import_redaction(tmp_path, env=None, path=()):
    """In a new Python: a copy of the package outside any checkout imports xuanwu.secure; the file and the module
    name of its redaction helpers (or the error)."""
    import shutil
    import subprocess
    import sys
    package = tmp_path / 'site'
    shutil.copytree(PACKAGE_DIR, package / 'xuanwu', ignore=shutil.ignore_patterns('__pycache__'), dirs_exist_ok=True)
    code = ('import sys; sys.path[:0] = sys.argv[1:]\n'
            'try:\n    import xuanwu.secure as s\nexcept ImportError as exc:\n    print("ImportError", exc)\n'
            'else:\n    print(s.redact_helpers.__file__, s.redact_helpers.__name__)\n')
    proc = subprocess.run([sys.executable, '-E', '-c', code, str(package)] + [str(p) for p in path], cwd=str(tmp_path),
                          env=dict(os.environ, **(env or {})), capture_output=True, text=True, check=True, timeout=60)
    return proc.stdout.split()


def _collection(folder):
    """A copy of the collection's redaction at ``folder``/plugins/module_utils."""
    import shutil
    (folder / 'plugins' / 'module_utils').mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, 'plugins', 'module_utils', '_redact.py'), str(folder / 'plugins' / 'module_utils'))
    return folder


def test_the_collection_is_imported_by_its_name_from_the_project_root(tmp_path, monkeypatch):
    monkeypatch.delenv('XUANWU_PROJECT_ROOT', raising=False)
    # no collection of this machine's collections paths (~/.ansible/collections, $ANSIBLE_COLLECTIONS_PATH)
    monkeypatch.setenv('ANSIBLE_COLLECTIONS_PATH', str(tmp_path / 'none'))
    root = _collection(tmp_path / 'checkout')
    installed = _collection(tmp_path / 'installed' / 'ansible_collections' / 'xuanwu' / 'cluster')
    name = 'ansible_collections.xuanwu.cluster.plugins.module_utils._redact'
    where = str(root / 'plugins' / 'module_utils' / '_redact.py')
    installed_where = str(installed / 'plugins' / 'module_utils' / '_redact.py')
    # $XUANWU_PROJECT_ROOT: that folder, also where an installed collection is on sys.path
    assert _import_redaction(tmp_path, {'XUANWU_PROJECT_ROOT': str(root)}) == [where, name]
    assert _import_redaction(tmp_path, {'XUANWU_PROJECT_ROOT': str(root)}, [tmp_path / 'installed']) == [where, name]
    # no checkout found: the installed collection, on sys.path or on a collections path
    assert _import_redaction(tmp_path, path=[tmp_path / 'installed']) == [installed_where, name]
    for value in ('%s:%s', '%s:%s/ansible_collections'):
        paths = value % (tmp_path / 'none', tmp_path / 'installed')
        assert _import_redaction(tmp_path, {'ANSIBLE_COLLECTIONS_PATH': paths}) == [installed_where, name]
    # Ansible's default collections path under $ANSIBLE_HOME, where $ANSIBLE_COLLECTIONS_PATH is not set
    home = tmp_path / 'ansible-home'
    default = _collection(home / 'collections' / 'ansible_collections' / 'xuanwu' / 'cluster')
    monkeypatch.delenv('ANSIBLE_COLLECTIONS_PATH')
    assert _import_redaction(tmp_path, {'ANSIBLE_HOME': str(home)}) == [
        str(default / 'plugins' / 'module_utils' / '_redact.py'), name]
    # none: what is needed, in one message
    got = ' '.join(_import_redaction(tmp_path, {'ANSIBLE_HOME': str(tmp_path / 'none')}))
    assert got.startswith('ImportError') and 'xuanwu.cluster was not found' in got, got
    assert str(tmp_path / 'none' / 'collections' / 'ansible_collections' / 'xuanwu' / 'cluster') in got
    assert 'ANSIBLE_COLLECTIONS_PATH' in got and 'XUANWU_PROJECT_ROOT' in got


def test_the_configuration_runs_the_playbooks_of_the_collection_found(tmp_path, monkeypatch):
    """Config's default project_root: $XUANWU_PROJECT_ROOT, else the collection of xuanwu.collection (here the
    checkout holding the package)."""
    from xuanwu.config import Config
    monkeypatch.delenv('XUANWU_PROJECT_ROOT', raising=False)
    assert Config(data_dir=str(tmp_path)).project_root == Path(ROOT).resolve()
    monkeypatch.setenv('XUANWU_PROJECT_ROOT', str(tmp_path))
    assert Config(data_dir=str(tmp_path)).project_root == tmp_path.resolve()
