"""dashboards/xuanwu-fleet.json: a Grafana dashboard whose panels are well placed and whose queries ask only for
what the textfile exports: every metric named in a PromQL expression is one of ``_prom.METRICS``, and every label
that a selector, an aggregation's ``by``/``without``, a join's ``on``/``ignoring``/``group_left`` or a legend names is
one that the expression it applies to carries (a small PromQL parser follows the labels through aggregations, joins
and functions). The PromQL of docs/metrics.md is checked the same way."""
import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _prom

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, 'dashboards', 'xuanwu-fleet.json')
METRICS_DOC = os.path.join(ROOT, 'docs', 'metrics.md')
LABELS = dict((name, frozenset(labels)) for name, _help, labels in _prom.METRICS)
DATASOURCE = {'type': 'prometheus', 'uid': '${DS_PROMETHEUS}'}

# PromQL functions (https://prometheus.io/docs/prometheus/latest/querying/functions/): those that keep the labels of
# their vector argument, and those whose result is a scalar or a vector without labels
FUNCTIONS = {
    'abs', 'absent_over_time', 'avg_over_time', 'ceil', 'changes', 'clamp', 'clamp_max', 'clamp_min',
    'count_over_time', 'day_of_month', 'day_of_week', 'delta', 'deriv', 'exp', 'floor', 'idelta', 'increase', 'irate',
    'last_over_time', 'ln', 'log2', 'log10', 'max_over_time', 'min_over_time', 'predict_linear',
    'quantile_over_time', 'rate', 'resets', 'round', 'sort', 'sort_desc', 'sqrt', 'stddev_over_time', 'sum_over_time',
    'timestamp'}
SCALAR_FUNCTIONS = {'time', 'scalar'}
EMPTY_FUNCTIONS = {'vector', 'absent'}
LABEL_FUNCTIONS = {'label_replace', 'label_join'}     # add the label their second argument names
AGGREGATIONS = {'sum', 'min', 'max', 'avg', 'count', 'stddev', 'stdvar', 'topk', 'bottomk', 'quantile', 'count_values', 'group'}
KEEP_LABELS = {'topk', 'bottomk'}                    # select series, keep every label
PARAMETER = {'topk', 'bottomk', 'quantile', 'count_values'}
SET_OPERATORS = {'and', 'or', 'unless'}
COMPARISONS = {'==', '!=', '>', '<', '>=', '<='}
# binary operators from the loosest to the tightest (^ binds to the right)
PRECEDENCE = [{'or'}, {'and', 'unless'}, COMPARISONS, {'+', '-'}, {'*', '/', '%', 'atan2'}, {'^'}]

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\{[^{}]*\}|\[[^\]]*\]|[0-9][0-9A-Za-z_.]*|[A-Za-z_:][A-Za-z0-9_:]*'
                    r'|==|!=|>=|<=|[-+*/%^<>(),]|\S')
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*(?:"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')')


class _Parser(object):
    """Reads a PromQL expression and follows its labels: ``labels`` of each part is the set of label names its series
    carry (None: a scalar); what is wrong goes to ``problems``; the metrics named go to ``metrics``."""

    def __init__(self, expr):
        self.tokens = _TOKEN.findall(expr)
        self.i = 0
        self.problems = []
        self.metrics = []
        self.selectors = []

    def peek(self, ahead=0):
        return self.tokens[self.i + ahead] if self.i + ahead < len(self.tokens) else ''

    def take(self, expected=None):
        token = self.peek()
        if not token:
            raise ValueError('the expression ends early')
        if expected is not None and token != expected:
            raise ValueError('expected %r at %r' % (expected, ' '.join(self.tokens[self.i:self.i + 5])))
        self.i += 1
        return token

    def label_list(self):
        self.take('(')
        names = set()
        while self.peek() != ')':
            token = self.take()
            if token != ',':
                names.add(token)
        self.take(')')
        return names

    def need(self, names, have, what):
        if have is None:
            self.problems.append('%s of %s: a scalar has no labels' % (what, sorted(names)))
            return
        self.problems += ['label %s of %s is not a label of %s' % (n, what, sorted(have)) for n in sorted(set(names) - have)]

    def expression(self, level=0):
        if level == len(PRECEDENCE):
            return self.unary()
        left = self.expression(level + 1)
        while self.peek() in PRECEDENCE[level]:
            operator = self.take()
            if operator in COMPARISONS and self.peek() == 'bool':
                self.take()
            matching = grouping = None
            if self.peek() in ('on', 'ignoring'):
                matching = (self.take(), self.label_list())
            if self.peek() in ('group_left', 'group_right'):
                keyword = self.take()
                grouping = (keyword, self.label_list() if self.peek() == '(' else set())
            right = self.expression(level + (0 if operator == '^' else 1))
            left = self.binary(operator, left, right, matching, grouping)
        return left

    def binary(self, operator, left, right, matching, grouping):
        """The labels of ``left <operator> right``, checking the join's labels against each side."""
        if left is None or right is None:
            if matching or grouping:
                self.problems.append('on/ignoring/group_left with a scalar side of %s' % operator)
            return right if left is None else left
        if matching:
            keyword, names = matching
            if keyword == 'on':
                self.need(names, left, 'on (left side)')
                self.need(names, right, 'on (right side)')
            else:
                self.need(names, left | right, 'ignoring')
        if grouping:
            keyword, extra = grouping
            self.need(extra, right if keyword == 'group_left' else left, keyword)
            return (left | extra) if keyword == 'group_left' else (right | extra)
        if operator in SET_OPERATORS:
            return left & right if operator == 'or' else left
        if matching:
            keyword, names = matching
            return frozenset(names) if keyword == 'on' else left - names
        return left

    def unary(self):
        if self.peek() in ('-', '+'):
            self.take()
        return self.postfix(self.primary())

    def postfix(self, labels):
        while True:
            token = self.peek()
            if token.startswith('['):
                self.take()
            elif token == 'offset':
                self.take()
                self.take()
            elif token == '@':
                self.take()
                if self.take() in ('start', 'end'):
                    self.take('(')
                    self.take(')')
            else:
                return labels

    def primary(self):
        token = self.take()
        if token == '(':
            labels = self.expression()
            self.take(')')
            return labels
        if re.match(r'^[0-9]', token) or token in ('Inf', 'NaN'):
            return None
        if token.startswith(('"', "'")):
            self.problems.append('a string where a vector or number belongs: %s' % token)
            return None
        if token.startswith('{'):
            self.problems.append('a selector without a metric name: %s' % token)
            return frozenset()
        if not re.match(r'^[A-Za-z_:]', token):
            raise ValueError('unexpected %r' % token)
        if token in AGGREGATIONS and self.peek() in ('(', 'by', 'without'):
            return self.aggregation(token)
        if self.peek() == '(':
            return self.function(token)
        return self.selector(token)

    def selector(self, name):
        names = set()
        if self.peek().startswith('{'):
            names = set(m.group(1) for m in _MATCHER.finditer(self.take()))
        self.metrics.append(name)
        self.selectors.append((name, names))
        if name not in LABELS:
            self.problems.append('metric %s is not exported (_prom.METRICS)' % name)
            return frozenset(names)
        self.problems += ['label %s is not a label of %s' % (n, name) for n in sorted(names - LABELS[name])]
        return LABELS[name]

    def arguments(self):
        self.take('(')
        out = []
        while self.peek() != ')':
            if self.peek().startswith(('"', "'")):
                out.append(('string', self.take()))
            else:
                out.append(('expr', self.expression()))
            if self.peek() == ',':
                self.take()
        self.take(')')
        return out

    def aggregation(self, name):
        clause = self.peek() in ('by', 'without') and (self.take(), self.label_list())
        args = self.arguments()
        if not clause and self.peek() in ('by', 'without'):
            clause = (self.take(), self.label_list())
        vectors = [labels for kind, labels in args if kind == 'expr']
        if len(args) != (2 if name in PARAMETER else 1) or vectors[-1:] == [None]:
            self.problems.append('%s takes %s' % (name, 'a parameter and a vector' if name in PARAMETER else 'a vector'))
            return frozenset()
        have = vectors[-1]
        if clause:
            self.need(clause[1], have, '%s %s' % (name, clause[0]))
        extra = {args[0][1].strip('"\'')} if name == 'count_values' else set()
        if name in KEEP_LABELS:
            return have
        if not clause:
            return frozenset(extra)
        return frozenset(clause[1] | extra) if clause[0] == 'by' else have - clause[1] | extra

    def function(self, name):
        args = self.arguments()
        vectors = [labels for kind, labels in args if kind == 'expr' and labels is not None]
        if name in SCALAR_FUNCTIONS:
            return None
        if name in EMPTY_FUNCTIONS:
            return frozenset()
        if name in LABEL_FUNCTIONS and vectors and len(args) > 1 and args[1][0] == 'string':
            return vectors[0] | {args[1][1].strip('"\'')}
        if name not in FUNCTIONS:
            self.problems.append('not a PromQL function: %s' % name)
        return vectors[0] if vectors else frozenset()


def parse_promql(expr):
    """``{'labels': the result's label names (None: a scalar), 'metrics': [names], 'selectors': [(metric, {labels})],
    'problems': [text]}`` of a PromQL expression. Label values are strings, so Grafana variables in them are no names."""
    parser = _Parser(expr)
    try:
        labels = parser.expression()
        if parser.i != len(parser.tokens):
            raise ValueError('left over: %r' % ' '.join(parser.tokens[parser.i:]))
    except (ValueError, IndexError) as err:
        return {'labels': frozenset(), 'metrics': parser.metrics, 'selectors': parser.selectors,
                'problems': parser.problems + ['cannot read %r: %s' % (expr, err)]}
    return {'labels': labels, 'metrics': parser.metrics, 'selectors': parser.selectors, 'problems': parser.problems}


def check_expr(expr, legend=None):
    """The problems of one expression: unknown metrics, functions or labels; labels of a legend that the result lacks."""
    parsed = parse_promql(expr)
    problems = list(parsed['problems'])
    if not parsed['metrics']:
        problems.append('no metric in %r' % expr)
    result = parsed['labels'] or frozenset()
    problems += ['legend label %s is not in the result of %r' % (label, expr)
                 for label in re.findall(r'\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}', legend or '') if label not in result]
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


def _docs_promql():
    """The PromQL blocks of docs/metrics.md (```promql fences), one expression each, comment lines dropped."""
    with open(METRICS_DOC, encoding='utf-8') as stream:
        doc = stream.read()
    out = []
    for block in re.findall(r'```promql\n(.*?)```', doc, re.S):
        expr = ' '.join(line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith('#'))
        out.append(expr)
    return out


def _targets():
    return [(panel, target) for panel in _panels(_load()) for target in panel.get('targets') or []]


def test_every_query_asks_for_exported_metrics_and_their_labels():
    used = set()
    for panel, target in _targets():
        assert check_expr(target['expr'], target.get('legendFormat')) == [], (panel['title'], target['expr'])
        used.update(parse_promql(target['expr'])['metrics'])
    # what the brief of the dashboard names: busbw trend, failing checks over time, GPU memory and temperature, the
    # last run, the age of each host's result
    assert {'xuanwu_collective_busbw_gbytes', 'xuanwu_collective_avg_busbw_gbytes', 'xuanwu_check_outcome', 'xuanwu_host_status',
            'xuanwu_gpu_temperature_celsius', 'xuanwu_gpu_framebuffer_used_mebibytes', 'xuanwu_run_hosts', 'xuanwu_run_result',
            'xuanwu_run_timestamp_seconds', 'xuanwu_host_last_validated_timestamp_seconds',
            'xuanwu_gpu_framebuffer_growth_under_load_mebibytes'} <= used


LAST_RUN = 'and on (run_id) topk(1, max by (run_id) (xuanwu_run_timestamp_seconds))'


def test_last_run_panels_read_the_last_run_only_and_nothing_counts_twice():
    """The panels of issue 29: "last run" panels keep the series of the run with the newest end (a node that was not
    in it keeps its older file: its run_id is another); failing checks count each check of a host once; GPU memory
    growth is the series of the samples under load, not last - first over every sample."""
    exprs = dict((panel['title'], target['expr']) for panel, target in _targets())
    for title in ('Hosts by status (last run)', 'Run result (last run)', 'Failing and warning checks (last run)'):
        assert LAST_RUN in exprs[title], title
    assert exprs['Failing checks over time'].startswith('count by (host) (max by (host, check, component) (')
    assert 'xuanwu_host_last_validated_timestamp_seconds' in exprs["Age of each host's latest result"]
    growth = [e for t, e in exprs.items() if 'memory growth' in t.lower()]
    assert growth == ['max by (host, gpu) (xuanwu_gpu_framebuffer_growth_under_load_mebibytes{host=~"$host"})']
    assert not [e for e in exprs.values() if 'stat="first"' in e]


def test_the_docs_promql_asks_for_exported_metrics_and_their_labels():
    exprs = _docs_promql()
    assert len(exprs) >= 8
    for expr in exprs:
        assert check_expr(expr) == [], expr
    used = set(m for e in exprs for m in parse_promql(e)['metrics'])
    assert {'xuanwu_check_outcome', 'xuanwu_collective_busbw_gbytes', 'xuanwu_host_last_validated_timestamp_seconds',
            'xuanwu_run_timestamp_seconds'} <= used


def test_the_check_reads_names_labels_functions_and_variables():
    parsed = parse_promql('max by (host, gpu) (xuanwu_gpu_temperature_celsius{host=~"$host", sensor="gpu", stat="max"}) '
                          '- ignoring (stat) max by (host, gpu, stat) (rate(xuanwu_gpu_power_watts[5m] offset 1d))')
    assert parsed['metrics'] == ['xuanwu_gpu_temperature_celsius', 'xuanwu_gpu_power_watts']
    assert parsed['selectors'][0] == ('xuanwu_gpu_temperature_celsius', {'host', 'sensor', 'stat'})
    assert parsed['labels'] == {'host', 'gpu'} and parsed['problems'] == []
    # labels followed through a join on the run, topk (keeps its labels), time() (a scalar), count_values
    joined = parse_promql('max by (host, check) (xuanwu_check_outcome == 2 ' + LAST_RUN + ')')
    assert joined['labels'] == {'host', 'check'} and joined['problems'] == []
    assert parse_promql('time() - max by (host) (xuanwu_host_last_validated_timestamp_seconds)')['labels'] == {'host'}
    assert parse_promql('count_values by (run_id) ("status", xuanwu_host_status)')['labels'] == {'run_id', 'status'}
    assert parse_promql('xuanwu_check_outcome * on (host, run_id) group_left (result) '
                        'xuanwu_run_info')['problems'] == ['label host of on (right side) is not a label of %s'
                                                           % sorted(LABELS['xuanwu_run_info'])]


@pytest.mark.parametrize('expr, legend, problem', [
    ('xuanwu_busbw{host="a"}', None, 'metric xuanwu_busbw is not exported'),
    ('xuanwu_host_status{hostname="a"}', None, 'label hostname is not a label of xuanwu_host_status'),
    ('max by (gpu) (xuanwu_host_status)', None, 'label gpu of max by'),
    ('sum(xuanwu_check_outcome) by (nodename)', None, 'label nodename of sum by'),
    ('max by (host) (xuanwu_check_outcome)', '{{host}} {{check}}', 'legend label check'),
    ('xuanwu_gpu_power_watts{host="a"} - ignoring(sensor) xuanwu_gpu_power_watts', None, 'label sensor of ignoring'),
    ('frobnicate(xuanwu_host_status)', None, 'not a PromQL function: frobnicate'),
    ('sum("xuanwu_host_status")', None, 'no metric'),
    # a join on a label one side lacks: the run's series have no host
    ('xuanwu_check_outcome and on (host) xuanwu_run_result', None, 'label host of on (right side)'),
    # a by clause is checked against its own argument, not against every metric of the expression
    ('max by (check) (xuanwu_host_status) and on (run_id) xuanwu_check_outcome', None, 'label check of max by'),
    # the result of an aggregation has only its by labels
    ('max by (run_id) (xuanwu_run_timestamp_seconds)', '{{host}}', 'legend label host'),
    ('max by (host) (xuanwu_host_status', None, 'cannot read'),
])
def test_the_check_finds_what_the_textfile_does_not_export(expr, legend, problem):
    problems = check_expr(expr, legend)
    assert any(problem in p for p in problems), problems


PROMTOOL = shutil.which('promtool')


@pytest.mark.skipif(PROMTOOL is None, reason='no promtool on PATH (Debian: apt-get install prometheus); CI installs it')
def test_every_query_is_promql_that_prometheus_parses(tmp_path):
    """Prometheus's own parser (``promtool check rules``) reads every expression of the dashboard and of
    docs/metrics.md, each as a recording rule; the check sees a broken one."""
    exprs = [t['expr'] for p in _panels(_load()) for t in p.get('targets') or []] + _docs_promql()
    for name, items in (('dashboard', exprs), ('broken', ['max by (host (xuanwu_host_status)'])):
        rules = {'groups': [{'name': name, 'rules': [{'record': 'xuanwu:dashboard_%d' % i, 'expr': e} for i, e in enumerate(items)]}]}
        path = tmp_path / ('%s.yml' % name)
        path.write_text(json.dumps(rules), encoding='utf-8')    # JSON is YAML
        done = subprocess.run([PROMTOOL, 'check', 'rules', str(path)], capture_output=True, text=True, check=False, timeout=60)
        if name == 'dashboard':
            assert done.returncode == 0 and 'SUCCESS: %d rules found' % len(exprs) in done.stdout, done.stdout + done.stderr
        else:
            assert done.returncode != 0, done.stdout
