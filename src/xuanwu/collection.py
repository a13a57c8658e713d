"""The collection's own Python code, imported under the name Ansible gives it: the package
``ansible_collections.xuanwu.cluster`` (``plugins/module_utils/_redact.py`` is
``ansible_collections.xuanwu.cluster.plugins.module_utils._redact``). Never a file loaded by its path.

Which collection: the one at ``$XUANWU_PROJECT_ROOT``, else the checkout that holds this package, else the current
folder or one of its parents, else one that Python already finds (installed on ``sys.path``). A checkout is not laid
out as ``ansible_collections/xuanwu/cluster``: its folder becomes the path of that package, as a collections path
does for Ansible's own loader. A collection this process has imported already is the one used.
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


def find_root() -> Path | None:
    """The folder of the collection, or None where none is found (then only an installed one can serve)."""
    roots = [Path(os.environ['XUANWU_PROJECT_ROOT'])] if os.environ.get('XUANWU_PROJECT_ROOT') else []
    roots += list(Path(__file__).resolve().parents) + [Path.cwd()] + list(Path.cwd().parents)
    for root in roots:
        if (root / MARKER).is_file():
            return root.resolve()
    return None


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
    """The collection's module ``name`` (``plugins.module_utils._redact``)."""
    root = find_root()
    if root is not None:
        _locate(root)
    try:
        return importlib.import_module('%s.%s' % (PACKAGE, name))
    except ImportError as exc:
        raise ImportError('the collection xuanwu.cluster (its %s) was found neither next to the xuanwu package, in '
                          '$XUANWU_PROJECT_ROOT or the current folder nor installed: %s' % (name, exc)) from exc
