"""The alerts and recording rules the prometheus role ships (roles/prometheus/templates/xuanwu-rules.yml.j2).

The template is rendered with the role's defaults (defaults/main.yml) as the template module renders it (jinja2,
trim_blocks), checked with ``promtool check rules`` and run with ``promtool test rules``: for each alert, series that
must fire it (with the labels and the annotations an operator reads: the host and what to do) and series that must
not. The series follow the model of the validation's export: one series per host (its latest run), labels as the
textfile collector serves them (job, instance added by the scrape). promtool is Debian's `prometheus` package's
(.ci/run installs it); without it on PATH those tests are skipped and say so.
"""
import os
import shutil
import subprocess

import jinja2
import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'prometheus')
PROMTOOL = shutil.which('promtool')
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason='promtool is not on PATH (Debian and Ubuntu: apt-get install prometheus; .ci/run installs it)')
DAY = 86400
GIB = '1073741824'
DO = 'then validate it again: ansible-playbook playbooks/validate.yml --limit %s.'


def render(**overrides):
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as handle:
        variables = yaml.safe_load(handle)
    variables.update(overrides, ansible_managed='Ansible managed')
    with open(os.path.join(ROLE, 'templates', 'xuanwu-rules.yml.j2')) as handle:
        template = handle.read()
    # the template module's settings: trim_blocks, and every variable defined
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, keep_trailing_newline=True)
    return env.from_string(template).render(variables)


def series(metric, values, **labels):
    host = labels.get('host')
    if host and 'instance' not in labels:
        labels.update(job='node', instance=host)  # as the node job scrapes it
    text = ','.join('%s="%s"' % (key, labels[key]) for key in sorted(labels))
    return {'series': '%s{%s}' % (metric, text), 'values': values}


def outcome(value, host, check, component):
    """``xuanwu_check_outcome`` of a check on a component of a host in the run r7: 0 info, 1 warn, 2 fail."""
    return series('xuanwu_check_outcome', '%dx10' % value, host=host, run_id='r7', check=check, component=component)


def case(input_series, alertname, exp_alerts, eval_time='5m', interval='1m'):
    """One group of promtool's tests: these series, and the alerts ``alertname`` gives at ``eval_time``."""
    return {'interval': interval, 'input_series': input_series,
            'alert_rule_test': [{'eval_time': eval_time, 'alertname': alertname, 'exp_alerts': exp_alerts}]}


def alert(labels, summary, description):
    return {'exp_labels': labels, 'exp_annotations': {'summary': summary, 'description': description}}


def promtool(tmp_path, tests, rules=None, interval='1m'):
    """Run ``promtool test rules`` on the rendered rules; fails with promtool's own account of the differences."""
    (tmp_path / 'xuanwu-rules.yml').write_text(rules if rules is not None else render())
    (tmp_path / 'tests.yml').write_text(yaml.safe_dump({'rule_files': ['xuanwu-rules.yml'], 'evaluation_interval': interval,
                                                        'tests': tests}, sort_keys=False))
    result = subprocess.run([PROMTOOL, 'test', 'rules', 'tests.yml'], cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout
    assert 'SUCCESS' in result.stdout, result.stdout


def rules_by_name(text):
    out = {}
    for group in yaml.safe_load(text)['groups']:
        for rule in group['rules']:
            out[rule.get('alert') or rule.get('record')] = dict(rule, group=group['name'])
    return out


ALERTS = ['XuanwuHostValidationFailed', 'XuanwuHostNotValidatedRecently', 'XuanwuValidationRunFailed',
          'XuanwuBusbwBelowFloor', 'XuanwuGpuThrottled', 'XuanwuGpuTooHot', 'XuanwuBusbwRegressed',
          'XuanwuNodeUnhealthy', 'XuanwuNodeHealthUnknown', 'XuanwuNodeHealthCheckStale']
# the node health series (xuanwu-health's textfile) carry no host label: the scrape's instance names the node
HEALTH_ALERTS = ('XuanwuNodeUnhealthy', 'XuanwuNodeHealthUnknown', 'XuanwuNodeHealthCheckStale')


def test_every_alert_tells_whom_and_what_to_do():
    rules = rules_by_name(render())
    assert sorted(name for name in rules if 'alert' in rules[name]) == sorted(ALERTS)
    for name in ALERTS:
        rule = rules[name]
        assert rule['labels']['severity'] in ('critical', 'warning'), name
        assert set(rule['annotations']) == {'summary', 'description'}, name
        who = '$labels.run_id' if name == 'XuanwuValidationRunFailed' else '$labels.instance' if name in HEALTH_ALERTS \
            else '$labels.host'
        assert who in rule['annotations']['summary'] and who in rule['annotations']['description'], name
        assert 'playbooks/validate.yml' in rule['annotations']['description'], name
    assert rules['XuanwuBusbwRegressed']['group'] == 'xuanwu-fleet-history'


def test_the_role_variables_reach_the_rules():
    rules = rules_by_name(render(prometheus_rules_validation_max_age_days=3, prometheus_rules_busbw_regression_fraction=0.75))
    assert rules['XuanwuHostNotValidatedRecently']['expr'].endswith('> 3 * 86400')
    assert 'more than 3 days' in rules['XuanwuHostNotValidatedRecently']['annotations']['description']
    assert 'group_left 0.75 * collective_size_bytes:' in rules['XuanwuBusbwRegressed']['expr']
    assert 'under 75 % of the fleet' in rules['XuanwuBusbwRegressed']['annotations']['description']


@needs_promtool
def test_promtool_checks_the_rules(tmp_path):
    (tmp_path / 'xuanwu-rules.yml').write_text(render())
    result = subprocess.run([PROMTOOL, 'check', 'rules', str(tmp_path / 'xuanwu-rules.yml')], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, timeout=60, check=False)
    assert result.returncode == 0 and 'SUCCESS: 12 rules found' in result.stdout, result.stdout


FAILED = ('Keep it out of service (drain it in the scheduler), read the run\'s report for its failed findings and their '
          'remediation, fix them, ' + DO)


@needs_promtool
def test_a_failed_host(tmp_path):
    promtool(tmp_path, [{
        'interval': '1m',
        'input_series': [
            series('xuanwu_host_status', '2x10', host='gpu01', run_id='r7'),
            # the same host in the controller's file too: still one alert
            series('xuanwu_host_status', '2x10', host='gpu01', run_id='r7', job='controller', instance='ctl'),
            series('xuanwu_host_status', '3x10', host='gpu02', run_id='r7'),
            series('xuanwu_host_status', '1x10', host='gpu03', run_id='r7'),  # warn: no alert
            series('xuanwu_host_status', '0x10', host='gpu04', run_id='r7'),  # pass: no alert
        ],
        'alert_rule_test': [{'eval_time': '5m', 'alertname': 'XuanwuHostValidationFailed', 'exp_alerts': [
            alert({'severity': 'critical', 'host': 'gpu01', 'run_id': 'r7'}, 'gpu01 failed validation (run r7)',
                  'gpu01 failed validation in run r7. ' + FAILED % 'gpu01'),
            alert({'severity': 'critical', 'host': 'gpu02', 'run_id': 'r7'}, 'gpu02 failed validation (run r7)',
                  'gpu02 could not be validated (status error: unreachable, or its probe failed) in run r7. ' + FAILED % 'gpu02'),
        ]}],
    }, {
        # the host was fixed: its next run passes, and the alert is gone
        'interval': '1m',
        'input_series': [series('xuanwu_host_status', '2x4 _x5', host='gpu01', run_id='r7'),
                         series('xuanwu_host_status', '_x5 0x5', host='gpu01', run_id='r8')],
        'alert_rule_test': [
            {'eval_time': '3m', 'alertname': 'XuanwuHostValidationFailed', 'exp_alerts': [
                alert({'severity': 'critical', 'host': 'gpu01', 'run_id': 'r7'}, 'gpu01 failed validation (run r7)',
                      'gpu01 failed validation in run r7. ' + FAILED % 'gpu01')]},
            {'eval_time': '10m', 'alertname': 'XuanwuHostValidationFailed', 'exp_alerts': []}],
    }])


def _stale_test(hosts, fired, days=7):
    return {
        'interval': '1h',
        'input_series': [series('xuanwu_host_last_validated_timestamp_seconds', '%dx200' % (finished * DAY), host=host,
                                run_id='r-%s' % host) for host, finished in hosts],
        # at 8 days (promtool's clock starts at 0)
        'alert_rule_test': [{'eval_time': '8d', 'alertname': 'XuanwuHostNotValidatedRecently', 'exp_alerts': [
            alert({'severity': 'warning', 'host': host, 'run_id': 'r-' + host}, '%s was last validated %s ago' % (host, age),
                  '%s was last validated %s ago (run r-%s), more than %d days: a fault since then would go unseen. '
                  'Validate it again: ansible-playbook playbooks/validate.yml --limit %s.' % (host, age, host, days, host))
            for host, age in fired]}],
    }


@needs_promtool
def test_a_host_not_validated_for_7_days(tmp_path):
    # validated 8 days ago: alert; 2 days ago: none
    promtool(tmp_path, [_stale_test([('gpu01', 0), ('gpu02', 6)], [('gpu01', '8d 0h 0m 0s')])], interval='1h')


@needs_promtool
def test_the_stale_days_are_a_role_variable(tmp_path):
    promtool(tmp_path, [_stale_test([('gpu01', 0), ('gpu02', 4), ('gpu03', 6)], [('gpu01', '8d 0h 0m 0s'), ('gpu02', '4d 0h 0m 0s')],
                                    days=3)],
             rules=render(prometheus_rules_validation_max_age_days=3), interval='1h')


RUN_FAILED = ('The validation run %s failed as a run (result 3, error), so its hosts\' results are incomplete. Read the '
              'run\'s log and report.json (the stage that failed and its error), fix the cause (the inventory, the '
              'controller\'s connection to the hosts, a missing profile) and run playbooks/validate.yml again.')


@needs_promtool
def test_a_failed_run(tmp_path):
    promtool(tmp_path, [{
        # the latest run errored: alert; its hosts (exported on the nodes) give the same run twice: one alert
        'interval': '1m',
        'input_series': [series('xuanwu_run_result', '3x10', run_id='r9', job='node', instance='gpu01'),
                         series('xuanwu_run_result', '3x10', run_id='r9', job='node', instance='gpu02'),
                         series('xuanwu_run_timestamp_seconds', '2000x10', run_id='r9', job='node', instance='gpu01'),
                         # an older run that passed
                         series('xuanwu_run_result', '0x10', run_id='r8', job='node', instance='gpu03'),
                         series('xuanwu_run_timestamp_seconds', '1000x10', run_id='r8', job='node', instance='gpu03')],
        'alert_rule_test': [{'eval_time': '5m', 'alertname': 'XuanwuValidationRunFailed', 'exp_alerts': [
            alert({'severity': 'critical', 'run_id': 'r9'}, 'The validation run r9 itself failed', RUN_FAILED % 'r9')]}],
    }, {
        # an errored run with a newer run since is history; a run that failed hosts (2) is not an error of the run
        'interval': '1m',
        'input_series': [series('xuanwu_run_result', '3x10', run_id='r9', job='node', instance='gpu01'),
                         series('xuanwu_run_timestamp_seconds', '2000x10', run_id='r9', job='node', instance='gpu01'),
                         series('xuanwu_run_result', '2x10', run_id='r10', job='node', instance='gpu02'),
                         series('xuanwu_run_timestamp_seconds', '3000x10', run_id='r10', job='node', instance='gpu02')],
        'alert_rule_test': [{'eval_time': '5m', 'alertname': 'XuanwuValidationRunFailed', 'exp_alerts': []}],
    }, {
        # an errored run whose finish time could not be read (no timestamp) still alerts
        'interval': '1m',
        'input_series': [series('xuanwu_run_result', '3x10', run_id='r11', job='node', instance='gpu01')],
        'alert_rule_test': [{'eval_time': '5m', 'alertname': 'XuanwuValidationRunFailed', 'exp_alerts': [
            alert({'severity': 'critical', 'run_id': 'r11'}, 'The validation run r11 itself failed', RUN_FAILED % 'r11')]}],
    }])


def _busbw(host, value, size=GIB, collective='all_reduce_perf', run_id='r7', floor=None, values='x20'):
    out = [series('xuanwu_collective_busbw_gbytes', '%s%s' % (value, values), host=host, run_id=run_id, collective=collective,
                  size_bytes=size)]
    if floor is not None:
        out.append(series('xuanwu_collective_busbw_floor_gbytes', '%s%s' % (floor, values), host=host, run_id=run_id,
                          collective=collective, size_bytes=size))
    return out


@needs_promtool
def test_busbw_below_the_profile_floor(tmp_path):
    promtool(tmp_path, [case(
        _busbw('gpu01', 301.25, floor=360) + _busbw('gpu02', 412, floor=360)
        # a size the profile does not govern has no floor: no alert
        + _busbw('gpu03', 1.5, size='8'),
        'XuanwuBusbwBelowFloor', [
            alert({'severity': 'critical', 'host': 'gpu01', 'run_id': 'r7', 'collective': 'all_reduce_perf', 'size_bytes': GIB},
                  "all_reduce_perf on gpu01 under the profile's bus bandwidth floor",
                  "all_reduce_perf on gpu01 reached 301.2 GB/s bus bandwidth at %s bytes in run r7, under the profile's "
                  "floor of 360.0 GB/s. Check its NVLink and network links (nvidia-smi nvlink -s, ibstat), GPU clocks and "
                  "PCIe width, fix them, %s" % (GIB, DO % 'gpu01'))])])


THROTTLED = (' during the workloads of run r7. Check the host\'s cooling and power supply and the GPU\'s clock event reasons '
             '(nvidia-smi -q -d PERFORMANCE); replace the GPU if it stays so, then validate the host again: '
             'ansible-playbook playbooks/validate.yml --limit gpu01.')


@needs_promtool
def test_a_throttled_gpu(tmp_path):
    promtool(tmp_path, [case([
        outcome(2, 'gpu01', 'dmon.throttle', 'gpu3'),
        outcome(2, 'gpu01', 'dmon.sustained_clock', 'gpu5'),
        # not these: the SW thermal slowdown warning is its own check, a site that made it info, another check
        outcome(1, 'gpu02', 'dmon.throttle_warn', 'gpu1'),
        outcome(0, 'gpu02', 'dmon.throttle', 'gpu2'),
        outcome(2, 'gpu02', 'host.port_in_use', 'port 9100/tcp'),
    ], 'XuanwuGpuThrottled', [
        alert({'severity': 'warning', 'host': 'gpu01', 'run_id': 'r7', 'check': 'dmon.throttle', 'component': 'gpu3'},
              'gpu3 of gpu01 throttled during the workloads (dmon.throttle)',
              'gpu3 of gpu01 was slowed down by the driver (HW slowdown, thermal slowdown or power brake)' + THROTTLED),
        alert({'severity': 'warning', 'host': 'gpu01', 'run_id': 'r7', 'check': 'dmon.sustained_clock', 'component': 'gpu5'},
              'gpu5 of gpu01 throttled during the workloads (dmon.sustained_clock)',
              "gpu5 of gpu01 held its SM clock under load below the profile's floor" + THROTTLED),
    ])])


def _temperatures(host, gpu, gpu_c, memory_c, run_id='r7', workload='all_reduce_perf'):
    return [series('xuanwu_gpu_temperature_celsius', '%sx10' % value, host=host, run_id=run_id, component=workload, gpu=gpu,
                   sensor=sensor, stat=stat)
            for sensor, value in (('gpu', gpu_c), ('memory', memory_c))
            for stat, value in (('max', value), ('median', value - 10))]


@needs_promtool
def test_a_gpu_too_hot(tmp_path):
    promtool(tmp_path, [case([
        outcome(2, 'gpu01', 'dmon.temperature', 'gpu3'),
        # two workloads: the hottest of each sensor
        *_temperatures('gpu01', 'gpu3', 91.6, 97),
        *_temperatures('gpu01', 'gpu3', 80, 85, workload='ddp_smoke'),
        *_temperatures('gpu01', 'gpu4', 60, 65),
        # hot, but its profile's bound was not passed (no failed check): no alert; a site that made the check info
        *_temperatures('gpu02', 'gpu0', 84, 90),
        outcome(0, 'gpu03', 'dmon.temperature', 'gpu1'),
        # a site that made the check a warning (severity override): still too hot, still the alert
        outcome(1, 'gpu04', 'dmon.temperature', 'gpu2'),
        *_temperatures('gpu04', 'gpu2', 88, 90),
    ], 'XuanwuGpuTooHot', [
        alert({'severity': 'warning', 'host': 'gpu01', 'run_id': 'r7', 'component': 'gpu3'},
              'gpu3 of gpu01 too hot during the workloads',
              "gpu3 of gpu01 ran hotter than its profile allows during the workloads of run r7 (dmon.temperature; "
              "hottest gpu 92 C, memory 97 C). Check the host's airflow, fans and inlet temperature, " + DO % 'gpu01'),
        alert({'severity': 'warning', 'host': 'gpu04', 'run_id': 'r7', 'component': 'gpu2'},
              'gpu2 of gpu04 too hot during the workloads',
              "gpu2 of gpu04 ran hotter than its profile allows during the workloads of run r7 (dmon.temperature; "
              "hottest gpu 88 C, memory 90 C). Check the host's airflow, fans and inlet temperature, " + DO % 'gpu04')]),
    ])


def _regressed(host, value, median, percent=90, size=GIB):
    description = ("all_reduce_perf on %s reached %s GB/s bus bandwidth at %s bytes in run r7, under %d %% of the fleet's "
                   "30-day median (%s GB/s): it passes its floor but is slower than its peers. Compare it with a healthy "
                   "host (its NVLink and network links, GPU clocks, NCCL settings), " % (host, value, size, percent, median))
    return alert({'severity': 'warning', 'host': host, 'run_id': 'r7', 'collective': 'all_reduce_perf', 'size_bytes': size},
                 'all_reduce_perf on %s regressed against the fleet' % host, description + DO % host)


FLEET = (_busbw('gpu01', 400, values='x30', floor=300) + _busbw('gpu02', 410, values='x30') + _busbw('gpu03', 390, values='x30')
         + _busbw('gpu04', 405, values='x30') + _busbw('gpu05', 330, values='x30')
         # another size, a slower fleet there: gpu05 is with its peers
         + [s for host, value in (('gpu01', 20), ('gpu02', 21), ('gpu05', 19))
            for s in _busbw(host, value, size='1048576', values='x30')])


@needs_promtool
def test_busbw_regressed_against_the_fleet(tmp_path):
    median = 'collective_size_bytes:xuanwu_collective_busbw_gbytes:median'
    promtool(tmp_path, [{
        'interval': '5m',
        'input_series': FLEET,
        # gpu05: 330 < 0.9 x 400 (the fleet's median); gpu03 (390) is within
        'alert_rule_test': [{'eval_time': '1h', 'alertname': 'XuanwuBusbwRegressed',
                             'exp_alerts': [_regressed('gpu05', '330.0', '400.0')]}],
        'promql_expr_test': [
            {'expr': median, 'eval_time': '1h', 'exp_samples': [
                {'labels': '%s{collective="all_reduce_perf",size_bytes="%s"}' % (median, GIB), 'value': 400},
                {'labels': '%s{collective="all_reduce_perf",size_bytes="1048576"}' % median, 'value': 20}]},
            {'expr': median + '_30d{size_bytes="%s"}' % GIB, 'eval_time': '1h', 'exp_samples': [
                {'labels': '%s_30d{collective="all_reduce_perf",size_bytes="%s"}' % (median, GIB), 'value': 400}]},
        ],
    },
        # one host alone is its own median: nothing to regress against
        case(_busbw('gpu05', 330, values='x30'), 'XuanwuBusbwRegressed', [], eval_time='1h', interval='5m'),
    ], interval='5m')


@needs_promtool
def test_the_regression_fraction_is_a_role_variable(tmp_path):
    # at 0.8 of the median (400), 330 is within
    within = case(FLEET, 'XuanwuBusbwRegressed', [], eval_time='1h', interval='5m')
    promtool(tmp_path, [within], rules=render(prometheus_rules_busbw_regression_fraction=0.8), interval='5m')
    # at 0.98: 390 < 392 and, at 1 MiB, 19 < 19.6
    under = case(FLEET, 'XuanwuBusbwRegressed', [
        _regressed('gpu03', '390.0', '400.0', 98), _regressed('gpu05', '330.0', '400.0', 98),
        _regressed('gpu05', '19.0', '20.0', 98, size='1048576')], eval_time='1h', interval='5m')
    promtool(tmp_path, [under], rules=render(prometheus_rules_busbw_regression_fraction=0.98), interval='5m')


def health(metric, values, instance, **labels):
    """A node's xuanwu-health series as the node job scrapes its textfile: no host label, the instance names it."""
    return series(metric, values, instance=instance, job='node', **labels)


HEALTH_FIX = ('Read the root-cause finding and its fix on the node (/var/lib/xuanwu-health/check.json, or run '
              'xuanwu-health --no-act --json), fix it, then validate the node: ansible-playbook playbooks/validate.yml '
              '--limit <node>.')


@needs_promtool
def test_a_node_unhealthy_now(tmp_path):
    promtool(tmp_path, [case([
        health('xuanwu_health_status', '2x10', 'gpu01', mode='check'),
        health('xuanwu_health_findings', '1x10', 'gpu01', mode='check', check='gpu.xid_fatal', severity='fail'),
        health('xuanwu_health_findings', '2x10', 'gpu01', mode='check', check='gpu.remapped_rows_pending', severity='fail'),
        health('xuanwu_health_findings', '1x10', 'gpu01', mode='check', check='gpu.xid', severity='warn'),
        health('xuanwu_health_status', '1x10', 'gpu02', mode='check'),     # warnings: healthy
        health('xuanwu_health_status', '0x10', 'gpu03', mode='check'),
        health('xuanwu_health_status', '2x10', 'gpu04', mode='epilog'),    # the epilog's own drain, not this alert
    ], 'XuanwuNodeUnhealthy', [alert(
        {'severity': 'critical', 'instance': 'gpu01'}, 'gpu01 is unhealthy now (xuanwu-health)',
        'The health check of gpu01 failed (gpu.remapped_rows_pending, gpu.xid_fatal). With Slurm it drained the node '
        'itself (reason "xuanwu-health: ...") and resumes it once it passes again. ' + HEALTH_FIX)]),
        # it passed again: no alert
        case([health('xuanwu_health_status', '2x3 0x6', 'gpu01', mode='check')], 'XuanwuNodeUnhealthy', [])])


@needs_promtool
def test_a_node_health_unknown_for_15_minutes(tmp_path):
    unknown = [health('xuanwu_health_status', '3x30', 'gpu01', mode='check'),
               health('xuanwu_health_probe_unknown', '1x30', 'gpu01', mode='check', probe='nvidia_query_gpu'),
               health('xuanwu_health_status', '3x5 0x25', 'gpu02', mode='check')]   # one hang that cleared: none
    fired = alert({'severity': 'warning', 'instance': 'gpu01'},
                  'The health check of gpu01 cannot tell (a probe does not answer)',
                  'A probe of the health check of gpu01 has not answered (nvidia_query_gpu). A hung nvidia-smi usually '
                  'means a hung GPU or driver, a hung df a hung network mount: look on the node (dmesg, the tool by hand), '
                  'fix it, then validate it: ansible-playbook playbooks/validate.yml --limit <node>.')
    promtool(tmp_path, [case(unknown, 'XuanwuNodeHealthUnknown', [], eval_time='10m'),
                        case(unknown, 'XuanwuNodeHealthUnknown', [fired], eval_time='20m')])


@needs_promtool
def test_a_node_health_check_that_stopped(tmp_path):
    # gpu01 last checked at 0 s, gpu02 every minute: at 20 minutes only gpu01 is stale
    promtool(tmp_path, [case([
        health('xuanwu_health_last_check_timestamp_seconds', '0x30', 'gpu01', mode='check'),
        health('xuanwu_health_last_check_timestamp_seconds', '0+60x30', 'gpu02', mode='check'),
    ], 'XuanwuNodeHealthCheckStale', [alert(
        {'severity': 'warning', 'instance': 'gpu01'}, 'The health check of gpu01 last ran 20m 0s ago',
        "The health check of gpu01 last finished 20m 0s ago, more than 15 minutes: it is not running (slurmd's "
        'HealthCheckProgram, the xuanwu-health timer or node-problem-detector), so a fault would go unseen. Check its '
        'caller on the node, then validate it: ansible-playbook playbooks/validate.yml --limit <node>.')],
        eval_time='20m')])
