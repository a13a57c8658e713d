"""The elastic restart in the reports: its figures in report.md and report.html, its checks in junit.xml only where it
ran (elsewhere a skipped test case saying it did not run, never a pass)."""
import xml.etree.ElementTree as ET

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report

ELASTIC = {'kind': 'elastic_restart', 'component': 'elastic_restart', 'exit_code': 0, 'seconds': 42.0,
           'result': {'ok': True, 'killed': True, 'victim_rank': 1, 'kill_step': 7, 'restarts': 1, 'max_restarts': 3,
                      'resumed_from': 5, 'steps_redone': 2, 'checkpoint_every': 5, 'steps': 20, 'steps_done': 20,
                      'recover_s': 14.2, 'total_s': 41.0, 'first_loss': 4.3, 'final_loss': 3.1}}
DDP = {'kind': 'ddp_smoke', 'component': 'ddp_smoke', 'exit_code': 0, 'result': {'first_loss': 9.0, 'last_loss': 5.0}}
ELASTIC_CHECKS = sorted(c for c in _catalogue.CATALOGUE if c.startswith('workload.elastic_'))


def report(workloads, findings=()):
    entry = _report.host_entry('n1', 'fail' if findings else 'pass', list(findings), {}, 'p', '/p.yml', workloads=workloads)
    return _report.build_report('r', 't0', 't1', '1', '2.19', 'validate.yml', {'n1': entry}, {'p': '/p.yml'})


def cases(workloads, findings=()):
    suite = ET.fromstring(_report.render_junit(report(workloads, findings), _catalogue.titles()))
    return dict((c.get('name'), c) for c in suite.iter('testcase'))


def test_the_three_checks_are_in_the_catalogue():
    assert ELASTIC_CHECKS == ['workload.elastic_not_recovered', 'workload.elastic_recovery_slow', 'workload.elastic_steps_lost']


def test_junit_passes_the_elastic_checks_where_the_restart_ran():
    found = cases([DDP, ELASTIC])
    for check in ELASTIC_CHECKS:
        assert check in found and len(found[check]) == 0, check


def test_junit_says_the_elastic_checks_did_not_run_where_the_workloads_ran_without_it():
    found = cases([DDP])
    for check in ELASTIC_CHECKS:
        skipped = found[check].find('skipped')
        assert skipped is not None and skipped.get('message').startswith('not applicable: elastic_restart did not run'), check
    assert len(found['workload.ddp_smoke']) == 0
    # no torch workload at all: the stage's checks are not applicable, as every stage's that did not run (never passed)
    found = cases([])
    for check in ELASTIC_CHECKS:
        assert found[check].find('skipped').get('message') == 'not applicable: no workload ran on this host', check


def test_junit_fails_an_elastic_finding():
    finding = dict(host='n1', check='workload.elastic_recovery_slow', component='elastic_restart', severity='fail',
                   measured='75.5 s', expected='<= 60.0 s', message='took 75.5 s', remediation='r')
    found = cases([ELASTIC], [finding])
    assert found['workload.elastic_recovery_slow'].find('failure') is not None


def test_markdown_and_html_show_the_restart_figures():
    text = _report.render_markdown(report([ELASTIC]))
    for words in ('rank 1 killed after step 7', '1 restart(s) of at most 3', 'resumed from step 5 (checkpoint every 5), '
                  '2 step(s) redone', 'recovered in 14.2 s', '20 of 20 steps in 41.0 s, loss 4.3 -&gt; 3.1'):
        assert words in text, words
    assert 'recovered in 14.2 s' in _report.render_html(report([ELASTIC]))


def test_a_restart_that_was_not_tested_says_so():
    untested = dict(ELASTIC, result={'killed': False, 'error': 'no rank was killed: the victim never reported holding'})
    assert _report.elastic_figures(untested) == [
        'no rank killed: restart not tested (no rank was killed: the victim never reported holding)']
    assert _report.elastic_figures(DDP) == []
