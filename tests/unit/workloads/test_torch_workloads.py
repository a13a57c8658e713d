"""The torch workloads of roles/torch_workloads/files, run for real on CPU (gloo, 2 processes, tiny sizes)
through ``python -m torch.distributed.run``; plus their pure functions in-process.

Skipped when torch is not installed. The launcher runs take about a minute in all on 2 cores.
"""
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip('torch')

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collectives as col  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FILES = os.path.join(ROOT, 'roles', 'torch_workloads', 'files')
TAG = 'XUANWU_RESULT '


def _module(name):
    spec = importlib.util.spec_from_file_location('xuanwu_workload_' + name, os.path.join(FILES, name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _free_port():
    sock = socket.socket()
    try:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
    finally:
        sock.close()


def _env():
    env = dict(os.environ)
    env.update({'OMP_NUM_THREADS': '1', 'PYTHONWARNINGS': 'ignore', 'PYTHONUNBUFFERED': '1'})
    return env


def _results(stdout):
    return [json.loads(line[len(TAG):]) for line in stdout.splitlines() if line.startswith(TAG)]


def _torchrun(script, *args, **kwargs):
    command = [sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node', '2', '--nnodes', '1',
               '--master_addr', '127.0.0.1', '--master_port', str(_free_port()), os.path.join(FILES, script)]
    command += [str(a) for a in args]
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                          timeout=kwargs.get('timeout', 180), check=False)
    stdout = proc.stdout.decode('utf-8', 'replace')
    results = _results(stdout)
    assert results, 'no result line; stderr:\n%s' % proc.stderr.decode('utf-8', 'replace')[-3000:]
    assert stdout.strip().splitlines()[-1].startswith(TAG), 'the result is not the final line'
    return proc.returncode, results[-1], proc.stderr.decode('utf-8', 'replace')


def _launch(*args, **kwargs):
    command = [sys.executable, os.path.join(FILES, 'fault_isolation_launch.py'), '--nproc-per-node', '2',
               '--backend', 'gloo'] + [str(a) for a in args]
    began = time.monotonic()
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                          timeout=kwargs.get('timeout', 180), check=False)
    lines = proc.stdout.decode('utf-8', 'replace').strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(TAG), proc.stdout
    return proc.returncode, json.loads(lines[0][len(TAG):]), time.monotonic() - began


def test_allreduce_bench_cpu():
    code, result, err = _torchrun('allreduce_bench.py', '--backend', 'gloo', '--min-bytes', '4K', '--max-bytes', '64K',
                                  '--iters', 3, '--warmup', 1)
    assert code == 0, err[-2000:]
    assert result['ok'] is True and result['error'] is None
    assert result['world_size'] == 2 and result['backend'] == 'gloo' and result['collective'] == 'all_reduce'
    assert result['torch_version'] == torch.__version__ and result['nccl_version'] is None
    # what torch saw of the GPUs, for workload.placement to name
    assert result['cuda_available'] is torch.cuda.is_available() and result['device_count'] == torch.cuda.device_count()
    assert 'torch_nccl_version' in result
    assert [s['size_bytes'] for s in result['sizes']] == [4096, 8192, 16384, 32768, 65536]
    for size in result['sizes']:
        assert size['time_us'] > 0 and size['algbw_gbps'] > 0 and size['busbw_gbps'] > 0
        assert size['wrong'] == 0
        # nccl-tests' formula: busbw = algbw * 2 (n - 1) / n, algbw = size / time
        assert size['busbw_gbps'] == pytest.approx(col.busbw_from_time(size['size_bytes'], size['time_us'], 'all_reduce', 2), rel=1e-3)
    # the same curve check as for nccl-tests applies to the benchmark's result
    parsed = col.rows_from_bench(result)
    assert col.evaluate_curve(parsed, [{'min_bytes': 4096, 'busbw_gbps_min': 1e-6}], 'localhost', 'all_reduce') == []
    slow = col.evaluate_curve(parsed, [{'min_bytes': 4096, 'busbw_gbps_min': 1e6}], 'localhost', 'all_reduce')
    assert [f['check'] for f in slow] == ['collectives.busbw_low']


def test_ddp_smoke_cpu():
    code, result, err = _torchrun('ddp_smoke.py', '--backend', 'gloo', '--steps', 15)
    assert code == 0, err[-2000:]
    assert result['ok'] is True and result['error'] is None
    assert len(result['losses']) == 15
    assert result['last_loss'] < result['first_loss']
    assert result['losses'][0] == result['first_loss'] and result['losses'][-1] == result['last_loss']
    assert result['params_in_sync'] is True and 10000 < result['params'] < 1000000
    assert result['world_size'] == 2 and result['step_time_ms_median'] > 0 and result['tokens_per_s'] > 0
    # every rank's every step, with the time of its data and forward pass before the gradient all-reduce
    assert [r['rank'] for r in result['per_rank']] == [0, 1] and result['warmup_steps'] == 3
    for rank in result['per_rank']:
        assert len(rank['step_ms']) == len(rank['pre_sync_ms']) == 15 and rank['host']
        assert all(0 < pre < step for pre, step in zip(rank['pre_sync_ms'], rank['step_ms']))


def test_fault_isolation_ends_with_an_error_in_bound():
    code, result, wall = _launch('--bound-s', 60, '--victim-rank', 1, '--kill-after-iters', 3)
    assert code == 0, result
    assert result['ok'] is True and result['ended_with_error'] is True and result['hung'] is False
    assert result['exit_code'] not in (0, None) and result['seconds'] < 60 and wall < 90
    assert result['victim_rank'] == 1 and result['attributed'] is True
    assert any(f['rank'] == 1 and f['exitcode'] != 0 for f in result['failed_ranks'])
    survivors = [s for s in result['survivors'] if s['rank'] != 1]
    assert survivors and survivors[0]['ended_with_error'] is True and survivors[0]['error']
    assert survivors[0]['seconds_to_error'] is not None and survivors[0]['seconds_to_error'] < 60
    assert survivors[0]['iterations'] == 3


def test_fault_isolation_hang_is_bounded():
    """A victim that hangs (alive, silent) with a collective timeout beyond the bound: the launcher kills
    the job at the bound and reports it hung."""
    code, result, wall = _launch('--bound-s', 6, '--grace-s', 2, '--', '--kill-mode', 'hang', '--collective-timeout-s', 120)
    assert code == 1
    assert result['hung'] is True and result['ok'] is False and result['ended_with_error'] is False
    assert 6 <= result['seconds'] < 25 and wall < 40


def test_soak_ok():
    code, result, err = _torchrun('soak.py', '--backend', 'gloo', '--duration-s', 2, '--sample-s', 0.4)
    assert code == 0, err[-2000:]
    assert result['ok'] is True and result['error'] is None and result['new_errors'] == []
    assert len(result['samples']) >= 3 and all(s['rss_kib'] > 0 for s in result['samples'])
    assert result['rss_growth_pct'] is not None and result['rss_growth_pct'] < 10
    assert result['gpu_mem_growth_pct'] is None
    assert sorted(r['rank'] for r in result['per_rank']) == [0, 1]


def test_soak_forced_growth_fails():
    code, result, _err = _torchrun('soak.py', '--backend', 'gloo', '--duration-s', 2, '--sample-s', 0.4,
                                   '--leak-mb-per-sample', 40)
    assert code == 1
    assert result['ok'] is False and result['rss_growth_pct'] > 10
    assert 'resident memory grew' in result['error']


# pure functions, in-process

def test_bench_functions():
    bench = _module('allreduce_bench')
    assert bench.parse_size('8') == 8 and bench.parse_size('1M') == 1 << 20 and bench.parse_size('8G') == 8 << 30
    assert bench.parse_size('16MiB') == 16 << 20 and bench.parse_size('4k') == 4096
    with pytest.raises(Exception):
        bench.parse_size('lots')
    assert bench.sizes_between(1 << 20, 8 << 20) == [1 << 20, 2 << 20, 4 << 20, 8 << 20]
    assert bench.busbw_factor(4) == 1.5 and bench.busbw_factor(8) == col.busbw_factor('all_reduce', 8)


def test_launcher_reads_torchrun_failure_report():
    launch = _module('fault_isolation_launch')
    report = '\n'.join([
        'torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ',
        '============================================================',
        'fault_isolation.py FAILED',
        '------------------------------------------------------------',
        'Failures:',
        '[1]:',
        '  time      : 2026-11-29_20:55:42',
        '  host      : node-a',
        '  rank      : 0 (local_rank: 0)',
        '  exitcode  : -9 (pid: 790)',
        '------------------------------------------------------------',
        'Root Cause (first observed failure):',
        '[0]:',
        '  time      : 2026-11-29_20:55:12',
        '  host      : node-b',
        '  rank      : 1 (local_rank: 1)',
        '  exitcode  : -9 (pid: 791)',
        '============================================================',
        'XUANWU_RESULT {"rank": 0, "error": "peer rank 1 gone"}',
    ])
    ranks, root = launch.failed_ranks(report)
    assert ranks == [{'rank': 0, 'exitcode': -9, 'host': 'node-a'}, {'rank': 1, 'exitcode': -9, 'host': 'node-b'}]
    assert root == 1
    assert launch.survivor_results(report) == [{'rank': 0, 'error': 'peer rank 1 gone'}]
    assert launch.failed_ranks('no report here') == ([], None)


def test_soak_functions():
    soak = _module('soak')
    assert soak._value(' [N/A] ') is None and soak._value('No') == 0 and soak._value('Yes') == 1 and soak._value('3') == 3
    first = {'0': {'ecc.errors.uncorrected.volatile.total': 0, 'retired_pages.pending': 0}}
    last = {'0': {'ecc.errors.uncorrected.volatile.total': 2, 'retired_pages.pending': 1}}
    assert soak.new_errors(first, last, 'h') == [
        {'host': 'h', 'gpu': '0', 'field': 'ecc.errors.uncorrected.volatile.total', 'before': 0, 'after': 2},
        {'host': 'h', 'gpu': '0', 'field': 'retired_pages.pending', 'before': 0, 'after': 1}]
    assert soak.new_errors(first, first, 'h') == [] and soak.new_errors(None, None, 'h') == []
    assert soak.growth_pct(100, 150) == 50.0 and soak.growth_pct(0, 10) is None and soak.growth_pct(None, 1) is None
    assert soak.rss_kib() > 0
