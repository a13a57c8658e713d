"""The GPU's own maximum operating temperature (nvidia-smi -q -x) as the heat bound of the dmon samples where the
profile sets none: parsed from real H200 captures (the T.Limit form) and from the absolute form older GPUs print,
carried into the probe facts, and applied by the judge only where the profile is silent."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _judge, _parse_nvidia, _probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import merge_profile, validate_profile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware')


def _read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


def _xml(temperature):
    """A one-GPU ``nvidia-smi -q -x`` document with this <temperature> block (the element names of NVIDIA's schema)."""
    return ('<?xml version="1.0" ?><nvidia_smi_log><driver_version>535.104.05</driver_version><gpu id="00000000:07:00.0">'
            '<product_name>NVIDIA A100-SXM4-80GB</product_name><temperature>%s</temperature></gpu></nvidia_smi_log>'
            % temperature)


@pytest.mark.parametrize('capture, gpus', [('h200x1-bundle/nvidia_smi_xml.txt', 1), ('h200x4-nvlink/nvidia-smi_-q_-x.xml', 4)])
def test_every_real_h200_reports_87_c_through_its_t_limit(capture, gpus):
    parsed = _parse_nvidia.parse_smi_xml(_read(HW, capture))
    assert [g['max_operating_temp_c'] for g in parsed['gpus'].values()] == [87] * gpus


@pytest.mark.parametrize('block, expected', [
    # the absolute form (Volta/Ampere drivers): GPU Max Operating Temp
    ('<gpu_temp>34 C</gpu_temp><gpu_temp_max_threshold>92 C</gpu_temp_max_threshold>'
     '<gpu_temp_slow_threshold>89 C</gpu_temp_slow_threshold><gpu_temp_max_gpu_threshold>85 C</gpu_temp_max_gpu_threshold>', 85),
    # T.Limit form, as on the H200s: 41 C now, 46 C of headroom, the maximum at T.Limit itself
    ('<gpu_temp>41 C</gpu_temp><gpu_temp_tlimit>46 C</gpu_temp_tlimit>'
     '<gpu_temp_max_gpu_tlimit_threshold>0 C</gpu_temp_max_gpu_tlimit_threshold>', 87),
    # a threshold above T.Limit is printed negative (slowdown at -2 C: 2 C above it)
    ('<gpu_temp>41 C</gpu_temp><gpu_temp_tlimit>46 C</gpu_temp_tlimit>'
     '<gpu_temp_max_gpu_tlimit_threshold>-2 C</gpu_temp_max_gpu_tlimit_threshold>', 89),
    # the absolute value N/A: the T.Limit readings decide
    ('<gpu_temp>40 C</gpu_temp><gpu_temp_max_gpu_threshold>N/A</gpu_temp_max_gpu_threshold><gpu_temp_tlimit>47 C</gpu_temp_tlimit>'
     '<gpu_temp_max_gpu_tlimit_threshold>0 C</gpu_temp_max_gpu_tlimit_threshold>', 87),
    # nothing the driver says: no bound (a consumer board prints N/A)
    ('<gpu_temp>45 C</gpu_temp><gpu_temp_max_gpu_threshold>N/A</gpu_temp_max_gpu_threshold>', None),
    ('<gpu_temp>N/A</gpu_temp><gpu_temp_tlimit>46 C</gpu_temp_tlimit><gpu_temp_max_gpu_tlimit_threshold>0 C</gpu_temp_max_gpu_tlimit_threshold>', None),
    ('', None),
])
def test_the_maximum_operating_temperature_in_either_form(block, expected):
    gpus = list(_parse_nvidia.parse_smi_xml(_xml(block))['gpus'].values())
    assert len(gpus) == 1 and gpus[0]['max_operating_temp_c'] == expected


def test_the_probe_facts_carry_it_and_the_host_bound_is_the_highest_its_gpus_report():
    facts = _probe.probe(_probe.ReplayRunner(os.path.join(HW, 'h200x1-bundle')))
    assert [d['max_operating_temp_c'] for d in facts['gpu']['devices']] == [87]
    assert _judge.device_bounds(facts) == {'gtemp_max_c': 87}
    # one GPU read while heating up comes out low (the 2x H200 busy capture: 45 C + 39 C of headroom = 84): the highest
    assert _judge.device_bounds({'gpu': {'devices': [{'max_operating_temp_c': 84}, {'max_operating_temp_c': 87}]}}) == {'gtemp_max_c': 87}
    for nothing in ({}, None, 'x', {'gpu': None}, {'gpu': {'devices': [{'max_operating_temp_c': None}, {}, 'x']}},
                    {'gpu': {'devices': [{'max_operating_temp_c': True}, {'max_operating_temp_c': 0}]}}):
        assert _judge.device_bounds(nothing) == {}


def _dmon(max_gtemp):
    """Three loaded samples of gpu0 (dmon -s pucvmet), the last at this temperature."""
    head = ('# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk  pviol  tviol     fb   bar1'
            '   ccpm  sbecc  dbecc    pci  rxpci  txpci\n'
            '# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz      %   bool     MB     MB'
            '     MB   errs   errs   errs   MB/s   MB/s\n')
    row = ('    0    690     %d     60    100     60      0      0      0      0   3201   1545    100      0  20000      4'
           '      0      0      0      0      0      0\n')
    rows = ''.join(row % t for t in (60, 70, max_gtemp))
    return {'command': 'nvidia-smi dmon -s pucvmet -d 1', 'interval_s': 1, 'stdout': head + rows}


def _profile(monitoring):
    return merge_profile(validate_profile({'schema_version': 1, 'name': 'silent', 'monitoring': monitoring}, 'silent.yml'), {})


def test_a_profile_without_a_heat_bound_judges_against_the_gpus_own():
    judge = _judge.Judge(_profile({}))
    found, entry = judge.dmon(_dmon(90), 'node1', 'soak', device={'gtemp_max_c': 87})
    hot = [f for f in found if f['check'] == 'dmon.temperature']
    assert [(f['component'], f['measured']) for f in hot] == [('gpu0', 'gtemp max 90 C')]
    assert hot[0]['expected'] == "gtemp <= 87 C (the GPU's maximum operating temperature, as its driver reports it; the profile sets no monitoring.gtemp_max_c)"
    assert entry['bounds_from_device'] == {'gtemp_max_c': 87}
    # at the bound, and a healthy soak: nothing
    assert [f for f in judge.dmon(_dmon(87), 'node1', 'soak', device={'gtemp_max_c': 87})[0] if f['check'] == 'dmon.temperature'] == []
    # no device bound either: not judged, as before
    found, entry = judge.dmon(_dmon(90), 'node1', 'soak')
    assert [f for f in found if f['check'] == 'dmon.temperature'] == [] and 'bounds_from_device' not in entry


def test_the_profiles_bound_wins_and_the_site_can_still_silence_it():
    found, entry = _judge.Judge(_profile({'gtemp_max_c': 80})).dmon(_dmon(85), 'node1', 'soak', device={'gtemp_max_c': 87})
    assert [(f['check'], f['expected']) for f in found if f['check'] == 'dmon.temperature'] == [('dmon.temperature', 'gtemp <= 80 C')]
    assert 'bounds_from_device' not in entry
    quiet = merge_profile(validate_profile({'schema_version': 1, 'name': 'quiet', 'checks': {'disable': ['dmon.temperature']}},
                                           'quiet.yml'), {})
    found, _entry = _judge.Judge(quiet).dmon(_dmon(95), 'node1', 'soak', device={'gtemp_max_c': 87})
    assert [f for f in found if f['check'] == 'dmon.temperature'] == []


@pytest.mark.parametrize('run', [13, 14, 15])
def test_the_real_h200_soaks_stay_below_the_gpus_own_bound(run):
    # the live 1x H200 runs (bench/gpu-host-validate.md): at most 66 C against the 87 C the GPU reports
    dmon = {'command': 'nvidia-smi dmon -s pucvmet -d 1', 'interval_s': 1,
            'stdout': _read(HW, 'h200x1-validate', 'run%d' % run, 'dmon_soak.txt')}
    found, entry = _judge.Judge(_profile({})).dmon(dmon, 'gpu-host', 'soak', device={'gtemp_max_c': 87})
    assert [f for f in found if f['check'] == 'dmon.temperature'] == [] and entry['bounds_from_device'] == {'gtemp_max_c': 87}
