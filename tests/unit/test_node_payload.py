"""What a node module carries (docs/architecture.md, "What a node module carries"): the module_utils of each module's
AnsiballZ payload as Ansible's own finder builds it (scripts/payload.py, run with this Python in a process of its own,
so that Ansible's collection loader stays out of this one). A module that runs on a node carries its I/O and what it
really uses there, never a check catalogue, remediation texts or the judge: those stay on the controller."""
import ast
import glob
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
UTILS = os.path.join(ROOT, 'plugins', 'module_utils')

# Every module that runs on a node (or on the host the task names), with the module_utils of its payload.
NODE_MODULES = {
    'container_smoke': {'_bundle', '_container_run', '_errors', '_parse_nvidia'},
    # parse: true parses on the node (the facts without the controller, checked by the facts schema in the spec language);
    # no check, no finding
    'node_probe': {'_bundle', '_collect', '_commands', '_errors', '_facts', '_parse_amd', '_parse_host', '_parse_ib',
                   '_parse_net', '_parse_nvidia', '_probe', '_probe_node', '_spec', '_text'},
    'scheduler_node': {'_errors', '_parse_scheduler', '_scheduler_node'},
    'work_dir': {'_workdir'},
    'workload_run': {'_bundle', '_dmon_sampler', '_errors', '_host_sampler', '_parse_clock_events', '_parse_host_samples',
                     '_redact', '_text'},
    'mesh_check': {'_errors', '_mesh_node', '_mesh_probe', '_parse_net', '_parse_ssh', '_text'},
}
# Modules whose action plugin does the work on the controller: the module file is their documentation.
CONTROLLER_MODULES = {'host_compare', 'inventory_check', 'mesh_compare', 'node_check', 'node_profile', 'node_validate',
                      'run_record', 'ssh_trust_keys', 'validation_report', 'workload_check'}


def _defines_a_catalogue(path):
    """Whether the file defines checks at its top level (``CHECKS = ...``, ``PROBE_CHECKS = ...``)."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    return any(isinstance(t, ast.Name) and t.id.endswith('CHECKS')
               for node in tree.body if isinstance(node, ast.Assign) for t in node.targets)


# The catalogue and everything that judges: the check areas, the finding shape, the catalogue, the judge, the profile.
CATALOGUE_MODULES = set(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(UTILS, '*.py')) if _defines_a_catalogue(p)) | {
    '_findings', '_catalogue', '_judge', '_profile', '_profile_schema', '_profile_docs', '_check_status'}


@pytest.fixture(scope='module')
def payloads():
    out = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'payload.py'), '--json'], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_catalogue_modules_are_found():
    assert {'_checks_gpu', '_container', '_scheduler', '_host_samples', '_dmon_checks', '_workloads', '_mesh'} <= CATALOGUE_MODULES
    assert not {'_container_run', '_scheduler_node', '_host_sampler', '_dmon_sampler', '_mesh_node', '_mesh_probe',
                '_collect'} & CATALOGUE_MODULES


def test_every_module_is_either_a_node_module_or_the_controllers(payloads):
    assert set(payloads) == set(NODE_MODULES) | CONTROLLER_MODULES
    assert not set(NODE_MODULES) & CONTROLLER_MODULES


@pytest.mark.parametrize('module', sorted(NODE_MODULES))
def test_a_node_module_carries_what_it_uses(payloads, module):
    """The exact set: a module_utils that joins a node's payload is a decision (this list and the docs' table)."""
    assert set(payloads[module]['module_utils']) == NODE_MODULES[module]


@pytest.mark.parametrize('module', sorted(NODE_MODULES))
def test_no_node_payload_carries_a_catalogue(payloads, module):
    carried = sorted(set(payloads[module]['module_utils']) & CATALOGUE_MODULES)
    assert not carried, '%s carries %s to the node: keep its checks and judge on the controller' % (module, ', '.join(carried))


@pytest.mark.parametrize('module', sorted(CONTROLLER_MODULES))
def test_an_action_plugins_module_carries_nothing_of_the_collection(payloads, module):
    assert os.path.isfile(os.path.join(ROOT, 'plugins', 'action', module + '.py'))
    assert payloads[module]['module_utils'] == {}


def test_the_sizes_are_measured(payloads):
    for name, entry in payloads.items():
        assert entry['zip'] > 0, name
        assert all(size > 0 for size in entry['module_utils'].values()), name
