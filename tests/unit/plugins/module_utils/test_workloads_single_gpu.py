"""One-GPU nodes, plausible bandwidth and where the torch workloads ran (_workloads, _collectives, _profile).

A collective within one GPU, the torch all-reduce bench on one rank and fault isolation of a one-rank job are not
applicable (said once, with the reason), never failures; a bus bandwidth no link of the profile can carry is
collectives.implausible; a torch workload on the CPU or on fewer GPUs than the profile is workload.placement."""
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collectives, _judge, _workloads
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import merge_profile, validate_profile
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..', '..'))
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
H200X2 = os.path.join(ROOT, 'profiles', 'h200x2-nvlink.yml')
ONE_GPU = {'gpu': {'count': 1, 'topology': None, 'nvlink': None}, 'collectives': None}


def _text(*path):
    with open(os.path.join(FIXTURES, *path)) as handle:
        return handle.read()


def load_profile_file(path):
    return _collection.resolve_profile(path)[0]


def _h200x1():
    return merge_profile(load_profile_file(H200X2), ONE_GPU)


def _nccl(collective, *path):
    return {'collective': collective, 'stdout': _text(*path), 'exit_code': 0}


def _torch(result):
    return {'stdout': '%s %s\n' % (_workloads.RESULT_TAG, json.dumps(result)), 'exit_code': 0}


def _checks(findings):
    return sorted((f['check'], f['severity']) for f in findings)


# --- profile validation ----------------------------------------------------------------------------------------------

def test_a_one_gpu_profile_with_intra_node_curves_is_refused():
    with pytest.raises(ProfileError) as err:
        merge_profile(load_profile_file(H200X2), {'gpu': {'count': 1, 'topology': None, 'nvlink': None}})
    assert 'collectives.all_gather.curve' in str(err.value)
    assert 'intra-node collective curves need 2 GPUs or more, gpu.count is 1' in str(err.value)
    assert _h200x1()['gpu']['count'] == 1        # without the curves it is a valid one-GPU profile
    multinode = {'schema_version': 1, 'name': 'p', 'gpu': {'vendor': 'nvidia', 'count': 1},
                 'collectives_multinode': {'all_reduce': {'curve': [{'min_bytes': 1, 'busbw_gbps_min': 1.0}]}}}
    assert validate_profile(multinode)['gpu']['count'] == 1


# --- not applicable with one rank --------------------------------------------------------------------------------------

def test_nccl_tests_on_one_gpu_are_not_applicable_never_failures():
    profile = load_profile_file(H200X2)          # even against the 2-GPU curves: busbw 0 of one rank is no finding
    run = _nccl('all_reduce', 'derived', 'nccl', 'nccl-tests_all_reduce_perf_-g1_busbw-zero.txt')
    assert _judge.Judge(profile).workload('nccl_tests', run, 'n1') == []
    assert _workloads.not_applicable('nccl_tests', run) == (
        'not applicable: all_reduce_perf ran on 1 rank(s) and needs 2 or more: a collective within one GPU has no bus '
        'bandwidth (0 for reductions, a copy in its own memory otherwise)')
    two = _nccl('all_reduce', 'hardware', 'h200x2-nvlink-nccl-tests', 'nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g2_run1.txt')
    assert _workloads.not_applicable('nccl_tests', two) is None


def test_sendrecv_within_one_gpu_is_not_applicable_never_implausible():
    # one rank copies within its own GPU: no link was asked to carry the figure, so a healthy one-GPU node passes
    # (a 1x H200 failed here on its real sendrecv_perf before, bench/gpu-host-validate.md)
    run = _nccl('sendrecv', 'derived', 'nccl', 'nccl-tests_sendrecv_perf_-g1_copy-within-one-gpu.txt')
    assert _judge.Judge(_h200x1()).workload('nccl_tests', run, 'n1') == []
    assert 'not applicable: sendrecv_perf ran on 1 rank(s)' in _workloads.not_applicable('nccl_tests', run)


def _scaled(text, factor):
    """A real nccl-tests output with every busbw and algbw multiplied by ``factor`` (time divided)."""
    out = []
    for line in text.splitlines():
        cells = line.split()
        if len(cells) >= 13 and cells[0].isdigit():
            for i in (6, 7, 10, 11):
                cells[i] = '%.2f' % (float(cells[i]) * factor)
            for i in (5, 9):
                cells[i] = '%.2f' % (float(cells[i]) / factor)
            line = '  '.join(cells)
        out.append(line)
    return '\n'.join(out) + '\n'


def test_two_ranks_above_what_the_links_carry_are_implausible():
    # derived from the real 2x H200 sendrecv: x 3 puts 8 GiB at about 1100 GB/s, above NVLink 18 x 26.562 GB/s x 1.5
    real = _text('hardware', 'h200x2-nvlink-nccl-tests', 'nccl-tests_sendrecv_perf_-b8_-e8G_-f2_-g2_run1.txt')
    run = {'collective': 'sendrecv', 'stdout': _scaled(real, 3.0), 'exit_code': 0}
    found = [f for f in _judge.Judge(load_profile_file(H200X2)).workload('nccl_tests', run, 'n1')
             if f['check'] == 'collectives.implausible']
    assert [(f['check'], f['severity']) for f in found] == [('collectives.implausible', 'fail')]
    assert found[0]['expected'] == 'busbw <= 717.2 GB/s (NVLink 18 x 26.562 GB/s = 478.1 GB/s, x 1.5)'
    assert found[0]['component'] == 'sendrecv_perf'


@pytest.mark.parametrize('name', ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall', 'sendrecv'])
def test_healthy_real_runs_are_plausible(name):
    folder = os.path.join(FIXTURES, 'hardware', 'h200x2-nvlink-nccl-tests')
    profile = load_profile_file(H200X2)
    for path in sorted(os.listdir(folder)):
        if path.startswith('nccl-tests_%s_perf' % name):
            found = _judge.Judge(profile).workload('nccl_tests', _nccl(name, 'hardware', 'h200x2-nvlink-nccl-tests', path), 'n1')
            assert [f for f in found if f['check'] == 'collectives.implausible'] == []


def test_the_link_bound_of_the_profiles():
    profile = load_profile_file(H200X2)
    assert _collectives.link_bound(profile) == (pytest.approx(717.174), 'NVLink 18 x 26.562 GB/s = 478.1 GB/s, x 1.5')
    assert _collectives.link_bound({'gpu': {'vendor': 'nvidia', 'count': 1}}) == (
        None, 'the profile names no link (gpu.nvlink, gpu.pcie, infiniband)')
    ib = {'infiniband': {'ports_min': 8, 'rate_gbps_min': 400}, 'gpu': {'pcie': {'gen_min': 5, 'width_min': 16}}}
    assert _collectives.link_bound(ib)[1] == '8 HCA port(s) x 400 Gb/s = 400.0 GB/s, x 1.5'


BENCH = {'ok': True, 'collective': 'all_reduce', 'world_size': 1, 'backend': 'nccl', 'device': 'NVIDIA H200',
         'sizes': [{'size_bytes': 1073741824, 'time_us': 10.0, 'algbw_gbps': 100.0, 'busbw_gbps': 0.0, 'wrong': 0}]}


def test_the_torch_bench_on_one_rank_is_not_applicable():
    assert _judge.Judge(_h200x1()).workload('torch_allreduce', _torch(BENCH), 'n1') == []
    # on a profile of two GPUs, one rank is a job on fewer GPUs than the node has
    assert _checks(_judge.Judge(load_profile_file(H200X2)).workload('torch_allreduce', _torch(BENCH), 'n1')) == [
        ('workload.placement', 'fail')]
    assert 'not applicable: the torch all-reduce benchmark ran on 1 rank(s)' in _workloads.not_applicable('torch_allreduce', _torch(BENCH))


def test_fault_isolation_of_one_rank_is_not_applicable():
    one = {'ok': True, 'ended_with_error': True, 'hung': False, 'seconds': 3.1, 'attributed': False, 'victim_rank': 0,
           'bound_s': 120, 'nproc_per_node': 1}
    assert _judge.Judge(_h200x1()).workload('fault_isolation', _torch(one), 'n1') == []
    assert 'a job of one rank has no peer to lose' in _workloads.not_applicable('fault_isolation', _torch(one))
    two = dict(one, nproc_per_node=2, victim_rank=1)
    assert _checks(_judge.Judge(_h200x1()).workload('fault_isolation', _torch(two), 'n1')) == [('workload.fault_isolation', 'warn')]


# --- where the torch workloads ran -------------------------------------------------------------------------------------

DDP = {'ok': True, 'first_loss': 9.2, 'last_loss': 5.3, 'losses': [9.2, 5.3], 'params_in_sync': True, 'world_size': 8,
       'backend': 'nccl', 'device': 'NVIDIA H100 80GB HBM3'}


def _h100():
    return load_profile_file(os.path.join(ROOT, 'profiles', 'h100-sxm-8.yml'))


def test_a_torch_workload_on_the_cpu_fails_naming_what_torch_saw():
    cpu = dict(DDP, backend='gloo', device='cpu', cuda_available=False, device_count=0, nccl_version=None)
    found = _judge.Judge(_h100()).workload('ddp_smoke', _torch(cpu), 'n1')
    assert _checks(found) == [('workload.placement', 'fail')]
    assert found[0]['measured'] == ('backend gloo, device cpu, 0 GPU(s) visible (torch saw: CUDA available False, 0 device(s), '
                                    'NCCL not reported)')
    assert found[0]['expected'] == 'backend nccl on the 8 nvidia GPU(s) of the profile'


def test_a_torch_workload_on_fewer_gpus_fails():
    found = _judge.Judge(_h100()).workload('ddp_smoke', _torch(dict(DDP, world_size=4)), 'n1')
    assert _checks(found) == [('workload.placement', 'fail')] and found[0]['measured'].startswith('4 rank(s)')
    soak = {'ok': True, 'world_size': 8, 'backend': 'gloo', 'rss_growth_pct': 1.0, 'gpu_mem_growth_pct': 0.5}
    assert _checks(_judge.Judge(_h100()).workload('soak', _torch(soak), 'n1')) == [('workload.placement', 'fail')]
    bench = dict(BENCH, world_size=8, device='cpu', backend='gloo')
    assert ('workload.placement', 'fail') in _checks(_judge.Judge(_h100()).workload('torch_allreduce', _torch(bench), 'n1'))


def test_a_torch_workload_on_every_gpu_passes():
    assert _judge.Judge(_h100()).workload('ddp_smoke', _torch(DDP), 'n1') == []
    # no GPU in the profile: nothing to compare with
    assert _workloads.evaluate_placement(dict(DDP, backend='gloo', device='cpu'), {'gpu': None}, 'n1', 'ddp_smoke') == []
