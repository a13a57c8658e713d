"""Every workload finding goes through the one judge: a site's checks.severity and checks.disable apply to each check
family that xuanwu.cluster.workload_check emits (collectives, workload, InfiniBand counters, container smoke, SSH
mesh, the dmon samples and clock event reasons). For each family: a run that fails by default, then the same run
under an override to warn, to info, and switched off."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _judge

HERE = os.path.dirname(os.path.abspath(__file__))
DMON = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures', 'dmon'))


def _read(name):
    with open(os.path.join(DMON, name)) as handle:
        return handle.read()


def _hw_slowdown():
    lines = _read('h200x1_clock-events_bf16-matmul.csv').replace('0x0000000000000004', '0x000000000000000c')
    return {'command': 'nvidia-smi dmon -s pucvmet -d 1', 'interval_s': 1, 'stdout': _read('h200x2_dmon_busy.txt'),
            'clock_events': {'command': 'nvidia-smi --query-gpu=...', 'stdout': lines}}


def _profile(checks=None):
    profile = {'schema_version': 1, 'name': 'p', 'gpu': {'vendor': 'nvidia', 'count': 2},
               'infiniband': {'ports_min': 1, 'counters_growth_max': {'symbol_error': 0}},
               'monitoring': {'sustained_sm_clock_min_mhz': 1200}}
    if checks:
        profile['checks'] = checks
    return profile


# (family glob, how to judge a failing run of it: Judge -> findings)
FAMILIES = [
    ('collectives.*', lambda judge: judge.workload('nccl_tests', {'collective': 'all_reduce', 'stdout': '', 'exit_code': 1,
                                                                  'output_tail': 'Segmentation fault'}, 'n1')),
    ('workload.*', lambda judge: judge.workload('ddp_smoke', {'stdout': 'XUANWU_RESULT {"ok": false, "error": "NCCL timeout"}',
                                                              'exit_code': 1}, 'n1')),
    ('workload.ib_*', lambda judge: judge.workload('link_counters', {'before': {}, 'after': {}}, 'n1')),
    ('container.*', lambda judge: judge.workload('container_smoke', {'engine_missing': True, 'engine_wanted': 'podman',
                                                                     'expected': {'count': 2}}, 'n1')),
    ('mesh.*', lambda judge: judge.workload('mesh', {'findings': [{
        'host': 'n1', 'check': 'mesh.mtu', 'component': 'eth0', 'severity': 'fail', 'measured': 1500, 'expected': 9000,
        'message': 'm', 'remediation': 'r'}]}, 'n1')),
    ('dmon.*', lambda judge: judge.dmon(_hw_slowdown(), 'n1', 'soak')[0]),
]


@pytest.mark.parametrize('family, judged', FAMILIES, ids=[f[0] for f in FAMILIES])
def test_site_overrides_apply_to_every_workload_family(family, judged):
    prefix = family.split('*')[0]
    found = [f for f in judged(_judge.Judge(_profile())) if f['check'].startswith(prefix)]
    assert found, 'the run must give a finding of %s by default' % family
    assert any(f['severity'] in ('fail', 'warn') for f in found)
    for severity in ('warn', 'info'):
        lowered = [f for f in judged(_judge.Judge(_profile({'severity': {family: severity}}))) if f['check'].startswith(prefix)]
        assert [f['check'] for f in lowered] == [f['check'] for f in found]
        assert set(f['severity'] for f in lowered) == {severity}
    assert not [f for f in judged(_judge.Judge(_profile({'disable': [family]}))) if f['check'].startswith(prefix)]


def test_a_dmon_check_by_its_own_id():
    judge = _judge.Judge(_profile({'severity': {'dmon.throttle': 'warn'}}))
    found, entry = judge.dmon(_hw_slowdown(), 'n1', 'soak')
    assert [(f['check'], f['severity']) for f in found] == [('dmon.throttle', 'warn')]
    assert entry['clock_events']['gpus']['gpu0']['reasons']['hw_slowdown'] == 45


def test_the_profile_bounds_and_classes_reach_the_dmon_checks():
    profile = _profile()
    profile['gpu']['clock_event_reasons'] = {'fail': ['hw_thermal_slowdown'], 'warn': ['hw_slowdown']}
    found, _entry = _judge.Judge(profile).dmon(_hw_slowdown(), 'n1')
    assert [(f['check'], f['severity']) for f in found] == [('dmon.throttle_warn', 'warn')]
    profile['monitoring'] = {'sustained_sm_clock_min_mhz': 2000}
    found, _entry = _judge.Judge(profile).dmon(_hw_slowdown(), 'n1')
    assert sorted(f['check'] for f in found) == ['dmon.sustained_clock', 'dmon.sustained_clock', 'dmon.throttle_warn']
