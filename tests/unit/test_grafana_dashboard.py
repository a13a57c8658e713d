"""dashboards/xuanwu-fleet.json: a Grafana dashboard whose panels are well placed and whose queries ask only for
what the textfile exports: every metric named in a PromQL expression is one of ``_prom.METRICS``, every label in
a selector, a ``by``/``without``/``on``/``ignoring`` clause, a legend or a variable query is a label of it."""
import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _prom

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, 'dashboards', 'xuanwu-fleet.json')
LABELS = dict((name, set(labels)) for name, _help, labels in _prom.METRICS)
DATASOURCE = {'type': 'prometheus', 'uid': '${DS_PROMETHEUS}'}

# PromQL words that are not metric names (https://prometheus.io/docs/prometheus/latest/querying/)
FUNCTIONS = {
    'abs', 'absent', 'absent_over_time', 'avg_over_time', 'ceil', 'changes', 'clamp', 'clamp_max', 'clamp_min',
    'count_over_time', 'day_of_month', 'day_of_week', 'delta', 'deriv', 'exp', 'floor', 'histogram_quantile',
    'idelta', 'increase', 'irate', 'label_join', 'label_replace', 'last_over_time', 'ln', 'log2', 'log10',
    'max_over_time', 'min_over_time', 'predict_linear', 'quantile_over_time', 'rate', 'resets', 'round',
    'scalar', 'sort', 'sort_desc', 'sqrt', 'stddev_over_time', 'sum_over_time', 'time', 'timestamp', 'vector'}
AGGREGATIONS = {'sum', 'min', 'max', 'avg', 'count', 'stddev', 'stdvar', 'topk', 'bottomk', 'quantile', 'count_values', 'group'}
GROUPING = {'by', 'without', 'on', 'ignoring', 'group_left', 'group_right'}
KEYWORDS = {'bool', 'and', 'or', 'unless', 'offset'}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_TOKEN = re.compile(r'\{[^{}]*\}|\[[^\]]*\]|[0-9][0-9A-Za-z_.]*|[A-Za-z_:][A-Za-z0-9_:]*|\(|\)|[^\sA-Za-z0-9_:(){}\[\]]+')
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*""')


def parse_promql(expr):
    """``{'metrics': [names], 'selectors': [(metric, {labels})], 'grouping': [(by|on|..., {labels})], 'unknown': [words]}`` of a
    PromQL expression: strings are blanked first, so label values (and Grafana variables in them) are no names."""
    blanked = _STRING.sub('""', expr)
    tokens = _TOKEN.findall(blanked)
    out = {'metrics': [], 'selectors': [], 'grouping': [], 'unknown': []}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else ''
        if token in GROUPING:
            if following == '(':
                end = tokens.index(')', i + 2)
                out['grouping'].append((token, set(t for t in tokens[i + 2:end] if t != ',')))
                i = end + 1
                continue
        elif token in KEYWORDS or token in AGGREGATIONS and following in ('(', 'by', 'without'):
            pass
        elif re.match(r'^[A-Za-z_:]', token):
            if following == '(':
                if token not in FUNCTIONS:
                    out['unknown'].append(token)
            else:
                labels = set(m.group(1) for m in _MATCHER.finditer(following)) if following.startswith('{') else set()
                out['metrics'].append(token)
                out['selectors'].append((token, labels))
                if labels or following.startswith('{'):
                    i += 1      # the selector's braces belong to it
        elif token.startswith('{'):
            # a selector without a metric name: {__name__="..."} is not used here
            out['unknown'].append(token)
        i += 1
    return out


def check_expr(expr, legend=None):
    """The problems of one expression: unknown metrics, words or labels; labels of a legend that the result lacks."""
    parsed = parse_promql(expr)
    problems = ['not a PromQL function or keyword: %s' % w for w in parsed['unknown']]
    if not parsed['metrics']:
        problems.append('no metric in %r' % expr)
    for metric, labels in parsed['selectors']:
        if metric not in LABELS:
            problems.append('metric %s is not exported (_prom.METRICS)' % metric)
            continue
        problems += ['label %s is not a label of %s' % (label, metric) for label in sorted(labels - LABELS[metric])]
    known = [LABELS[m] for m in parsed['metrics'] if m in LABELS]
    for _keyword, group in parsed['grouping']:
        for label in sorted(group):
            if not all(label in labels for labels in known):
                problems.append('label %s of by/on/ignoring is not a label of every metric in %r' % (label, expr))
    if legend:
        result = set.intersection(*known) if known else set()
        for keyword, group in parsed['grouping']:
            result = result & group if keyword == 'by' else result - group if keyword == 'without' else result
        problems += ['legend label %s is not in the result of %r' % (label, expr)
                     for label in re.findall(r'\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}', legend) if label not in result]
    return problems


def _load():
    with open(DASHBOARD, encoding='utf-8') as stream:
        return json.load(stream)


def _panels(dashboard):
    for panel in dashboard['panels']:
        yield panel
        yield from panel.get('panels') or []


def test_dashboard_has_the_prometheus_datasource_and_host_variables():
    dashboard = _load()
    assert dashboard['uid'] and dashboard['title'] and isinstance(dashboard['schemaVersion'], int)
    variables = dict((v['name'], v) for v in dashboard['templating']['list'])
    assert variables['DS_PROMETHEUS']['type'] == 'datasource' and variables['DS_PROMETHEUS']['query'] == 'prometheus'
    host = variables['host']
    assert host['type'] == 'query' and host['datasource'] == DATASOURCE and host['multi'] and host['includeAll']
    for variable in variables.values():
        if variable['type'] != 'query':
            continue
        query = variable['query']['query'] if isinstance(variable['query'], dict) else variable['query']
        match = re.match(r'^label_values\((\w+),\s*(\w+)\)$', query)
        assert match, query
        assert match.group(2) in LABELS[match.group(1)], query


def test_panels_have_unique_ids_a_place_a_datasource_and_targets():
    dashboard = _load()
    panels = list(_panels(dashboard))
    ids = [p['id'] for p in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)
    cells = {}
    for panel in panels:
        grid = panel['gridPos']
        assert all(isinstance(grid[k], int) for k in ('h', 'w', 'x', 'y')) and grid['w'] > 0 and grid['h'] > 0
        assert grid['x'] + grid['w'] <= 24, panel['title']
        for x in range(grid['x'], grid['x'] + grid['w']):
            for y in range(grid['y'], grid['y'] + grid['h']):
                assert (x, y) not in cells, 'panels %r and %r overlap' % (cells.get((x, y)), panel['title'])
                cells[(x, y)] = panel['title']
        if panel['type'] == 'row':
            continue
        assert panel['title'] and panel['datasource'] == DATASOURCE
        refs = [t['refId'] for t in panel['targets']]
        assert panel['targets'] and len(refs) == len(set(refs))
        for target in panel['targets']:
            assert target['expr'].strip() and target.get('datasource', DATASOURCE) == DATASOURCE


def test_every_query_asks_for_exported_metrics_and_their_labels():
    dashboard = _load()
    used = set()
    for panel in _panels(dashboard):
        for target in panel.get('targets') or []:
            assert check_expr(target['expr'], target.get('legendFormat')) == [], (panel['title'], target['expr'])
            used.update(parse_promql(target['expr'])['metrics'])
    # what the brief of the dashboard names: busbw trend, failing checks over time, GPU memory and temperature
    assert {'xuanwu_collective_busbw_gbytes', 'xuanwu_collective_avg_busbw_gbytes', 'xuanwu_check_outcome', 'xuanwu_host_status',
            'xuanwu_gpu_temperature_celsius', 'xuanwu_gpu_framebuffer_used_mebibytes'} <= used


def test_the_check_reads_names_labels_functions_and_variables():
    parsed = parse_promql('max by (host, gpu) (xuanwu_gpu_temperature_celsius{host=~"$host", sensor="gpu", stat="max"}) '
                          '- ignoring (stat) rate(xuanwu_gpu_power_watts[5m] offset 1d)')
    assert parsed['metrics'] == ['xuanwu_gpu_temperature_celsius', 'xuanwu_gpu_power_watts']
    assert parsed['selectors'][0] == ('xuanwu_gpu_temperature_celsius', {'host', 'sensor', 'stat'})
    assert parsed['grouping'] == [('by', {'host', 'gpu'}), ('ignoring', {'stat'})] and parsed['unknown'] == []


@pytest.mark.parametrize('expr, legend, problem', [
    ('xuanwu_busbw{host="a"}', None, 'metric xuanwu_busbw is not exported'),
    ('xuanwu_host_status{hostname="a"}', None, 'label hostname is not a label of xuanwu_host_status'),
    ('max by (gpu) (xuanwu_host_status)', None, 'label gpu of by/on/ignoring'),
    ('sum(xuanwu_check_outcome) by (nodename)', None, 'label nodename of by/on/ignoring'),
    ('max by (host) (xuanwu_check_outcome)', '{{host}} {{check}}', 'legend label check'),
    ('xuanwu_gpu_power_watts{host="a"} - ignoring(sensor) xuanwu_gpu_power_watts', None, 'label sensor of by/on/ignoring'),
    ('frobnicate(xuanwu_host_status)', None, 'not a PromQL function or keyword: frobnicate'),
    ('sum("xuanwu_host_status")', None, 'no metric'),
])
def test_the_check_finds_what_the_textfile_does_not_export(expr, legend, problem):
    problems = check_expr(expr, legend)
    assert any(problem in p for p in problems), problems


PROMTOOL = shutil.which('promtool')


@pytest.mark.skipif(PROMTOOL is None, reason='no promtool on PATH (Debian: apt-get install prometheus); CI installs it')
def test_every_query_is_promql_that_prometheus_parses(tmp_path):
    """Prometheus's own parser (``promtool check rules``) reads every expression, each as a recording rule; the
    check sees a broken one."""
    exprs = [t['expr'] for p in _panels(_load()) for t in p.get('targets') or []]
    for name, items in (('dashboard', exprs), ('broken', ['max by (host (xuanwu_host_status)'])):
        rules = {'groups': [{'name': name, 'rules': [{'record': 'xuanwu:dashboard_%d' % i, 'expr': e} for i, e in enumerate(items)]}]}
        path = tmp_path / ('%s.yml' % name)
        path.write_text(json.dumps(rules), encoding='utf-8')    # JSON is YAML
        done = subprocess.run([PROMTOOL, 'check', 'rules', str(path)], capture_output=True, text=True, check=False, timeout=60)
        if name == 'dashboard':
            assert done.returncode == 0 and 'SUCCESS: %d rules found' % len(exprs) in done.stdout, done.stdout + done.stderr
        else:
            assert done.returncode != 0, done.stdout
