"""The report step's fleet and history work (_fleet_step): findings per host from the run's entries and the history
database, added before the summary; unusable or switched-off history is said, never a pass; the report section."""
import json

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _history, _profile
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _fleet_step, _report

GIB = 1 << 30
HOSTS = ['n%02d' % i for i in range(10)]
# real per-run medians at 1 GiB of all_reduce_perf (tests/fixtures/hardware/h200x2-nvlink-gate/run1..run10)
REAL = [324.59, 325.12, 323.69, 323.03, 323.31, 324.66, 324.66, 324.27, 326.56, 324.71]


def profile(**sections):
    return _profile.validate_profile(dict({'schema_version': 1, 'name': 'p'}, **sections))


def entries(figures, statuses=None, name='p'):
    out = {}
    for host, busbw in figures.items():
        workloads = [{'kind': 'nccl_tests', 'component': 'all_reduce_perf', 'busbw_gbps': {str(GIB): busbw, '8': 0.01}},
                     {'kind': 'nccl_tests', 'component': 'multinode all_reduce_perf (a, b)', 'busbw_gbps': {str(GIB): 1.0}}]
        out[host] = _report.host_entry(host, (statuses or {}).get(host, 'pass'), [], {}, name, '/p.yml', workloads=workloads)
    return out


def run(run_id, figures, db, profiles, statuses=None):
    """One report step: judge, add, build, record. Returns the report."""
    hosts = entries(figures, statuses)
    extra, section = _fleet_step.judge(hosts, profiles, db, run_id)
    hosts = _fleet_step.with_findings(hosts, extra)
    report = _report.build_report(run_id, run_id, run_id, '0.1.0', '2.19', 'validate', hosts, {'p': '/p.yml'})
    report['fleet'] = section
    assert _fleet_step.record(db, report) is None
    return report


def test_a_fleet_outlier_fails_its_host_in_status_summary_and_junit():
    figures = dict(zip(HOSTS, REAL))
    figures['n04'] = round(REAL[4] * 0.94, 2)
    report = run('r1', figures, None, {'p': profile(fleet={})})
    assert report['summary']['failed_hosts'] == ['n04'] and report['hosts']['n04']['counts']['fail'] == 1
    assert [f['check'] for f in report['hosts']['n04']['findings']] == ['collectives.fleet_outlier']
    assert report['fleet']['profiles']['p']['fleet']['outliers'] == {'n04': ['all_reduce_perf 1 GiB']}
    # the multi-node job is not a collective of one host: not in the fleet
    assert list(report['fleet']['profiles']['p']['fleet']['figures']) == ['all_reduce_perf']
    assert 'name="collectives.fleet_outlier"><failure' in _report.render_junit(report, {})
    md = _report.render_markdown(report)
    fig = report['fleet']['profiles']['p']['fleet']['figures']['all_reduce_perf'][str(GIB)]
    assert '## Fleet and history' in md and '| p | all_reduce_perf | 1 GiB | %s | %s | %s | 10 | n04 |' % (
        fig['median'], fig['mad'], fig['threshold']) in md


def test_an_error_host_stays_error_and_the_profile_checks_section_applies():
    figures = dict(zip(HOSTS, REAL))
    figures['n04'] = 100.0
    hosts = entries(figures, {'n04': 'error'})
    extra, _section = _fleet_step.judge(hosts, {'p': profile(fleet={}, checks={'severity': {'collectives.fleet_*': 'warn'}})}, None, 'r1')
    assert [(f['host'], f['severity']) for f in extra['n04']] == [('n04', 'warn')]
    assert _fleet_step.with_findings(hosts, extra)['n04']['status'] == 'error'


def test_a_profile_without_fleet_or_history_adds_nothing():
    figures = dict(zip(HOSTS, REAL))
    figures['n04'] = 100.0
    extra, section = _fleet_step.judge(entries(figures), {'p': profile()}, None, 'r1')
    assert extra == {} and section['profiles'] == {} and _fleet_step.markdown(section, str) == []


def test_fewer_hosts_than_min_hosts_is_said_in_every_format():
    report = run('r1', dict(zip(HOSTS[:5], REAL)), None, {'p': profile(fleet={})})
    note = 'fleet threshold not applied to all_reduce_perf 1 GiB: 5 healthy host(s) < min_hosts 8'
    assert report['fleet']['profiles']['p']['fleet']['not_applied'] == [note]
    assert note.replace('<', '&lt;') in _report.render_markdown(report) and note.replace('<', '&lt;') in _report.render_html(report)


def test_regressed_since_the_run_it_was_last_within_the_share(tmp_path):
    db = str(tmp_path / 'history.sqlite')
    profiles = {'p': profile(history={})}
    for n in range(1, 6):
        report = run('r%d' % n, {'n01': REAL[n], 'n02': REAL[n]}, db, profiles)
        assert report['summary']['failed_hosts'] == []
    report = run('r6', {'n01': round(REAL[6] * 0.94, 2), 'n02': round(REAL[6] * 0.98, 2)}, db, profiles)
    assert report['summary']['failed_hosts'] == ['n01']
    finding = report['hosts']['n01']['findings'][0]
    assert finding['check'] == 'collectives.regressed' and 'regressed since run r5' in finding['message']
    assert report['fleet']['profiles']['p']['history']['regressed'] == {'n01': ['all_reduce_perf 1 GiB since run r5']}
    # the failed run is recorded, and is not a baseline of the next one: still regressed since r5
    report = run('r7', {'n01': round(REAL[7] * 0.94, 2), 'n02': REAL[7]}, db, profiles)
    assert 'regressed since run r5' in report['hosts']['n01']['findings'][0]['message']
    assert [r['run_id'] for r in _history.runs(db)] == ['r7', 'r6', 'r5', 'r4', 'r3', 'r2', 'r1']


@pytest.mark.parametrize('db, said', [(None, 'history is off'), ('garbage', 'is not a usable history database')])
def test_history_requested_and_not_available_is_said_not_passed(tmp_path, db, said):
    if db:
        db = str(tmp_path / 'h.sqlite')
        with open(db, 'w') as handle:
            handle.write('not a database' * 100)
    hosts = entries({'n01': 300.0})
    extra, section = _fleet_step.judge(hosts, {'p': profile(history={})}, db, 'r1')
    assert extra == {}
    assert said in section['profiles']['p']['history']['not_judged']['n01'][0]
    if db:
        assert db in section['history_error'] and 'History not used: ' in '\n'.join(_fleet_step.markdown(section, str))
        assert _fleet_step.record(db, {'run_id': 'r1', 'hosts': {}}).startswith('%s is not a usable' % db)


def test_the_section_is_json_and_escaped_in_html():
    figures = dict(('<b>%d</b>' % i, v) for i, v in enumerate(REAL))
    figures['<b>4</b>'] = 1.0
    report = run('r1', figures, None, {'p': profile(fleet={})})
    json.loads(_report.render_json(report))
    page = _report.render_html(report)
    assert '<b>4</b>' not in page and '&lt;b&gt;4&lt;/b&gt;' in page
