"""Integration: nvidia-smi dmon sampled during the collectives (validate.yml, ansible-playbook), judged, kept in
report.json and exported as Prometheus textfile metrics on the controller and on each node, each series in one
export only (docs/metrics.md, "Which export carries what"). The GPU tools are test
doubles: nccl-tests print a real 4x H200 capture, nvidia-smi dmon prints a 2x H200 capture (real, or a derived
fault: tests/fixtures/dmon/README.md) and runs until it is stopped; any other nvidia-smi call is 'not found', as
on the test host."""
import os

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.xuanwu.cluster.plugins.module_utils._prom import STATUS_CODES
from test_collectives_workloads import HW, h200_profile, inventory, run_validate, write_test_double
from test_validate_playbook import playbook

DMON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures', 'dmon')
pytestmark = pytest.mark.skipif(not os.access('/bin/sh', os.X_OK), reason='needs /bin/sh')


# The clock event reasons of a GPU at its power limit under load, as the real 1x H200 reads them (SW power cap,
# tests/fixtures/dmon/README.md); HW_SLOWDOWN adds the hardware slowdown bit (0x8) to it.
POWER_CAP, HW_SLOWDOWN = '0x0000000000000004', '0x000000000000000C'


def clock_events_double(reasons):
    """The shell of a test double answering the clock event query: the field probe, then every second one line per
    GPU (index, reasons, SM clock, power draw, power limit, temperature) until stopped; ``reasons``: one per GPU."""
    lines = ''.join('echo "%d, %s, 1500, 690.10, 700.00, 55"\n' % (i, r) for i, r in enumerate(reasons))
    return ('case "$*" in\n'
            '  "--query-gpu=clocks_event_reasons.active --format=csv,noheader") echo %s; exit 0 ;;\n'
            '  --query-gpu=index,clocks_event_reasons.active,*) while :; do\n%s    sleep 0.2\n  done ;;\n'
            'esac\n' % (reasons[0], lines))


def doubles(tmp_path, dmon_fixture, monkeypatch, seconds=1, reasons=(POWER_CAP, POWER_CAP)):
    """nccl-tests and nvidia-smi test doubles on PATH; the collectives run ``seconds`` so that dmon samples them."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    for coll in ('all_reduce', 'all_gather'):
        write_test_double(bindir / ('%s_perf' % coll), 'sleep %s\ncat %s\n' % (
            seconds, os.path.join(HW, 'nccl-tests_%s_perf_-b8_-e8G_-f2_-g4.txt' % coll)))
    body = ((clock_events_double(reasons) if reasons else '') +
            'if [ "$1" != dmon ]; then echo "nvidia-smi: command not found" >&2; exit 127; fi\n'
            'echo "$@" >> %s\n' % (tmp_path / 'dmon-calls.log'))
    if dmon_fixture:
        body += 'cat %s\nwhile :; do sleep 0.1; done\n' % os.path.join(DMON, dmon_fixture)
    else:
        body += 'echo "No devices were found" >&2\nexit 6\n'
    tools = tmp_path / 'tools'
    tools.mkdir()
    write_test_double(tools / 'nvidia-smi', body)
    monkeypatch.setenv('PATH', '%s:%s' % (tools, os.environ['PATH']))
    return bindir


def _inventory(tmp_path, bindir, hosts=None, **extra):
    return inventory(tmp_path, hosts or {'gpu-a': {}}, xuanwu_profile=h200_profile(tmp_path, **extra.pop('profile', {})),
                     xuanwu_validate_collectives=True, xuanwu_collectives=['all_reduce', 'all_gather'],
                     xuanwu_nccl_tests_bin_dir=str(bindir), xuanwu_collectives_gpus=4, **extra)


def _metrics(path):
    with open(path) as handle:
        text = handle.read()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def _series(metrics):
    return set((name, key) for name, samples in metrics.items() for key in samples)


def _one(metrics, name, **labels):
    found = [v for k, v in metrics.get(name, {}).items() if set(labels.items()) <= set(k)]
    assert len(found) == 1, (name, labels, metrics.get(name))
    return found[0]


@pytest.mark.both_controllers
def test_throttling_during_a_collective_fails_the_host_and_reaches_every_output(tmp_path, monkeypatch):
    """gpu1 slows down for a hardware reason (clock event reason 0x8 beside the power cap) while its clock drops: a
    fault by its cause; gpu0 at its power cap alone is how a healthy GPU runs under load and is no finding."""
    bindir = doubles(tmp_path, 'h200x2_dmon_busy-derived-throttle-gpu1.txt', monkeypatch, reasons=(POWER_CAP, HW_SLOWDOWN))
    textfiles, controller = tmp_path / 'textfile', tmp_path / 'controller'
    for host in ('gpu-a', 'gpu-b'):
        (textfiles / host).mkdir(parents=True)
    controller.mkdir()
    # both exports on; gpu-b's own textfile folder is '' (none): its series go to the controller's file
    inv = _inventory(tmp_path, bindir, {'gpu-a': {}, 'gpu-b': {'xuanwu_prometheus_textfile_dir': ''}},
                     xuanwu_prometheus_textfile_dir=str(textfiles) + '/{{ inventory_hostname }}',
                     xuanwu_prometheus_controller_textfile_dir=str(controller))
    rc, out, (folder, report) = run_validate(tmp_path, inv)
    assert rc == 2, out[-3000:]
    calls = (tmp_path / 'dmon-calls.log').read_text().splitlines()
    assert calls == ['dmon -s pucvmet -d 1'] * 4          # once per collective and host
    for host in ('gpu-a', 'gpu-b'):
        entry = report['hosts'][host]
        throttle = [f for f in entry['findings'] if f['check'] == 'dmon.throttle']
        assert [(f['component'], f['severity']) for f in throttle] == [('gpu1', 'fail')] * 2, entry['findings']
        assert sorted(f['message'].split(':')[0] for f in throttle) == ['during all_gather_perf', 'during all_reduce_perf']
        assert all('hw_slowdown' in f['message'] for f in throttle), throttle
        assert entry['status'] == 'fail'
        run = entry['workloads'][0]
        assert run['dmon']['command'] == 'nvidia-smi dmon -s pucvmet -d 1'
        assert run['dmon']['gpus']['gpu1']['load']['pclk_min'] == 1410 and len(run['dmon']['gpus']['gpu1']['values']['pclk']) == 15
        assert run['curve'][0] == {'min_bytes': 16777216, 'busbw_gbps_min': 222.9}
    junit = open(os.path.join(folder, 'junit.xml')).read()
    assert 'name="dmon.throttle"' in junit and 'name="dmon.temperature"' in junit
    # the report folder's copy of the whole run
    metrics = _metrics(os.path.join(folder, 'xuanwu.prom'))
    assert _one(metrics, 'xuanwu_gpu_sm_clock_under_load_min_mhz', host='gpu-b', component='all_gather_perf', gpu='gpu1') == 1410
    assert _one(metrics, 'xuanwu_check_outcome', host='gpu-a', check='dmon.throttle', component='gpu1') == 2
    assert _one(metrics, 'xuanwu_collective_busbw_floor_gbytes', host='gpu-a', collective='all_reduce_perf',
                size_bytes='1073741824') == 318.7
    assert _one(metrics, 'xuanwu_host_status', host='gpu-a', run_id=report['run_id']) == 2
    # gpu-a's own file: its series only (the run's are on the controller); gpu-b, whose folder is '', gets none
    path = textfiles / 'gpu-a' / 'xuanwu.prom'
    assert oct(path.stat().st_mode & 0o777) == '0o644' and os.listdir(str(textfiles / 'gpu-b')) == []
    mine = _metrics(str(path))
    assert set(dict(k)['host'] for name in mine for k in mine[name]) == {'gpu-a'}
    assert set(dict(k)['run_id'] for name in mine for k in mine[name]) == {report['run_id']}
    assert _one(mine, 'xuanwu_collective_busbw_gbytes', collective='all_reduce_perf', size_bytes='8589934592') > 300
    assert not [name for name in mine if name.startswith('xuanwu_run_')]
    # the controller's file: the run's series and gpu-b's; with gpu-a's file, the whole run, each series once
    theirs = _metrics(str(controller / 'xuanwu.prom'))
    assert oct((controller / 'xuanwu.prom').stat().st_mode & 0o777) == '0o644'
    assert _one(theirs, 'xuanwu_run_result', run_id=report['run_id']) == 2
    assert set(dict(k).get('host') for name in theirs for k in theirs[name]) == {None, 'gpu-b'}
    assert not _series(mine) & _series(theirs) and _series(mine) | _series(theirs) == _series(metrics)


def test_a_healthy_run_passes_with_its_samples_and_without_export(tmp_path, monkeypatch):
    bindir = doubles(tmp_path, 'h200x2_dmon_busy.txt', monkeypatch)
    rc, out, (folder, report) = run_validate(tmp_path, _inventory(tmp_path, bindir, profile={'monitoring': {'gtemp_max_c': 85}}))
    assert rc == 0, out[-3000:]
    entry = report['hosts']['gpu-a']
    # the probe's other nvidia-smi calls fail here (probe.failed warnings): no dmon finding, no failure
    assert not [f for f in entry['findings'] if f['check'].startswith('dmon.') or f['severity'] == 'fail'], entry['findings']
    assert [sorted(w['dmon']['gpus']) for w in entry['workloads']] == [['gpu0', 'gpu1']] * 2
    assert not os.path.exists(os.path.join(folder, 'metrics'))
    assert 'Export the metrics' in out and 'skipping: no hosts matched' in out


def test_a_textfile_folder_that_is_not_there_is_said_and_changes_no_result(tmp_path, monkeypatch):
    bindir = doubles(tmp_path, 'h200x2_dmon_busy.txt', monkeypatch)
    missing = tmp_path / 'no-such-folder'
    rc, out, (folder, report) = run_validate(tmp_path, _inventory(tmp_path, bindir), '-e',
                                             'xuanwu_prometheus_textfile_dir=%s' % missing)
    assert rc == 0, out[-3000:]
    said = ' '.join(out.split())        # the output wraps long messages
    assert 'could not be written to %s/xuanwu.prom on gpu-a' % missing in said and 'does not exist' in said and 'rescued=1' in out
    assert not missing.exists()
    assert os.path.exists(os.path.join(folder, 'metrics', 'gpu-a.prom')) and report['hosts']['gpu-a']['status'] != 'fail'
    # the nodes' files alone (no controller export): each carries the run's series beside its own
    mine = _metrics(os.path.join(folder, 'metrics', 'gpu-a.prom'))
    assert _one(mine, 'xuanwu_run_result', run_id=report['run_id']) == STATUS_CODES[report['summary']['result']]
    assert _series(mine) == _series(_metrics(os.path.join(folder, 'xuanwu.prom')))


def test_a_hot_gpu_breaks_the_profiles_bound(tmp_path, monkeypatch):
    bindir = doubles(tmp_path, 'h200x2_dmon_busy-derived-hot-gpu0.txt', monkeypatch)
    rc, out, (_folder, report) = run_validate(tmp_path, _inventory(tmp_path, bindir, profile={'monitoring': {'gtemp_max_c': 85}}))
    hot = [f for f in report['hosts']['gpu-a']['findings'] if f['check'] == 'dmon.temperature']
    assert [(f['component'], f['expected']) for f in hot] == [('gpu0', 'gtemp <= 85 C')] * 2, out[-3000:]
    assert rc == 2


@pytest.mark.parametrize('required', [False, True])
def test_dmon_that_cannot_sample_is_a_finding_only_when_required(tmp_path, monkeypatch, required):
    bindir = doubles(tmp_path, None, monkeypatch)
    extra = {'xuanwu_dmon_required': True} if required else {}
    got, out, (_folder, report) = run_validate(tmp_path, _inventory(tmp_path, bindir, **extra))
    entry = report['hosts']['gpu-a']
    reason = 'nvidia-smi dmon -s pucvmet -d 1 exited 6 before the workload ended: No devices were found'
    assert [w['dmon'].get('not_measured') for w in entry['workloads']] == [reason] * 2
    missing = [f for f in entry['findings'] if f['check'] == 'dmon.not_measured']
    assert [(f['component'], f['severity']) for f in missing] == [('dmon', 'warn')] * (2 if required else 0), entry['findings']
    assert all(reason in f['message'] for f in missing)
    assert got == 0, out[-3000:]        # warnings (the default xuanwu_fail_on is fail)


def test_sampling_switched_off(tmp_path, monkeypatch):
    bindir = doubles(tmp_path, 'h200x2_dmon_busy.txt', monkeypatch)
    rc, out, (_folder, report) = run_validate(tmp_path, _inventory(tmp_path, bindir), '-e', 'xuanwu_dmon=false')
    assert rc == 0, out[-3000:]
    assert not (tmp_path / 'dmon-calls.log').exists()
    assert all('dmon' not in w for w in report['hosts']['gpu-a']['workloads'])


def test_a_bad_dmon_variable_is_refused_before_anything_runs(tmp_path, monkeypatch):
    bindir = doubles(tmp_path, 'h200x2_dmon_busy.txt', monkeypatch)
    rc, out = playbook('-i', _inventory(tmp_path, bindir), 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'r'),
                       '-e', 'xuanwu_dmon_interval=often')
    assert rc == 2 and "xuanwu_dmon_interval" in out and 'often' in out, out[-3000:]
    assert not (tmp_path / 'dmon-calls.log').exists() and not (tmp_path / 'r').exists()
