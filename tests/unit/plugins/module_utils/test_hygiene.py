"""Host hygiene before a job (_hygiene.py): the real captures of a node with and without a torchrun job
(tests/fixtures/hardware/h200x1-vm/, h200x2-nvlink/) go through the parsers, the facts assembly and the
checks; then the ports a job will use."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _hygiene, _probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._judge import evaluate
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_host import parse_ps, parse_ss_listening
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nvidia import parse_smi_xml
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import DEFAULT_LEFTOVER_PATTERNS

HW = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'hardware'))

PROFILE = {'schema_version': 1, 'name': 't', 'gpu': {'count': 1, 'persistence_mode_required': False, 'ecc_required': False},
           'host': {'ports_must_be_free': [29500]}}


def read(path):
    with open(os.path.join(HW, path)) as handle:
        return handle.read()


def facts_of(state, patterns=None, listening=None):
    """Facts of the 1x H200 node, ``state`` idle or busy, as the probe assembles them."""
    ok = {'status': 'ok', 'command': 'x', 'rc': 0, 'error': None, 'excerpt': None}
    parsed = {
        'nvidia_query_gpu': [{'index': 0, 'name': 'NVIDIA H200', 'uuid': 'GPU-0d2f8299-8419-6f0b-06ef-70b0c327362b',
                              'bus_id': '00000000:00:06.0'}],
        'nvidia_smi_xml': parse_smi_xml(read('h200x1-vm/nvidia-smi_-q_-x_%s.xml' % state)),
        'processes': parse_ps(read('h200x1-vm/ps_%s.txt' % state)),
        'listening': parse_ss_listening(listening or ''),
    }
    statuses = dict((key, dict(ok)) for key in parsed)
    return _probe.assemble(parsed, statuses, process_patterns=patterns)


HYGIENE = ('gpu.process', 'gpu.compute', 'host.leftover', 'host.port')


def hygiene(findings):
    return sorted((f['check'], f['component']) for f in findings if f['check'].startswith(HYGIENE))


def test_idle_capture_has_no_finding():
    facts = facts_of('idle')
    assert facts['host']['processes']['matched'] == []
    assert facts['gpu']['devices'][0]['processes'] == []
    assert hygiene(evaluate(facts, PROFILE, 'n1')) == []


def test_busy_capture_names_pid_command_and_gpu():
    findings = evaluate(facts_of('busy'), PROFILE, 'n1')
    assert hygiene(findings) == [('gpu.process', 'gpu0'), ('host.leftover_process', 'pid 433')]
    gpu = [f for f in findings if f['check'] == 'gpu.process'][0]
    assert gpu['severity'] == 'fail'
    assert 'pid 485' in gpu['message'] and '/opt/torch/.venv/bin/python -u train.py' in gpu['message']
    assert 'GPU-0d2f8299-8419-6f0b-06ef-70b0c327362b' in gpu['message'] and '3216 MiB' in gpu['message']
    assert 'started by pid 433' in gpu['message'] and 'torchrun' in gpu['message']
    assert 'kill 485' in gpu['remediation']
    job = [f for f in findings if f['check'] == 'host.leftover_process'][0]
    assert 'torchrun --nnodes 1' in job['measured'] and 'user root' in job['message']
    assert 'kill 433' in job['remediation']


def test_busy_capture_2gpu_xml_flags_each_gpu():
    xml = parse_smi_xml(read('h200x2-nvlink/nvidia-smi_-q_-x_busy.xml'))
    ok = {'status': 'ok', 'command': 'x', 'rc': 0, 'error': None, 'excerpt': None}
    parsed = {'nvidia_query_gpu': [{'index': i, 'bus_id': '00000000:00:0%d.0' % (6 + i)} for i in range(2)],
              'nvidia_smi_xml': xml}
    facts = _probe.assemble(parsed, dict((k, dict(ok)) for k in parsed))
    profile = dict(PROFILE, gpu=dict(PROFILE['gpu'], count=2))
    findings = evaluate(facts, profile, 'n1')
    assert [(f['component'], f['measured']) for f in findings if f['check'] == 'gpu.process'] == [
        ('gpu0', 'pid 627 /opt/torch/.venv/bin/python3 (2474 MiB)'), ('gpu1', 'pid 628 /opt/torch/.venv/bin/python3 (2474 MiB)')]


def test_port_in_use_names_pid_and_command():
    ss = 'tcp   LISTEN 0      4096                *:29500                 *:* users:(("pt_elastic",pid=433,fd=3))\n'
    findings = evaluate(facts_of('busy', listening=ss), PROFILE, 'n1')
    port = [f for f in findings if f['check'] == 'host.port_in_use']
    assert len(port) == 1
    assert 'pt_elastic (pid 433): /opt/torch/.venv/bin/python /opt/torch/.venv/bin/torchrun' in port[0]['message']


def test_patterns_the_probe_did_not_apply_are_not_measured():
    facts = facts_of('idle', patterns=[DEFAULT_LEFTOVER_PATTERNS[0]])
    profile = dict(PROFILE, host={'leftover_process_patterns': [DEFAULT_LEFTOVER_PATTERNS[0], 'my_trainer']})
    findings = evaluate(facts, profile, 'n1')
    assert [(f['check'], f['component'], f['severity']) for f in findings if f['component'] == 'processes'] == [
        ('facts.not_measured', 'processes', 'warn')]


def test_compute_mode_and_processes_not_reported_warn():
    facts = facts_of('idle')
    facts['gpu']['devices'][0].update(compute_mode=None, processes=None)
    findings = evaluate(facts, PROFILE, 'n1')
    assert sorted(f['expected'] for f in findings if f['check'] == 'facts.not_measured') == ['compute mode', 'processes on the GPU']


def test_matched_list_is_bounded():
    rows = [{'pid': 1000 + i, 'ppid': 1, 'user': 'u', 'etimes': 5, 'args': 'mpirun -np 2 x'} for i in range(80)]
    facts = _probe.assemble({'processes': rows}, {'processes': {'status': 'ok'}})
    procs = facts['host']['processes']
    assert len(procs['matched']) == _probe.MATCHED_PROCESSES_MAX and procs['matched_total'] == 80
    findings = evaluate(facts, dict(PROFILE, gpu=None), 'n1')
    assert [f['measured'] for f in findings if f['component'] == 'processes'] == ['80 job processes']


@pytest.mark.parametrize('args, hit', [
    ('/usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node 8 train.py', True),
    ('python -m torch.distributed.run --nproc_per_node 8 train.py', True),
    ('/usr/lib64/openmpi/bin/orted -mca ess env -mca ess_base_jobid 1234', True),
    ('/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -g 1', True),
    ('mpirun -np 16 --hostfile hosts ./alltoall_perf', True),
    ('/usr/bin/python3 /home/ops/.ansible/tmp/AnsiballZ_node_probe.py', False),
    ('/usr/bin/nv-hostengine -n', False),
    ('vim torchrun_notes.txt', False),
])
def test_default_patterns(args, hit):
    facts = _probe.assemble({'processes': [{'pid': 7, 'ppid': 1, 'user': 'u', 'etimes': 1, 'args': args}]},
                            {'processes': {'status': 'ok'}})
    assert bool(facts['host']['processes']['matched']) is hit


@pytest.mark.parametrize('kwargs, ports', [
    ({'master_port': 29500}, ['29500/tcp']),
    ({'master_port': '29400', 'extra': [29500, '5353/udp', 'ssh']}, ['5353/udp', '29400/tcp', '29500/tcp']),
    ({'env': {'NCCL_COMM_ID': '10.0.0.1:23456', 'MASTER_PORT': '29501', 'NCCL_IB_HCA': 'mlx5'}}, ['23456/tcp', '29501/tcp']),
    ({'env': {'OMPI_MCA_oob_tcp_static_ipv4_ports': '30000-30002'}}, ['30000/tcp', '30001/tcp', '30002/tcp']),
    ({'mpirun_args': ['--mca', 'btl_tcp_port_min_v4', '31000', '--mca', 'btl_tcp_if_include', 'eth0']}, ['31000/tcp']),
    ({'mpirun_args': ['--mca oob_tcp_static_ipv4_ports 32000,32005']}, ['32000/tcp', '32005/tcp']),
    ({}, []),
])
def test_job_ports(kwargs, ports):
    assert _hygiene.job_ports(**kwargs) == ports


def test_job_ports_join_the_profile_ports():
    ss = 'tcp   LISTEN 0      4096                *:23456                 *:* users:(("python3",pid=485,fd=9))\n'
    facts = facts_of('idle', listening=ss)
    assert hygiene(evaluate(facts, PROFILE, 'n1')) == []
    profile = _hygiene.with_job_ports(PROFILE, _hygiene.job_ports(env={'NCCL_COMM_ID': 'head:23456'}))
    assert hygiene(evaluate(facts, profile, 'n1')) == [('host.port_in_use', 'port 23456/tcp')]
