"""The run report shows a measurement that was not judged (no curve to compare it with) and one that was
requested and not made, in every format: report.json, junit.xml, report.md and report.html."""
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report

WHY = 'no sendrecv curve in profile p: bus bandwidth measured, not compared'
WORKLOADS = [
    {'kind': 'nccl_tests', 'component': 'all_reduce_perf', 'busbw_gbps': {str(1 << 30): 324.6}, 'seconds': 19.1},
    {'kind': 'nccl_tests', 'component': 'sendrecv_perf', 'busbw_gbps': {str(1 << 30): 360.5}, 'seconds': 13.2, 'not_judged': WHY},
]


def report(findings=(), workloads=None):
    entry = _report.host_entry('node1', 'pass', list(findings), {}, 'p', '/p.yml', workloads=WORKLOADS if workloads is None else workloads)
    return _report.build_report('r1', 't0', 't1', '1.0.0', '2.19', 'validate.yml', {'node1': entry}, {'p': '/p.yml'})


class _Text(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.text = []

    def handle_data(self, data):
        self.text.append(data)


def test_not_judged_in_json_junit_markdown_and_html():
    rep = report()
    assert json.loads(_report.render_json(rep))['hosts']['node1']['not_judged'] == {'sendrecv_perf': WHY}
    root = ET.fromstring(_report.render_junit(rep, {'collectives.busbw_low': 'low'}))
    skipped = [(c.get('name'), c.find('skipped').get('message')) for c in root.iter('testcase') if c.find('skipped') is not None]
    assert skipped == [('not judged: sendrecv_perf', 'not judged: ' + WHY)]
    md = _report.render_markdown(rep)
    assert '**Not judged:** sendrecv_perf — ' + WHY in md and '| NOT JUDGED: ' + WHY in md
    assert 'every check passed' not in md and '1 measurement(s) not judged (sendrecv_perf)' in md
    parser = _Text()
    parser.feed(_report.render_html(rep))
    text = ''.join(parser.text)
    assert 'Not judged: sendrecv_perf — ' + WHY in text and 'every check passed' not in text


def test_a_fully_judged_host_says_every_check_passed_and_lists_nothing_as_not_judged():
    rep = report(workloads=WORKLOADS[:1])
    assert rep['hosts']['node1']['not_judged'] == {}
    # the checks of the stages that did not run are not applicable: "every check that applies passed"
    assert 'No findings: every check that applies passed' in _report.render_markdown(rep)
    assert '<skipped' not in _report.render_junit(rep, {})


def test_not_measured_is_shown_with_its_reason():
    run = {'kind': 'not_measured', 'component': 'collectives', 'not_measured': 'no nccl-tests binaries'}
    md = _report.render_markdown(report(workloads=[run]))
    assert 'NOT MEASURED: no nccl-tests binaries' in md
