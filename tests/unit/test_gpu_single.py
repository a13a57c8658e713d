"""The single-GPU stage (roles/torch_workloads/files/gpu_single.py, _workloads.evaluate_gpu_single): real outputs of
a healthy and a shared 1x H200 replayed through the judge with the shipped profile; one weak GPU of eight named by the
comparison with its peers; torch on the CPU; no floor is said, never a silent pass; the framebuffer the stage allocates
by design is no memory leak; the figures reach report.md, report.html and the Prometheus export."""
import glob
import json
import os
import re

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _dmon_checks, _judge, _prom, _workloads
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _report

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
REAL = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x1-gpu-single')


def _read(name):
    with open(os.path.join(REAL, name)) as handle:
        return handle.read()


def _run(text, rc=0):
    return {'stdout': text, 'rc': rc, 'exit_code': rc, 'component': 'gpu_single'}


def _judged(text, profile='h200x1', rc=0):
    return _judge.Judge(_collection.resolve_profile(profile)[0]).workload('gpu_single', _run(text, rc), 'gpu-host')


def _result(text):
    return _workloads.parse_result_lines(text)[-1]


HEALTHY = ['gpu_single_healthy1.txt', 'gpu_single_healthy2.txt', 'gpu_single_healthy3.txt',
           'validate-run20_healthy_gpu_single.txt', 'validate-run22_healthy_gpu_single.txt']


@pytest.mark.parametrize('name', HEALTHY)
def test_a_healthy_h200_passes_with_the_shipped_profile(name):
    assert _judged(_read(name)) == []
    # the same GPU judged as one of a 4-GPU node: torch saw one GPU (placement), its figures are a healthy H200's
    assert [f['check'] for f in _judged(_read(name), 'h200x4-nvlink')] == ['workload.placement']


def test_a_shared_h200_fails_on_both_figures_naming_the_gpu():
    found = _judged(_read('validate-run21_hog_gpu_single.txt'))
    assert sorted((f['check'], f['component'], f['measured']) for f in found) == [
        ('workload.gpu_compute_low', 'gpu0', '306.4 TFLOP/s'), ('workload.gpu_membw_low', 'gpu0', '1968.0 GB/s')]
    assert all('GPU 0' in f['remediation'] for f in found)


def test_the_real_validate_runs_report_what_the_replay_finds():
    # written when the checks were named gpu_single.compute_low and .membw_low (renamed since: a check id's area is
    # letters only); the dmon.memory_growth of run 20 is the false warning the stage is now exempt from
    renamed = {'gpu_single.compute_low': 'workload.gpu_compute_low', 'gpu_single.membw_low': 'workload.gpu_membw_low'}
    for name, checks in (('validate-run20_healthy_report.json', set()), ('validate-run22_healthy_report.json', set()),
                         ('validate-run21_hog_report.json', {'gpu.process', 'workload.gpu_compute_low', 'workload.gpu_membw_low'})):
        entry = json.loads(_read(name))['hosts']['gpu-host']
        assert set(renamed.get(f['check'], f['check']) for f in entry['findings']) - {'dmon.memory_growth'} == checks, name
        run = [w for w in entry['workloads'] if w['kind'] == 'gpu_single'][0]
        assert run['floors']['min_bf16_tflops'] == 570.0 and run['result']['gpus'][0]['index'] == 0


def _eight(weak=None, factor=0.88):
    result = _result(_read('gpu_single_healthy1.txt'))
    gpus = []
    for i in range(8):
        gpu = dict(result['gpus'][0], index=i, bf16_tflops=round(result['gpus'][0]['bf16_tflops'] * (1 - 0.003 * i), 1))
        if i == weak:
            gpu['bf16_tflops'] = round(gpu['bf16_tflops'] * factor, 1)
        gpus.append(gpu)
    result.update(gpus=gpus, device_count=8)
    return '%s %s\n' % (_workloads.RESULT_TAG, json.dumps(result))


def test_one_weak_gpu_of_eight_is_named_and_only_it():
    assert _judged(_eight(), 'h200-sxm-8') == []
    found = _judged(_eight(weak=5), 'h200-sxm-8')
    assert [(f['check'], f['component']) for f in found] == [('workload.gpu_outlier', 'gpu5')]
    assert 'median of its node\'s 8 GPUs' in found[0]['message']
    # a GPU 30 % down is under the model's floor as well
    assert sorted(f['check'] for f in _judged(_eight(weak=2, factor=0.7), 'h200-sxm-8')) == ['workload.gpu_compute_low', 'workload.gpu_outlier']


def test_without_floors_each_gpu_is_compared_with_its_peers_and_the_report_says_not_judged():
    profile = _collection.resolve_profile('a100-sxm4-8')[0]
    assert profile['workloads']['gpu_single']['min_bf16_tflops'] is None
    assert _workloads.not_judged('gpu_single', {}, profile).startswith('no workloads.gpu_single.min_bf16_tflops or min_membw_gbps')
    assert _workloads.not_judged('gpu_single', {}, _collection.resolve_profile('h200x1')[0]) is None
    found = _judge.Judge(profile).workload('gpu_single', _run(_eight(weak=1)), 'a100-node')
    assert [(f['check'], f['component']) for f in found] == [('workload.gpu_outlier', 'gpu1')]


def test_torch_on_the_cpu_is_a_placement_failure_naming_what_torch_saw():
    text = '%s %s\n' % (_workloads.RESULT_TAG, json.dumps({
        'ok': False, 'gpus': [], 'device': 'cpu', 'cuda_available': False, 'device_count': 0, 'torch_nccl_version': None,
        'error': 'CUDA is not available to torch (torch 2.11.0+cpu)'}))
    found = _judged(text, rc=1)
    checks = sorted(f['check'] for f in found)
    assert 'workload.placement' in checks and 'workload.failed' in checks
    assert 'CUDA available False' in [f for f in found if f['check'] == 'workload.placement'][0]['measured']


def test_a_gpu_that_fails_alone_is_named_and_the_others_still_judged():
    result = json.loads(_eight()[len(_workloads.RESULT_TAG) + 1:])
    result['gpus'][3].update(bf16_tflops=None, membw_gbps=None, error='RuntimeError: CUDA error: an illegal memory access')
    result.update(ok=False, error='GPU 3: RuntimeError: CUDA error: an illegal memory access')
    found = _judged('%s %s\n' % (_workloads.RESULT_TAG, json.dumps(result)), 'h200-sxm-8', rc=1)
    assert [(f['check'], f['component']) for f in found if f['check'] == 'workload.failed'] == [('workload.failed', 'gpu3')]


def test_the_framebuffer_the_stage_allocates_is_not_a_leak_but_a_steady_workload_is_judged():
    dmon = {'command': 'nvidia-smi dmon', 'interval_s': 1, 'stdout': _read('validate-run20_healthy_dmon.txt')}
    judge = _judge.Judge(_collection.resolve_profile('h200x1')[0])
    found, entry = judge.dmon(dmon, 'gpu-host', 'gpu_single', unjudged=_workloads.DMON_UNJUDGED['gpu_single'])
    assert [f for f in found if f['check'] == 'dmon.memory_growth'] == []
    assert any(w.startswith('dmon.memory_growth: not judged') for w in entry['not_judged'])
    soak_found, _entry = judge.dmon(dmon, 'gpu-host', 'soak')
    assert [f['check'] for f in soak_found if f['check'] == 'dmon.memory_growth'] == ['dmon.memory_growth']
    assert _dmon_checks.judged_without(lambda b: ([], {'not_measured': 'x'}), {}, {'fb_growth_max_mb': 'why'}) == ([], {'not_measured': 'x'})


def test_the_figures_reach_every_report_format_and_the_export():
    report = json.loads(_read('validate-run21_hog_report.json'))
    md, html, prom = _report.render_markdown(report), _report.render_html(report), _prom.render(report)
    assert 'gpu0 306.4 TFLOP/s bf16, 1968.0 GB/s copy' in md and 'gpu0 306.4 TFLOP/s bf16, 1968.0 GB/s copy' in html
    assert html.count('class="under"') >= 2 and 'device memory copy, each GPU alone' in html
    assert re.search(r'xuanwu_gpu_single_bf16_tflops\{[^}]*gpu="0"[^}]*\} 306.4', prom)
    assert re.search(r'xuanwu_gpu_single_bf16_tflops_floor\{[^}]*\} 570', prom)
    junit = _report.render_junit(report, {})
    assert 'name="gpu_single.compute_low"><failure' in junit


def test_every_real_output_is_one_result_line_of_the_documented_shape():
    for path in glob.glob(os.path.join(REAL, '*gpu_single*.txt')):
        result = _result(open(path).read())
        assert set(result) >= {'ok', 'gpus', 'device', 'cuda_available', 'device_count', 'error'}, path
        assert all(set(g) >= {'index', 'bf16_tflops', 'membw_gbps', 'error'} for g in result['gpus'])


def _two(tflops):
    """A healthy real result made a two-GPU node's: the GPUs' bf16 figures as given, their copies as measured."""
    result = _result(_read('gpu_single_healthy1.txt'))
    result.update(gpus=[dict(result['gpus'][0], index=i, bf16_tflops=v) for i, v in enumerate(tflops)], device_count=2)
    return '%s %s\n' % (_workloads.RESULT_TAG, json.dumps(result))


def test_on_a_two_gpu_node_the_slower_gpu_is_compared_with_the_faster():
    """With two GPUs the median is their mean (and the slower one is never below the slower one): the slower is named
    when it is more than max_spread_pct under the faster (the shipped h200x2-nvlink profile: 600 against 690 TFLOP/s)."""
    found = _judged(_two([690.0, 600.0]), 'h200x2-nvlink')
    assert [(f['check'], f['component']) for f in found] == [('workload.gpu_outlier', 'gpu1')], found
    assert "below the faster of its node's 2 GPUs (690.0 TFLOP/s)" in found[0]['message'], found[0]['message']
    assert _judged(_two([690.0, 650.0]), 'h200x2-nvlink') == []          # 5.8 % apart: within the spread


@pytest.mark.parametrize('profile', ['h200x1', 'h200x2-nvlink', 'h200x4-nvlink', 'h200-sxm-8', 'h100x1', 'h100-sxm-8'])
def test_the_shipped_floors_hold_at_their_boundary(profile):
    """Just under the sourced floor fails, at the floor passes: a floor lowered by 10 % lets the first through."""
    floors = _collection.resolve_profile(profile)[0]['workloads']['gpu_single']
    result = _result(_read('gpu_single_healthy1.txt'))
    count = int(_collection.resolve_profile(profile)[0]['gpu']['count'])

    def run(tflops, gbps):
        gpus = [dict(result['gpus'][0], index=i, bf16_tflops=tflops, membw_gbps=gbps) for i in range(count)]
        text = '%s %s\n' % (_workloads.RESULT_TAG, json.dumps(dict(result, gpus=gpus, device_count=count)))
        return sorted(set(f['check'] for f in _judged(text, profile)))
    low_compute, low_membw = floors['min_bf16_tflops'] * 0.97, floors['min_membw_gbps'] * 0.97
    assert run(floors['min_bf16_tflops'], floors['min_membw_gbps']) == []
    assert run(low_compute, floors['min_membw_gbps']) == ['workload.gpu_compute_low']
    assert run(floors['min_bf16_tflops'], low_membw) == ['workload.gpu_membw_low']
