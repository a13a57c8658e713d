"""Integration: a small rollout (tests/integration/playbooks/run_record.yml) calls xuanwu.cluster.run_record with
start, batch and finish on replayed demo nodes; the record's files are checked, secrets never reach them, a run
again with the same run id resumes (finished hosts skipped), and check mode writes its record beside the real one."""
import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

from test_validate_playbook import ROOT, playbook

PLAYBOOK = 'tests/integration/playbooks/run_record.yml'
BUNDLES = os.path.join(ROOT, 'inventories', 'demo-bundles')
SECRETS = ('hunter2-pw', 'hf_tok3n_abc', 'sesame-42')


def write_inventory(tmp_path):
    hosts = dict(('gpu-node0%d' % i, {'xuanwu_replay_dir': os.path.join(BUNDLES, 'gpu-node0%d' % i)}) for i in (1, 2, 3))
    hosts['gpu-node02']['xuanwu_multinode_slots'] = 8
    hosts['gpu-node03']['ansible_host'] = '10.0.0.3'
    data = {'all': {'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'xuanwu_profile': 'h200x4-nvlink',
        'ansible_password': SECRETS[0],
        'xuanwu_nccl_env': {'NCCL_SOCKET_IFNAME': 'eth0', 'HF_TOKEN': SECRETS[1], 'SITE_KEY': SECRETS[2]},
        'xuanwu_redact_env_keys': ['SITE_KEY']}, 'hosts': hosts}}
    path = tmp_path / 'inventory.yml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


def rollout(tmp_path, *extra):
    os.environ['ANSIBLE_LOG_PATH'] = str(tmp_path / 'ansible.log')
    try:
        return playbook('-i', write_inventory(tmp_path), PLAYBOOK, '-e', 'xuanwu_run_id=r1', '-e', 'xuanwu_runs_dir=%s' % (tmp_path / 'runs'),
                        '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'reports'), *extra)
    finally:
        del os.environ['ANSIBLE_LOG_PATH']


def load(path):
    with open(path) as handle:
        return json.load(handle) if path.endswith('.json') else yaml.safe_load(handle)


def test_the_record_of_a_rollout_without_secrets(tmp_path):
    rc, out = rollout(tmp_path)
    assert rc == 0, out[-3000:]
    run = str(tmp_path / 'runs' / 'r1')
    names = sorted(os.path.relpath(os.path.join(d, f), run) for d, _dirs, files in os.walk(run) for f in files)
    kit = ['launch-kit/%s' % name for name in ('env.sh', 'hostfile', 'kit.json', 'launch-mpirun.sh', 'launch-torchrun.sh', 'versions.json')]
    assert names == ['ansible.log', 'hostfile', 'inventory.yml', 'launch-kit.json'] + kit + [
        'meta.json', 'nccl-env.txt', 'profiles/h200x4-nvlink.yml',
        'reports/junit.xml', 'reports/report.html', 'reports/report.json', 'reports/report.md', 'reports/xuanwu.prom',
        'state.json', 'versions.json']
    for folder, dirs, files in os.walk(run):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o750, folder
        for name in files:
            path = os.path.join(folder, name)
            # the launch kit is made to be copied and run: its files 0644, its scripts 0755 (in the record's 0750 folder)
            mode = (0o755 if name.endswith('.sh') and name != 'env.sh' else 0o644) if os.path.relpath(path, run) in kit else 0o640
            assert stat.S_IMODE(os.stat(path).st_mode) == mode, path
            with open(path, errors='replace') as handle:
                text = handle.read()
            for secret in SECRETS:
                assert secret not in text, (path, secret)
    inventory = load(os.path.join(run, 'inventory.yml'))['hosts']
    assert sorted(inventory) == ['gpu-node01', 'gpu-node02', 'gpu-node03']
    assert inventory['gpu-node01']['ansible_password'] == '***'
    assert inventory['gpu-node01']['xuanwu_nccl_env'] == {'NCCL_SOCKET_IFNAME': 'eth0', 'HF_TOKEN': '***', 'SITE_KEY': '***'}
    assert 'groups' not in inventory['gpu-node01'] and 'hostvars' not in inventory['gpu-node01']
    assert open(os.path.join(run, 'hostfile')).read() == 'gpu-node01 slots=4\ngpu-node02 slots=8\n10.0.0.3 slots=4\n'
    assert open(os.path.join(run, 'nccl-env.txt')).read().splitlines() == [
        '# hosts: gpu-node01, gpu-node02, gpu-node03', 'HF_TOKEN=***', 'NCCL_SOCKET_IFNAME=eth0', 'SITE_KEY=***']
    assert load(os.path.join(run, 'profiles', 'h200x4-nvlink.yml'))['name'] == 'h200x4-nvlink'
    meta = load(os.path.join(run, 'meta.json'))
    assert meta['run_id'] == 'r1' and meta['playbook'] == [PLAYBOOK] and meta['ansible_version']
    assert PLAYBOOK in meta['command_line'] and meta['check_mode'] is False
    state = load(os.path.join(run, 'state.json'))
    assert [(b['index'], b['hosts']) for b in state['batches']] == [(0, ['gpu-node01', 'gpu-node02']), (1, ['gpu-node03'])]
    outcomes = dict((h, e) for b in state['batches'] for h, e in b['outcomes'].items())
    report = load(os.path.join(run, 'reports', 'report.json'))
    # each host's outcome is its verdict in the report (gpu-node02 is a demo node with a fault)
    assert dict((h, e['outcome']) for h, e in outcomes.items()) == dict(
        (h, 'passed' if report['hosts'][h]['status'] in ('pass', 'warn') else 'failed') for h in report['hosts'])
    assert outcomes['gpu-node02']['outcome'] == 'failed' and outcomes['gpu-node02']['failed_checks']
    assert state['outcome'] == 'failed' and state['finished'] and state['stopped_at_batch'] is None
    versions = load(os.path.join(run, 'versions.json'))
    assert sorted(versions) == ['gpu-node01', 'gpu-node02', 'gpu-node03']
    facts = report['hosts']['gpu-node01']['facts_summary']
    assert versions['gpu-node01']['gpu_driver'] == facts['driver_version'] and versions['gpu-node01']['kernel'] == facts['kernel']
    assert versions['gpu-node01']['ofed'] is None and versions['gpu-node01']['venv_locks'] is None
    assert 'Record the batch' in open(os.path.join(run, 'ansible.log')).read()
    # the launch kit of the hosts that passed, the secrets of the environment left out and named
    note = load(os.path.join(run, 'launch-kit.json'))
    assert (note['written'], note['partial'], note['hosts'], note['source']) == (True, True, ['gpu-node01', 'gpu-node03'], 'site')
    assert list(note['left_out_hosts']) == ['gpu-node02'] and note['left_out_hosts']['gpu-node02'].startswith('failed: ')
    assert open(os.path.join(run, 'launch-kit', 'hostfile')).read().splitlines()[1:] == ['gpu-node01 slots=4', '10.0.0.3 slots=4']
    assert [line for line in open(os.path.join(run, 'launch-kit', 'env.sh')) if line.startswith('export ')] == ['export NCCL_SOCKET_IFNAME=eth0\n']
    manifest = load(os.path.join(run, 'launch-kit', 'kit.json'))
    assert manifest['env_left_out'] == {'HF_TOKEN': 'secret name', 'SITE_KEY': 'secret name'}
    assert load(os.path.join(run, 'launch-kit', 'versions.json'))['hosts']['gpu-node01']['gpu_driver'] == facts['driver_version']


@pytest.mark.both_controllers
def test_the_same_run_id_resumes_and_skips_finished_hosts(tmp_path):
    rc, out = rollout(tmp_path)
    assert rc == 0, out[-3000:]
    rc, out = rollout(tmp_path)
    assert rc == 0, out[-3000:]
    state = load(str(tmp_path / 'runs' / 'r1' / 'state.json'))
    # the second session validated only the host that failed
    assert [b['hosts'] for b in state['batches']] == [['gpu-node01', 'gpu-node02'], ['gpu-node03'], ['gpu-node02']]
    # the kit keeps the hosts that passed in the first run, with their GPUs (their profile's: no facts of them in this one)
    assert open(str(tmp_path / 'runs' / 'r1' / 'launch-kit' / 'hostfile')).read().splitlines()[1:] == ['gpu-node01 slots=4', '10.0.0.3 slots=4']
    meta = load(str(tmp_path / 'runs' / 'r1' / 'meta.json'))
    assert len(meta['resumptions']) == 1


def test_check_mode_writes_its_record_beside_the_real_one(tmp_path):
    rc, out = rollout(tmp_path)
    assert rc == 0, out[-3000:]
    real = str(tmp_path / 'runs' / 'r1' / 'state.json')
    before = open(real).read()
    rc, out = rollout(tmp_path, '--check')
    assert rc == 0, out[-3000:]
    assert open(real).read() == before
    check = load(str(tmp_path / 'runs' / 'r1' / 'check' / 'state.json'))
    assert check['check_mode'] is True and [b['hosts'] for b in check['batches']][-1] == ['gpu-node02']


def test_the_diff_command_on_two_records(tmp_path):
    for name in ('a', 'b'):
        (tmp_path / name).mkdir()
        rc, out = rollout(tmp_path / name)
        assert rc == 0, out[-3000:]
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'xuanwu-run-diff'), str(tmp_path / 'a' / 'runs' / 'r1'),
                           str(tmp_path / 'b' / 'runs' / 'r1')], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          check=False)
    # the same inventory replayed twice: the same versions and checks (replayed runs have no busbw here)
    assert (proc.returncode, proc.stderr) == (0, ''), proc.stdout
    assert proc.stdout.endswith('no difference\n')


def adhoc(args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1')
    proc = subprocess.run(['ansible', '-i', 'localhost,', 'localhost', '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable,
                           '-m', 'xuanwu.cluster.run_record', '-a', args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False, timeout=120)
    # the message as one line (a callback may wrap it)
    return proc.returncode, ' '.join(proc.stdout.split())


def test_a_step_on_a_missing_or_broken_record_fails_with_a_message(tmp_path):
    runs = tmp_path / 'runs'
    rc, out = adhoc('step=batch run_id=r1 batch=0 hosts=a runs_dir=%s' % runs)
    assert rc != 0 and 'run_record batch: no run record at %s: the step start of run r1 did not run' % (runs / 'r1') in out, out
    (runs / 'r1').mkdir(parents=True)
    (runs / 'r1' / 'state.json').write_text('{"schema_version": 1, "batc')
    rc, out = adhoc('step=start run_id=r1 hosts=localhost runs_dir=%s' % runs)
    assert rc != 0 and 'run_record start: run state %s is not valid JSON' % (runs / 'r1' / 'state.json') in out, out
    assert 'Traceback' not in out


def test_a_batch_without_an_outcome_for_one_of_its_hosts_is_refused(tmp_path):
    runs = str(tmp_path / 'runs')
    rc, out = adhoc('step=start run_id=r1 hosts=localhost runs_dir=%s' % runs)
    assert rc == 0, out
    before = open(os.path.join(runs, 'r1', 'state.json')).read()
    rc, out = adhoc(json.dumps({'step': 'batch', 'run_id': 'r1', 'runs_dir': runs, 'batch': 0, 'hosts': ['localhost', 'b'],
                                'outcomes': {'localhost': {'outcome': 'passed'}}}))
    assert rc != 0 and 'run_record batch: no outcome for host(s) of the batch: b' in out, out
    assert open(os.path.join(runs, 'r1', 'state.json')).read() == before
