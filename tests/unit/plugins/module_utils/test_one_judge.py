"""The one judge (plugins/module_utils/_judge.py): the site overrides (checks.disable, checks.severity) are applied
there and nowhere else, and every step adds findings to a host's through one entry point (_findings.merged)."""
import ast
import os

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue, _findings, _judge

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..')
PLUGINS = os.path.normpath(os.path.join(ROOT, 'plugins'))


def _python_files():
    for folder, _dirs, files in os.walk(PLUGINS):
        for name in sorted(files):
            if name.endswith('.py'):
                yield os.path.join(folder, name)


def _calls(path, names):
    """(line, name) of every call or reference of one of ``names`` (an attribute or a bare name) in a file."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if name in names:
            found.append((node.lineno, name))
        if isinstance(node, ast.ImportFrom):
            found.extend((node.lineno, alias.name) for alias in node.names if alias.name in names)
    return found


def _make(host, check, component, measured, expected, message, severity=None):
    return _findings.make(_catalogue.CATALOGUE, host, check, component, measured, expected, message, severity)


def test_only_the_judge_applies_the_site_overrides():
    outside = {}
    for path in _python_files():
        rel = os.path.relpath(path, PLUGINS)
        if rel in (os.path.join('module_utils', '_judge.py'), os.path.join('module_utils', '_findings.py')):
            continue
        found = _calls(path, ('apply_overrides', '_override_for'))
        if found:
            outside[rel] = found
    assert outside == {}, 'the site overrides are applied by _judge only (Judge.node/group/workload/dmon/fleet, compare_hosts)'
    # and the judge does use it: this test is not vacuous
    assert _calls(os.path.join(PLUGINS, 'module_utils', '_judge.py'), ('apply_overrides',))


def test_the_status_of_a_host_is_computed_in_one_place():
    """Steps that add findings to a host's (workload checks, the comparison, the fleet step) go through
    _findings.merged; none recomputes a status from a list it built itself."""
    adders = [os.path.join(PLUGINS, 'action', 'workload_check.py'), os.path.join(PLUGINS, 'action', 'validation_report.py'),
              os.path.join(PLUGINS, 'plugin_utils', '_fleet_step.py')]
    for path in adders:
        assert _calls(path, ('merged', 'with_findings')), path
        assert not _calls(path, ('status_of',)), path


def test_compare_hosts_applies_each_hosts_own_overrides():
    values = {'a': {'software': {'nccl_version': '2.28.9'}}, 'b': {'software': {'nccl_version': '2.28.9'}},
              'c': {'software': {'nccl_version': '2.18.1'}}, 'd': {'software': {'nccl_version': '2.18.3'}}}
    keys = ('software.nccl_version',)
    plain = _judge.compare_hosts(values, {}, keys)
    assert sorted(plain) == ['c', 'd'] and all(f['severity'] == 'fail' for fs in plain.values() for f in fs)
    judged = _judge.compare_hosts(values, {'c': {'severity': {'consistency.*': 'warn'}}, 'd': {'disable': ['consistency.software.*']}}, keys)
    assert list(judged) == ['c'] and [f['severity'] for f in judged['c']] == ['warn']


def test_fleet_findings_get_the_profiles_overrides():
    finding = _make('n1', 'collectives.fleet_outlier', 'all_reduce_perf', '300', '>= 310', 'below the fleet')
    judge = _judge.Judge({'schema_version': 1, 'name': 'p', 'checks': {'severity': {'collectives.fleet_*': 'info'}}})
    assert [f['severity'] for f in judge.fleet([finding])] == ['info']
    assert _judge.Judge({'schema_version': 1, 'name': 'p', 'checks': {'disable': ['collectives.fleet_outlier']}}).fleet([finding]) == []


def test_merged_adds_once_and_summarises_once():
    one = _make('n1', 'gpu.count', 'gpu', '1', '2', 'count')
    two = _make('n1', 'collectives.busbw_low', 'all_reduce_perf', '1', '2', 'slow', severity='warn')
    findings, summary = _findings.merged([one], [one, two])
    assert findings == [one, two] and summary['status'] == 'fail' and summary['counts'] == {'fail': 1, 'warn': 1, 'info': 0}
    assert _findings.merged(None, None) == ([], _findings.summarise([]))


def test_one_result_fact_carries_the_verdict_the_gate_gives():
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _node
    count = _make('n1', 'gpu.count', 'gpu', '1', '2', 'count')
    slow = [_make('n1', 'collectives.busbw_low', 'all_reduce_perf %d' % i, '1', '2', 'slow', severity='warn') for i in range(3)]
    node = _node.summary({'software': {}}, {'checks': {}}, '/p.yml', 'fail', ['stages'], host='n1', findings=slow, status='warn')
    assert (node['status'], node['verdict'], node['error']) == ('warn', '', None)
    failed = _node.with_findings(node, 'n1', [count])
    assert failed['status'] == 'fail' and failed['flags'] == ['stages'] and failed['compare'] == node['compare']
    assert failed['verdict'] == _findings.verdict('n1', failed['findings'], 'fail') and failed['verdict'].startswith('n1 FAILED 1 check(s): [gpu.count]')
    strict = _node.summary({}, {}, '/p.yml', 'warn', host='n1', findings=slow, status='warn')
    assert strict['verdict'].startswith('n1 FAILED 1 check(s): [collectives.busbw_low] 3 findings:')
    # one remediation once, whatever the number of sizes
    assert strict['verdict'].count('Fix: ') == 1
    down = _node.summary(None, {}, '/p.yml', host='n2', error='unreachable: no route to host')
    assert (down['status'], down['compare'], down['verdict']) == ('error', None, 'n2 was not validated: unreachable: no route to host')
    assert _node.with_findings(down, 'n2', [count])['status'] == 'error'
