"""Hostile host names and tool output cannot break or inject into any report format: junit.xml parses
as XML, report.html carries no markup from data, report.md renders without raw HTML from data and
keeps its table columns, report.json is strict JSON."""
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from markdown_it import MarkdownIt

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report

HOST = '<script>alert(1)</script>|x" onclick="y\' z'
NASTY = ('bad \x00\x01\x1b[31m red ]]> <b>bold</b> &amp; line1\nline2 | pipe `tick` ``` [link](http://e.x) '
         '\\| *star* \ud800 \ufffe end ' + 'long ' * 2000)
GPU = '<script>"gpu\' onload="x'
TAIL = 'NCCL INFO\n```\n</details><script>alert(2)</script>\n\x07bell'


def _expected(text):
    """What survives in XML/HTML: control characters removed, a lone surrogate replaced."""
    return re.sub('[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]', '', text.replace('\ud800', '\ufffd'))


def _report_of_hostile_input():
    finding = {'severity': 'fail', 'check': 'gpu.<i>x</i>', 'component': NASTY, 'measured': float('nan'),
               'expected': {'min': float('inf'), 'k<': NASTY}, 'message': NASTY, 'remediation': NASTY}
    warn = dict(finding, severity='warn', check='nic.|warn|')
    dmon = {'command': NASTY, 'interval_s': 1, 'samples': 2, 'gpus': {GPU: {
        'index': 0, 'samples': 2, 'series': {'pwr': {'min': 1, 'median': float('nan'), 'max': NASTY, 'n': 2}},
        'values': {'pwr': [1, float('nan'), 3, NASTY], 'sm': NASTY}}}}
    workloads = [{'kind': 'nccl_tests', 'component': HOST, 'not_judged': NASTY, 'debug_log_tail': TAIL, 'seconds': float('-inf'),
                  'busbw_gbps': {'1024': 1.5, '1048576': float('nan'), NASTY: 2, '1073741824': 300.0},
                  'curve': [{'min_bytes': 1024, 'busbw_gbps_min': 2.0}, {'min_bytes': NASTY, 'busbw_gbps_min': 1}], 'dmon': dmon},
                 {'kind': 'soak', 'component': GPU, 'dmon': {'not_measured': NASTY}}]
    entry = _report.host_entry(HOST, 'fail', [finding, warn], {'host': {'os': {'pretty_name': NASTY}}}, HOST, NASTY,
                               workloads=workloads)
    down = _report.host_entry('a/../../b', 'error', [], {}, None, None, error=NASTY)
    return _report.build_report('r<1>', 't0', 't1', '1.0.0', '2.19', NASTY, {HOST: entry, 'a/../../b': down}, {HOST: NASTY})


class _Collect(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def test_junit_is_well_formed_and_round_trips():
    rep = _report_of_hostile_input()
    root = ET.fromstring(_report.render_junit(rep, {'gpu.count': 'GPU count \x1b'}).encode('utf-8'))
    suites = dict((s.get('name'), s) for s in root.iter('testsuite'))
    assert set(suites) == {_expected(HOST), 'a/../../b'}
    cases = dict((c.get('name'), c) for c in suites[_expected(HOST)].iter('testcase'))
    assert {'gpu.<i>x</i>', 'nic.|warn|', 'gpu.count', 'not judged: ' + _expected(HOST)} <= set(cases)
    failure = cases['gpu.<i>x</i>'].find('failure')
    assert failure.get('message') == _expected('%s: %s' % (NASTY, NASTY))
    assert _expected(NASTY) in failure.text and 'measured NaN' in failure.text
    assert _expected(NASTY) in cases['nic.|warn|'].find('system-out').text
    assert suites['a/../../b'].find('testcase/error').get('message') == _expected(NASTY)


def _refuse(constant):
    raise ValueError('not strict JSON: %s' % constant)


def test_json_is_strict():
    text = _report.render_json(_report_of_hostile_input())
    data = json.loads(text, parse_constant=_refuse)
    finding = data['hosts'][HOST]['findings'][0]
    assert finding['measured'] == 'NaN' and finding['expected']['min'] == 'Infinity'
    assert data['hosts'][HOST]['workloads'][0]['seconds'] == '-Infinity'
    assert '\ud800' not in json.dumps(data, ensure_ascii=False) and finding['message'].startswith('bad \x00\x01\x1b[31m')
    text.encode('utf-8')


def test_html_has_no_markup_from_data():
    page = _report.render_html(_report_of_hostile_input())
    parser = _Collect()
    parser.feed(page)
    parser.close()
    tags = set(tag for tag, _attrs in parser.tags)
    assert not tags & {'script', 'i'}, tags
    assert [t for t, _a in parser.tags].count('b') == len(re.findall('<b>Not (?:probed|judged):</b>', page))  # the report's own
    assert tags <= {'html', 'head', 'meta', 'title', 'style', 'body', 'h1', 'h2', 'h3', 'p', 'code', 'span', 'table', 'tr', 'th',
                    'td', 'a', 'b', 'details', 'summary', 'pre', 'div', 'figure', 'figcaption',
                    'svg', 'g', 'line', 'path', 'polyline', 'circle', 'text'}
    assert not [a for _t, a in parser.tags if any(k.startswith('on') for k in a)]
    text = ''.join(parser.text)
    assert _expected(HOST) in text and _expected(NASTY) in text and _expected(TAIL) in text and GPU in text
    assert ('a', {'href': '#' + _expected(HOST)}) in parser.tags
    # the SVGs are well-formed XML; names from data are their text and attribute values, nothing more
    svgs = [ET.fromstring(svg) for svg in re.findall('<svg .*?</svg>', page, re.S)]
    plot = [svg for svg in svgs if svg.get('class') == 'plot']
    assert len(plot) == 1 and plot[0].get('aria-label').startswith(_expected(HOST) + ':')
    assert plot[0].find('{http://www.w3.org/2000/svg}title').text.startswith(_expected(HOST) + ':')
    assert sorted(c.get('data-bytes') for c in plot[0].iter('{http://www.w3.org/2000/svg}circle') if c.get('data-bytes')) == [
        '1024', '1073741824']
    assert [svg.get('aria-label') for svg in svgs if svg.get('class') == 'spark'] == [GPU + ' power (W)']
    assert 'during %s NOT MEASURED: %s' % (GPU, _expected(NASTY)) in text


def test_markdown_renders_no_html_from_data_and_keeps_table_columns():
    md = _report.render_markdown(_report_of_hostile_input())
    assert '\x00' not in md and '\x1b' not in md and '\ud800' not in md
    md.encode('utf-8')
    page = MarkdownIt('commonmark').enable('table').render(md)
    parser = _Collect()
    parser.feed(page)
    parser.close()
    tags = set(tag for tag, _attrs in parser.tags)
    assert not tags & {'script', 'b', 'i', 'a'}, tags
    for table in re.findall('<table>.*?</table>', page, re.S):
        heads = len(re.findall('<th[ >]', table))
        for row in re.findall('<tr>.*?</tr>', table, re.S)[1:]:
            assert len(re.findall('<td[ >]', row)) == heads, row[:300]
    text = ''.join(parser.text)
    flat = ' '.join(_expected(NASTY).splitlines())
    assert _expected(HOST) in text and flat in text and 'gpu.<i>x</i>' in text
    assert '</details><script>alert(2)</script>' in text    # the log tail, shown as code
