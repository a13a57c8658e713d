"""xuanwu-health on the real 1x H100 host (tests/fixtures/hardware/h100x1-health/, bench/gpu-host-health.sh): what its
probes read there, replayed through the watch, gives the live verdicts; the live figures meet the goal of issue 40
(at most 2 s wall and 1 s CPU per check on one GPU)."""
import json
import os
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils import _health
from ansible_collections.xuanwu.cluster.tests.unit import test_fault_corpus as corpus

RUN = os.path.join(corpus.ROOT, 'tests', 'fixtures', 'hardware', 'h100x1-health')


def state(name):
    with open(os.path.join(RUN, name)) as handle:
        line = handle.readline().rstrip('\n')
        return line, json.load(handle)


def watch(tmp_path, hygiene='scheduler'):
    profile = corpus.load_profile('h100x1', {'host': {'time': None}})
    return _health.validate_config({'format': 1, 'host': 'gpu-host', 'profile': profile, 'state_dir': str(tmp_path / 's'),
                                    'hygiene': hygiene, 'probe': {'replay_dir': os.path.join(RUN, 'healthy-bundle')}})


def test_the_healthy_capture_replays_to_the_live_verdict(tmp_path):
    live_line, live = state('healthy.txt')
    code, line, doc = _health.run(watch(tmp_path), 'check', fork=False)
    assert (code, doc['findings'], doc['unknown']) == (0, [], [])
    assert live_line.startswith('HEALTHY gpu-host: no finding (check, 13 probes, ')
    assert line.split(' (')[0] == live_line.split(' (')[0]
    assert live['findings'] == [] and live['status'] == 'pass'
    # judged strictly too (GPU processes judged without a scheduler): still nothing
    assert _health.run(watch(tmp_path, 'always'), 'check', fork=False)[2]['findings'] == []


def test_the_live_leftover_was_named_and_only_where_it_applies():
    line, doc = state('leftover-epilog.txt')
    assert line.startswith('UNHEALTHY gpu-host: gpu.process gpu0: pid 795 /opt/torch/.venv/bin/python bench/gpu_load.py hold')
    assert [(f['check'], f['component']) for f in doc['failing']] == [('gpu.process', 'gpu0')]
    line, doc = state('leftover-check.txt')
    assert line.startswith('HEALTHY') and ('gpu.process', 'gpu0') in [(n['check'], n['component']) for n in doc['not_applicable']]
    with open(os.path.join(RUN, 'after-epilog.txt')) as handle:
        assert handle.read().startswith('HEALTHY gpu-host: no finding (epilog, 4 probes')


def test_under_full_load_at_the_power_cap_every_check_passed():
    line, doc = state('load-check.txt')
    assert line.startswith('HEALTHY') and doc['failing'] == []
    with open(os.path.join(RUN, 'load-smi.txt')) as handle:
        rows = handle.read().splitlines()[1:]
    assert all('0x0000000000000004' in row and '100 %' in row for row in rows)    # SW power cap only, fully busy
    with open(os.path.join(RUN, 'bench-load.json')) as handle:
        runs = json.load(handle)['runs']
    assert len(runs) == 20 and all(r['rc'] == 0 for r in runs)


def test_a_hung_nvidia_smi_was_unknown_within_the_probe_timeout():
    line, doc = state('hung.txt')
    assert line.startswith('UNKNOWN gpu-host: probe ')
    assert doc['status'] == 'unknown' and doc['exit_code'] == 2
    assert doc['seconds'] < 12


def test_the_goal_one_gpu_2_s_wall_1_s_cpu():
    for name in ('bench-idle.json', 'bench-load.json'):
        with open(os.path.join(RUN, name)) as handle:
            figures = json.load(handle)
        assert figures['wall_s']['median'] <= 2.0 and figures['cpu_s']['median'] <= 1.0, (name, figures)
        assert figures['wall_s']['max'] <= 2.0, name


ROLE = os.path.join(RUN, 'role')


def test_the_role_installed_it_on_the_real_host_idempotent_and_in_check_mode():
    with open(os.path.join(ROLE, 'summary.txt')) as handle:
        summary = handle.read()
    recaps = dict(re.findall(r'role (check-first|run1|run2|check) rc=0 localhost : ok=\d+ (changed=\d+) unreachable=0 failed=0',
                             summary))
    assert recaps == {'check-first': 'changed=6', 'run1': 'changed=7', 'run2': 'changed=0', 'check': 'changed=0'}
    assert 'VALID /etc/xuanwu/health.json: host localhost' in summary
    line, doc = state(os.path.join('role', 'healthy.txt'))
    assert line.startswith('HEALTHY localhost: no finding (check, 13 probes') and doc['findings'] == []
    with open(os.path.join(ROLE, 'bench-idle.json')) as handle:
        figures = json.load(handle)
    assert figures['wall_s']['max'] <= 2.0 and figures['cpu_s']['max'] <= 1.0
    assert all(r['rc'] == 0 for r in figures['runs']) and len(figures['runs']) == 20


def test_the_hung_tool_is_named_first_once_listed_in_the_order_the_probes_ran():
    line, doc = state(os.path.join('role', 'hung.txt'))
    assert line == 'UNKNOWN localhost: probe nvidia_query_gpu did not answer in 10 s [+3 more]'
    assert [u['probe'] for u in doc['unknown']][0] == 'nvidia_query_gpu'
    assert all(u['error'].startswith('not started: nvidia-smi did not answer earlier') for u in doc['unknown'][1:])
    assert doc['seconds'] < 12 and doc['exit_code'] == 2
