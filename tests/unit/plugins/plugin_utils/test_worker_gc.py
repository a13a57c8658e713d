"""plugin_utils/_worker: the per-host actions freeze what their Ansible worker process inherited, and only there."""
import ast
import gc
import json
import multiprocessing
import os

import pytest

from ansible.executor.process.worker import WorkerProcess

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _worker

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


def test_nothing_is_frozen_outside_a_worker():
    before = gc.get_freeze_count()
    assert _worker.freeze_inherited() is False
    assert gc.get_freeze_count() == before


def _in_child(function):
    """function()'s JSON result, run in a forked child (what it freezes stays there)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        status = 1
        try:
            os.close(read)
            os.write(write, json.dumps(function()).encode())
            status = 0
        finally:
            os._exit(status)  # pylint: disable=protected-access
    os.close(write)
    with os.fdopen(read) as handle:
        text = handle.read()
    _pid, status = os.waitpid(pid, 0)
    assert status == 0, text
    return json.loads(text)


def _as_worker():
    # the process object Ansible's fork gives its worker; only its class is read
    multiprocessing.process._current_process = WorkerProcess.__new__(WorkerProcess)  # pylint: disable=protected-access
    inherited = [[index] for index in range(10000)]  # what the main process held when it forked
    tracked = len(gc.get_objects())
    frozen = _worker.freeze_inherited()
    after = gc.get_freeze_count()
    # what the task creates afterwards is still collected: a reference cycle made now is freed
    cycle = []
    cycle.append(cycle)
    del cycle
    collected = gc.collect()
    return {'frozen': frozen, 'count': after, 'tracked': tracked, 'collected': collected, 'inherited': len(inherited)}


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='Ansible workers are forked')
def test_a_worker_freezes_what_it_inherited_and_collects_what_it_makes():
    before = gc.get_freeze_count()
    out = _in_child(_as_worker)
    assert out['frozen'] is True
    assert out['count'] >= out['tracked'] >= out['inherited']
    assert out['collected'] >= 1
    assert gc.get_freeze_count() == before  # the test's own process is left as it was


@pytest.mark.parametrize('name', ['node_validate', 'workload_check'])
def test_the_per_host_actions_freeze_first(name):
    with open(os.path.join(ROOT, 'plugins', 'action', name + '.py')) as handle:
        tree = ast.parse(handle.read())
    run = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == 'run')
    first = run.body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)
    assert ast.unparse(first.value) == '_worker.freeze_inherited()'
