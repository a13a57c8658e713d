"""rccl-tests outputs (the nccl-tests format, real public 8x MI300X runs of tests/fixtures/rccl-tests/) judged
against the mi300x-8 profile's all_reduce curve: the healthy runs pass, the same run made slower fails."""
import os
import re

import pytest
import yaml

from nccl_text import scaled
from ansible_collections.xuanwu.cluster.plugins.module_utils import _workloads

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RCCL = os.path.join(ROOT, 'tests', 'fixtures', 'rccl-tests')
SINGLE_NODE = 'rccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g1_np8_mi300x8.txt'
TWO_NODES = 'rccl-tests_all_reduce_perf_-b8_-e16G_-f2_-g1_np16_mi300x8x2.txt'
GIB8 = 8 << 30


def mi300x_profile():
    with open(os.path.join(ROOT, 'profiles', 'mi300x-8.yml')) as handle:
        return yaml.safe_load(handle)


def read(name):
    with open(os.path.join(RCCL, name)) as handle:
        return handle.read()


def judge(text, ranks, host='mi300x-node07'):
    run = {'collective': 'all_reduce', 'rc': 0, 'stdout': text, 'expected_ranks': ranks}
    return _workloads.evaluate_nccl_tests(run, mi300x_profile(), host)


@pytest.mark.parametrize('name, ranks', [(SINGLE_NODE, 8), (TWO_NODES, 16)])
def test_healthy_mi300x_runs_pass_the_mi300x_8_floor(name, ranks):
    assert judge(read(name), ranks) == []


def test_a_degraded_mi300x_run_fails_naming_the_host_and_the_size():
    # ~220 GB/s from 8 GiB up (the healthy run printed 315.69 out-of-place, 315.91 in-place)
    findings = judge(scaled(read(SINGLE_NODE), 220.0 / 315.69, min_bytes=GIB8), 8)
    assert [(f['check'], f['severity'], f['component']) for f in findings] == [('collectives.busbw_low', 'fail', 'all_reduce_perf')]
    low = findings[0]
    assert low['host'] == 'mi300x-node07' and 219.0 < low['measured'] < 221.0 and low['expected'] == 282.6
    assert re.search(r'\b8 GiB\b', low['message']), low['message']


def test_the_wrong_rank_count_is_caught_on_an_rccl_tests_run():
    findings = judge(read(TWO_NODES), 8)
    assert [(f['check'], f['measured']) for f in findings] == [('collectives.rank_count', '16 rank(s)')]
