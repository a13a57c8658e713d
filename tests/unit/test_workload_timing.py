"""The host CPU sampled during a workload (_host_samples) and the DDP smoke's step-time distribution (_workloads): the
pure readings of /proc, each check's passing and failing case, and the report entries saying not measured / not judged."""
import json

from ansible_collections.xuanwu.cluster.plugins.module_utils import _host_samples as hs
from ansible_collections.xuanwu.cluster.plugins.module_utils import _judge, _workloads
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection

STAT_BEFORE = """cpu  1000 0 500 8000 100 0 0 0 0 0
cpu0 500 0 250 4000 50 0 0 0 0 0
cpu1 500 0 250 4000 50 0 0 0 0 0
intr 12345 0 0
"""
# 500 ticks pass: cpu0 200 busy (user), cpu1 100 busy, 100 idle, 50 iowait, 50 stolen
STAT_AFTER = """cpu  1300 0 500 8100 150 0 0 50 0 0
cpu0 700 0 250 4000 50 0 0 0 0 0
cpu1 600 0 250 4100 100 0 0 50 0 0
"""


def reading(stat, procs, load='1.50 1.20 1.00 2/300 4242'):
    return {'cpu': hs.cpu_ticks(stat), 'procs': procs, 'load1': hs.load_one(load)}


def test_proc_readings():
    assert hs.cpu_ticks(STAT_BEFORE)['cpu0'] == [500, 0, 250, 4000, 50, 0, 0, 0]
    assert hs.cpu_ticks('cpu 1 2 3 4\ncpuX a b c d\n') == {'cpu': [1, 2, 3, 4, 0, 0, 0, 0]}
    # a command name with spaces and parentheses; utime + stime are fields 14 and 15
    assert hs.process_ticks('4242 (python3 (rank 0)) S 4200 4242 4242 0 -1 4194560 1 0 0 0 350 50 0 0 20 0') == (4242, 4200, 400)
    assert hs.process_ticks('garbage') is None and hs.load_one('') is None
    assert hs.descendants({10: 1, 11: 10, 12: 11, 20: 1, 30: 10, 31: 30}, 10, leave_out={30}) == {11, 12}


def test_interval_record():
    record = hs.interval_record(reading(STAT_BEFORE, {7: 100, 8: 50}), reading(STAT_AFTER, {7: 300, 8: 60, 9: 4}), 2.0, hz=100)
    # pid 9 started within the interval: all its ticks are of the interval
    assert record == {'busy': 60.0, 'iowait': 10.0, 'steal': 10.0, 'core_max': 100.0, 'core': 'cpu0', 'pegged': 1,
                      'load1': 1.5, 'procs': 3, 'proc_cpu': 1.07, 'proc_max': 100.0}
    assert hs.interval_record(reading(STAT_BEFORE, {}), reading(STAT_BEFORE, {}), 2.0) is None
    assert hs.core_busy(hs.cpu_ticks(STAT_BEFORE), hs.cpu_ticks(STAT_AFTER)) == {'cpu0': 100.0, 'cpu1': 33.3}


def test_sampler_reads_this_machine():
    sampler = hs.Sampler(1)
    first = sampler.reading()
    assert first['cpu']['cpu'] and first['load1'] is not None and isinstance(first['procs'], dict)
    stopped = sampler.stop()            # never started: no sample, and the judge says not measured
    assert stopped['samples'] == [] and 'not_measured' in hs.judge_run(stopped)[1]


def sample(**values):
    base = {'t': 2.0, 'busy': 10.0, 'iowait': 0.2, 'steal': 0.0, 'core_max': 100.0, 'core': 'cpu3', 'pegged': 1,
            'load1': 1.0, 'procs': 3, 'proc_cpu': 1.0, 'proc_max': 99.0}
    base.update(values)
    return base


def entry(samples, **more):
    return dict({'command': 'read /proc/stat', 'interval_s': 2, 'cores': 16, 'samples': samples,
                 'core_busy_pct': {'cpu0': 3.0, 'cpu3': 98.0}}, **more)


HEALTHY = entry([sample(iowait=30.0)] + [sample() for _i in range(8)])      # a burst at the start: the median is 0.2
DMON_IDLE = {'command': 'nvidia-smi dmon', 'stdout': '# gpu    pwr  gtemp  mtemp     sm    mem\n# Idx      W      C      C      %      %\n'
             + ''.join('    0     80     40     35     %d      0\n' % sm for sm in (5, 3, 8, 2))}
DMON_BUSY = dict(DMON_IDLE, stdout=DMON_IDLE['stdout'].replace('     5      0', '    99      0').replace('     3      0', '    97      0')
                 .replace('     8      0', '    98      0'))


def found(result):
    return sorted((f['check'], f['severity']) for f in result[0])


def test_host_cpu_healthy_passes_with_the_default_bounds():
    findings, report = hs.judge_run(HEALTHY, None, 'h', 'ddp_smoke', DMON_IDLE)
    assert findings == []
    assert report['samples'] == 9 and report['series']['iowait']['median'] == 0.2 and report['series']['iowait']['max'] == 30.0
    assert report['busiest_cores'] == {'cpu3': 98.0, 'cpu0': 3.0}
    assert report['values']['iowait'][:2] == [30.0, 0.2] and len(report['values']['t']) == 9
    assert [why.split(':')[0] for why in report['not_judged']] == ['workload.host_cpu_bound']


def test_host_cpu_iowait_and_steal():
    waits = entry([sample(iowait=35.0, steal=12.0) for _i in range(5)])
    findings, _report = hs.judge_run(waits, None, 'h', 'soak')
    assert found((findings, None)) == [('workload.host_cpu_iowait', 'fail'), ('workload.host_cpu_steal', 'fail')]
    assert 'median 35.0%' in findings[0]['measured'] and findings[0]['message'].startswith('during soak:')
    assert hs.judge_run(waits, {'iowait_max_pct': 50, 'steal_max_pct': 15}, 'h')[0] == []


def test_host_cpu_bound_is_opt_in_and_needs_idle_gpus():
    pegged = entry([sample() for _i in range(6)])
    assert found(hs.judge_run(pegged, {'cpu_bound_max_pct': 50}, 'h', None, DMON_IDLE)) == [('workload.host_cpu_bound', 'warn')]
    assert hs.judge_run(pegged, {'cpu_bound_max_pct': 50}, 'h', None, DMON_BUSY)[0] == []          # GPUs busy: a spinning rank
    assert hs.judge_run(pegged, None, 'h', None, DMON_IDLE)[0] == []                              # no bound: not judged
    no_dmon = hs.judge_run(pegged, {'cpu_bound_max_pct': 50}, 'h', None, {'command': 'x', 'not_measured': 'no nvidia-smi'})
    assert no_dmon[0] == [] and 'no nvidia-smi' in no_dmon[1]['not_judged'][0]


def test_host_cpu_not_measured():
    assert hs.judge_run({'command': 'c', 'not_measured': 'the sampling failed'})[1] == {'command': 'c', 'not_measured': 'the sampling failed'}
    short = hs.judge_run(entry([]))[1]
    assert short['not_measured'].startswith('no sample: the workload ended within the first interval')


def test_host_cpu_through_the_judge_applies_profile_and_overrides():
    waits = entry([sample(iowait=35.0) for _i in range(5)])
    profile = _collection.resolve_profile('h200x1')[0]
    profile['workloads']['host_cpu'] = {'iowait_max_pct': 30}
    judge = _judge.Judge(profile)
    assert [f['check'] for f in judge.host_cpu(waits, 'h')[0]] == ['workload.host_cpu_iowait']
    quiet = _judge.Judge(dict(profile, checks={'disable': ['workload.host_cpu_iowait']}))
    assert quiet.host_cpu(waits, 'h')[0] == []


# --- step times ------------------------------------------------------------------------------------------------------

def ddp(step_ms, pre_sync_ms, backend='nccl'):
    """A DDP smoke result line of per-rank times: ``step_ms`` and ``pre_sync_ms`` lists per rank."""
    per_rank = [{'rank': r, 'host': 'node%02d' % (r // 2 + 1), 'step_ms': s, 'pre_sync_ms': p}
                for r, (s, p) in enumerate(zip(step_ms, pre_sync_ms))]
    result = {'ok': True, 'first_loss': 9.2, 'last_loss': 5.3, 'losses': [9.2, 5.3], 'step_time_ms_median': 20.0,
              'params_in_sync': True, 'backend': backend, 'warmup_steps': 3, 'per_rank': per_rank}
    return {'exit_code': 0, 'stdout': '%s %s\n' % (_workloads.RESULT_TAG, json.dumps(result)), 'timed_out': False}


STEADY = [90.0, 40.0, 30.0] + [20.0 + 0.1 * (i % 3) for i in range(17)]   # slow warm-up, then steady
PRE = [5.0 + 0.05 * (i % 4) for i in range(20)]


def checks_of(run, spec=None):
    return sorted((f['check'], f['severity']) for f in _workloads.evaluate_ddp_smoke(run, spec or {}, 'h'))


def test_step_times_healthy_pass_and_are_summarised():
    healthy = ddp([STEADY] * 4, [PRE, [p + 0.1 for p in PRE], PRE, [p - 0.1 for p in PRE]])
    assert checks_of(healthy) == []
    timing = _workloads.summarise_run('ddp_smoke', healthy)['step_times']
    assert timing['judged_steps'] == 17 and timing['warmup_steps'] == 3 and timing['spikes'] == []
    assert timing['p99_ratio'] < 1.02 and timing['last_rank']['rank'] == 1 and timing['last_rank']['host'] == 'node01'
    assert 'per_rank' not in _workloads.summarise_run('ddp_smoke', healthy)['result']


def test_step_time_jitter():
    spiky = list(STEADY)
    spiky[12] = 80.0
    assert checks_of(ddp([spiky] * 2, [PRE] * 2)) == [('workload.ddp_step_jitter', 'warn')]
    assert checks_of(ddp([spiky] * 2, [PRE] * 2), {'max_p99_ratio': 5}) == []


def test_step_time_periodic_names_the_steps():
    periodic = [t * 1.8 if i >= 3 and (i + 1) % 5 == 0 else t for i, t in enumerate(STEADY)]
    findings = _workloads.evaluate_ddp_smoke(ddp([periodic] * 2, [PRE] * 2), {}, 'h')
    assert [f['check'] for f in findings] == ['workload.ddp_step_periodic']
    assert 'steps 5, 10, 15, 20 (every 5 steps' in findings[0]['message']
    # two slow steps only: below spike_min_count
    twice = [t * 1.8 if i in (9, 14) else t for i, t in enumerate(STEADY)]
    assert checks_of(ddp([twice] * 2, [PRE] * 2)) == []
    # exactly spike_min_count (3) at a fixed period: "at least" (docs/metrics.md), so a finding
    thrice = [t * 1.8 if i in (5, 10, 15) else t for i, t in enumerate(STEADY)]
    findings = _workloads.evaluate_ddp_smoke(ddp([thrice] * 2, [PRE] * 2), {}, 'h')
    assert [f['check'] for f in findings] == ['workload.ddp_step_periodic']
    assert 'steps 6, 11, 16 (every 5 steps' in findings[0]['message'], findings[0]['message']


def test_straggler_is_named_with_its_host():
    late = [p + 8.0 for p in PRE]           # rank 3 finishes its forward pass 8 ms after the others (40% of a 20 ms step)
    # no default bound: a run with a straggler is not judged on it, and its summary says so
    assert checks_of(ddp([STEADY] * 4, [PRE, PRE, PRE, late])) == []
    timing = _workloads.summarise_run('ddp_smoke', ddp([STEADY] * 4, [PRE, PRE, PRE, late]))['step_times']
    assert timing['last_rank']['rank'] == 3 and timing['straggler'] == _workloads.STRAGGLER_NOT_JUDGED
    findings = _workloads.evaluate_ddp_smoke(ddp([STEADY] * 4, [PRE, PRE, PRE, late]), {'max_rank_lag_pct': 25}, 'h')
    assert [(f['check'], f['component']) for f in findings] == [('workload.ddp_straggler', 'rank 3 (node02)')]
    assert 'last in 100.0% of steps' in findings[0]['measured'] and 'rank 3 (node02)' in findings[0]['remediation']
    assert checks_of(ddp([STEADY] * 4, [PRE, PRE, PRE, late]), {'max_rank_lag_pct': 50}) == []


def test_step_times_not_judged():
    cpu = _workloads.summarise_run('ddp_smoke', ddp([STEADY] * 2, [PRE] * 2, backend='gloo'))['step_times']
    assert 'shared CPU' in cpu['not_judged']
    short = ddp([STEADY[:6]] * 2, [PRE[:6]] * 2)
    assert 'fewer than 5 to judge' in _workloads.summarise_run('ddp_smoke', short)['step_times']['not_judged']
    assert checks_of(short) == []
    old = {'exit_code': 0, 'stdout': '%s %s\n' % (_workloads.RESULT_TAG, json.dumps({'ok': True, 'first_loss': 9.0, 'last_loss': 5.0})),
           'timed_out': False}
    assert 'no per-step times' in _workloads.summarise_run('ddp_smoke', old)['step_times']['not_judged']


# --- the report: next to the GPU samples, in every format -----------------------------------------------------------

def _report_of(workloads, findings=()):
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report
    entry = _report.host_entry('node1', 'pass', list(findings), {}, 'p', '/p.yml', workloads=workloads)
    return _report, _report.build_report('r1', 't0', 't1', '1.0.0', '2.19', 'validate.yml', {'node1': entry}, {'p': '/p.yml'})


def test_report_shows_host_cpu_and_step_times_or_why_not():
    healthy = ddp([STEADY] * 2, [PRE, [p + 0.1 for p in PRE]])
    summary = _workloads.summarise_run('ddp_smoke', healthy)
    summary['host_cpu'] = hs.judge_run(HEALTHY, None, 'node1', 'ddp_smoke')[1]
    soak = {'kind': 'soak', 'component': 'soak', 'host_cpu': {'command': 'c', 'not_measured': 'the sampling failed: OSError'}}
    report, rep = _report_of([dict(summary, component='ddp_smoke'), soak])
    assert json.loads(report.render_json(rep))['hosts']['node1']['workloads'][0]['host_cpu']['series']['iowait']['median'] == 0.2
    md = report.render_markdown(rep)
    assert '| ddp_smoke | 9 | 10.0 / 10.0 / 10.0 | 0.2 / 0.2 / 30.0 |' in md and 'cpu3 98.0%' in md
    assert 'host CPU samples during soak NOT MEASURED: the sampling failed: OSError' in md
    assert 'not judged: workload.host_cpu_bound: not judged' in md
    assert 'last to the all-reduce: rank 1 (node01)' in md and 'p99 ' in md
    html = report.render_html(rep)
    assert 'Host CPU samples during the workloads' in html and 'busiest process (% of a core)' in html
    junit = report.render_junit(rep, dict((c, c) for c in hs.CHECKS))
    assert 'name="workload.host_cpu_iowait"></testcase>' in junit           # judged, passed
    assert 'name="workload.host_cpu_bound"><skipped' in junit                # the bound is unset: not a pass
    cpu_only = dict(summary, step_times={'not_judged': 'step times of a run on the CPU (gloo) are those of a shared CPU'})
    cpu_only.pop('host_cpu')
    report, rep = _report_of([cpu_only])
    junit = report.render_junit(rep, dict((c, c) for c in list(hs.CHECKS) + ['workload.ddp_straggler']))
    assert 'name="workload.host_cpu_steal"><skipped message="not measured: no host CPU samples were taken"' in junit
    assert 'name="workload.ddp_straggler"><skipped' in junit
    assert 'step times not judged: step times of a run on the CPU' in report.render_markdown(rep)
