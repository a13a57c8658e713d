"""The collection's own Python code, imported under the name Ansible gives it: the package
``ansible_collections.xuanwu.cluster`` (``plugins/module_utils/_redact.py`` is
``ansible_collections.xuanwu.cluster.plugins.module_utils._redact``). Never a file loaded by its path.

Which collection (``find_root``): the one at ``$XUANWU_PROJECT_ROOT``, else the checkout that holds this package, else
the current folder or one of its parents, else an installed one: ``ansible_collections/xuanwu/cluster`` under a
folder of ``$ANSIBLE_COLLECTIONS_PATH`` or, where that is not set, of Ansible's default collections paths
(``$ANSIBLE_HOME/collections``, i.e. ``~/.ansible/collections``, and ``/usr/share/ansible/collections``), else under
a folder of ``sys.path``. A checkout is not laid out as ``ansible_collections/xuanwu/cluster``: its folder becomes the
path of that package, as a collections path does for Ansible's own loader. A collection this process has imported
already is the one used.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

PACKAGE = 'ansible_collections.xuanwu.cluster'
# a file of this collection (and of no other): what tells its folder from another collection's
MARKER = Path('plugins') / 'module_utils' / '_redact.py'
# where an installed collection lies under a collections path
INSTALLED = Path('ansible_collections') / 'xuanwu' / 'cluster'


class CollectionNotFound(ImportError):
    """The collection xuanwu.cluster is nowhere this package looks; the message says where it looked and what
    to do."""


def collections_paths() -> list:
    """The folders of installed collections, as Ansible's own default configuration has them:
    ``$ANSIBLE_COLLECTIONS_PATH`` when set, else ``$ANSIBLE_HOME/collections`` (default ``~/.ansible/collections``)
    and ``/usr/share/ansible/collections``. A folder named ``ansible_collections`` stands for its parent, as for
    Ansible. (A ``collections_path`` of an ansible.cfg is not read: give it in ``$ANSIBLE_COLLECTIONS_PATH``.)"""
    value = os.environ.get('ANSIBLE_COLLECTIONS_PATH')
    if value is None:
        home = os.environ.get('ANSIBLE_HOME') or '~/.ansible'
        value = os.pathsep.join([os.path.join(home, 'collections'), '/usr/share/ansible/collections'])
    out = []
    for item in value.split(os.pathsep):
        if item:
            path = Path(item).expanduser()
            out.append(path.parent if path.name == 'ansible_collections' else path)
    return out


def find_root() -> Path | None:
    """The folder of the collection, or None where none is found."""
    roots = [Path(os.environ['XUANWU_PROJECT_ROOT'])] if os.environ.get('XUANWU_PROJECT_ROOT') else []
    roots += list(Path(__file__).resolve().parents) + [Path.cwd()] + list(Path.cwd().parents)
    roots += [path / INSTALLED for path in collections_paths() + [Path(p or '.') for p in sys.path]]
    for root in roots:
        if (root / MARKER).is_file():
            return root.resolve()
    return None


def not_found_message() -> str:
    """What the package needs when ``find_root`` finds no collection: where it looked and how to give it one."""
    looked = ', '.join(str(path / INSTALLED) for path in collections_paths())
    return ('the collection xuanwu.cluster was not found: not in $XUANWU_PROJECT_ROOT, in a checkout holding this '
            'package or the current folder, nor installed under %s or sys.path. Install it (ansible-galaxy collection '
            'install xuanwu-cluster-<version>.tar.gz -p DIR) and set ANSIBLE_COLLECTIONS_PATH=DIR, or set '
            'XUANWU_PROJECT_ROOT to the folder of the collection or a checkout' % (looked or 'no collections path'))


def _package(name: str, locations: list):
    """A new package ``name`` over the folders ``locations`` (a namespace package: no __init__.py runs)."""
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = list(locations)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    parent, _dot, child = name.rpartition('.')
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def _locate(root: Path) -> None:
    """Make ``PACKAGE`` the collection at ``root``, unless this process has imported one already or Python finds
    this very folder under that name."""
    if PACKAGE in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except ImportError:
        spec = None
    if spec is not None and any(Path(p).resolve() == root for p in spec.submodule_search_locations or ()):
        return
    for parent in ('ansible_collections', 'ansible_collections.xuanwu'):
        try:
            importlib.import_module(parent)
        except ImportError:
            _package(parent, [])
    _package(PACKAGE, [str(root)])


def import_module(name: str):
    """The collection's module ``name`` (``plugins.module_utils._redact``); CollectionNotFound where no collection
    is found and Python imports none either."""
    root = find_root()
    if root is not None:
        _locate(root)
    try:
        return importlib.import_module('%s.%s' % (PACKAGE, name))
    except ImportError as exc:
        if root is None:
            raise CollectionNotFound(not_found_message()) from exc
        raise ImportError('the collection xuanwu.cluster at %s: cannot import its %s: %s' % (root, name, exc)) from exc
