"""Integration: Debian's real Prometheus scrapes the textfile exports of two consecutive validation runs through
node_exporter's textfile collector, and the dashboard's key queries return the truth after the second run.

The exports are the project's own (``_prom.render_exports`` of two reports built by ``_report.build_report``, each
file written with ``_prom.write_atomic``), in the two deployments of docs/metrics.md at once: both exports on (the
controller's file and one file per node) and the nodes' files alone. One node_exporter per file, each its own
``instance``, as on a fleet where node_exporter runs on the controller and on each node. The first run fails on three
hosts; the second passes on two of them, and the third node keeps the file of the first run. Prometheus scrapes
every second; the test waits by polling its HTTP API, never by a fixed sleep."""
import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _prom
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now (the standard library only: this module is collected by
    every controller venv, some without requests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


PROMETHEUS = '/usr/bin/prometheus'
NODE_EXPORTER = '/usr/bin/prometheus-node-exporter'
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, 'dashboards', 'xuanwu-fleet.json')
pytestmark = pytest.mark.skipif(
    not (os.access(PROMETHEUS, os.X_OK) and os.access(NODE_EXPORTER, os.X_OK)),
    reason='needs Debian\'s Prometheus and node_exporter (%s, %s): apt-get install --no-install-recommends prometheus '
           'prometheus-node-exporter; .ci/run installs them' % (PROMETHEUS, NODE_EXPORTER))

NODES = ('gpu-n1', 'gpu-n2', 'gpu-n3')
DAY = 86400
WAIT_S = 30


def _finding(host, check, component, severity):
    return {'host': host, 'check': check, 'component': component, 'severity': severity, 'measured': 'x',
            'expected': 'y', 'message': '%s: %s' % (component, check), 'remediation': 'fix it'}


def _when(epoch):
    return time.strftime(_prom.TIME_FORMAT, time.gmtime(epoch))


def _build(run_id, finished, hosts):
    """A report as validation_report builds it: ``hosts`` maps a host to its findings."""
    entries = {}
    for host, findings in hosts.items():
        severities = set(f['severity'] for f in findings)
        status = 'fail' if 'fail' in severities else 'warn' if 'warn' in severities else 'pass'
        workloads = [{'kind': 'nccl_tests', 'component': 'all_reduce_perf', 'exit_code': 0, 'seconds': 40.0,
                      'busbw_gbps': {'1073741824': 350.5 if status == 'pass' else 120.0},
                      'curve': [{'min_bytes': 16777216, 'busbw_gbps_min': 222.9}]}]
        entries[host] = _report.host_entry(host, status, findings, None, 'h200x4-nvlink', '/p.yml', workloads=workloads)
    return _report.build_report(run_id=run_id, started_at=_when(finished - 300), finished_at=_when(finished),
                                collection_version='0.1.0', ansible_version='2.19.14', playbook='validate',
                                hosts=entries, profiles={'h200x4-nvlink': '/p.yml'})


class _Prometheus(object):
    def __init__(self, port):
        self.url = 'http://127.0.0.1:%d' % port

    def query(self, expr):
        """The instant vector of ``expr`` now: [(labels without job and instance, instance, value)]."""
        url = '%s/api/v1/query?%s' % (self.url, urllib.parse.urlencode({'query': expr}))
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.load(response)
        assert body['status'] == 'success', body
        return [(dict((k, v) for k, v in r['metric'].items() if k not in ('job', 'instance')), r['metric'].get('instance'),
                 float(r['value'][1])) for r in body['data']['result']]

    def wait(self, what, predicate):
        """Poll until ``predicate()`` is true (a scrape or two), at most WAIT_S seconds."""
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                if predicate():
                    return
            except (OSError, ValueError):
                pass        # not up yet
            assert time.monotonic() < deadline, 'Prometheus did not see %s within %d s' % (what, WAIT_S)
            time.sleep(0.2)


class _Fleet(object):
    """One deployment: node_exporters (textfile collector only) for each node and, with the controller's export on,
    for the controller, and a Prometheus scraping them every second, all on 127.0.0.1."""

    def __init__(self, folder, controller):
        self.controller = controller
        self.name = 'both exports' if controller else 'the nodes\' exports alone'
        self.folders, self.processes, self.logs = {}, [], []
        targets = []
        for machine in (('controller',) if controller else ()) + NODES:
            textfiles = folder / 'textfile' / machine
            textfiles.mkdir(parents=True)
            self.folders[machine] = str(textfiles)
            port = free_port()
            self.start([NODE_EXPORTER, '--web.listen-address=127.0.0.1:%d' % port, '--collector.disable-defaults',
                        '--collector.textfile', '--collector.textfile.directory=%s' % textfiles], folder / machine)
            targets.append({'targets': ['127.0.0.1:%d' % port], 'labels': {'instance': machine}})
        config = folder / 'prometheus.yml'
        config.write_text(json.dumps({'global': {'scrape_interval': '1s', 'evaluation_interval': '1s'},
                                      'scrape_configs': [{'job_name': 'node', 'static_configs': targets}]}))
        port = free_port()
        self.start([PROMETHEUS, '--config.file=%s' % config, '--storage.tsdb.path=%s' % (folder / 'data'),
                    '--web.listen-address=127.0.0.1:%d' % port, '--storage.tsdb.retention.time=1d'], folder / 'prometheus')
        self.prometheus = _Prometheus(port)

    def start(self, command, log):
        self.logs.append(open('%s.log' % log, 'w'))
        self.processes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.logs[-1]))

    def export(self, report):
        """The exports of ``report`` (the controller's too where it is on), written as the run writes them: each file
        replaced."""
        exports = _prom.render_exports(report, sorted(report['hosts']), controller=self.controller)
        if self.controller:
            _prom.write_atomic(os.path.join(self.folders['controller'], 'xuanwu.prom'), exports['controller'])
        for host, text in exports['nodes'].items():
            _prom.write_atomic(os.path.join(self.folders[host], 'xuanwu.prom'), text)

    def stop(self):
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in self.logs:
            log.close()


@pytest.fixture
def fleets(tmp_path):
    """Both deployments at once (Prometheus applies its targets some 5 s after it starts: they wait together)."""
    started = []
    try:
        for controller in (True, False):
            folder = tmp_path / ('both' if controller else 'nodes')
            folder.mkdir()
            started.append(_Fleet(folder, controller))
        yield started
    finally:
        for fleet in started:
            fleet.stop()


def _dashboard():
    """{panel title: [its PromQL]} of the dashboard, every host selected."""
    with open(DASHBOARD, encoding='utf-8') as stream:
        panels = json.load(stream)['panels']
    return dict((p['title'], [t['expr'].replace('$host', '.*') for t in p['targets']]) for p in panels if p.get('targets'))


def _twice(fleet):
    """The series that more than one export carries (the metric name kept as a label, the scrape's instance and job
    dropped): any with both exports on; a host series with the nodes' alone (each node carries the run's series)."""
    return ('count without (instance, job) (label_replace({__name__=~"xuanwu_.+"%s}, "name", "$1", "__name__", "(.+)")) > 1'
            % ('' if fleet.controller else ', host!=""'))


def _runs(prometheus):
    """{instance: {run ids of its xuanwu_ series}}: what Prometheus holds of each export now."""
    out = {}
    for labels, instance, _value in prometheus.query('count by (instance, run_id) ({__name__=~"xuanwu_.+"})'):
        out.setdefault(instance, set()).add(labels['run_id'])
    return out


def _by(rows, *labels):
    return dict((tuple(r[0].get(label) for label in labels) if len(labels) > 1 else r[0].get(labels[0]), r[2]) for r in rows)


FIRST_FAILURES = {
    ('gpu-n1', 'gpu.count', 'gpus'): 2, ('gpu-n1', 'nvlink.links_per_pair', 'gpu0-gpu1'): 2,
    ('gpu-n1', 'facts.not_measured', 'ports'): 1, ('gpu-n2', 'facts.not_measured', 'ports'): 1,
    ('gpu-n3', 'collectives.busbw', 'all_reduce_perf'): 2}


def _after_the_first_run(fleet, panels):
    prometheus = fleet.prometheus
    prometheus.wait('the first run on every target (%s)' % fleet.name,
                    lambda: _runs(prometheus) == dict((machine, {'run-1'}) for machine in fleet.folders))
    assert prometheus.query(_twice(fleet)) == [], fleet.name
    failed = panels['Failing and warning checks (last run)'][0]
    assert _by(prometheus.query(failed), 'host', 'check', 'component') == FIRST_FAILURES, fleet.name
    # each failing check once, also where the controller's and the nodes' exports are both scraped
    assert _by(prometheus.query(panels['Failing checks over time'][0]), 'host') == {'gpu-n1': 2, 'gpu-n3': 1}, fleet.name
    assert _by(prometheus.query(panels['Hosts by status (last run)'][0]), 'status') == {
        'pass': 0, 'warn': 1, 'fail': 2, 'error': 0}, fleet.name


def _after_the_second_run(fleet, panels):
    prometheus = fleet.prometheus
    expected = dict((machine, {'run-2'}) for machine in fleet.folders)
    expected['gpu-n3'] = {'run-1'}
    prometheus.wait('the second run on every target, the first run\'s series gone but gpu-n3\'s (%s)' % fleet.name,
                    lambda: _runs(prometheus) == expected)
    # hosts by status and the result of the last run: the second run's two passing hosts, not gpu-n3's old failure
    assert _by(prometheus.query(panels['Hosts by status (last run)'][0]), 'status') == {
        'pass': 2, 'warn': 0, 'fail': 0, 'error': 0}, fleet.name
    assert [r[2] for r in prometheus.query(panels['Run result (last run)'][0])] == [0], fleet.name
    # which hosts failed which check in the last run: none (gpu-n3's failure belongs to the first run)
    assert prometheus.query(panels['Failing and warning checks (last run)'][0]) == [], fleet.name
    assert prometheus.query('max by (host, check, component) (xuanwu_check_outcome == 2 and on (run_id) '
                            'topk(1, max by (run_id) (xuanwu_run_timestamp_seconds)))') == [], fleet.name
    # the failing checks of each host's latest result: gpu-n3's one check of the first run, once
    assert _by(prometheus.query(panels['Failing checks over time'][0]), 'host') == {'gpu-n3': 1}, fleet.name
    # how old each host's result is, and the hosts not validated for 7 days
    ages = _by(prometheus.query(panels["Age of each host's latest result"][0]), 'host')
    assert sorted(ages) == list(NODES), fleet.name
    assert 55 <= ages['gpu-n1'] < 60 + 2 * WAIT_S and abs(ages['gpu-n1'] - ages['gpu-n2']) < 1, ages
    assert 8 * DAY - 5 <= ages['gpu-n3'] < 8 * DAY + 2 * WAIT_S, ages
    stale = prometheus.query('(time() - max by (host) (max_over_time(xuanwu_host_last_validated_timestamp_seconds[30d]))) '
                             '/ 86400 > 7')
    assert [(r[0]['host'], round(r[2])) for r in stale] == [('gpu-n3', 8)], fleet.name
    # no series twice across the exports, and every textfile read without error
    assert prometheus.query(_twice(fleet)) == [], fleet.name
    errors = prometheus.query('node_textfile_scrape_error')
    assert sorted(r[1] for r in errors) == sorted(fleet.folders) and all(r[2] == 0 for r in errors), errors


def test_the_dashboards_last_run_queries_read_the_truth_after_two_runs(fleets):
    """Both exports on, and the nodes' alone: after a failing run on three hosts and a passing run on two of them, the
    last-run panels show the passing run only (gpu-n3, not in it, still exports its first-run file), each failing check
    counts once, and each host's result has its own age."""
    panels = _dashboard()
    now = time.time()
    first = _build('run-1', int(now - 8 * DAY), {
        'gpu-n1': [_finding('gpu-n1', 'gpu.count', 'gpus', 'fail'), _finding('gpu-n1', 'nvlink.links_per_pair', 'gpu0-gpu1', 'fail'),
                   _finding('gpu-n1', 'facts.not_measured', 'ports', 'warn')],
        'gpu-n2': [_finding('gpu-n2', 'facts.not_measured', 'ports', 'warn')],
        'gpu-n3': [_finding('gpu-n3', 'collectives.busbw', 'all_reduce_perf', 'fail')]})
    second = _build('run-2', int(now - 60), {'gpu-n1': [], 'gpu-n2': []})
    assert first['summary']['result'] == 'fail' and second['summary']['result'] == 'pass'
    for fleet in fleets:
        fleet.export(first)
    for fleet in fleets:
        _after_the_first_run(fleet, panels)
    for fleet in fleets:
        fleet.export(second)        # gpu-n3 is not in the second run: its node keeps the first run's file
    for fleet in fleets:
        _after_the_second_run(fleet, panels)
