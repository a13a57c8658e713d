"""The layers of docs/architecture.md, enforced on every import of the collection's Python code, lazy imports (inside a
function) included: the node's half never imports the controller's, parsers import no other layer, the probe table no
parser, the findings nothing of the collection, a check area never the profile, and no module reaches itself through
any chain of imports."""
import ast
import glob
import os

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
PACKAGE = 'ansible_collections.xuanwu.cluster.'
FOLDERS = ('plugins/module_utils', 'plugins/plugin_utils', 'plugins/action', 'plugins/filter', 'plugins/modules')


def imports_of(path):
    """The collection modules ``path`` imports (``module_utils._probe``, ``plugin_utils._collection``), wherever in it."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            base = node.module[len(PACKAGE):].replace('plugins.', '', 1)
            if base in ('module_utils', 'plugin_utils'):
                found.update('%s.%s' % (base, alias.name) for alias in node.names)
            else:
                found.add(base)
        elif isinstance(node, ast.Import):
            found.update(a.name[len(PACKAGE):].replace('plugins.', '', 1) for a in node.names if a.name.startswith(PACKAGE))
    return found


def graph():
    out = {}
    for folder in FOLDERS:
        for path in glob.glob(os.path.join(ROOT, folder, '*.py')):
            name = '%s.%s' % (folder.rsplit('/', maxsplit=1)[-1], os.path.basename(path)[:-3])
            out[name] = imports_of(path)
    return out


GRAPH = graph()
PARSERS = set(n for n in GRAPH if n.startswith('module_utils._parse_')) | {'module_utils._text', 'module_utils._errors'}
PROBE_TABLE = {'module_utils._collect', 'module_utils._bundle', 'module_utils._commands', 'module_utils._probe_node'}
CHECK_AREAS = set(n for n in GRAPH if n.startswith('module_utils._checks')) | {
    'module_utils._hygiene', 'module_utils._links', 'module_utils._collectives', 'module_utils._workloads',
    'module_utils._container', 'module_utils._dmon_checks'}
# The nodes' I/O of the modules that run there (their payloads: tests/unit/test_node_payload.py): the samplers, the
# container smoke's command line, the scheduler commands, the mesh's probe of its peers; the catalogue and the judge of
# each stay on the controller.
NODE_IO = {'module_utils._host_sampler', 'module_utils._dmon_sampler', 'module_utils._container_run',
           'module_utils._scheduler_node', 'module_utils._mesh_node', 'module_utils._mesh_probe'}
# The profile's row: the schema as data, the validator (merge, extends) and the page of docs/profiles.md, in this
# order; each file may import the ones before it, never one after it (and the spec language, _spec).
PROFILE = ('module_utils._profile_schema', 'module_utils._profile', 'module_utils._profile_docs')


def test_the_graph_is_read():
    assert len([n for n in GRAPH if n.startswith('module_utils.')]) > 30
    assert 'module_utils._catalogue' in GRAPH['module_utils._profile']


@pytest.mark.parametrize('name', sorted(n for n in GRAPH if n.startswith('module_utils.')))
def test_the_nodes_half_never_imports_the_controllers(name):
    """module_utils runs on the nodes (and as xuanwu-health without Ansible): no plugin_utils, action, filter, module."""
    bad = sorted(d for d in GRAPH[name] if not d.startswith('module_utils.'))
    assert not bad, '%s imports %s (controller code)' % (name, ', '.join(bad))


@pytest.mark.parametrize('name', sorted(PARSERS))
def test_parsers_import_only_parsers_and_the_command_grammar(name):
    bad = sorted(d for d in GRAPH[name] if d not in PARSERS | {'module_utils._commands'})
    assert not bad, '%s (a parser) imports %s' % (name, ', '.join(bad))


@pytest.mark.parametrize('name', sorted(PROBE_TABLE))
def test_the_probe_table_imports_no_parser(name):
    bad = sorted(d for d in GRAPH[name] if d not in PROBE_TABLE | {'module_utils._hygiene'})
    assert not bad, '%s (the node half of the probe) imports %s' % (name, ', '.join(bad))


def test_the_findings_import_nothing_of_the_collection():
    assert GRAPH['module_utils._findings'] == set()


def test_the_spec_language_imports_nothing_of_the_collection():
    """_spec: the type language, validator and table renderer of the profile schema and of the facts schema."""
    assert GRAPH['module_utils._spec'] == set()


def test_the_facts_schema_imports_the_probe_table_and_the_spec_language_only():
    assert GRAPH['module_utils._facts'] <= {'module_utils._collect', 'module_utils._spec'}


@pytest.mark.parametrize('name', sorted(CHECK_AREAS & set(GRAPH)))
def test_a_check_area_never_imports_the_profile_or_the_judge(name):
    bad = sorted(d for d in GRAPH[name] if d in PROFILE + ('module_utils._judge',))
    assert not bad, '%s (a check area) imports %s' % (name, ', '.join(bad))


@pytest.mark.parametrize('name', sorted(NODE_IO))
def test_the_nodes_io_imports_only_parsers_and_the_bundle(name):
    """No check, no finding, no catalogue: what a node module carries."""
    bad = sorted(d for d in GRAPH[name] if d not in PARSERS | NODE_IO | {'module_utils._bundle', 'module_utils._commands'})
    assert not bad, '%s (the node\'s I/O) imports %s' % (name, ', '.join(bad))


@pytest.mark.parametrize('name', PROFILE)
def test_the_profile_imports_the_catalogue_findings_errors_hygiene_and_the_spec_language_only(name):
    """And the profile's files before it: the validator the schema, the page of docs/profiles.md the schema and the
    validator."""
    allowed = {'module_utils._catalogue', 'module_utils._findings', 'module_utils._errors', 'module_utils._hygiene',
               'module_utils._spec'} | PARSERS
    allowed |= set(PROFILE[:PROFILE.index(name)])
    assert GRAPH[name] <= allowed, sorted(GRAPH[name] - allowed)


def cycles(edges):
    """Every strongly connected group of more than one module, or a module that imports itself (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on.add(node)
        for dep in edges.get(node, ()):
            if dep not in edges:
                continue
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1 or node in edges.get(node, ()):
                found.append(sorted(group))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_reaches_itself_through_its_imports():
    assert cycles(GRAPH) == []


def test_a_cycle_is_found():
    assert cycles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == [['a', 'b', 'c']]
    assert cycles({'module_utils._profile': {'plugin_utils._collection'},
                   'plugin_utils._collection': {'module_utils._profile'}}) == [
        ['module_utils._profile', 'plugin_utils._collection']]
