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
        frozenset({'host': 'gpu-host', 'check': 'facts.not_measured', 'component': 'ports'}.items()): 1}


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
