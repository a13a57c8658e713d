"""Every plugin's documentation blocks are YAML mappings that parse.

`ansible-test sanity` (ansible-doc, validate-modules) reads them too, but only in the sanity lane; a plain scalar with
": " in a module's DOCUMENTATION is caught here in a second, with the file, block and line named.
"""
import ast
import glob
import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
BLOCKS = ('DOCUMENTATION', 'EXAMPLES', 'RETURN')
PY_FILES = sorted(
    path for kind in ('modules', 'doc_fragments', 'callback', 'lookup', 'inventory', 'connection', 'become')
    for path in glob.glob(os.path.join(ROOT, 'plugins', kind, '*.py'))
    if not path.endswith('__init__.py'))
YML_FILES = sorted(glob.glob(os.path.join(ROOT, 'plugins', 'filter', '*.yml'))
                   + glob.glob(os.path.join(ROOT, 'plugins', 'test', '*.yml')))


def _python_blocks(path):
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    blocks = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in BLOCKS:
                    blocks[target.id] = node.value.value
    return blocks


def test_the_files_are_found():
    names = [os.path.basename(path) for path in PY_FILES]
    assert 'node_probe.py' in names and 'node_validate.py' in names
    assert any(path.endswith('parse.yml') for path in YML_FILES)


@pytest.mark.parametrize('path', PY_FILES, ids=lambda path: os.path.relpath(path, ROOT))
def test_python_plugin_blocks_parse(path):
    blocks = _python_blocks(path)
    if '/modules/' in path:
        assert set(blocks) == set(BLOCKS), '%s lacks %s' % (path, sorted(set(BLOCKS) - set(blocks)))
    for name, text in blocks.items():
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            pytest.fail('%s: %s does not parse: %s' % (os.path.relpath(path, ROOT), name, error))
        if name == 'EXAMPLES':
            assert isinstance(data, list), '%s: EXAMPLES is not a list of tasks' % path
        elif text.strip():
            assert isinstance(data, dict), '%s: %s is not a mapping' % (path, name)


@pytest.mark.parametrize('path', YML_FILES, ids=lambda path: os.path.relpath(path, ROOT))
def test_filter_docs_parse(path):
    with open(path) as handle:
        try:
            data = yaml.safe_load(handle)
        except yaml.YAMLError as error:
            pytest.fail('%s does not parse: %s' % (os.path.relpath(path, ROOT), error))
    assert isinstance(data, dict) and isinstance(data.get('DOCUMENTATION'), dict), path
    for name in ('EXAMPLES', 'RETURN'):
        if name in data and isinstance(data[name], str):
            yaml.safe_load(data[name])
