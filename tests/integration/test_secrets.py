"""Integration: secrets in the NCCL environment never reach a file of the report, a task result or the
output of the json callback; report files are private; a hostfile lives in a fresh private folder; a
variable that would become extra command-line arguments stops the run in the preflight."""
import json
import os
import re
import stat

import pytest

from test_collectives_workloads import DERIVED, HW, fake_nccl_tests, h200_profile, inventory, run_validate, write_test_double
from test_validate_playbook import playbook

SECRETS = ('s3cr3t', 'hunter2')
NCCL_ENV = {'https_proxy': 'http://u:s3cr3t@p:3128', 'NCCL_SOCKET_IFNAME': 'eth0', 'MY_PASSWORD': 'hunter2'}


def fake_mpirun(tmp_path, capture):
    """An mpirun test double: records its arguments, the environment it got and the hostfile's folder, and
    prints the secrets (as a verbose tool might) before the captured output."""
    mpirun = tmp_path / 'bin' / 'mpirun'
    write_test_double(mpirun, '\n'.join([
        'echo "$@" > %s' % (tmp_path / 'mpirun.args'),
        'echo "$https_proxy $MY_PASSWORD $NCCL_SOCKET_IFNAME" > %s' % (tmp_path / 'mpirun.env'),
        'while [ $# -gt 0 ]; do if [ "$1" = --hostfile ]; then hf=$2; fi; shift; done',
        'stat -c "%%a %%U" "$(dirname "$hf")" > %s' % (tmp_path / 'hostfile.dir'),
        'cp "$hf" %s' % (tmp_path / 'hostfile.seen'),
        'echo "proxy $https_proxy password $MY_PASSWORD"',
        'cat %s' % capture, '']))
    return mpirun


def all_files(top):
    for folder, dirs, files in os.walk(str(top)):
        for name in dirs + files:
            yield os.path.join(folder, name)


# both controllers for the 4-rank case only: it takes every path the 16-rank one does, and the re-run besides
@pytest.mark.parametrize('output, ranks', [('nccl-tests_all_reduce_perf_16-ranks.txt', 16),
                                           pytest.param('single-node 4-GPU capture', 4, marks=pytest.mark.both_controllers)])
def test_secrets_are_redacted_everywhere_and_reach_the_process(tmp_path, monkeypatch, output, ranks):
    """The 4-rank output fails and is re-run with NCCL_DEBUG=INFO, so the output tail is kept in the report."""
    monkeypatch.setenv('ANSIBLE_STDOUT_CALLBACK', 'ansible.posix.json')
    fake_nccl_tests(tmp_path / 'bin', tmp_path / 'calls.log', {})
    capture = os.path.join(DERIVED, output) if ranks == 16 else os.path.join(HW, 'nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt')
    mpirun = fake_mpirun(tmp_path, capture)
    inv = inventory(tmp_path, {'gpu-a': {'ansible_host': '10.0.0.1'}, 'gpu-b': {'ansible_host': '10.0.0.2'}},
                    xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_multinode=True, xuanwu_mesh_check=False, xuanwu_validate_collectives=True,
                    xuanwu_collectives=['all_reduce'], xuanwu_collectives_gpus=4,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_mpirun=str(mpirun), xuanwu_multinode_slots=8,
                    xuanwu_nccl_env=NCCL_ENV)
    rc, out, (folder, report) = run_validate(tmp_path, inv, '-e', 'ansible_connection=local')
    assert rc == (0 if ranks == 16 else 2), out[-3000:]
    # the json callback's document: every task result of the run. The interpreter's own warnings (stderr, merged here)
    # may come before it, e.g. cryptography 51's deprecation of DSA, which ansible-core's import of it prints
    start = re.search(r'^\{$', out, re.M)
    assert start, out[:3000]
    assert json.loads(out[start.start():])['stats']
    # the real values reach mpirun's environment (mpirun -x passes names; the values come from the environment)
    assert (tmp_path / 'mpirun.env').read_text().split() == ['http://u:s3cr3t@p:3128', 'hunter2', 'eth0']
    args = (tmp_path / 'mpirun.args').read_text().split()
    assert not any(secret in ' '.join(args) for secret in SECRETS)
    assert [args[i + 1] for i, a in enumerate(args) if a == '-x'] == sorted(NCCL_ENV) + (['NCCL_DEBUG', 'NCCL_DEBUG_SUBSYS'] if ranks == 4 else [])
    for secret in SECRETS:
        assert secret not in out, [line for line in out.splitlines() if secret in line][:5]
    reports = tmp_path / 'reports'
    for path in all_files(reports):
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        if os.path.isdir(path):
            assert mode == 0o750, (path, oct(mode))
            continue
        # the run history database is the owner's alone (docs/fleet-history.md)
        assert mode == (0o600 if os.path.basename(path) == 'history.sqlite' else 0o640), (path, oct(mode))
        with open(path, errors='replace') as handle:
            text = handle.read()
        for secret in SECRETS:
            assert secret not in text, (path, secret)
    kept = os.path.join(folder, 'multinode')
    env_txt = open(os.path.join(kept, 'gpu-a+gpu-b-all_reduce-env.txt')).read().splitlines()
    assert sorted(env_txt) == ['MY_PASSWORD=***', 'NCCL_SOCKET_IFNAME=eth0', 'https_proxy=http://u:***@p:3128']
    # what the tool printed is still kept, with the secrets masked
    printed = open(os.path.join(kept, 'gpu-a+gpu-b-all_reduce-output.txt')).read().splitlines()[0]
    assert printed.startswith('proxy http://u:*') and '@p:3128 password *' in printed, printed
    if ranks == 4:
        multinode = [w for w in report['hosts']['gpu-a']['workloads'] if w['component'].startswith('multinode ')]
        assert multinode[0]['debug_log_tail']
    # the hostfile was read from a fresh private folder of the running user, removed at the end
    mode, owner = (tmp_path / 'hostfile.dir').read_text().split()
    assert mode == '700' and owner == os.environ.get('USER', owner)
    hostfile = [args[i + 1] for i, a in enumerate(args) if a == '--hostfile'][0]
    assert not hostfile.startswith('/var/tmp/xuanwu-hostfile') and not os.path.exists(os.path.dirname(hostfile))
    lines = [line for line in (tmp_path / 'hostfile.seen').read_text().splitlines() if not line.startswith('#')]
    assert lines == ['10.0.0.1 slots=8', '10.0.0.2 slots=8']


@pytest.mark.parametrize('host_vars, named', [
    ({'xuanwu_nccl_env': {'NCCL_X --mca foo': 'bar'}}, "'NCCL_X --mca foo'"),
    ({'xuanwu_nccl_env': {'1NCCL': 'x'}}, "'1NCCL'"),
    ({'xuanwu_torch_env': {'GLOO SOCKET': 'x'}}, "'GLOO SOCKET'"),
    ({'xuanwu_nccl_env': {'NCCL_IB_HCA': 'mlx5_0\n--mca foo'}}, 'NCCL_IB_HCA'),
    ({'xuanwu_nccl_env': {'NCCL_SOCKET_IFNAME': 'eth0 --mca foo'}}, 'NCCL_SOCKET_IFNAME'),
    ({'xuanwu_probe_interfaces': ['eth0/1']}, "'eth0/1'"),
    ({'xuanwu_probe_interfaces': ['an-interface-name-too-long']}, "'an-interface-name-too-long'"),
    ({'xuanwu_nccl_tests_bin_dir': 'bin'}, "'bin'"),
    ({'xuanwu_redact_env_keys': ['MY KEY']}, "'MY KEY'"),
    ({'ansible_host': '10.0.0.1 slots=99'}, "'10.0.0.1 slots=99'"),
])
def test_argument_injection_fails_the_preflight(tmp_path, host_vars, named):
    fake_nccl_tests(tmp_path / 'bin', tmp_path / 'calls.log', {})
    mpirun = fake_mpirun(tmp_path, os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_16-ranks.txt'))
    hosts = {'gpu-a': dict({'ansible_host': '10.0.0.1'}, **host_vars), 'gpu-b': {'ansible_host': '10.0.0.2'}}
    inv = inventory(tmp_path, hosts, xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_multinode=True, xuanwu_mesh_check=False,
                    xuanwu_validate_collectives=True, xuanwu_collectives=['all_reduce'], xuanwu_collectives_gpus=4,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_mpirun=str(mpirun), xuanwu_multinode_slots=8)
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'ansible_connection=local',
                       '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'reports'))
    assert rc != 0 and 'invalid inventory or profile, nothing was changed' in out, out[-3000:]
    assert named in out and 'gpu-a' in out, out[-3000:]
    assert 'must match' in out or 'must be' in out or 'must not' in out, out[-3000:]
    assert not (tmp_path / 'mpirun.args').exists() and not (tmp_path / 'calls.log').exists()
    assert not (tmp_path / 'reports').exists()


def test_the_multinode_stage_in_check_mode_runs_nothing_and_leaves_no_hostfile(tmp_path):
    fake_nccl_tests(tmp_path / 'bin', tmp_path / 'calls.log', {})
    mpirun = fake_mpirun(tmp_path, os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_16-ranks.txt'))
    inv = inventory(tmp_path, {'gpu-a': {'ansible_host': '10.0.0.1'}, 'gpu-b': {'ansible_host': '10.0.0.2'}},
                    xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_multinode=True, xuanwu_mesh_check=False,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_mpirun=str(mpirun), xuanwu_multinode_slots=8,
                    xuanwu_nccl_env=NCCL_ENV)
    rc, out, (_folder, report) = run_validate(tmp_path, inv, '-e', 'ansible_connection=local', '--check')
    assert not (tmp_path / 'mpirun.args').exists()
    for host in ('gpu-a', 'gpu-b'):
        found = [(f['check'], f['severity']) for f in report['hosts'][host]['findings'] if f['severity'] == 'fail']
        assert found == [('workload.not_measured', 'fail')], found  # requested, not run: never a pass, never a task error
    assert rc == 2 and 's3cr3t' not in out and 'hunter2' not in out
