"""What cannot apply to a host, what a run could not judge, and root cause first, in every report format.

A collective on one GPU is listed once as not applicable with its reason (report.json, junit.xml as skipped, report.md,
report.html), never as a failure and never as a pass; a dmon check that a run could not judge is a skipped test case,
not a passed one; a bandwidth no link carries is not plotted; the worst finding of a host is its root cause
(gpu.count before the bandwidth it costs); the gate's text is one line per check and each remediation once."""
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report

NA = ('not applicable: all_reduce_perf ran on 1 rank(s) and needs 2 or more: a collective within one GPU has no bus '
      'bandwidth (0 for reductions, a copy in its own memory otherwise)')
IMPLAUSIBLE = 'sendrecv_perf reported 1933.0 GB/s at 8 GiB, more than the links of the profile can carry (181.5 GB/s)'
WORKLOADS = [
    {'kind': 'nccl_tests', 'component': 'all_reduce_perf', 'busbw_gbps': {str(1 << 30): 0.0}, 'seconds': 19.1, 'not_applicable': NA},
    {'kind': 'nccl_tests', 'component': 'sendrecv_perf', 'busbw_gbps_implausible': {str(8 << 30): 1933.0}, 'seconds': 13.2,
     'implausible': IMPLAUSIBLE, 'not_applicable': NA.replace('all_reduce_perf', 'sendrecv_perf')},
]
CATALOGUE = {'collectives.busbw_low': 'low', 'collectives.implausible': 'implausible', 'gpu.count': 'count',
             'dmon.throttle': 'throttle', 'dmon.sustained_clock': 'clock', 'dmon.temperature': 'temperature'}


def _finding(check, component, measured, expected, remediation, severity='fail'):
    return {'host': 'node1', 'check': check, 'component': component, 'severity': severity, 'measured': measured,
            'expected': expected, 'message': '%s %s' % (check, component), 'remediation': remediation}


def report(findings=(), workloads=None, status='pass'):
    entry = _report.host_entry('node1', status, list(findings), {}, 'p', '/p.yml',
                               workloads=WORKLOADS if workloads is None else workloads)
    return _report.build_report('r1', 't0', 't1', '1.0.0', '2.19', 'validate.yml', {'node1': entry}, {'p': '/p.yml'})


class _Text(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.text = []

    def handle_data(self, data):
        self.text.append(data)


def _cases(rep):
    root = ET.fromstring(_report.render_junit(rep, CATALOGUE))
    return dict((c.get('name'), c) for c in root.iter('testcase'))


def test_not_applicable_in_json_junit_markdown_and_html():
    implausible = _finding('collectives.implausible', 'sendrecv_perf', 'busbw 1933.0 GB/s at 8 GiB', 'busbw <= 181.5 GB/s', 'fix')
    rep = report([implausible], status='fail')
    entry = json.loads(_report.render_json(rep))['hosts']['node1']
    assert entry['not_applicable'] == {'all_reduce_perf': NA, 'sendrecv_perf': NA.replace('all_reduce_perf', 'sendrecv_perf')}
    cases = _cases(rep)
    skipped = cases['not applicable: all_reduce_perf'].find('skipped')
    assert skipped is not None and skipped.get('message') == NA
    # the collectives did not apply: their checks are skipped as not applicable, never passed; the implausible figure fails
    skipped = cases['collectives.busbw_low'].find('skipped')
    assert skipped is not None and skipped.get('message').startswith('not applicable: its runs on this host cannot apply')
    assert cases['collectives.implausible'].find('failure') is not None
    md = _report.render_markdown(rep)
    assert '**Not applicable:** all_reduce_perf — ' in md and 'NOT APPLICABLE: ' in md
    assert 'IMPLAUSIBLE, not a measurement: ' + IMPLAUSIBLE in md
    parser = _Text()
    html = _report.render_html(rep)
    parser.feed(html)
    text = ''.join(parser.text)
    assert 'Not applicable: all_reduce_perf — ' + NA in text
    assert 'sendrecv_perf (nccl_tests)' not in text       # the implausible figure is not plotted


def test_a_host_with_only_not_applicable_runs_says_so():
    rep = report()
    md = _report.render_markdown(rep)
    assert 'every check passed' not in md and '2 not applicable to this host (all_reduce_perf, sendrecv_perf)' in md


def _dmon_run(not_judged):
    return {'kind': 'soak', 'component': 'soak', 'seconds': 30.0,
            'dmon': {'command': 'nvidia-smi dmon', 'samples': 30, 'gpus': {'gpu0': {'samples': 30}}, 'not_judged': not_judged}}


def test_a_dmon_check_a_run_could_not_judge_is_skipped_never_passed():
    why = ['gpu0: dmon.sustained_clock, dmon.memory_growth not checked: 0 sample(s) with sm >= 80 % < min_load_samples 3',
           'dmon: dmon.throttle, dmon.throttle_warn not checked: the clock event reasons were not sampled']
    cases = _cases(report(workloads=[_dmon_run(why)]))
    for check in ('dmon.sustained_clock', 'dmon.throttle'):
        skipped = cases[check].find('skipped')
        assert skipped is not None and skipped.get('message').startswith('not measured: soak: '), check
    assert 'dmon.throttle_warn not checked' in cases['dmon.throttle'].find('skipped').get('message')
    assert cases['dmon.temperature'].find('skipped') is None          # judged: a pass
    cases = _cases(report(workloads=[_dmon_run(['dmon: dmon.* not checked: dmon printed no sample'])]))
    assert all(cases[c].find('skipped') is not None for c in ('dmon.throttle', 'dmon.temperature', 'dmon.sustained_clock'))


BUSBW_FIX = 'Check the NVLink and PCIe links (nvidia-smi nvlink --status, nvidia-smi topo -m) and re-run. ' * 6


def _one_gpu_of_two():
    count = _finding('gpu.count', 'gpu', 1, 2, 'a GPU is missing: nvidia-smi -L, reseat or RMA it')
    sizes = [(16 << 20) * (2 ** i) for i in range(10)]
    low = [_finding('collectives.busbw_low', 'all_reduce_perf', '0.0 GB/s at %d B' % s, 'busbw >= 171.4', BUSBW_FIX) for s in sizes]
    bench = [_finding('collectives.busbw_low', 'torch all_reduce', '0.0 GB/s', 'busbw >= 171.4', BUSBW_FIX)]
    return low + bench + [count]


def test_the_worst_finding_is_the_root_cause():
    rep = report(_one_gpu_of_two(), workloads=[], status='fail')
    entry = rep['hosts']['node1']
    assert entry['findings'][0]['check'] == 'gpu.count'
    assert _findings.worst(entry['findings'])['check'] == 'gpu.count'
    assert _report._worst_text(entry).startswith('gpu.count gpu: measured 1, expected 2')
    # a warning never outranks a failure, whatever its tier
    warn = _finding('gpu.count', 'gpu', 1, 2, 'r', severity='warn')
    assert _findings.worst([warn, _finding('dmon.throttle', 'gpu0', 'x', 'y', 'r')])['check'] == 'dmon.throttle'


def test_the_gate_text_groups_a_check_and_gives_each_remediation_once():
    lines = _findings.grouped_text(_one_gpu_of_two())
    assert len(lines) == 2
    assert lines[0].startswith('[gpu.count] gpu: measured 1, expected 2. Fix: a GPU is missing')
    assert lines[1].startswith('[collectives.busbw_low] 11 findings: all_reduce_perf: measured 0.0 GB/s at 16777216 B')
    assert lines[1].count(BUSBW_FIX.strip()) == 1
    text = ' '.join(lines)
    assert text.count('Check the NVLink and PCIe links') == 6      # the one remediation, once (it repeats itself 6 times)
    other = _finding('dmon.throttle', 'gpu0', 'hw_slowdown', 'none', BUSBW_FIX)
    assert _findings.grouped_text([other] + _one_gpu_of_two())[-1] == (
        '[dmon.throttle] gpu0: measured hw_slowdown, expected none. Fix: as for [collectives.busbw_low].')


def test_a_run_that_cannot_apply_is_no_fleet_figure():
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _fleet_step
    entry = {'workloads': [dict(WORKLOADS[0]), {'kind': 'nccl_tests', 'component': 'all_gather_perf',
                                                'busbw_gbps': {str(1 << 30): 270.5}}]}
    assert _fleet_step.figures_of(entry) == {'all_gather_perf': {1 << 30: 270.5}}


def test_the_clock_event_reasons_are_shown_beside_the_gpu_samples():
    run = {'kind': 'soak', 'component': 'soak', 'seconds': 30.0,
           'dmon': {'command': 'nvidia-smi dmon', 'samples': 48, 'gpus': {'gpu0': {'samples': 48}, 'gpu1': {'samples': 48}},
                    'clock_events': {'command': 'q', 'samples': 48,
                                     'gpus': {'gpu0': {'samples': 48, 'reasons': {'gpu_idle': 8, 'sw_power_cap': 40}}}}}}
    md = _report.render_markdown(report(workloads=[run]))
    assert '| soak | gpu0 | 48 | - | - | - | - | - | sw_power_cap 40/48, gpu_idle 8/48 |' in md
    assert '| soak | gpu1 | 48 | - | - | - | - | - | - |' in md
    html = _report.render_html(report(workloads=[run]))
    assert '<th>clock event reasons</th>' in html and '<td>sw_power_cap 40/48, gpu_idle 8/48</td>' in html
    run['dmon']['clock_events'] = {'command': 'q', 'not_measured': 'exited 2'}
    assert '| soak | gpu0 | 48 | - | - | - | - | - | not sampled |' in _report.render_markdown(report(workloads=[run]))
