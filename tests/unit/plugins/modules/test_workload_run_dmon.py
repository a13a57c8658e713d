"""workload_run with dmon sampling, run as Ansible runs a module: nvidia-smi dmon runs beside the workload and
is stopped when it ends; its output comes back as ``dmon``. The nvidia-smi here is a stand-in script that prints a
real capture of the 2x H200 host (tests/fixtures/dmon/h200x2_dmon_busy.txt) a line at a time, as dmon does, and
then keeps running until it is stopped; without nvidia-smi, or when dmon fails at once, the result says why."""
import json
import os
import shutil
import stat

import pytest

from test_bundle_modules import DEMO, ROOT, run_module

BUSY = os.path.join(ROOT, 'tests', 'fixtures', 'dmon', 'h200x2_dmon_busy.txt')
EVENTS = os.path.join(ROOT, 'tests', 'fixtures', 'dmon', 'h200x1_clock-events_bf16-matmul.csv')


def _script(folder, body):
    folder.mkdir(exist_ok=True)
    path = folder / 'nvidia-smi'
    path.write_text('#!/bin/sh\n' + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def fake_path(tmp_path, monkeypatch):
    def make(body):
        folder = tmp_path / 'bin'
        _script(folder, body)
        monkeypatch.setenv('PATH', '%s:%s' % (folder, os.environ['PATH']))
        return folder
    return make


def _workload(tmp_path, seconds, dmon=None, argv=None):
    args = {'argv': argv or ['sleep', str(seconds)], 'timeout': 60}
    if dmon is not None:
        args['dmon'] = dict({'clock_events': False}, **dmon)      # the clock event sampling: its own tests below
    return run_module(tmp_path, 'workload_run', args)


def test_dmon_runs_beside_the_workload_and_is_stopped(tmp_path, fake_path):
    marker = tmp_path / 'args'
    # prints the capture, then waits to be stopped; records its arguments and that it got SIGTERM
    fake_path('echo "$@" > %s\ntrap \'echo stopped >> %s; exit 143\' TERM\ncat %s\nwhile :; do sleep 0.1; done\n'
              % (marker, marker, BUSY))
    result = _workload(tmp_path, 1, {'interval': 2, 'select': 'pucvmet'})
    assert result['exit_code'] == 0, result
    dmon = result['dmon']
    assert dmon['command'] == 'nvidia-smi dmon -s pucvmet -d 2' and dmon['interval_s'] == 2
    with open(BUSY) as handle:
        assert dmon['stdout'] == handle.read()
    assert 'not_measured' not in dmon and dmon['truncated_bytes'] == 0
    assert marker.read_text().split('\n')[:2] == ['dmon -s pucvmet -d 2', 'stopped']


def test_a_dmon_that_ignores_sigterm_is_killed(tmp_path, fake_path):
    # the workload ends only once the stand-in ignores SIGTERM and has printed (a marker file), so that on a loaded
    # machine the TERM cannot arrive before the trap is set
    ready = tmp_path / 'dmon-ready'
    fake_path("trap '' TERM\nhead -4 %s\n: > %s\nwhile :; do sleep 0.1; done\n" % (BUSY, ready))
    result = _workload(tmp_path, 0, {}, argv=['sh', '-c', 'while [ ! -e %s ]; do sleep 0.05; done' % ready])
    assert result['dmon']['exit_code'] == -9 and result['dmon']['stdout'].count('\n') == 4


def test_no_nvidia_smi_is_not_measured(tmp_path, monkeypatch):
    folder = tmp_path / 'bin'
    folder.mkdir()
    for tool in ('sleep', 'timeout'):
        os.symlink(shutil.which(tool), str(folder / tool))
    monkeypatch.setenv('PATH', str(folder))
    result = _workload(tmp_path, 0, {}, argv=[str(folder / 'sleep'), '0'])
    assert result['exit_code'] == 0
    assert result['dmon'] == {'command': 'nvidia-smi dmon -s pucvmet -d 1',
                              'not_measured': 'nvidia-smi is not installed on this node'}


def test_a_dmon_that_fails_at_once_is_not_measured(tmp_path, fake_path):
    fake_path('echo "No devices were found" >&2\nexit 6\n')
    result = _workload(tmp_path, 1, {})
    assert result['dmon']['exit_code'] == 6
    assert result['dmon']['not_measured'] == ('nvidia-smi dmon -s pucvmet -d 1 exited 6 before the workload ended: '
                                              'No devices were found')


def test_without_dmon_nothing_samples(tmp_path, fake_path):
    marker = tmp_path / 'ran'
    fake_path('touch %s\n' % marker)
    result = _workload(tmp_path, 0)
    assert 'dmon' not in result and not marker.exists()


@pytest.mark.parametrize('dmon, message', [
    ({'interval': 0}, 'interval must be at least 1 second'),
    ({'select': 'pu; rm -rf /'}, "select letters of nvidia-smi dmon -s"),
    ({'select': ''}, "select letters of nvidia-smi dmon -s"),
])
def test_bad_dmon_options_are_refused(tmp_path, dmon, message):
    result = _workload(tmp_path, 0, dmon)
    assert result['failed'] and message in result['msg']


def test_check_mode_samples_nothing(tmp_path, fake_path):
    marker = tmp_path / 'ran'
    fake_path('touch %s\n' % marker)
    result = run_module(tmp_path, 'workload_run', {'argv': ['sleep', '0'], 'dmon': {}, '_ansible_check_mode': True})
    assert result['skipped_reason'].startswith('check mode') and 'dmon' not in result and not marker.exists()


@pytest.fixture
def bundle(tmp_path):
    """The demo bundle with a recorded nccl-tests run, and (for some tests) the dmon output recorded beside it."""
    path = tmp_path / 'bundle'
    shutil.copytree(DEMO, str(path))
    (path / 'nccl.txt').write_text('# nccl-tests output\n')
    manifest = json.loads((path / 'manifest.json').read_text())
    manifest['probes'].append({'probe': 'nccl_tests:all_reduce', 'command': 'all_reduce_perf -g 2', 'rc': 0,
                               'seconds': 3.0, 'file': 'nccl.txt'})
    (path / 'manifest.json').write_text(json.dumps(manifest))
    return path


def _record_dmon(bundle, name='dmon:nccl_tests:all_reduce', command='nvidia-smi dmon -s pucvmet -d 5'):
    shutil.copy(BUSY, str(bundle / 'dmon.txt'))
    manifest = json.loads((bundle / 'manifest.json').read_text())
    manifest['probes'].append({'probe': name, 'command': command, 'rc': 0, 'seconds': 3.0, 'file': 'dmon.txt'})
    (bundle / 'manifest.json').write_text(json.dumps(manifest))


def _replay(tmp_path, bundle, dmon):
    args = {'replay_dir': str(bundle), 'replay_key': 'nccl_tests:all_reduce'}
    if dmon is not None:
        args['dmon'] = dict({'clock_events': False}, **dmon)
    return run_module(tmp_path, 'workload_run', args)


def test_replay_reads_the_recorded_dmon(tmp_path, bundle):
    _record_dmon(bundle)
    dmon = _replay(tmp_path, bundle, {})['dmon']
    with open(BUSY) as handle:
        assert dmon == {'command': 'nvidia-smi dmon -s pucvmet -d 5', 'stdout': handle.read(), 'exit_code': 0,
                        'truncated_bytes': 0, 'interval_s': 5}


def test_replay_with_another_key(tmp_path, bundle):
    _record_dmon(bundle, name='dmon:elsewhere', command='nvidia-smi dmon')
    assert _replay(tmp_path, bundle, {'replay_key': 'dmon:elsewhere'})['dmon']['interval_s'] == 1


def test_replay_without_recorded_dmon_is_not_measured(tmp_path, bundle):
    result = _replay(tmp_path, bundle, {})
    assert result['dmon'] == {'command': 'dmon:nccl_tests:all_reduce',
                              'not_measured': 'the capture bundle has no dmon:nccl_tests:all_reduce'}
    assert 'dmon' not in _replay(tmp_path, bundle, None)


# --- the clock event reasons, sampled beside dmon (dmon.clock_events, on by default) ----------------------------------

_BOTH = ('case "$1" in\n'
         '  dmon) cat %s; while :; do sleep 0.1; done;;\n'
         '  *-lms*|*) case "$*" in *-lms*) echo "$@" > %s; cat %s; while :; do sleep 0.1; done;; esac;\n'
         '     %s;;\n'
         'esac\n')


def test_clock_events_are_sampled_beside_dmon(tmp_path, fake_path):
    marker = tmp_path / 'args'
    fake_path(_BOTH % (BUSY, marker, EVENTS, 'echo 0x0000000000000004'))
    result = run_module(tmp_path, 'workload_run', {'argv': ['sleep', '1'], 'timeout': 60, 'dmon': {}})
    events = result['dmon']['clock_events']
    assert events['command'] == ('nvidia-smi --query-gpu=index,clocks_event_reasons.active,clocks.sm,power.draw,power.limit,'
                                 'temperature.gpu --format=csv,noheader,nounits -lms 1000')
    assert events['fields'][1] == 'clocks_event_reasons.active' and 'not_measured' not in events
    with open(EVENTS) as handle:
        assert events['stdout'] == handle.read()
    assert result['dmon']['stdout'].startswith('# gpu')


def test_an_older_driver_gets_the_older_field_name(tmp_path, fake_path):
    marker = tmp_path / 'args'
    fake_path(_BOTH % (BUSY, marker, EVENTS, 'echo \'Field "clocks_event_reasons.active" is not a valid field to query.\'; exit 2'))
    events = run_module(tmp_path, 'workload_run', {'argv': ['sleep', '1'], 'timeout': 60, 'dmon': {}})['dmon']['clock_events']
    assert events['fields'][1] == 'clocks_throttle_reasons.active'
    assert marker.read_text().startswith('--query-gpu=index,clocks_throttle_reasons.active,')


def test_replay_reads_the_recorded_clock_events(tmp_path, bundle):
    _record_dmon(bundle)
    shutil.copy(EVENTS, str(bundle / 'events.csv'))
    manifest = json.loads((bundle / 'manifest.json').read_text())
    command = 'nvidia-smi --query-gpu=index,clocks_throttle_reasons.active,clocks.sm,power.draw,power.limit,temperature.gpu -lms 1000'
    manifest['probes'].append({'probe': 'clock_events:nccl_tests:all_reduce', 'command': command, 'rc': 0, 'seconds': 3.0,
                               'file': 'events.csv'})
    (bundle / 'manifest.json').write_text(json.dumps(manifest))
    result = run_module(tmp_path, 'workload_run', {'replay_dir': str(bundle), 'replay_key': 'nccl_tests:all_reduce', 'dmon': {}})
    events = result['dmon']['clock_events']
    assert events['command'] == command and events['fields'][1] == 'clocks_throttle_reasons.active'
    with open(EVENTS) as handle:
        assert events['stdout'] == handle.read()


def test_replay_without_recorded_clock_events_is_not_measured(tmp_path, bundle):
    _record_dmon(bundle)
    result = run_module(tmp_path, 'workload_run', {'replay_dir': str(bundle), 'replay_key': 'nccl_tests:all_reduce', 'dmon': {}})
    assert result['dmon']['clock_events'] == {'command': 'clock_events:nccl_tests:all_reduce',
                                              'not_measured': 'the capture bundle has no clock_events:nccl_tests:all_reduce'}
