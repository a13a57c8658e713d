"""Throttling judged by cause: the clock event reasons sampled beside dmon (_parse_clock_events, _dmon_checks).

The SW power cap under full load is how a healthy GPU runs and never fails; HW slowdown, HW thermal slowdown and
HW power brake fail, SW thermal slowdown warns (the classes of the profile's gpu.clock_event_reasons). The faults
are derived from tests/fixtures/dmon/h200x1_clock-events_bf16-matmul.csv (a real capture) by setting a reason's bit in
loaded samples; the healthy runs replay the real 2x H200 dmon captures."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _dmon_checks as dmon
from ansible_collections.xuanwu.cluster.plugins.module_utils import _dmon_sampler
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError, ProfileError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_clock_events import (
    LEGACY_REASONS_FIELD, QUERY_FIELDS, parse_clock_events, reasons_of,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import validate_profile

HERE = os.path.dirname(os.path.abspath(__file__))
DMON = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures', 'dmon'))
EVENTS = 'h200x1_clock-events_bf16-matmul.csv'
H200 = {'sustained_sm_clock_min_mhz': 1200}
COMMAND = ('nvidia-smi --query-gpu=index,clocks_event_reasons.active,clocks.sm,power.draw,power.limit,temperature.gpu '
           '--format=csv,noheader,nounits -lms 1000')


def _read(name):
    with open(os.path.join(DMON, name)) as handle:
        return handle.read()


def _derived(bit, samples, clock=None, gpu=0):
    """The real capture with ``bit`` set in the loaded samples numbered ``samples`` (0-based, among the lines of
    GPU ``gpu`` that have 0x4), their SM clock set to ``clock`` when given."""
    out, seen = [], 0
    for line in _read(EVENTS).splitlines():
        fields = line.split(', ')
        if fields[0] == str(gpu) and fields[1] == '0x0000000000000004':
            if seen in samples:
                fields[1] = '0x%016x' % (0x4 | bit)
                if clock is not None:
                    fields[2] = str(clock)
            seen += 1
        out.append(', '.join(fields))
    return '\n'.join(out) + '\n'


def _run(dmon_name, events_text, **events):
    entry = dict({'command': COMMAND, 'interval_s': 1, 'stdout': events_text, 'exit_code': -15,
                  'fields': list(QUERY_FIELDS)}, **events)
    return {'command': 'nvidia-smi dmon -s pucvmet -d 1', 'interval_s': 1, 'stdout': _read(dmon_name), 'clock_events': entry}


# --- the parser ----------------------------------------------------------------------------------------------------

def test_parse_the_real_capture():
    parsed = parse_clock_events(_read(EVENTS))
    assert parsed['samples'] == 61 and parsed['errors'] == [] and [g['index'] for g in parsed['gpus']] == [0]
    loaded = parsed['gpus'][0]['samples'][15]
    assert loaded == {'index': 0, 'reasons_mask': 4, 'reasons': ['sw_power_cap'], 'sm_clock_mhz': 1485, 'power_w': 691.78,
                      'power_limit_w': 700.0, 'gtemp_c': 62}
    assert parsed['gpus'][0]['samples'][0]['reasons'] == ['gpu_idle']


@pytest.mark.parametrize('mask, names', [
    (0, []), (0x4, ['sw_power_cap']), (0x8, ['hw_slowdown']), (0x40, ['hw_thermal_slowdown']),
    (0x80, ['hw_power_brake_slowdown']), (0x20, ['sw_thermal_slowdown']), (0x1 | 0x100, ['gpu_idle', 'display_clocks_setting']),
    (0x4 | 0x200, ['sw_power_cap', 'unknown_0x200']),
])
def test_reason_bits_are_nvmls(mask, names):
    assert reasons_of(mask) == names


def test_parse_a_header_not_available_values_and_the_older_field_name():
    fields = [LEGACY_REASONS_FIELD if f == 'clocks_event_reasons.active' else f for f in QUERY_FIELDS]
    text = ('index, clocks_throttle_reasons.active, clocks.sm [MHz], power.draw [W], power.limit [W], temperature.gpu\n'
            '0, 0x0000000000000004, 1410, [N/A], [Not Supported], 51\n')
    sample = parse_clock_events(text, fields)['gpus'][0]['samples'][0]
    assert sample['reasons'] == ['sw_power_cap'] and sample['power_w'] is None and sample['power_limit_w'] is None


def test_a_line_that_cannot_be_read_is_kept_as_an_error():
    parsed = parse_clock_events('0, 0x4, 1500, 690.1, 700.00, 50\n0, 4, 1500, 690.1, 700.00, 50\n1, 0x4, 1500\n0, 0x4, 1500, 6')
    assert parsed['samples'] == 1
    assert [e['error'] for e in parsed['errors']] == [
        "clocks_event_reasons.active is not a hexadecimal bitmask: '4'", '3 value(s), the query has 6 field(s)',
        '4 value(s), the query has 6 field(s)']


@pytest.mark.parametrize('text, fields, message', [
    ('Field "clocks_event_reasons.active" is not a valid field to query.\n', None, 'no line is a sample'),
    ('0, 0x4\n', ['index', 'clocks.sm'], 'the query has no clocks_event_reasons.active'),
    ('0, 0x4\n', ['index', 'clocks_event_reasons.active', 'fan.speed'], 'unknown field fan.speed'),
    (b'0, 0x4', None, 'expected text, got bytes'),
])
def test_what_is_not_a_sampling_is_a_parse_error(text, fields, message):
    with pytest.raises(ParseError) as err:
        parse_clock_events(text, fields)
    assert message in str(err.value)


def test_the_sampler_command_and_the_fields_of_a_replayed_command():
    assert _dmon_sampler.clock_events_command('/usr/bin/nvidia-smi', 2) == [
        '/usr/bin/nvidia-smi', '--query-gpu=index,clocks_event_reasons.active,clocks.sm,power.draw,power.limit,temperature.gpu',
        '--format=csv,noheader,nounits', '-lms', '2000']
    assert _dmon_sampler.clock_events_command('nvidia-smi', 1, LEGACY_REASONS_FIELD)[1].startswith(
        '--query-gpu=index,clocks_throttle_reasons.active,')
    assert _dmon_sampler.fields_of(COMMAND) == list(QUERY_FIELDS)
    assert _dmon_sampler.reasons_field(lambda argv: (0, '0x4', ''), 'nvidia-smi') == 'clocks_event_reasons.active'
    assert _dmon_sampler.reasons_field(lambda argv: (2, '', 'not a valid field'), 'nvidia-smi') == LEGACY_REASONS_FIELD


# --- the judgement -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('dmon_name', ['h200x2_dmon_busy.txt', 'h200x2_dmon_busy-derived-throttle-gpu1.txt',
                                       'h200x1_dmon_-s_pucvmet_-d_1_-o_T_during-validate.txt'])
def test_a_power_capped_healthy_gpu_never_fails(dmon_name):
    found, entry = dmon.judge_run(_run(dmon_name, _read(EVENTS)), H200, host='n1', workload='soak')
    assert found == []
    gpu0 = entry['clock_events']['gpus']['gpu0']
    assert gpu0['reasons'] == {'gpu_idle': 13, 'sw_power_cap': 45} and gpu0['sm_clock_mhz']['median'] == 1470
    assert entry['clock_events']['samples'] == 61 and 'not_judged' not in entry
    # the real 2x H200 captures without clock events and with the old counter defaults gone: no finding either
    assert dmon.judge_run(dict(_run(dmon_name, ''), clock_events=None), H200, host='n1')[0] == []


@pytest.mark.parametrize('bit, reason', [(0x8, 'hw_slowdown'), (0x40, 'hw_thermal_slowdown'), (0x80, 'hw_power_brake_slowdown')])
def test_each_hardware_reason_fails(bit, reason):
    found, _entry = dmon.judge_run(_run('h200x2_dmon_busy.txt', _derived(bit, range(10, 21), clock=990)), H200, host='n1',
                                   workload='soak')
    assert [(f['check'], f['component'], f['severity']) for f in found] == [('dmon.throttle', 'gpu0', 'fail')]
    assert found[0]['measured'] == '%s in 11 of 61 samples (SM clock 990 MHz then)' % reason
    assert found[0]['message'].startswith('during soak: gpu0: the driver held the clocks down')


def test_sw_thermal_slowdown_warns_and_a_hardware_reason_names_both():
    found, _entry = dmon.judge_run(_run('h200x2_dmon_busy.txt', _derived(0x20, range(5, 9))), H200, host='n1')
    assert [(f['check'], f['severity'], f['measured']) for f in found] == [
        ('dmon.throttle_warn', 'warn', 'sw_thermal_slowdown in 4 of 61 samples (SM clock 1455-1485 MHz then)')]
    found, _entry = dmon.judge_run(_run('h200x2_dmon_busy.txt', _derived(0x20 | 0x40, range(5, 9))), H200, host='n1')
    assert [(f['check'], f['measured']) for f in found] == [
        ('dmon.throttle', 'hw_thermal_slowdown in 4 of 61 samples, sw_thermal_slowdown in 4 of 61 samples (SM clock 1455-1485 MHz then)')]


def test_a_single_sample_is_a_transition_not_a_fault():
    text = _derived(0x8, [0])
    assert dmon.judge_run(_run('h200x2_dmon_busy.txt', text), H200, host='n1')[0] == []
    found = dmon.judge_run(_run('h200x2_dmon_busy.txt', text), dict(H200, clock_event_min_samples=1), host='n1')[0]
    assert [f['check'] for f in found] == ['dmon.throttle']


def test_the_profile_classes_decide():
    text = _derived(0x20, range(5, 9))
    found = dmon.judge_run(_run('h200x2_dmon_busy.txt', text), H200, host='n1',
                           classes={'fail': ['hw_slowdown', 'sw_thermal_slowdown'], 'warn': []})[0]
    assert [(f['check'], f['severity']) for f in found] == [('dmon.throttle', 'fail')]
    with pytest.raises(ProfileError) as err:
        dmon.judge_run(_run('h200x2_dmon_busy.txt', text), H200, classes={'fail': 'hw_slowdown'})
    assert 'gpu.clock_event_reasons: fail: must be a list of reason names' in str(err.value)


def test_default_classes_are_the_profiles():
    reasons = validate_profile({'schema_version': 1, 'name': 'p', 'gpu': {'vendor': 'nvidia', 'count': 1}})['gpu']['clock_event_reasons']
    assert reasons == dmon.DEFAULT_REASON_CLASSES


def test_the_sustained_clock_fails_below_the_floor():
    found = dmon.judge_run(_run('h200x2_dmon_busy-derived-throttle-gpu1.txt', _read(EVENTS)),
                           {'sustained_sm_clock_min_mhz': 1500}, host='n1')[0]
    assert [(f['check'], f['component'], f['measured']) for f in found] == [
        ('dmon.sustained_clock', 'gpu1', 'median pclk 1410 MHz under load (lowest 1410 MHz)')]


def test_without_a_sourced_floor_the_sustained_clock_is_not_judged_and_said_so():
    _found, entry = dmon.judge_run(_run('h200x2_dmon_busy.txt', _read(EVENTS)), None, host='n1')
    assert entry['not_judged'] == ['dmon: dmon.sustained_clock not checked: the profile sets no '
                                   'monitoring.sustained_sm_clock_min_mhz (the SM clock healthy GPUs of this model sustain '
                                   'at their power limit)']


@pytest.mark.parametrize('events, reason', [
    ({'not_measured': 'nvidia-smi --query-gpu=... exited 2 before the workload ended: Field is not valid'},
     'nvidia-smi --query-gpu=... exited 2 before the workload ended: Field is not valid'),
    ({'stdout': ''}, 'the clock event sampling printed nothing (the workload ended before its first sample)'),
])
def test_clock_events_not_measured(events, reason):
    run = _run('h200x2_dmon_busy.txt', '', **events)
    found, entry = dmon.judge_run(run, H200, host='n1')
    assert found == [] and entry['clock_events'] == {'command': COMMAND, 'not_measured': reason}
    assert any(reason in m for m in entry['not_judged'])
    found, _entry = dmon.judge_run(run, H200, host='n1', required=True)
    assert [(f['check'], f['component']) for f in found] == [('dmon.not_measured', 'dmon')]


def test_clock_events_that_cannot_be_read_are_unparsable_findings():
    found, entry = dmon.judge_run(_run('h200x2_dmon_busy.txt', 'Failed to initialize NVML\n'), H200, host='n1')
    assert [(f['check'], f['component']) for f in found] == [('dmon.unparsable', 'clock events')]
    assert entry['clock_events']['not_measured'].startswith('unparsable: no line is a sample')
    found, _entry = dmon.judge_run(_run('h200x2_dmon_busy.txt', _read(EVENTS) + '0, 0x4, 15'), H200, host='n1')
    assert [(f['check'], f['measured']) for f in found] == [('dmon.unparsable', '0, 0x4, 15')]


def test_profile_monitoring_keys():
    monitoring = validate_profile({'schema_version': 1, 'name': 'p', 'monitoring': {'sustained_sm_clock_min_mhz': 1200}})['monitoring']
    assert monitoring['sustained_sm_clock_min_mhz'] == 1200 and monitoring['clock_event_min_samples'] == 2
    assert monitoring['clock_min_fraction'] is None and monitoring['violation_max_pct'] is None
    with pytest.raises(ProfileError) as err:
        validate_profile({'schema_version': 1, 'name': 'p', 'monitoring': {'sustained_sm_clock_min_mhz': 0}})
    assert 'monitoring.sustained_sm_clock_min_mhz' in str(err.value)


@pytest.mark.parametrize('profile', ['h200x2-nvlink.yml', 'h200x4-nvlink.yml', 'h200-sxm-8.yml'])
def test_the_shipped_h200_profiles_pass_a_power_capped_gpu_and_fail_a_hardware_slowdown(profile):
    from ansible_collections.xuanwu.cluster.plugins.module_utils._judge import Judge
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
    judge = Judge(_collection.resolve_profile(profile[:-len('.yml')])[0])
    # pclk 1410 MHz and pviol 38 under load with the SW power cap: how a healthy H200 runs at 700 W
    found, entry = judge.dmon(_run('h200x2_dmon_busy-derived-throttle-gpu1.txt', _read(EVENTS)), 'n1', 'soak')
    assert found == [] and 'not_judged' not in entry
    found, _entry = judge.dmon(_run('h200x2_dmon_busy.txt', _derived(0x80, range(3, 9), clock=990)), 'n1', 'soak')
    assert [(f['check'], f['severity']) for f in found] == [('dmon.throttle', 'fail')]
