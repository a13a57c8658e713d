"""One judge: one finding shape and severity rank (_findings), one catalogue of every check id (_catalogue),
one profile validation per judgement (_judge)."""
import ast
import glob
import os
import re
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import (
    _container, _dmon_checks, _catalogue, _checks, _collectives, _findings, _fleet, _judge, _links, _mesh, _profile, _scheduler,
    _host_samples, _workloads,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report
from ansible_collections.xuanwu.cluster.tests.unit.generated_docs import assert_current

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
BASE = {'schema_version': 1, 'name': 't'}


def profile(**checks):
    return dict(BASE, checks=checks)


# --- the catalogue -----------------------------------------------------------------------------

def test_catalogue_holds_every_area_once():
    areas = [_checks.CHECKS, _collectives.CHECKS, _fleet.CHECKS, _links.CHECKS, _mesh.CHECKS, _workloads.CHECKS,
             _dmon_checks.CHECKS, _container.CHECKS, _scheduler.CHECKS]
    assert sum(len(a) for a in areas) == len(_catalogue.CATALOGUE)
    for area in areas:
        assert set(area) <= set(_catalogue.CATALOGUE)


def test_a_check_id_defined_twice_is_refused():
    with pytest.raises(ValueError, match='gpu.count is defined twice'):
        _findings.join(_checks.CHECKS, {'gpu.count': _findings.entry('again', 'warn', 'x')})


def catalogue_writes(source, name='<source>'):
    """Where ``source`` adds entries to a catalogue (a name ending in ``CHECKS``) past ``_findings.join``:
    ``X_CHECKS.update(...)``, ``X_CHECKS[id] = ...``, ``X_CHECKS.setdefault(...)``, ``{**X_CHECKS, ...}``,
    ``dict(X_CHECKS, ...)``; [(line, what)]."""
    def is_catalogue(node):
        last = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ''
        return last.endswith('CHECKS')
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ('update', 'setdefault') \
                and is_catalogue(node.func.value):
            found.append((node.lineno, node.func.attr))
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.extend((node.lineno, 'item assigned') for t in targets if isinstance(t, ast.Subscript) and is_catalogue(t.value))
        elif isinstance(node, ast.Dict) and any(k is None and is_catalogue(v) for k, v in zip(node.keys, node.values)):
            found.append((node.lineno, '** unpacked'))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == 'dict' \
                and any(is_catalogue(a) for a in node.args):
            found.append((node.lineno, 'dict() copied'))
    return found


@pytest.mark.parametrize('path', sorted(glob.glob(os.path.join(ROOT, 'plugins', '*', '*.py'))))
def test_every_catalogue_is_joined_so_a_duplicate_id_is_refused(path):
    """One registry: catalogues are put together only by _findings.join, which refuses a check id defined twice."""
    with open(path) as handle:
        assert catalogue_writes(handle.read(), path) == []


def test_a_catalogue_written_past_join_is_found():
    assert catalogue_writes('CHECKS = {}\nCHECKS.update(_host_samples.CHECKS)\n') == [(2, 'update')]
    assert catalogue_writes("CHECKS['a.b'] = 1\nx = dict(CHECKS)\ny = {**RUN_CHECKS}\n") == [
        (1, 'item assigned'), (2, 'dict() copied'), (3, '** unpacked')]
    assert catalogue_writes('CHECKS = _findings.join(RUN_CHECKS, _host_samples.CHECKS)\nfound.update(x)\n') == []


def test_the_workload_area_joins_the_host_cpu_checks():
    """The host CPU checks are listed with the workload checks (docs/checks.md), joined, in the order of the docs."""
    assert list(_workloads.CHECKS) == list(_workloads.RUN_CHECKS) + list(_host_samples.CHECKS)
    assert not set(_workloads.RUN_CHECKS) & set(_host_samples.CHECKS)
    with pytest.raises(ValueError, match='workload.host_cpu_steal is defined twice'):
        _findings.join(_workloads.RUN_CHECKS, _host_samples.CHECKS, {'workload.host_cpu_steal': _findings.entry('t', 'warn', 'r')})


@pytest.mark.parametrize('check', sorted(_catalogue.CATALOGUE))
def test_every_catalogue_entry_is_complete(check):
    spec = _catalogue.CATALOGUE[check]
    assert spec['default_severity'] in _findings.SEVERITIES
    assert spec['title'] and len(spec['remediation']) > 40
    assert re.match(r'^[a-z]+(\.[a-z0-9_]+)+$', check)


def test_severity_must_be_known():
    with pytest.raises(ValueError, match='severity must be one of fail, warn, info'):
        _findings.entry('t', 'error', 'r')
    with pytest.raises(ValueError, match='severity must be one of'):
        _findings.make(_catalogue.CATALOGUE, 'h', 'gpu.count', 'gpu', 1, 2, 'm', severity='critical')


# --- the profile validator knows every check id ------------------------------------------------

@pytest.mark.parametrize('typo, hint', [
    ('collectives.busbw_lwo', 'collectives.busbw_low'),
    ('workload.not_mesured', 'workload.not_measured'),
    ('workload.ib_counter_grwth', 'workload.ib_counter_growth'),
    ('gpu.cuont', 'gpu.count'),
])
def test_a_typo_in_checks_disable_is_a_profile_error(typo, hint):
    with pytest.raises(ProfileError) as err:
        _profile.validate_profile(profile(disable=[typo]))
    assert 'checks.disable[0]' in str(err.value) and hint in str(err.value)
    with pytest.raises(ProfileError) as err:
        _profile.validate_profile(profile(severity={typo: 'warn'}))
    assert hint in str(err.value)


@pytest.mark.parametrize('pattern', ['collectives.*', 'workload.*', 'collectives.busbw_low', 'workload.soak',
                                     'workload.ib_counter_growth', 'ib.*', 'consistency.*'])
def test_real_ids_and_globs_are_accepted(pattern):
    assert _profile.validate_profile(profile(disable=[pattern]))['checks']['disable'] == [pattern]


# --- one finding shape, one rank ---------------------------------------------------------------

def _node_findings():
    facts = {'gpu': {'installed': True, 'count': 1, 'devices': [{'index': 0, 'name': 'NVIDIA H200'}]}, 'probes': {}}
    return _judge.evaluate(facts, dict(BASE, gpu={'count': 8}), 'n1')


def _workload_findings():
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'nccl',
                           'nccl-tests_all_reduce_perf_wrong-results.txt')) as handle:
        run = {'stdout': handle.read(), 'exit_code': 0, 'collective': 'all_reduce'}
    judge = _judge.Judge(dict(BASE, collectives={'all_reduce': {'curve': [{'min_bytes': 1 << 20, 'busbw_gbps_min': 10000}]}}))
    return judge.workload('nccl_tests', run, 'n1')


def test_every_emitter_builds_the_same_shape():
    found = _node_findings() + _workload_findings() + _links.evaluate_counter_growth(
        {'before': {}, 'after': {}}, {'infiniband': {'counters_growth_max': {'link_downed': 0}}}, 'n1')
    found += _judge.evaluate_group({'a': {'software': {'nccl_version': '1'}}, 'b': {'software': {'nccl_version': '1'}},
                                    'c': {'software': {'nccl_version': '2'}}}, keys=('software.nccl_version',))
    kinds = set(f['check'].split('.')[0] for f in found)
    assert {'gpu', 'collectives', 'workload', 'consistency'} <= kinds
    for finding in found:
        assert tuple(sorted(finding)) == tuple(sorted(_findings.FIELDS)), finding
        assert finding['severity'] in _findings.SEVERITIES
        assert finding['check'] in _catalogue.CATALOGUE or finding['check'].startswith('consistency.')


def test_site_overrides_apply_to_node_and_workload_findings_alike():
    judge = _judge.Judge(dict(BASE, gpu={'count': 8},
                              collectives={'all_reduce': {'curve': [{'min_bytes': 1 << 20, 'busbw_gbps_min': 10000}]}},
                              checks={'severity': {'gpu.*': 'warn', 'collectives.busbw_low': 'info'},
                                      'disable': ['collectives.wrong_results']}))
    facts = {'gpu': {'installed': True, 'count': 1, 'devices': [{'index': 0, 'name': 'NVIDIA H200'}]}, 'probes': {}}
    node = judge.node(facts, 'n1')
    assert node and all(f['severity'] == 'warn' for f in node if f['check'].startswith('gpu.'))
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'nccl',
                           'nccl-tests_all_reduce_perf_wrong-results.txt')) as handle:
        run = {'stdout': handle.read(), 'exit_code': 0, 'collective': 'all_reduce'}
    work = judge.workload('nccl_tests', run, 'n1')
    assert 'collectives.wrong_results' not in [f['check'] for f in work]
    assert [f['severity'] for f in work if f['check'] == 'collectives.busbw_low'] == ['info']


def test_rank_sort_and_status():
    f = [dict(host='a', check='x.b', component='c', severity=s) for s in ('info', 'fail', 'warn')]
    assert [x['severity'] for x in sorted(f, key=_findings.sort_key)] == ['fail', 'warn', 'info']
    assert _findings.status_of([]) == 'pass'
    assert _findings.status_of(f[:1]) == 'pass'
    assert _findings.status_of(f[::2]) == 'warn'
    assert _findings.status_of(f) == 'fail'
    assert [_findings.is_failing(x) for x in f] == [False, True, False]
    assert [_findings.is_failing(x, 'warn') for x in f] == [False, True, True]
    assert _findings.failed_checks(f + f) == ['x.b']
    summary = _findings.summarise(f + [dict(host='b', check='x.a', component='c', severity='info')])
    assert summary == {'status': 'fail', 'counts': {'fail': 1, 'warn': 1, 'info': 2}, 'hosts': {'a': 'fail', 'b': 'pass'}}


def test_report_orders_findings_by_the_one_rank():
    f = [dict(host='n1', check=c, component='x', severity=s, measured=1, expected=2, message='m', remediation='r')
         for c, s in (('a.info', 'info'), ('b.warn', 'warn'), ('c.fail', 'fail'))]
    entry = _report.host_entry('n1', 'fail', f, {}, 'p', '/p.yml')
    assert [x['severity'] for x in entry['findings']] == ['fail', 'warn', 'info']


# --- JUnit passes only the checks that ran ------------------------------------------------------------

def _junit_names(workloads, findings):
    """The names of the test cases that are no skipped ones (passed or failed), and of those that failed."""
    entry = _report.host_entry('n1', 'fail' if findings else 'pass', findings, {}, 'p', '/p.yml', workloads=workloads)
    report = _report.build_report('r', 't0', 't1', '1', '2.19', 'validate.yml', {'n1': entry}, {'p': '/p.yml'})
    suite = ET.fromstring(_report.render_junit(report, _catalogue.titles()))
    cases = list(suite.iter('testcase'))
    skipped = dict((c.get('name'), c.find('skipped').get('message')) for c in cases if c.find('skipped') is not None)
    # a stage that did not run on the host: each of its checks is a skipped test case that says so, never a pass
    assert all(message.startswith('not applicable: ') for message in skipped.values()), skipped
    return (set(c.get('name') for c in cases if c.get('name') not in skipped),
            [c.get('name') for c in cases if c.find('failure') is not None])


def _area(area):
    return set(c for c in _catalogue.CATALOGUE if c.split('.', 1)[0] == area)


def test_junit_lists_the_checks_of_the_stages_that_ran():
    finding = _workload_findings()[0]
    names, failed = _junit_names([{'kind': 'nccl_tests', 'component': 'all_reduce_perf'}], [finding])
    node_checks = set(c for c in _catalogue.CATALOGUE if c.split('.', 1)[0] not in _report.STAGE_AREAS)
    assert node_checks | _area('collectives') <= names
    assert finding['check'] in failed
    # the torch workloads and the SSH mesh did not run on this host: their checks are no passes
    assert not (_area('workload') | _area('mesh')) & names, sorted((_area('workload') | _area('mesh')) & names)


def test_junit_lists_no_stage_check_of_a_host_where_no_stage_ran():
    names, failed = _junit_names([], [])
    assert not failed
    assert not (_area('collectives') | _area('workload') | _area('mesh')) & names
    assert {'gpu.count', 'host.time_sync'} <= names


def test_a_finding_of_a_stage_is_listed_even_without_its_run():
    finding = dict(host='n1', check='mesh.tcp', component='n1 → n2', severity='fail', measured='refused', expected='open',
                   message='m', remediation='r')
    names, failed = _junit_names([], [finding])
    assert failed == ['mesh.tcp'] and 'mesh.dns' not in names


def test_docs_checks_md_lists_every_check_once():
    assert_current('docs/checks.md')
    with open(os.path.join(ROOT, 'docs', 'checks.md')) as handle:
        text = handle.read()
    rows = re.findall(r'^\| `([a-z0-9_.]+)` \|', text, re.M)
    assert sorted(rows) == sorted(_catalogue.CATALOGUE)
