"""The SSH mesh preflight of the multi-node stage (node_health entry point multinode, docs/ssh-mesh.md), through
validate.yml against a real sshd on 127.0.0.1: with the launch node's known_hosts and key right, the job runs on
every node; with the host key missing from known_hosts, the launch node gets mesh.host_key_unknown naming both
ends and is left out of the launch; with the nodes' MTUs compared. mpirun and nccl-tests are test doubles (the
multi-node molecule scenario runs the real ones)."""
import os
import shutil

import pytest

from sshd_server import SSHD, Sshd, keygen
from test_collectives_workloads import DERIVED, fake_nccl_tests, h200_profile, inventory, run_validate, write_test_double

pytestmark = [pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH'),
              pytest.mark.skipif(SSHD is None, reason='needs sshd')]


@pytest.fixture(scope='module')
def sshd(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('sshd')
    host_key = keygen(tmp / 'host_key')
    client = keygen(tmp / 'client_key')
    (tmp / 'authorized_keys').write_text(client + '\n')
    server = Sshd(tmp, [tmp / 'host_key'], tmp / 'authorized_keys').start()
    (tmp / 'known_hosts').write_text('[127.0.0.1]:%d %s\n' % (server.port, host_key))
    (tmp / 'known_hosts_other').write_text('[127.0.0.9]:%d %s\n' % (server.port, host_key))
    try:
        yield tmp, server.port
    finally:
        server.stop()


@pytest.mark.parametrize('known_hosts, launched', [('known_hosts', True), ('known_hosts_other', False)])
def test_the_mesh_preflight_gates_the_launch(tmp_path, sshd, known_hosts, launched):
    keys, port = sshd
    fake_nccl_tests(tmp_path / 'bin', tmp_path / 'calls.log', {})
    mpirun = tmp_path / 'bin' / 'mpirun'
    write_test_double(mpirun, 'echo "$@" >> %s\ncat %s\n' % (tmp_path / 'mpirun.args',
                                                              os.path.join(DERIVED, 'nccl-tests_all_reduce_perf_16-ranks.txt')))
    inv = inventory(tmp_path, {'gpu-a': {'ansible_host': '127.0.0.1'}, 'gpu-b': {'ansible_host': '127.0.0.1'}},
                    xuanwu_profile=h200_profile(tmp_path), xuanwu_validate_multinode=True,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_mpirun=str(mpirun), xuanwu_multinode_slots=8,
                    xuanwu_mesh_ssh_port=port, xuanwu_mesh_key_file=str(keys / 'client_key'),
                    xuanwu_mesh_known_hosts=str(keys / known_hosts), xuanwu_mesh_interface='lo', xuanwu_mesh_timeout=10)
    rc, out, (_folder, report) = run_validate(tmp_path, inv, '-e', 'ansible_connection=local')
    head = report['hosts']['gpu-a']
    mesh = [w for w in head['workloads'] if w.get('kind') == 'mesh']
    assert mesh and mesh[0]['peers'] == 1 and mesh[0]['interface'] == 'lo' and mesh[0]['mtu'] == 65536, head['workloads']
    if launched:
        assert rc == 0, out[-3000:]
        assert not [f for f in head['findings'] if f['check'].startswith('mesh.')]
        assert (tmp_path / 'mpirun.args').read_text().count('\n') == 1
    else:
        assert rc == 2, out[-3000:]
        found = [f for f in head['findings'] if f['check'] == 'mesh.host_key_unknown']
        assert found and 'gpu-a' in found[0]['component'] and 'gpu-b' in found[0]['component'], head['findings']
        # the launch node failed its preflight: one node is left, and a job across nodes is not launched with one
        assert not (tmp_path / 'mpirun.args').exists()
        other = [(f['check'], f['measured']) for f in report['hosts']['gpu-b']['findings'] if f['severity'] == 'fail']
        assert other == [('workload.not_measured', 'not measured: only 1 node(s) of the job passed the checks and the SSH mesh '
                                                   'preflight (gpu-b): a job across the nodes needs two')], other
