"""The dmon checks (_dmon_checks): summaries of the real captures and the findings of the derived faults.
Each case: a dmon output under tests/fixtures/dmon/, the bounds, and exactly the findings it must give."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _dmon_checks as dmon
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.module_utils._findings import FIELDS
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_dmon import parse_dmon
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import validate_profile

HERE = os.path.dirname(os.path.abspath(__file__))
DMON = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures', 'dmon'))
TEMPS = {'gtemp_max_c': 85, 'mtemp_max_c': 95}
# the H200 profiles' sustained clock (profiles/h200*.yml): a 700 W H200 under full bf16 load ran at 1410-1605 MHz
H200 = {'sustained_sm_clock_min_mhz': 1200}
# the counters a site may still ask for: a lowest clock under 0.9 x the reference, any pviol/tviol
OPT_IN = {'clock_min_fraction': 0.9, 'violation_max_pct': 0}
LOAD_NOT_MEASURED = ('dmon.not_measured', 'warn', 'samples under load (dmon.sustained_clock, dmon.memory_growth)')


def _summary(name, **kwargs):
    with open(os.path.join(DMON, name)) as handle:
        return dmon.summarise(parse_dmon(handle.read()), **kwargs)


def _text_summary(text):
    return dmon.summarise(parse_dmon(text))


CASES = [
    # (fixture, bounds, {component: [(check, severity, expected)]})
    ('h200x2_dmon_busy.txt', TEMPS, {}),
    ('h200x2_dmon_busy.txt', None, {}),
    ('h200x2_dmon_busy-derived-truncated.txt', TEMPS, {}),
    ('h200x2_dmon_busy.txt', H200, {}),
    # power-capped clocks (1410 MHz, pviol 38) are how a healthy H200 runs at its power limit: no finding by default
    ('h200x2_dmon_busy-derived-throttle-gpu1.txt', TEMPS, {}),
    ('h200x2_dmon_busy-derived-throttle-gpu1.txt', dict(TEMPS, **H200), {}),
    # ... below a sourced sustained clock, or where a site asks for the counters, they fail
    ('h200x2_dmon_busy-derived-throttle-gpu1.txt', {'sustained_sm_clock_min_mhz': 1500}, {'gpu1': [
        ('dmon.sustained_clock', 'fail', 'median pclk >= 1500 MHz (sustained_sm_clock_min_mhz)')]}),
    ('h200x2_dmon_busy-derived-throttle-gpu1.txt', dict(TEMPS, **OPT_IN), {'gpu1': [
        ('dmon.sustained_clock', 'fail', 'pclk >= 1782 MHz (0.9 x 1980 MHz, the highest pclk of the run)'),
        ('dmon.throttle', 'fail', 'pviol/tviol <= 0 (violation_max_pct)')]}),
    ('h200x2_dmon_busy-derived-hot-gpu0.txt', TEMPS, {'gpu0': [
        ('dmon.temperature', 'fail', 'gtemp <= 85 C'), ('dmon.temperature', 'fail', 'mtemp <= 95 C')]}),
    ('h200x2_dmon_busy-derived-hot-gpu0.txt', None, {}),                      # temperatures not asked for
    # a dmon-only capture (no clock event reasons): tviol set while the clock fell 23 % is a thermal slowdown, not
    # only "too hot"; the same tviol with the clock held is a warning
    ('h200x2_dmon_busy-derived-tviol-gpu1.txt', TEMPS, {'gpu1': [
        ('dmon.temperature', 'fail', 'gtemp <= 85 C'),
        ('dmon.throttle', 'fail', 'no thermal violation under load (dmon tviol; the clock event reasons were not sampled)')]}),
    ('h200x2_dmon_busy-derived-tviol-gpu1.txt', {'sm_clock_mhz': 1600}, {'gpu1': [
        ('dmon.throttle_warn', 'warn', 'no thermal violation under load (dmon tviol; the clock event reasons were not sampled)')]}),
    ('h200x2_dmon_busy-derived-tviol-gpu1.txt', {'clock_event_min_samples': 9}, {}),    # fewer samples than asked
    ('h200x2_dmon_busy-derived-memgrow-gpu0.txt', TEMPS, {'gpu0': [
        ('dmon.memory_growth', 'warn', 'growth <= 1024 MB')]}),
    ('h200x2_dmon_busy-derived-memgrow-gpu0.txt', dict(TEMPS, fb_growth_max_mb=8192), {}),
    ('h200x2_dmon_idle.txt', TEMPS, {'gpu0': [LOAD_NOT_MEASURED], 'gpu1': [LOAD_NOT_MEASURED]}),
    ('h200x2_dmon_after.txt', TEMPS, {'gpu0': [LOAD_NOT_MEASURED], 'gpu1': [LOAD_NOT_MEASURED]}),
    ('h200x4_nvidia-smi_dmon_-c_3_-s_pucvmet.txt', None, dict(
        ('gpu%d' % i, [LOAD_NOT_MEASURED]) for i in range(4))),
    # -s mutc: no p (power, temperatures) and no v (violations) columns
    ('public_dmon_-i_0_-s_mutc_-o_TD.txt', TEMPS, {'gpu0': [
        LOAD_NOT_MEASURED, ('dmon.not_measured', 'warn', 'dbecc (dmon.ecc)'), ('dmon.not_measured', 'warn', 'gtemp (dmon.temperature)'),
        ('dmon.not_measured', 'warn', 'mtemp (dmon.temperature)')]}),
    # mtemp, sbecc and dbecc printed as "-" (no sensor, ECC off): requested, so not measured
    ('public_dmon_-s_pucet_-i_0_-o_DT_-d_2.txt', dict(TEMPS, min_load_samples=0), {'gpu0': [
        LOAD_NOT_MEASURED, ('dmon.not_measured', 'warn', 'dbecc (dmon.ecc)'), ('dmon.not_measured', 'warn', 'mtemp (dmon.temperature)')]}),
    # ECC: two double-bit errors on GPU1 under load fail; single-bit ones are counted, checked once bounded
    ('h200x2_dmon_busy-derived-dbecc-gpu1.txt', TEMPS, {'gpu1': [('dmon.ecc', 'fail', 'dbecc <= 0')]}),
    ('h200x2_dmon_busy-derived-dbecc-gpu1.txt', dict(TEMPS, dbecc_max=2, sbecc_max=0), {}),
    # a real validate.yml run on a 1x H200 host (idle, nccl-tests, torch): healthy under load, fb within the bound;
    # a bound under its 46 C is crossed
    ('h200x1_dmon_-s_pucvmet_-d_1_-o_T_during-validate.txt', TEMPS, {}),
    ('h200x1_dmon_-s_pucvmet_-d_1_-o_T_during-validate.txt', dict(TEMPS, gtemp_max_c=45), {'gpu0': [
        ('dmon.temperature', 'fail', 'gtemp <= 45 C')]}),
    # a profile clock: a GPU that ran below it the whole time
    ('h200x2_dmon_busy.txt', {'sm_clock_mhz': 2400, 'clock_min_fraction': 0.9}, dict((gpu, [(
        'dmon.sustained_clock', 'fail', 'pclk >= 2160 MHz (0.9 x 2400 MHz, sm_clock_mhz)')])
        for gpu in ('gpu0', 'gpu1'))),
    ('h200x2_dmon_busy.txt', {'sm_clock_mhz': 2400}, {}),       # a reference clock alone judges nothing
    ('h200x1_dmon_-s_pucvmet_-d_1_-o_T_during-validate.txt', dict(TEMPS, **H200), {}),
]


@pytest.mark.parametrize('name,bounds,expected', CASES, ids=['%s-%d' % (c[0][:-4], i) for i, c in enumerate(CASES)])
def test_findings_of_captures(name, bounds, expected):
    found = dmon.findings(_summary(name), bounds, host='gpu-node01')
    got = {}
    for finding in found:
        assert set(finding) == set(FIELDS)
        assert finding['host'] == 'gpu-node01'
        assert finding['message'] and finding['remediation'] and '{' not in finding['remediation']
        got.setdefault(finding['component'], []).append((finding['check'], finding['severity'], finding['expected']))
    assert dict((k, sorted(v)) for k, v in got.items()) == dict((k, sorted(v)) for k, v in expected.items())


def test_opt_in_counters_name_the_clock_and_the_violation():
    found = dmon.findings(_summary('h200x2_dmon_busy-derived-throttle-gpu1.txt'), OPT_IN, host='h')
    assert sorted(f['measured'] for f in found) == ['pclk 1410 MHz under load (median 1410 MHz)', 'pviol 38']


def test_dmon_violation_counters_name_the_cause_without_clock_event_reasons():
    hot = dmon.findings(_summary('h200x2_dmon_busy-derived-tviol-gpu1.txt'), None, host='h')
    assert [f['measured'] for f in hot] == [
        'tviol set in 8 of 14 samples under load (SM clock 1525 MHz then, 23 % under 1980 MHz, the highest pclk of the run)']
    # a power-capped clock below the profile's floor: the power limit is named as the cause, and is no throttle finding
    capped = dmon.findings(_summary('h200x2_dmon_busy-derived-throttle-gpu1.txt'), {'sustained_sm_clock_min_mhz': 1500},
                           host='h')
    assert [f['check'] for f in capped] == ['dmon.sustained_clock']
    assert capped[0]['message'].endswith("dmon's pviol was 38 % (median under load): the power limit held the clock")
    # the clock event reasons sampled: they decide, the counters do not (no tviol finding from the same dmon output)
    events = {'samples': 1, 'gpus': [], 'errors': []}
    assert dmon.findings(_summary('h200x2_dmon_busy-derived-tviol-gpu1.txt'), None, host='h', events=events) == []


def test_memory_growth_measured():
    found = dmon.findings(_summary('h200x2_dmon_busy-derived-memgrow-gpu0.txt'), None, host='h')
    assert [f['measured'] for f in found] == ['fb 4019 -> 9139 MB (+5120 MB) over 11 samples under load after the warm-up (3 skipped)']


def test_summary_of_the_busy_capture():
    summary = _summary('h200x2_dmon_busy.txt')
    assert sorted(summary['gpus']) == ['gpu0', 'gpu1']
    gpu0 = summary['gpus']['gpu0']
    assert gpu0['samples'] == 15
    assert gpu0['series']['pwr'] == {'min': 93, 'median': 289, 'max': 289, 'n': 15}
    assert gpu0['series']['sm'] == {'min': 0, 'median': 97, 'max': 98, 'n': 15}
    assert gpu0['series']['gtemp'] == {'min': 38, 'median': 45, 'max': 45, 'n': 15}
    assert gpu0['series']['mtemp'] == {'min': 39, 'median': 48, 'max': 49, 'n': 15}
    assert gpu0['series']['fb'] == {'min': 1643, 'median': 2483, 'max': 2483, 'n': 15}
    assert (gpu0['fb_first'], gpu0['fb_last']) == (1643, 2483)
    assert gpu0['load'] == {'sm_pct_min': 80, 'samples': 14, 'pclk_min': 1980, 'pclk_median': 1980,
                            'fb_first': 2483, 'fb_last': 2483,
                            'fb_growth': {'from': 2483, 'to': 2483, 'samples': 11, 'skipped': 3, 'steady': False},
                            'tviol_samples': 0, 'pclk_tviol_median': None, 'pviol_median': 0}
    assert set(gpu0['series']) == set(dmon.SUMMARY_COLUMNS + dmon.VIOLATION_COLUMNS)


def test_summary_skips_not_available_values():
    summary = _summary('public_dmon_-s_pucet_-i_0_-o_DT_-d_2.txt')
    series = summary['gpus']['gpu0']['series']
    assert series['mtemp'] is None                      # printed as "-"
    assert series['pclk'] == {'min': 582, 'median': 1582, 'max': 1582, 'n': 3}
    assert 'fb' not in series and 'pviol' not in series  # not selected by -s pucet
    assert summary['gpus']['gpu0']['load']['samples'] == 0


def test_median_of_an_even_count():
    summary = _text_summary('# gpu  sm  pclk\n# Idx   %   MHz\n 0  90  1000\n 0  90  1100\n')
    assert summary['gpus']['gpu0']['series']['pclk']['median'] == 1050


def _growth(fbs, bounds=None):
    rows = ''.join(' 0  97  %d\n' % fb for fb in fbs)
    summary = _text_summary('# gpu  sm  fb\n# Idx   %  MB\n' + rows)
    return [f for f in dmon.findings(summary, dict({'min_load_samples': 1}, **(bounds or {})), host='h')
            if f['check'] != 'dmon.not_measured']


@pytest.mark.parametrize('fbs, grows', [
    # a warm-up allocation, then flat: no leak
    ([1000, 30000] + [30000] * 12, False),
    ([1000, 9000, 20000, 30000] + [30000] * 10, False),      # a warm-up over the first samples
    ([1000, 9000, 20000, 30000, 30000, 30000], False),        # ... longer than the quarter skipped, then flat
    # a steady leak, with one small dip: still a leak
    ([1000 + 300 * i for i in range(8)] + [3050] + [3200 + 300 * i for i in range(8)], True),
    ([1000, 3000, 2999, 5000], True),
    # a steady leak without any dip
    ([1000 + 512 * i for i in range(15)], True),
    # up and down: no steady growth
    ([1000, 5000, 1000, 5000, 1000, 5000, 1000, 5000, 1000, 5000], False),
    # grew in the first half only
    ([1000, 1000, 2000, 3000, 4000, 5000, 5000, 5000, 5000, 5000], False),
    # steady, within the bound
    ([1000 + 50 * i for i in range(15)], False),
])
def test_memory_growth_after_the_warm_up(fbs, grows):
    assert [f['check'] for f in _growth(fbs)] == (['dmon.memory_growth'] if grows else [])


def test_no_sm_column_is_not_measured():
    summary = _text_summary('# gpu  pwr  fb\n# Idx    W  MB\n 0  300  100\n')
    found = dmon.findings(summary, None, host='h')
    assert [(f['check'], f['component'], f['expected']) for f in found] == [
        ('dmon.not_measured', 'gpu0', 'sm % (dmon.sustained_clock, dmon.memory_growth)'),
        ('dmon.not_measured', 'gpu0', 'dbecc (dmon.ecc)')]


def test_no_samples_is_not_measured():
    found = dmon.findings(_text_summary('# gpu  sm\n# Idx   %\n'), None, host='h')
    assert [(f['check'], f['component'], f['severity']) for f in found] == [('dmon.not_measured', 'dmon', 'warn')]


def test_unparsable_lines_are_findings():
    text = '# gpu  sm\n# Idx   %\n 0  97\n 1  9x\n lost\n'
    found = dmon.findings(_text_summary(text + ' 0  97\n'), None, host='h')
    got = [(f['check'], f['component'], f['measured']) for f in found if f['check'] == 'dmon.unparsable']
    assert got == [('dmon.unparsable', 'dmon', 'lost'), ('dmon.unparsable', 'gpu1', '1  9x')]
    gpu1 = [f for f in found if f['component'] == 'gpu1']
    assert [f['check'] for f in gpu1] == ['dmon.not_measured', 'dmon.unparsable']


@pytest.mark.parametrize('bounds,message', [
    ({'gtemp_max': 80}, "dmon bounds: gtemp_max: unknown key"),
    ({'clock_min_fraction': 1.5}, 'clock_min_fraction: must be a fraction in (0, 1], got 1.5'),
    ({'gtemp_max_c': 'hot'}, "gtemp_max_c: must be a finite number >= 0, got 'hot'"),
    ({'fb_growth_max_mb': -1}, 'fb_growth_max_mb: must be a finite number >= 0, got -1'),
    ({'load_sm_pct': True}, 'load_sm_pct: must be a finite number >= 0, got True'),
    ({'sm_clock_mhz': float('nan')}, 'sm_clock_mhz: must be a finite number >= 0, got nan'),
    ({'gtemp_max_c': float('inf')}, 'gtemp_max_c: must be a finite number >= 0, got inf'),
    (['a'], 'dmon bounds: must be a mapping, got list'),
])
def test_bad_bounds_are_profile_errors(bounds, message):
    with pytest.raises(ProfileError) as err:
        dmon.findings(_summary('h200x2_dmon_busy.txt'), bounds, host='h')
    assert message in str(err.value)


def test_load_bound_must_match_the_summary():
    with pytest.raises(ValueError) as err:
        dmon.findings(_summary('h200x2_dmon_busy.txt'), {'load_sm_pct': 50}, host='h')
    assert 'summarise with load_sm_pct' in str(err.value)
    assert dmon.findings(_summary('h200x2_dmon_busy.txt', load_sm_pct=50), {'load_sm_pct': 50}, host='h') == []


def test_summarise_needs_a_parse_result():
    with pytest.raises(ValueError):
        dmon.summarise('text')


def test_profile_monitoring_section_is_the_bounds():
    """The profile's monitoring section (validated) has the keys and defaults of DEFAULT_BOUNDS and feeds findings."""
    validated = validate_profile({'schema_version': 1, 'name': 'p', 'monitoring': {'gtemp_max_c': 85}})['monitoring']
    assert validated == dict(dmon.DEFAULT_BOUNDS, gtemp_max_c=85)
    found = dmon.findings(_summary('h200x2_dmon_busy-derived-hot-gpu0.txt'), validated, host='h')
    assert [(f['check'], f['measured']) for f in found] == [('dmon.temperature', 'gtemp max 89 C')]
    assert validate_profile({'schema_version': 1, 'name': 'p'})['monitoring'] is None
    assert dmon.findings(_summary('h200x2_dmon_busy.txt'), None, host='h') == []


@pytest.mark.parametrize('section,message', [
    ({'clock_min_fraction': 2}, 'monitoring.clock_min_fraction: must be at most 1'),
    ({'gtemp': 80}, "did you mean 'gtemp_max_c'"),
    ({'min_load_samples': 0}, 'monitoring.min_load_samples: must be at least 1'),
])
def test_profile_monitoring_section_errors(section, message):
    with pytest.raises(ProfileError) as err:
        validate_profile({'schema_version': 1, 'name': 'p', 'monitoring': section})
    assert message in str(err.value)


# --- judge_run: a workload's dmon entry (workload_run's result) -> findings and the report's entry ---------------

def _run_of(name, **extra):
    with open(os.path.join(DMON, name)) as handle:
        return dict({'command': 'nvidia-smi dmon -s pucvmet -d 1', 'interval_s': 1, 'stdout': handle.read()}, **extra)


def test_judge_run_sustained_clock_names_the_workload_and_keeps_sparklines():
    found, entry = dmon.judge_run(_run_of('h200x2_dmon_busy-derived-throttle-gpu1.txt'), {'sustained_sm_clock_min_mhz': 1500},
                                  host='n1', workload='all_reduce_perf')
    assert [(f['check'], f['component'], f['severity']) for f in found] == [('dmon.sustained_clock', 'gpu1', 'fail')]
    assert found[0]['message'].startswith('during all_reduce_perf: gpu1 ran at a median SM clock of 1410 MHz')
    assert entry['command'] == 'nvidia-smi dmon -s pucvmet -d 1' and entry['interval_s'] == 1
    assert sorted(entry['gpus']) == ['gpu0', 'gpu1'] and entry['samples'] == 30
    values = entry['gpus']['gpu1']['values']
    assert sorted(values) == ['fb', 'gtemp', 'pclk', 'pwr', 'sm'] and len(values['pclk']) == 15
    assert min(values['pclk']) == 1410 and entry['gpus']['gpu1']['series']['pclk']['min'] == 1410
    # no clock event sampling in this run: said, never a pass
    assert entry['not_judged'] == ['dmon: dmon.throttle, dmon.throttle_warn not checked: the clock event '
                                   'reasons were not sampled (workload_run dmon.clock_events)']


def test_judge_run_not_measured_is_a_finding_only_when_required():
    idle = _run_of('h200x2_dmon_idle.txt')
    found, entry = dmon.judge_run(idle, host='n1', workload='ddp_smoke')
    assert found == [] and len([m for m in entry['not_judged'] if '0 sample(s) with sm >= 80 %' in m]) == 2
    found, entry = dmon.judge_run(idle, H200, host='n1', workload='ddp_smoke', required=True)
    assert set(f['check'] for f in found) == {'dmon.not_measured'} and 'not_judged' not in entry
    assert all(f['message'].startswith('during ddp_smoke: ') for f in found)


@pytest.mark.parametrize('run, reason', [
    ({'command': 'c', 'not_measured': 'nvidia-smi is not installed on this node'}, 'nvidia-smi is not installed on this node'),
    ({'command': 'c', 'stdout': ' \n'}, 'dmon printed nothing (the workload ended before its first sample)'),
    ({'command': 'c'}, 'no dmon output came back'),
])
def test_judge_run_without_samples(run, reason):
    found, entry = dmon.judge_run(run, host='n1', workload='w')
    assert found == [] and entry == {'command': 'c', 'not_measured': reason}
    found, _entry = dmon.judge_run(run, host='n1', workload='w', required=True)
    assert [(f['check'], f['component'], f['severity']) for f in found] == [('dmon.not_measured', 'dmon', 'warn')]
    assert reason in found[0]['message']


def test_judge_run_output_that_is_not_dmon_is_unparsable():
    found, entry = dmon.judge_run({'command': 'c', 'stdout': 'Failed to initialize NVML: Driver/library version mismatch\n'},
                                  host='n1', workload='w')
    assert [(f['check'], f['component']) for f in found] == [('dmon.unparsable', 'dmon')]
    assert 'Driver/library version mismatch' in found[0]['measured'] and entry['unparsable']


def test_judge_run_uses_the_profile_bounds():
    hot = _run_of('h200x2_dmon_busy-derived-hot-gpu0.txt')
    assert not dmon.judge_run(hot, host='n1')[0]
    found, _entry = dmon.judge_run(hot, {'gtemp_max_c': 80}, host='n1')
    assert [(f['check'], f['component']) for f in found] == [('dmon.temperature', 'gpu0')]
    with pytest.raises(ProfileError):
        dmon.judge_run(hot, {'gtemp_max_c': -1})


@pytest.mark.parametrize('values, points, pick, expected', [
    ([1, 2, 3], 5, max, [1, 2, 3]),
    ([1, 5, 2, 8, 3, 1], 3, max, [5, 8, 3]),
    ([1, 5, 2, 8, 3, 1], 3, min, [1, 2, 1]),
    ([None, None, 4, None], 2, max, [None, 4]),
    (list(range(1000)), 120, max, [(i + 1) * 1000 // 120 - 1 for i in range(120)]),
])
def test_downsample(values, points, pick, expected):
    assert dmon.downsample(values, points, pick) == expected
