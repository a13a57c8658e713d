"""report.html of a real run report with floors and GPU samples (tests/report_data.py), read back with
html.parser: the fleet table (failing hosts first, failing checks, worst finding), one collapsible section per
host, a busbw plot per collective against its floor, the GPU samples as sparklines with their figures, a
sampling that did not run said so; report.md keeps the GPU figures as a table."""
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

import report_data
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report


class _Page(HTMLParser):
    """Tags with their attributes and the text inside each ``tr`` of the fleet table."""

    def __init__(self):
        HTMLParser.__init__(self)
        self.tags, self.text, self.rows, self._row, self._table = [], [], [], None, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == 'table':
            self._table.append(attrs.get('class'))
        if tag == 'tr' and self._table and self._table[-1] == 'fleet':
            self._row = []
        if tag == 'td' and self._row is not None:
            self._row.append('')

    def handle_endtag(self, tag):
        if tag == 'table':
            self._table.pop()
        if tag == 'tr' and self._row is not None:
            if self._row:
                self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        self.text.append(data)
        if self._row:
            self._row[-1] += data


def _page(report):
    page = _report.render_html(report)
    parser = _Page()
    parser.feed(page)
    parser.close()
    return page, parser


@pytest.fixture(scope='module')
def fleet():
    return report_data.fleet_report(6, faults_every=3)


def test_fleet_table_lists_failing_hosts_first_with_failing_checks_and_worst_finding(fleet):
    hosts = dict(fleet['hosts'])
    hosts['gpu9999-down'] = _report.host_entry('gpu9999-down', 'error', [], {}, 'p', '/p', error='ssh: connection refused')
    report = dict(fleet, hosts=dict(sorted(hosts.items())))
    _page_text, parser = _page(report)
    names = [row[0] for row in parser.rows]
    status = [row[1] for row in parser.rows]
    assert status == ['fail'] * 4 + ['error'] + ['warn'] * 2, parser.rows
    assert names == ['gpu0001-slow', 'gpu0002-throttled', 'gpu0004-slow', 'gpu0005-throttled', 'gpu9999-down', 'gpu0000', 'gpu0003']
    slow, throttled, down, ok = parser.rows[0], parser.rows[1], parser.rows[4], parser.rows[5]
    assert slow[2] == '1' and slow[4] == 'collectives.busbw_low all_reduce_perf: measured 322.48, expected 336.3'
    assert throttled[2] == '1' and throttled[4].startswith('dmon.sustained_clock gpu1: measured median pclk 1410 MHz')
    assert down[4] == 'not probed: ssh: connection refused'
    assert ok[2] == '0' and ok[4].startswith('facts.not_measured ports')
    assert all(len(row[4]) <= _report.WORST_TEXT_MAX for row in parser.rows)


def test_each_host_is_a_details_section_open_when_it_failed(fleet):
    _text, parser = _page(fleet)
    sections = dict((a['id'], 'open' in a) for t, a in parser.tags if t == 'details' and a.get('class') == 'host')
    assert sections == {'gpu0000': False, 'gpu0001-slow': True, 'gpu0002-throttled': True, 'gpu0003': False,
                        'gpu0004-slow': True, 'gpu0005-throttled': True}
    assert [a['href'] for t, a in parser.tags if t == 'a'] == ['#' + h for h in _report.fleet_order(fleet['hosts'])]


def _svgs(page, cls):
    return [ET.fromstring(s) for s in re.findall(r'<svg class="%s".*?</svg>' % cls, page, re.S)]


def test_a_busbw_plot_per_collective_and_torch_allreduce_against_the_floor(fleet):
    page, _parser = _page(fleet)
    one = _report.render_html(dict(fleet, hosts={'gpu0001-slow': fleet['hosts']['gpu0001-slow']}))
    plots = _svgs(one, 'plot')
    runs = [r for r in fleet['hosts']['gpu0001-slow']['workloads'] if r.get('busbw_gbps')]
    assert [p.find('{http://www.w3.org/2000/svg}title').text.split(':')[0] for p in plots] == [r['component'] for r in runs]
    for plot, run in zip(plots, runs):
        circles = [c for c in plot.iter('{http://www.w3.org/2000/svg}circle') if c.get('data-bytes')]
        assert sorted(c.get('data-bytes') for c in circles) == sorted(s for s in run['busbw_gbps'] if s != '0')   # 0 B: no place on log2
        assert [p for p in plot.iter('{http://www.w3.org/2000/svg}path') if p.get('class') == 'floor']
        under = set(c.get('data-bytes') for c in circles if c.get('class') == 'under')
        floor = dict((p['min_bytes'], p['busbw_gbps_min']) for p in run['curve'])
        expected = set(s for s, v in run['busbw_gbps'].items()
                       if [f for m, f in sorted(floor.items()) if m <= int(s)] and v < [f for m, f in sorted(floor.items()) if m <= int(s)][-1])
        assert under == expected
    # the slower all_reduce has its points from 1 GiB up under the floor, the other collectives none
    assert [sorted(int(c.get('data-bytes')) for c in p.iter('{http://www.w3.org/2000/svg}circle') if c.get('class') == 'under')
            for p in plots] == [[1 << 30, 2 << 30, 4 << 30, 8 << 30], [], [], [], [], []]
    assert len(_svgs(page, 'plot')) == 6 * len(runs)


def test_gpu_samples_as_sparklines_with_min_median_max_and_not_measured(fleet):
    entry = fleet['hosts']['gpu0000']
    page, parser = _page(dict(fleet, hosts={'gpu0000': entry}))
    with_dmon = [r for r in entry['workloads'] if isinstance(r.get('dmon'), dict) and r['dmon'].get('gpus')]
    gpus = sum(len(r['dmon']['gpus']) for r in with_dmon)
    sparks = _svgs(page, 'spark')
    assert len(sparks) == gpus * len(_report.DMON_COLUMNS)
    stats = [a for t, a in parser.tags if t == 'span' and a.get('class') == 'stats']
    assert len(stats) == gpus * len(_report.DMON_COLUMNS)
    text = ''.join(parser.text)
    pwr = with_dmon[0]['dmon']['gpus']['gpu0']['series']['pwr']
    assert '%s / %s / %s' % (pwr['min'], pwr['median'], pwr['max']) in text
    assert ('GPU samples (nvidia-smi dmon) during soak NOT MEASURED: nvidia-smi dmon exited 6 before the first sample: '
            'no GPU samples of soak') in text
    # the power line: as many points as values, the highest value highest up
    values = with_dmon[0]['dmon']['gpus']['gpu0']['values']['pwr']
    line = sparks[0].find('{http://www.w3.org/2000/svg}polyline')
    ys = [float(p.split(',')[1]) for p in line.get('points').split()]
    assert len(ys) == len(values) and ys.index(min(ys)) == values.index(max(values))


def test_hosts_beyond_the_plot_limit_keep_their_numbers_without_plots(fleet, monkeypatch):
    monkeypatch.setattr(_report, 'PLOT_HOSTS_MAX', 2)
    monkeypatch.setattr(_report, 'OPEN_HOSTS_MAX', 3)
    page, parser = _page(fleet)
    sections = re.findall(r'<details class="host" id="([^"]+)"[^>]*>(.*?)\n</details>', page, re.S)
    assert [h for h, _body in sections] == _report.fleet_order(fleet['hosts'])
    assert [h for h, body in sections if '<svg' in body] == ['gpu0001-slow', 'gpu0002-throttled']
    assert all('<table class="dmon">' in body and ' / ' in body for _h, body in sections)
    assert 'Plots are drawn for the first 2 hosts of the table (failing first); the other 4 hosts' in ''.join(parser.text)
    assert not [a for t, a in parser.tags if t == 'details' and 'open' in a]


def test_markdown_keeps_the_gpu_figures_as_a_table(fleet):
    md = _report.render_markdown(dict(fleet, hosts={'gpu0002-throttled': fleet['hosts']['gpu0002-throttled']}))
    assert '| during | GPU | samples | power (W) | SM (%) | GPU temp (°C) | memory used (MiB) | SM clock (MHz) |' in md
    run = [r for r in fleet['hosts']['gpu0002-throttled']['workloads'] if r['kind'] == 'torch_allreduce'][0]
    pclk = run['dmon']['gpus']['gpu1']['series']['pclk']
    assert re.search(r'\| allreduce_bench \| gpu1 \| 15 \| .* \| %s / %s / %s \|' % (pclk['min'], pclk['median'], pclk['max']), md)
    assert 'GPU samples NOT MEASURED: nvidia-smi dmon exited 6' in md
