"""Integration: the collectives and workload stages of validate.yml, driven through ansible-playbook with
test doubles for the GPU tools (named as such: they replay real nccl-tests captures) and, where the
controller's Python has torch, the real PyTorch workloads on the CPU (gloo)."""
import html
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from nccl_text import scaled
from test_validate_playbook import ROOT, playbook, the_report

HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x4-nvlink')
DERIVED = os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'nccl')
COLLECTIVES = ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall', 'sendrecv']

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def h200_profile(tmp_path, **extra):
    """The h200x4-nvlink curves on a profile without hardware expectations (the test host has no GPU)."""
    with open(os.path.join(ROOT, 'profiles', 'h200x4-nvlink.yml')) as handle:
        h200 = yaml.safe_load(handle)
    data = {'schema_version': 1, 'name': 'curves-only', 'collectives': h200['collectives'],
            'collectives_multinode': {'all_reduce': {'curve': [{'min_bytes': 1 << 30, 'busbw_gbps_min': 300.0}]}}}
    data.update(extra)
    path = tmp_path / 'curves-only.yml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


def write_test_double(path, body):
    """Write an executable test double."""
    path.write_text('#!/bin/sh\n# test double: stands in for the real tool in tests\n' + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)


def fake_nccl_tests(bindir, log, outputs):
    bindir.mkdir(exist_ok=True)
    for coll in COLLECTIVES:
        src = outputs.get(coll) or os.path.join(HW, 'nccl-tests_%s_perf_-b8_-e8G_-f2_-g4.txt' % coll)
        if src == 'hang':
            body = 'echo "%s $* NCCL_DEBUG=$NCCL_DEBUG" >> %s\nsleep 60\n' % (coll, log)
        else:
            body = 'echo "%s $* NCCL_DEBUG=$NCCL_DEBUG" >> %s\ncat %s\n' % (coll, log, src)
        write_test_double(bindir / ('%s_perf' % coll), body)


def inventory(tmp_path, hosts, **group_vars):
    base = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    base.update(group_vars)
    path = tmp_path / 'inventory.yml'
    path.write_text(yaml.safe_dump({'all': {'vars': base, 'hosts': hosts}}))
    return str(path)


def run_validate(tmp_path, inv, *extra):
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports, *extra)
    return rc, out, the_report(reports)


@pytest.mark.both_controllers
def test_collectives_on_real_captures_pass_and_every_run_is_recorded(tmp_path):
    log = tmp_path / 'calls.log'
    fake_nccl_tests(tmp_path / 'bin', log, {})
    inv = inventory(tmp_path, {'gpu-a': {}}, xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_collectives=True,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_collectives_gpus=4,
                    xuanwu_nccl_env={'NCCL_IB_HCA': 'mlx5'})
    rc, out, (_folder, report) = run_validate(tmp_path, inv)
    assert rc == 0, out[-3000:]
    entry = report['hosts']['gpu-a']
    assert entry['status'] == 'pass', entry['findings']
    assert [w['component'] for w in entry['workloads']] == ['%s_perf' % c for c in COLLECTIVES]
    assert entry['workloads'][0]['busbw_gbps'][str(1 << 30)] == 354.22  # the capture's out-of-place figure at 1 GiB
    calls = log.read_text().splitlines()
    assert len(calls) == 5 and calls[0] == 'all_reduce -b 8 -e 8G -f 2 -g 4 -N 3 NCCL_DEBUG=', calls


def test_a_slow_curve_fails_and_is_rerun_with_nccl_debug(tmp_path):
    log = tmp_path / 'calls.log'
    fake_nccl_tests(tmp_path / 'bin', log, {'all_reduce': os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_slow-30pct.txt')})
    inv = inventory(tmp_path, {'gpu-a': {}}, xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_collectives=True,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_collectives_gpus=4, xuanwu_collectives=['all_reduce'])
    rc, out, (folder, report) = run_validate(tmp_path, inv)
    assert rc == 2, out[-3000:]
    entry = report['hosts']['gpu-a']
    low = [f for f in entry['findings'] if f['check'] == 'collectives.busbw_low']
    assert {f['component'] for f in low} == {'all_reduce_perf'} and len(low) == 3
    assert all(f['severity'] == 'fail' and f['measured'] < f['expected'] for f in low)
    assert log.read_text().splitlines()[-1].endswith('NCCL_DEBUG=INFO')
    assert entry['workloads'][0]['debug_log_tail']
    assert 'NCCL_DEBUG=INFO re-run' in open(os.path.join(folder, 'report.md')).read()
    # the gate's message: one line for the check with its three sizes, the remediation once
    assert '[collectives.busbw_low] 3 findings: all_reduce_perf: measured' in out, out[-3000:]
    assert out.count(low[0]['remediation'][:60]) <= 2      # the gate's line (and the run's own summary), not per size


def test_a_hung_collective_is_stopped_at_the_bound_and_named(tmp_path):
    fake_nccl_tests(tmp_path / 'bin', tmp_path / 'calls.log', {'all_reduce': 'hang'})
    inv = inventory(tmp_path, {'gpu-a': {}}, xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_collectives=True,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_collectives_gpus=4, xuanwu_collectives=['all_reduce'],
                    xuanwu_collectives_timeout=3, xuanwu_collectives_debug_rerun=False)
    rc, out, (_folder, report) = run_validate(tmp_path, inv)
    assert rc == 2
    checks = {(f['check'], f['component']) for f in report['hosts']['gpu-a']['findings'] if f['severity'] == 'fail'}
    assert ('collectives.run_failed', 'all_reduce_perf') in checks, checks
    assert report['hosts']['gpu-a']['workloads'][0]['timed_out'] is True


def test_recorded_collectives_replay_through_the_same_checks(tmp_path):
    bundle = tmp_path / 'bundle'
    shutil.copytree(os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01'), str(bundle))
    manifest = json.loads((bundle / 'manifest.json').read_text())
    for coll, src in (('all_reduce', os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_wrong-results.txt')),
                      ('all_gather', os.path.join(HW, 'nccl-tests_all_gather_perf_-b8_-e8G_-f2_-g4.txt'))):
        shutil.copy(src, str(bundle / ('nccl_tests__%s.txt' % coll)))
        manifest['probes'].append({'probe': 'nccl_tests:%s' % coll, 'command': '%s_perf -b 8 -e 8G -f 2 -g 4' % coll,
                                   'rc': 0, 'file': 'nccl_tests__%s.txt' % coll})
    (bundle / 'manifest.json').write_text(json.dumps(manifest))
    inv = inventory(tmp_path, {'node': {'xuanwu_replay_dir': str(bundle)}}, xuanwu_profile='h200x4-nvlink',
                    xuanwu_validate_collectives=True, xuanwu_collectives=['all_reduce', 'all_gather', 'sendrecv'])
    rc, out, (_folder, report) = run_validate(tmp_path, inv, '-e', 'ansible_python_interpreter=%s' % sys.executable)
    entry = report['hosts']['node']
    fails = sorted({f['check'] for f in entry['findings'] if f['severity'] == 'fail'})
    assert fails == ['collectives.out_of_bounds', 'collectives.wrong_results', 'workload.not_measured'], entry['findings']
    # sendrecv is not in the bundle: requested and not measured is a failure, not a pass
    missing = [f for f in entry['findings'] if f['check'] == 'workload.not_measured']
    assert [(f['component'], f['severity']) for f in missing] == [('sendrecv_perf', 'fail')]
    assert 'nccl_tests:sendrecv is not in the capture bundle' in missing[0]['message']
    assert [w['component'] for w in entry['workloads']] == ['all_reduce_perf', 'all_gather_perf', 'sendrecv_perf']
    assert entry['workloads'][2]['not_measured']
    assert rc == 2


def test_multinode_launch_line_hostfile_and_env_are_kept(tmp_path):
    """2 nodes x 8 slots is a 16-rank job: its output passes. (A 4-rank single-node output of that job fails both
    nodes on collectives.rank_count: tests/unit/test_workloads.py, the ranks and the nodes; a multinode stage that fails
    exits 2 through the playbook: test_requested_stages_without_nccl_tests_binaries_fail_and_say_why[multinode].)"""
    fake_nccl_tests(tmp_path / 'bin', tmp_path / 'calls.log', {})
    mpirun = tmp_path / 'bin' / 'mpirun'
    capture = os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_16-ranks.txt')
    write_test_double(mpirun, 'echo "$@" > %s\ncat %s\n' % (tmp_path / 'mpirun.args', capture))
    inv = inventory(tmp_path, {'gpu-a': {'ansible_host': '10.0.0.1'}, 'gpu-b': {'ansible_host': '10.0.0.2'}},
                    xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_multinode=True, xuanwu_mesh_check=False,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_mpirun=str(mpirun), xuanwu_multinode_slots=8,
                    xuanwu_nccl_env={'NCCL_IB_HCA': 'mlx5_0,mlx5_1', 'NCCL_SOCKET_IFNAME': 'eth0'})
    rc, out, (folder, report) = run_validate(tmp_path, inv, '-e', 'ansible_connection=local')
    for host in ('gpu-a', 'gpu-b'):
        fails = [f for f in report['hosts'][host]['findings'] if f['severity'] == 'fail']
        assert fails == [], fails
    assert rc == 0, out[-3000:]
    args = (tmp_path / 'mpirun.args').read_text().split()
    assert args[:7] == ['--allow-run-as-root', '--hostfile', args[2], '-np', '16', '--bind-to', 'none']
    assert os.path.basename(args[2]) == 'hostfile' and not os.path.exists(args[2])  # a private folder, removed at the end
    assert '-x' in args and 'NCCL_IB_HCA' in args and args[-1] == '1' and args[-9].endswith('/all_reduce_perf')
    kept = os.path.join(folder, 'multinode')
    hostfile = open(os.path.join(kept, 'gpu-a+gpu-b-all_reduce-hostfile')).read()
    assert '10.0.0.1 slots=8' in hostfile and '10.0.0.2 slots=8' in hostfile
    assert 'NCCL_IB_HCA=mlx5_0,mlx5_1' in open(os.path.join(kept, 'gpu-a+gpu-b-all_reduce-env.txt')).read()
    assert 'all_reduce_perf' in open(os.path.join(kept, 'gpu-a+gpu-b-all_reduce-launch.txt')).read()
    for host in ('gpu-a', 'gpu-b'):
        assert report['hosts'][host]['workloads'][0]['component'] == 'multinode all_reduce_perf (gpu-a, gpu-b)'


def torch_python():
    for candidate in (os.path.join(ROOT, '.venv', 'bin', 'python'), sys.executable):
        if os.path.exists(candidate) and subprocess.run([candidate, '-c', 'import torch'], stderr=subprocess.DEVNULL, check=False).returncode == 0:
            return candidate
    return None


@pytest.mark.skipif(torch_python() is None, reason='no Python with torch here')
def test_torch_workloads_on_cpu_pass_and_report_their_figures(tmp_path):
    profile = h200_profile(tmp_path, workloads={'fault_isolation': {'bound_s': 60}, 'soak': {'duration_s': 6, 'sample_s': 2}})
    parent = tmp_path / 'scratch'
    parent.mkdir(mode=0o1777)
    parent.chmod(0o1777)
    # The CPU is far below the H200 curve: judge bandwidth on a CPU-sized curve instead.
    data = yaml.safe_load(open(profile))
    data['collectives'] = {'all_reduce': {'curve': [{'min_bytes': 65536, 'busbw_gbps_min': 0.001}]}}
    open(profile, 'w').write(yaml.safe_dump(data))
    inv = inventory(tmp_path, {'cpu-node': {}}, xuanwu_profile=profile, xuanwu_validate_workloads=True,
                    xuanwu_torch_python=torch_python(), xuanwu_torch_nproc=2, xuanwu_torch_allreduce_max_bytes='1M',
                    xuanwu_torch_workloads=['allreduce_bench', 'ddp_smoke', 'fault_isolation', 'soak'],
                    xuanwu_workload_tmp_parent=str(parent), xuanwu_torch_env={'GLOO_SOCKET_IFNAME': 'lo'})
    rc, out, (_folder, report) = run_validate(tmp_path, inv)
    entry = report['hosts']['cpu-node']
    assert rc == 0, (entry['findings'], out[-3000:])
    kinds = [w['kind'] for w in entry['workloads']]
    assert kinds == ['torch_allreduce', 'ddp_smoke', 'fault_isolation', 'soak']
    # The scripts ran from one fresh private directory in the parent, removed at the end.
    dirs = {re.search(r' (\S+)/\w+\.py ', w['command']).group(1) for w in entry['workloads']}
    assert len(dirs) == 1 and re.match(re.escape(str(parent)) + r'/xuanwu-workloads\.\w{8}$', dirs.pop()), entry['workloads']
    assert os.listdir(str(parent)) == []
    ddp = entry['workloads'][1]['result']
    assert ddp['last_loss'] < ddp['first_loss'] and ddp['step_time_ms_median'] > 0
    fault = entry['workloads'][2]['result']
    assert fault['ended_with_error'] and not fault['hung'] and fault['seconds'] < 60


@pytest.mark.skipif(torch_python() is None, reason='no Python with torch here')
def test_elastic_restart_on_cpu_recovers_and_reports_its_figures(tmp_path):
    profile = h200_profile(tmp_path, workloads={'elastic_restart': {'steps': 6, 'checkpoint_every': 2, 'max_restarts': 2}})
    parent = tmp_path / 'scratch'
    parent.mkdir(mode=0o1777)
    parent.chmod(0o1777)
    inv = inventory(tmp_path, {'cpu-node': {}}, xuanwu_profile=profile, xuanwu_validate_workloads=True,
                    xuanwu_torch_python=torch_python(), xuanwu_torch_nproc=2, xuanwu_torch_workloads=['elastic_restart'],
                    xuanwu_workload_tmp_parent=str(parent), xuanwu_torch_env={'GLOO_SOCKET_IFNAME': 'lo', 'OMP_NUM_THREADS': '1'})
    rc, out, (folder, report) = run_validate(tmp_path, inv)
    entry = report['hosts']['cpu-node']
    assert rc == 0, (entry['findings'], out[-3000:])
    (run,) = entry['workloads']
    result = run['result']
    assert run['kind'] == 'elastic_restart' and result['ok'] and result['restarts'] >= 1
    assert result['resumed_from'] == 2 and result['steps_redone'] == 1 and result['recover_s'] < 60
    # the checkpoint directory was made in the run's private directory, and both are gone
    assert result['checkpoint_dir_removed'] and os.listdir(str(parent)) == []
    with open(os.path.join(folder, 'report.md')) as handle:
        assert 'resumed from step 2 (checkpoint every 2), 1 step(s) redone' in handle.read()


@pytest.mark.parametrize('stage', ['collectives', 'multinode'])
def test_requested_stages_without_nccl_tests_binaries_fail_and_say_why(tmp_path, stage):
    """A stage switched on with no binaries known: a fail finding naming it, not a pass with 0 findings.
    The switch is given as JSON on the command line (a bool; the string form is the inventory validator's business)."""
    inv = inventory(tmp_path, {'gpu-a': {}}, xuanwu_profile=h200_profile(tmp_path))
    rc, out, (_folder, report) = run_validate(tmp_path, inv, '-e', '{"xuanwu_validate_%s": true}' % stage)
    entry = report['hosts']['gpu-a']
    found = [(f['check'], f['component'], f['severity']) for f in entry['findings']]
    assert found == [('workload.not_measured', 'collectives' + ('_multinode' if stage == 'multinode' else ''), 'fail')], found
    for f in entry['findings']:
        assert 'requested but not measured: no nccl-tests binaries: set nccl_tests_build_archive' in f['message']
        assert 'xuanwu_nccl_tests_bin_dir' in f['message'] and f['host'] == 'gpu-a'
    assert entry['status'] == 'fail' and rc == 2, out[-3000:]


def test_a_collective_without_a_curve_is_not_judged_in_every_report_format(tmp_path):
    fake_nccl_tests(tmp_path / 'bin', tmp_path / 'calls.log', {})
    profile = h200_profile(tmp_path)
    data = yaml.safe_load(open(profile))
    del data['collectives']['sendrecv']
    open(profile, 'w').write(yaml.safe_dump(data))
    inv = inventory(tmp_path, {'gpu-a': {}}, xuanwu_profile=profile, xuanwu_validate_collectives=True,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_collectives_gpus=4,
                    xuanwu_collectives=['all_reduce', 'sendrecv'])
    rc, out, (folder, report) = run_validate(tmp_path, inv)
    assert rc == 0, out[-3000:]
    entry = report['hosts']['gpu-a']
    why = 'no sendrecv curve in profile curves-only: bus bandwidth measured, not compared'
    assert entry['not_judged'] == {'sendrecv_perf': why}, entry
    assert [w.get('not_judged') for w in entry['workloads']] == [None, why]
    suite = [s for s in ET.parse(os.path.join(folder, 'junit.xml')).getroot().iter('testsuite') if s.get('name') == 'gpu-a'][0]
    skipped = [(c.get('name'), c.find('skipped').get('message')) for c in suite.iter('testcase') if c.find('skipped') is not None]
    # besides the checks that do not apply to this host (the stages that did not run, the AMD checks), one skipped
    # test case: the measurement that was not judged; no collectives check, and nothing not measured
    assert [s for s in skipped if not s[1].startswith('not applicable: ')] == [('not judged: sendrecv_perf', 'not judged: ' + why)]
    assert not [name for name, _message in skipped if name.startswith('collectives.')]
    with open(os.path.join(folder, 'report.md')) as handle:
        md = handle.read()
    assert '**Not judged:** sendrecv_perf — ' + why in md and 'NOT JUDGED: ' + why in md
    assert 'every check passed' not in md
    with open(os.path.join(folder, 'report.html')) as handle:
        text = html.unescape(re.sub(r'<[^>]+>', '', handle.read()))   # the text a reader sees
    assert 'Not judged: sendrecv_perf — ' + why in text and 'every check passed' not in text


@pytest.mark.parametrize('run, factor', [('run1', 1.0), ('run1', 0.95), ('run10', 1.0), ('run10', 0.95)])
def test_a_real_2x_h200_validate_run_passes_and_fails_5_percent_slower_from_1_GiB(tmp_path, run, factor):
    """The capture bundle of a 2x H200 host with the nccl-tests outputs of one of the ten real validate.yml runs
    (tests/fixtures/hardware/h200x2-nvlink-gate/), replayed through validate.yml and the h200x2-nvlink profile."""
    bundle = tmp_path / 'bundle'
    shutil.copytree(os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x2-nvlink-bundle'), str(bundle))
    manifest = json.loads((bundle / 'manifest.json').read_text())
    for coll in COLLECTIVES:
        with open(os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x2-nvlink-gate', run, '%s_perf.txt' % coll)) as handle:
            text = handle.read()
        (bundle / ('nccl_tests__%s.txt' % coll)).write_text(text if factor == 1.0 else scaled(text, factor, min_bytes=1 << 30))
        manifest['probes'].append({'probe': 'nccl_tests:%s' % coll, 'command': '%s_perf -b 8 -e 8G -f 2 -g 2 -N 3' % coll,
                                   'rc': 0, 'status': 'ok', 'file': 'nccl_tests__%s.txt' % coll})
    (bundle / 'manifest.json').write_text(json.dumps(manifest))
    # that host has no chronyd (its clock is the hypervisor's): host.time is switched off as on the real runs
    inv = inventory(tmp_path, {'gpu-host': {'xuanwu_replay_dir': str(bundle)}}, xuanwu_profile='h200x2-nvlink',
                    xuanwu_profile_overrides={'host': {'time': None}}, xuanwu_validate_collectives=True)
    rc, out, (_folder, report) = run_validate(tmp_path, inv)
    entry = report['hosts']['gpu-host']
    fails = [f for f in entry['findings'] if f['severity'] == 'fail']
    assert [w['component'] for w in entry['workloads']] == ['%s_perf' % c for c in COLLECTIVES]
    assert entry['not_judged'] == {}
    if factor == 1.0:
        assert fails == [] and rc == 0, (fails, out[-3000:])
        return
    assert rc == 2 and {f['check'] for f in fails} == {'collectives.busbw_low'}, fails
    assert {f['component'] for f in fails} == {'%s_perf' % c for c in COLLECTIVES}   # every collective is caught
    for f in fails:
        assert f['host'] == 'gpu-host' and f['measured'] < f['expected'] and 'GiB' in f['message']


@pytest.mark.parametrize('workloads, multinode, component, reason', [
    (['fault_isolation'], True, 'multinode fault_isolation', 'with xuanwu_torch_multinode it is not run'),
    (['elastic_restart'], True, 'multinode elastic_restart', 'keeps its checkpoint on that node; with xuanwu_torch_multinode'),
    ([], False, 'torch_workloads', 'xuanwu_torch_workloads lists no workload'),
    (['ddp_smoke'], False, 'ddp_smoke', 'torch:ddp_smoke is not in the capture bundle'),
])
def test_requested_torch_workloads_that_measure_nothing_fail(tmp_path, workloads, multinode, component, reason):
    bundle = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')
    inv = inventory(tmp_path, {'node': {'xuanwu_replay_dir': bundle}}, xuanwu_profile='h200x4-nvlink',
                    xuanwu_validate_workloads=True, xuanwu_torch_workloads=workloads, xuanwu_torch_multinode=multinode)
    rc, out, (_folder, report) = run_validate(tmp_path, inv, '-e', 'ansible_python_interpreter=%s' % sys.executable)
    entry = report['hosts']['node']
    found = [(f['check'], f['component'], f['severity']) for f in entry['findings'] if f['severity'] == 'fail']
    assert found == [('workload.not_measured', component, 'fail')], (found, out[-2000:])
    assert reason in entry['findings'][0]['message'] and rc == 2


def plant_symlink(path, tmp_path):
    (tmp_path / 'elsewhere').mkdir()
    os.symlink(str(tmp_path / 'elsewhere'), path)


def plant_foreign(path, _tmp_path):
    os.mkdir(path, 0o755)
    os.chown(path, 65534, 65534)   # nobody


@pytest.mark.skipif(os.geteuid() != 0, reason='planting a directory of another user needs root')
@pytest.mark.parametrize('plant, reason', [(plant_symlink, 'is a symlink (to '), (plant_foreign, 'is not owned by the running user')])
def test_a_planted_fixed_workload_directory_is_refused_before_anything_runs(tmp_path, plant, reason):
    """The old fixed xuanwu_workload_dir, made beforehand by another user (or pointing elsewhere), with a script of
    theirs in it: refused with a finding naming path, owner and mode; nothing is copied there and nothing runs."""
    planted = str(tmp_path / 'xuanwu-workloads')
    plant(planted, tmp_path)
    marker = tmp_path / 'ran'
    with open(os.path.join(planted, 'allreduce_bench.py'), 'w') as handle:
        handle.write('open(%r, "w").close()\n' % str(marker))
    inv = inventory(tmp_path, {'cpu-node': {}}, xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_workloads=True,
                    xuanwu_torch_python=sys.executable, xuanwu_torch_workloads=['allreduce_bench'], xuanwu_workload_dir=planted)
    rc, out, (_folder, report) = run_validate(tmp_path, inv)
    entry = report['hosts']['cpu-node']
    errors = [f for f in entry['findings'] if f['severity'] == 'fail']
    assert len(errors) == 1 and rc == 2, (entry['findings'], out[-3000:])
    assert planted + ' (owner ' in errors[0]['message'] and reason in errors[0]['message'], errors
    assert [w['kind'] for w in entry['workloads']] == ['task_error'] and not marker.exists()
    assert sorted(os.listdir(planted)) == ['allreduce_bench.py']


def test_on_one_gpu_only_what_can_be_judged_runs(tmp_path):
    """One GPU: the first collective runs once, small, as the toolchain smoke (said so in the report); the other four
    and the torch all-reduce benchmark and fault isolation are listed as not applicable, with why, and never run."""
    log = tmp_path / 'calls.log'
    # a real one-GPU run (1x H100, tests/fixtures/hardware/h100x1-validate/run2/)
    real = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h100x1-validate', 'run2', 'nccl-tests_%s_perf.txt')
    fake_nccl_tests(tmp_path / 'bin', log, dict((c, real % c) for c in COLLECTIVES))
    inv = inventory(tmp_path, {'gpu-a': {}}, xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_collectives=True,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_collectives_gpus=1,
                    xuanwu_validate_workloads=True, xuanwu_torch_python=sys.executable, xuanwu_torch_nproc=1,
                    xuanwu_torch_workloads=['allreduce_bench', 'fault_isolation'])
    rc, out, (folder, report) = run_validate(tmp_path, inv)
    entry = report['hosts']['gpu-a']
    calls = log.read_text().splitlines()
    assert calls == ['all_reduce -b 8 -e 8M -f 2 -g 1 -N 1 NCCL_DEBUG='], calls      # one bounded run, nothing else
    runs = dict((w['component'], w) for w in entry['workloads'])
    assert sorted(runs) == sorted(['%s_perf' % c for c in COLLECTIVES] + ['allreduce_bench', 'fault_isolation'])
    smoke = runs['all_reduce_perf']
    assert smoke['toolchain_smoke'] and smoke['not_applicable'].startswith('toolchain smoke only'), smoke
    others = ['%s_perf' % c for c in COLLECTIVES if c != 'all_reduce']
    for name in others + ['allreduce_bench', 'fault_isolation']:
        assert runs[name]['not_run'] and runs[name]['not_applicable'].startswith('not applicable: '), runs[name]
        assert runs[name]['not_applicable'].endswith('not run') or 'not run (' in runs[name]['not_applicable']
    assert sorted(entry['not_applicable']) == sorted(runs), entry['not_applicable']
    assert not [f for f in entry['findings'] if f['check'].startswith(('collectives.', 'workload.'))], entry['findings']
    assert rc in (0, 2), out[-3000:]
