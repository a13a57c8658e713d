"""Prometheus text exposition of run reports (_prom): read back with prometheus_client's parser."""
import copy
import json
import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.xuanwu.cluster.plugins.module_utils import _dmon_checks, _prom
from ansible_collections.xuanwu.cluster.plugins.module_utils._dmon_checks import judge_run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..', '..'))
REPORT = os.path.join(ROOT, 'tests', 'fixtures', 'report', 'h200x2_report_with_workloads.json')
RUN = '20261130T134830Z-695169'


def _report():
    with open(REPORT) as handle:
        return json.load(handle)


def _samples(text):
    """{metric: {frozenset(labels): value}} of an exposition, as Prometheus reads it."""
    out = {}
    for family in text_string_to_metric_families(text):
        assert family.type == 'gauge'
        assert family.documentation
        for sample in family.samples:
            key = frozenset(sample.labels.items())
            assert key not in out.setdefault(sample.name, {}), 'sample twice: %s %s' % (sample.name, sample.labels)
            out[sample.name][key] = sample.value
    return out


def _one(samples, name, **labels):
    """The sample of ``name`` with exactly ``labels``; a host series without ``run_id`` given: the test report's."""
    if name in _prom.HOST_METRICS:
        labels.setdefault('run_id', RUN)
    return samples[name][frozenset(labels.items())]


def test_real_report_run_and_host():
    samples = _samples(_prom.render(_report()))
    assert _one(samples, 'xuanwu_run_info', run_id=RUN, playbook='validate', collection_version='0.1.0',
                ansible_version='2.19.14', result='warn') == 1
    assert _one(samples, 'xuanwu_run_timestamp_seconds', run_id=RUN) == 1796046647       # 2026-11-30T13:50:47Z
    assert _one(samples, 'xuanwu_run_duration_seconds', run_id=RUN) == 137
    assert _one(samples, 'xuanwu_run_result', run_id=RUN) == 1
    assert dict((dict(k)['status'], v) for k, v in samples['xuanwu_run_hosts'].items()) == {
        'pass': 0, 'warn': 1, 'fail': 0, 'error': 0}
    assert _one(samples, 'xuanwu_host_status', host='gpu-host', run_id=RUN) == 1
    assert dict((dict(k)['severity'], v) for k, v in samples['xuanwu_host_findings'].items()) == {
        'fail': 0, 'warn': 1, 'info': 0}
    assert samples['xuanwu_check_outcome'] == {
        frozenset({'host': 'gpu-host', 'run_id': RUN, 'check': 'facts.not_measured', 'component': 'ports'}.items()): 1}
    # the host's latest validation finished when the run did
    assert _one(samples, 'xuanwu_host_last_validated_timestamp_seconds', host='gpu-host') == 1796046647


def test_real_report_workloads_and_collectives():
    samples = _samples(_prom.render(_report()))
    assert _one(samples, 'xuanwu_collective_busbw_gbytes', host='gpu-host', collective='all_reduce_perf',
                size_bytes='1073741824') == 323.66
    assert _one(samples, 'xuanwu_collective_busbw_gbytes', host='gpu-host', collective='sendrecv_perf',
                size_bytes='8') == 0.0
    sizes = [dict(k)['size_bytes'] for k in samples['xuanwu_collective_busbw_gbytes']
             if dict(k)['collective'] == 'all_reduce_perf']
    assert len(sizes) == 31
    assert _one(samples, 'xuanwu_collective_avg_busbw_gbytes', host='gpu-host', collective='all_gather_perf') == 91.0787
    ddp = {'host': 'gpu-host', 'kind': 'ddp_smoke', 'component': 'ddp_smoke'}
    assert _one(samples, 'xuanwu_workload_seconds', **ddp) == 13.1
    assert _one(samples, 'xuanwu_workload_exit_code', **ddp) == 0
    assert _one(samples, 'xuanwu_workload_timed_out', **ddp) == 0
    assert _one(samples, 'xuanwu_workload_ok', **ddp) == 1
    assert _one(samples, 'xuanwu_workload_tokens_per_second', **ddp) == 564136.5
    assert _one(samples, 'xuanwu_workload_step_time_median_seconds', **ddp) == 0.014521
    soak = {'host': 'gpu-host', 'kind': 'soak', 'component': 'soak'}
    assert _one(samples, 'xuanwu_workload_gpu_memory_growth_percent', **soak) == 0.0
    assert _one(samples, 'xuanwu_workload_rss_growth_percent', **soak) == 0.2
    assert len(samples['xuanwu_workload_seconds']) == 9


def test_help_and_type_once_per_metric_and_every_name_valid():
    text = _prom.render(_report())
    names = [line.split()[2] for line in text.splitlines() if line.startswith('# TYPE ')]
    assert len(names) == len(set(names))
    assert set(names) <= set(name for name, _h, _l in _prom.METRICS)
    assert all(name.startswith('xuanwu_') for name, _h, _l in _prom.METRICS)
    assert _prom.valid_names()


HOSTILE = ['a"b', 'back\\slash', 'new\nline', 'end\\', '\\n literal', 'quote at end"', 'lone \udc80 surrogate',
           'tab\tand \u00e9', '}{ ,=']


@pytest.mark.parametrize('value', HOSTILE)
def test_label_values_are_escaped(value):
    report = _report()
    entry = report['hosts'].pop('gpu-host')
    entry['findings'][0]['component'] = value
    report['hosts'][value] = entry
    samples = _samples(_prom.render(report))
    expected = value.replace('\udc80', '\ufffd')
    assert _one(samples, 'xuanwu_host_status', host=expected, run_id=RUN) == 1
    assert _one(samples, 'xuanwu_check_outcome', host=expected, check='facts.not_measured', component=expected) == 1


@settings()
@given(st.text(max_size=40), st.text(max_size=40))
def test_any_label_value_reads_back(host, component):
    """Whatever a host or component is called, Prometheus reads back the same value (lone surrogates: U+FFFD)."""
    report = _report()
    entry = report['hosts'].pop('gpu-host')
    entry['findings'][0]['component'] = component
    report['hosts'][host] = entry
    samples = _samples(_prom.render(report))
    clean = [''.join('\ufffd' if '\ud800' <= c <= '\udfff' else c for c in value) for value in (host, component)]
    assert _one(samples, 'xuanwu_check_outcome', host=clean[0], check='facts.not_measured', component=clean[1]) == 1


def test_escape_label_value():
    assert _prom.escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'


def test_worst_finding_of_a_check_and_component():
    report = _report()
    finding = report['hosts']['gpu-host']['findings'][0]
    report['hosts']['gpu-host']['findings'] = [dict(finding, severity='info'), dict(finding, severity='fail'),
                                               dict(finding, severity='warn')]
    samples = _samples(_prom.render(report))
    assert _one(samples, 'xuanwu_check_outcome', host='gpu-host', check='facts.not_measured', component='ports') == 2
    assert dict((dict(k)['severity'], v) for k, v in samples['xuanwu_host_findings'].items()) == {
        'fail': 1, 'warn': 1, 'info': 1}


@pytest.mark.parametrize('status,code', [('pass', 0), ('warn', 1), ('fail', 2), ('error', 3), ('odd', 3), (None, 3)])
def test_host_status_codes(status, code):
    report = _report()
    report['hosts']['gpu-host']['status'] = status
    assert _one(_samples(_prom.render(report)), 'xuanwu_host_status', host='gpu-host', run_id=RUN) == code


def test_non_finite_and_odd_values():
    report = _report()
    runs = report['hosts']['gpu-host']['workloads']
    runs[0]['busbw_gbps'] = {'8': float('nan'), '16': float('inf'), '32': 'NaN', '64': None}
    runs[0]['seconds'] = 'slow'
    report['hosts']['gpu-host']['not_judged'] = {'sendrecv_perf': 'no sendrecv curve in profile p'}
    samples = _samples(_prom.render(report))
    values = dict((dict(k)['size_bytes'], v) for k, v in samples['xuanwu_collective_busbw_gbytes'].items()
                  if dict(k)['collective'] == 'all_reduce_perf')
    assert sorted(values) == ['16', '8']
    assert values['16'] == float('inf') and values['8'] != values['8']
    assert not any(dict(k)['component'] == 'all_reduce_perf' for k in samples['xuanwu_workload_seconds'])
    assert _one(samples, 'xuanwu_host_not_judged', host='gpu-host', component='sendrecv_perf') == 1


def test_only_some_hosts():
    report = _report()
    report['hosts']['gpu-other'] = copy.deepcopy(report['hosts']['gpu-host'])
    both = _samples(_prom.render(report))
    one = _samples(_prom.render(report, hosts=['gpu-other']))
    assert sorted(dict(k)['host'] for k in both['xuanwu_host_status']) == ['gpu-host', 'gpu-other']
    assert [dict(k)['host'] for k in one['xuanwu_host_status']] == ['gpu-other']
    assert 'xuanwu_run_info' in one


def test_missing_figures_leave_the_sample_out():
    report = _report()
    report['finished_at'] = 'yesterday'
    del report['summary']
    samples = _samples(_prom.render(report))
    assert 'xuanwu_run_timestamp_seconds' not in samples and 'xuanwu_run_duration_seconds' not in samples
    assert 'xuanwu_run_hosts' not in samples and 'xuanwu_run_result' not in samples
    assert _one(samples, 'xuanwu_host_status', host='gpu-host', run_id=RUN) == 1


@pytest.mark.parametrize('value', [None, [], 'report', {'run_id': 'x'}, {'hosts': []}])
def test_not_a_report(value):
    with pytest.raises(ValueError) as err:
        _prom.render(value)
    assert 'not a run report' in str(err.value)


def test_write_atomic(tmp_path):
    path = tmp_path / 'xuanwu.prom'
    path.write_text('old\n')
    os.chmod(str(path), 0o600)
    text = _prom.render(_report())
    _prom.write_atomic(str(path), text)
    assert path.read_text() == text
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o644
    assert sorted(os.listdir(str(tmp_path))) == ['xuanwu.prom']


def test_write_atomic_keeps_the_old_file_on_failure(tmp_path):
    path = tmp_path / 'xuanwu.prom'
    path.write_text('old\n')
    with pytest.raises(ValueError):
        _prom.write_atomic(str(path), b'bytes')
    (tmp_path / 'folder.prom').mkdir()
    with pytest.raises(OSError):
        _prom.write_atomic(str(tmp_path / 'folder.prom'), 'new\n')
    assert path.read_text() == 'old\n'
    assert sorted(os.listdir(str(tmp_path))) == ['folder.prom', 'xuanwu.prom']


def _dmon_report(name, host='gpu-host'):
    """The test report with a workload on ``host`` whose dmon samples are the fixture ``name``, judged as
    workload_check judges them."""
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'dmon', name)) as handle:
        _found, entry = judge_run({'command': 'nvidia-smi dmon -s pucvmet -d 1', 'interval_s': 1, 'stdout': handle.read()},
                                  host=host, workload='all_reduce_perf')
    report = _report()
    report['hosts'].setdefault(host, {'status': 'pass', 'findings': []}).setdefault('workloads', []).append(
        {'kind': 'nccl_tests', 'component': 'all_reduce_perf', 'exit_code': 0, 'dmon': entry})
    return report


def test_dmon_figures():
    samples = _samples(_prom.render(_dmon_report('h200x2_dmon_busy-derived-throttle-gpu1.txt')))
    gpu1 = {'host': 'gpu-host', 'component': 'all_reduce_perf', 'gpu': 'gpu1'}
    assert _one(samples, 'xuanwu_gpu_dmon_samples', **gpu1) == 15
    assert _one(samples, 'xuanwu_gpu_dmon_load_samples', **gpu1) == 14
    assert _one(samples, 'xuanwu_gpu_sm_clock_under_load_min_mhz', **gpu1) == 1410
    assert _one(samples, 'xuanwu_gpu_sm_clock_under_load_min_mhz', host='gpu-host', component='all_reduce_perf', gpu='gpu0') == 1980
    assert _one(samples, 'xuanwu_gpu_violation_max', counter='pviol', **gpu1) == 38
    assert _one(samples, 'xuanwu_gpu_power_watts', stat='max', **gpu1) == 291
    assert _one(samples, 'xuanwu_gpu_utilization_percent', engine='sm', stat='median', **gpu1) == 96
    assert _one(samples, 'xuanwu_gpu_temperature_celsius', sensor='memory', stat='max', **gpu1) == 45
    assert _one(samples, 'xuanwu_gpu_clock_mhz', clock='memory', stat='min', **gpu1) == 3201
    assert _one(samples, 'xuanwu_gpu_framebuffer_used_mebibytes', stat='first', **gpu1) == 1643
    assert _one(samples, 'xuanwu_gpu_framebuffer_used_mebibytes', stat='last', **gpu1) == 2483
    assert len(samples['xuanwu_gpu_dmon_samples']) == 2
    assert _one(samples, 'xuanwu_gpu_ecc_errors', counter='dbecc', **gpu1) == 0


def test_dmon_ecc_errors_are_summed():
    samples = _samples(_prom.render(_dmon_report('h200x2_dmon_busy-derived-dbecc-gpu1.txt')))
    assert _one(samples, 'xuanwu_gpu_ecc_errors', host='gpu-host', component='all_reduce_perf', gpu='gpu1', counter='dbecc') == 2
    assert _one(samples, 'xuanwu_gpu_ecc_errors', host='gpu-host', component='all_reduce_perf', gpu='gpu0', counter='dbecc') == 0


def test_dmon_columns_not_printed_have_no_sample():
    report = _dmon_report('public_dmon_-s_pucet_-i_0_-o_DT_-d_2.txt')
    samples = _samples(_prom.render(report, hosts=['gpu-host']))
    assert 'xuanwu_gpu_framebuffer_used_mebibytes' not in samples and 'xuanwu_gpu_violation_max' not in samples
    assert not any(dict(k)['sensor'] == 'memory' for k in samples['xuanwu_gpu_temperature_celsius'])
    assert _one(samples, 'xuanwu_gpu_clock_mhz', host='gpu-host', component='all_reduce_perf', gpu='gpu0', clock='sm',
                stat='min') == 582
    assert 'xuanwu_gpu_dmon_samples' not in _samples(_prom.render(report, hosts=['other']))


@pytest.mark.parametrize('curve, size, floor', [
    ([{'min_bytes': 16, 'busbw_gbps_min': 1.5}, {'min_bytes': 1024, 'busbw_gbps_min': 9}], '8', None),
    ([{'min_bytes': 16, 'busbw_gbps_min': 1.5}, {'min_bytes': 1024, 'busbw_gbps_min': 9}], '16', 1.5),
    ([{'min_bytes': 1024, 'busbw_gbps_min': 9}, {'min_bytes': 16, 'busbw_gbps_min': 1.5}], '1023', 1.5),
    ([{'min_bytes': 16, 'busbw_gbps_min': 1.5}, {'min_bytes': 1024, 'busbw_gbps_min': 9}], '8589934592', 9),
    (None, '16', None),
    ([{'min_bytes': 'x'}, 'junk'], '16', None),
])
def test_floor_at(curve, size, floor):
    assert _prom.floor_at(curve, size) == floor


def test_floor_beside_the_busbw():
    report = _report()
    host = sorted(h for h, e in report['hosts'].items() if any(w.get('busbw_gbps') for w in e.get('workloads') or []))[0]
    run = [w for w in report['hosts'][host]['workloads'] if w.get('busbw_gbps')][0]
    sizes = sorted(run['busbw_gbps'], key=int)
    run['curve'] = [{'min_bytes': int(sizes[-1]), 'busbw_gbps_min': 123.5}]
    samples = _samples(_prom.render(report))
    floors = dict((dict(k)['size_bytes'], v) for k, v in samples['xuanwu_collective_busbw_floor_gbytes'].items()
                  if dict(k)['host'] == host)
    assert floors == {sizes[-1]: 123.5}


def test_docs_list_every_metric_check_and_bound():
    with open(os.path.join(ROOT, 'docs', 'metrics.md')) as handle:
        doc = handle.read()
    for name, _help, labels in _prom.METRICS:
        row = [line for line in doc.splitlines() if line.startswith('| `%s` |' % name)]
        assert len(row) == 1, name
        assert all('`%s`' % label in row[0] for label in labels), (name, labels)
    for check in _dmon_checks.CHECKS:
        assert '| `%s` | %s |' % (check, _dmon_checks.CHECKS[check]['default_severity']) in doc, check
    for key in _dmon_checks.DEFAULT_BOUNDS:
        assert '`%s`' % key in doc, key


# The names and labels that alert rules and the dashboard are written against: renaming one breaks them.
CONTRACT = {
    'xuanwu_host_status': ('host', 'run_id'),
    'xuanwu_host_last_validated_timestamp_seconds': ('host', 'run_id'),
    'xuanwu_run_result': ('run_id',),
    'xuanwu_run_timestamp_seconds': ('run_id',),
    'xuanwu_check_outcome': ('host', 'run_id', 'check', 'component'),
    'xuanwu_collective_busbw_gbytes': ('host', 'run_id', 'collective', 'size_bytes'),
    'xuanwu_collective_busbw_floor_gbytes': ('host', 'run_id', 'collective', 'size_bytes'),
    'xuanwu_gpu_temperature_celsius': ('host', 'run_id', 'component', 'gpu', 'sensor', 'stat'),
}


def test_the_names_and_labels_rules_are_written_against():
    labels = dict((name, labels) for name, _help, labels in _prom.METRICS)
    assert dict((name, labels[name]) for name in CONTRACT) == CONTRACT
    # every host series names its host and its run first: "this host's latest result" and "the last run" are selectors
    for name, _help, names in _prom.METRICS:
        assert names[:2] == ('host', 'run_id') if name in _prom.HOST_METRICS else 'run_id' in names and 'host' not in names, name
    assert _prom.HOST_METRICS | _prom.RUN_METRICS == set(labels) and not _prom.HOST_METRICS & _prom.RUN_METRICS


def test_every_host_series_of_a_run_carries_its_run_id():
    report = _dmon_report('h200x2_dmon_busy.txt')
    report['hosts']['gpu-host']['not_judged'] = {'sendrecv_perf': 'no sendrecv curve in profile p'}
    report['hosts']['gpu-host']['workloads'][0]['curve'] = [{'min_bytes': 8, 'busbw_gbps_min': 1.5}]
    report['hosts']['gpu-host']['workloads'].append({
        'kind': 'gpu_single', 'component': 'gpu_single', 'floors': {'min_bf16_tflops': 570.0, 'min_membw_gbps': 3800.0},
        'result': {'ok': True, 'gpus': [{'index': 0, 'bf16_tflops': 670.0, 'membw_gbps': 4244.1}]}})
    samples = _samples(_prom.render(report))
    assert set(samples) == set(name for name, _help, _labels in _prom.METRICS)      # every metric, so every host series
    for name in _prom.HOST_METRICS:
        assert set(dict(k)['run_id'] for k in samples[name]) == {RUN}, name


@pytest.mark.parametrize('result, code', [('pass', 0), ('warn', 1), ('fail', 2), ('error', 3), ('odd', 2)])
def test_run_result_codes(result, code):
    """3: the report says the run itself failed (summary.result error); a result this version does not know is a
    failure, never a pass."""
    report = _report()
    report['summary']['result'] = result
    assert _one(_samples(_prom.render(report)), 'xuanwu_run_result', run_id=RUN) == code


def test_a_host_not_probed_keeps_the_age_of_its_last_validation():
    report = _report()
    report['hosts']['gpu-down'] = {'status': 'error', 'findings': [], 'error': 'host was not probed: unreachable'}
    samples = _samples(_prom.render(report))
    assert _one(samples, 'xuanwu_host_status', host='gpu-down') == 3
    assert [dict(k)['host'] for k in samples['xuanwu_host_last_validated_timestamp_seconds']] == ['gpu-host']
    report['finished_at'] = None
    assert 'xuanwu_host_last_validated_timestamp_seconds' not in _samples(_prom.render(report))


def _fleet():
    """The test report with four hosts: gpu-host (warn, with workloads and GPU samples), gpu-fail (two failed checks),
    gpu-down (not probed), gpu-quiet (passes; its textfile folder is '' in the tests below)."""
    report = _dmon_report('h200x2_dmon_busy.txt')
    finding = report['hosts']['gpu-host']['findings'][0]
    report['hosts']['gpu-fail'] = {'status': 'fail', 'findings': [
        dict(finding, check='gpu.count', component='gpus', severity='fail'),
        dict(finding, check='nvlink.links_per_pair', component='gpu0-gpu1', severity='fail')]}
    report['hosts']['gpu-down'] = {'status': 'error', 'findings': [], 'error': 'host was not probed: unreachable'}
    report['hosts']['gpu-quiet'] = {'status': 'pass', 'findings': []}
    return report


def _series(text):
    """[(name, labels)] of an exposition, in its order, duplicates kept."""
    return [(s.name, frozenset(s.labels.items())) for f in text_string_to_metric_families(text) for s in f.samples]


@pytest.mark.parametrize('node_hosts', [[], ['gpu-host'], ['gpu-host', 'gpu-fail', 'gpu-quiet'],
                                        ['gpu-host', 'gpu-fail', 'gpu-quiet', 'gpu-down']])
def test_the_union_of_both_exports_has_no_series_twice(node_hosts):
    """Controller and node exports on together: each series of the run is in exactly one export (no query counts a
    host twice), and together they hold the whole run (the report folder's xuanwu.prom), nothing more."""
    report = _fleet()
    exports = _prom.render_exports(report, node_hosts, controller=True)
    assert sorted(exports['nodes']) == sorted(node_hosts)
    union = _series(exports['controller'])
    for host, text in exports['nodes'].items():
        mine = _series(text)
        _samples(text)      # a file the collector reads: HELP and TYPE once per metric, no sample twice
        assert set(dict(labels)['host'] for name, labels in mine) == {host}, host
        union += mine
    assert len(union) == len(set(union))
    assert set(union) == set(_series(_prom.render(report)))
    controller = _series(exports['controller'])
    assert set(name for name, _labels in controller) & _prom.RUN_METRICS == set(
        name for name, _labels in _series(_prom.render(report)) if name in _prom.RUN_METRICS)
    assert not set(dict(labels).get('host') for _name, labels in controller) & set(node_hosts)


def test_nodes_only_each_node_carries_the_run_and_its_own_series():
    report = _fleet()
    exports = _prom.render_exports(report, ['gpu-host', 'gpu-fail'])
    assert exports['controller'] is None
    run = set(s for s in _series(_prom.render(report, hosts=[])))
    assert run and all(name in _prom.RUN_METRICS for name, _labels in run)
    host_series = []
    for host, text in exports['nodes'].items():
        mine = _series(text)
        assert run <= set(mine)
        host_series += [s for s in mine if s not in run]
        assert set(dict(labels)['host'] for _name, labels in mine if 'host' in dict(labels)) == {host}
    assert len(host_series) == len(set(host_series))
    assert set(host_series) == set(_series(_prom.render(report, hosts=['gpu-host', 'gpu-fail']))) - run


def test_controller_only_is_the_whole_run_and_a_node_not_in_the_report_gets_nothing():
    report = _fleet()
    assert _prom.render_exports(report, (), controller=True) == {'nodes': {}, 'controller': _prom.render(report)}
    assert _prom.render_exports(report, ['not-in-the-run'])['nodes'] == {}
    with pytest.raises(ValueError):
        _prom.render_exports({'hosts': []}, ['a'])


def test_node_export_replaces_the_last_runs_file(tmp_path):
    """A node's file holds its latest result only: the next run's text is written over it, never appended."""
    path = str(tmp_path / 'xuanwu.prom')
    first = _fleet()
    _prom.write_atomic(path, _prom.render_exports(first, ['gpu-fail'])['nodes']['gpu-fail'])
    second = copy.deepcopy(first)
    second['run_id'] = 'second-run'
    second['hosts']['gpu-fail'] = {'status': 'pass', 'findings': []}
    text = _prom.render_exports(second, ['gpu-fail'], controller=True)['nodes']['gpu-fail']
    _prom.write_atomic(path, text)
    with open(path) as handle:
        samples = _samples(handle.read())
    assert set(dict(k)['run_id'] for name in samples for k in samples[name]) == {'second-run'}
    assert 'xuanwu_check_outcome' not in samples and _one(samples, 'xuanwu_host_status', host='gpu-fail', run_id='second-run') == 0


@pytest.mark.parametrize('fixture, gpu, all_samples, under_load', [
    # a healthy run: the framework allocates while the GPUs are still idle (+840 MiB over all samples), then holds
    ('h200x2_dmon_busy.txt', 'gpu1', 840, 0),
    # a leak under load (derived): growth after the warm-up, the samples under load only
    ('h200x2_dmon_busy-derived-memgrow-gpu0.txt', 'gpu0', 7496, 5120),
    # a real 1x H200 run during validate.yml: idle samples at 0 MiB before and after, +248 MiB under load
    ('h200x1_dmon_-s_pucvmet_-d_1_-o_T_during-validate.txt', 'gpu0', 0, 248),
])
def test_gpu_memory_growth_is_read_from_the_samples_under_load(fixture, gpu, all_samples, under_load):
    samples = _samples(_prom.render(_dmon_report(fixture)))
    labels = {'host': 'gpu-host', 'component': 'all_reduce_perf', 'gpu': gpu}
    assert (_one(samples, 'xuanwu_gpu_framebuffer_used_mebibytes', stat='last', **labels)
            - _one(samples, 'xuanwu_gpu_framebuffer_used_mebibytes', stat='first', **labels)) == all_samples
    assert _one(samples, 'xuanwu_gpu_framebuffer_growth_under_load_mebibytes', **labels) == under_load


def test_no_memory_growth_without_samples_under_load():
    samples = _samples(_prom.render(_dmon_report('h200x2_dmon_idle.txt')))
    assert 'xuanwu_gpu_dmon_samples' in samples and 'xuanwu_gpu_framebuffer_growth_under_load_mebibytes' not in samples
