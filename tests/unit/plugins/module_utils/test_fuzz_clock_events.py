"""Fuzz the clock event reasons parser with truncated, mutated and random texts derived from the sampling in
tests/fixtures/dmon/: only ParseError may escape, and whatever parses can be judged beside a real dmon capture."""
import glob
import os

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import _dmon_checks
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_clock_events import parse_clock_events
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import (
    assert_finite, assert_rejects_non_text, edit_bytes, edit_lines, numbers_injected,
)

HERE = os.path.dirname(os.path.abspath(__file__))
DMON = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures', 'dmon'))
TEXTS = []
for _path in sorted(glob.glob(os.path.join(DMON, '*clock-events*.csv'))):
    with open(_path) as _handle:
        TEXTS.append(_handle.read())
with open(os.path.join(DMON, 'h200x2_dmon_busy.txt')) as _handle:
    BUSY = _handle.read()
SETTINGS = settings()
TOKENS = ['[N/A]', '[Not Supported]', '0x', '0xZZ', '0xffffffffffffffff', '0x00000000000000080', 'nan', 'inf', '1e+99', '',
          ',', 'index', '-1', '99999999999999999999999', '\x1b[4m']


def _check(text):
    try:
        result = parse_clock_events(text)
    except ParseError:
        return
    assert isinstance(result, dict)
    assert_finite(result)
    for gpu in result['gpus']:
        assert isinstance(gpu['index'], int)
        for sample in gpu['samples']:
            assert sample['reasons'] is None or all(isinstance(r, str) for r in sample['reasons'])
    run = {'command': 'nvidia-smi dmon', 'stdout': BUSY, 'clock_events': {'command': 'q', 'stdout': text}}
    found, _entry = _dmon_checks.judge_run(run, {'sustained_sm_clock_min_mhz': 1200}, host='h')
    assert isinstance(found, list)


def test_corpus_present():
    assert TEXTS


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(TEXTS))
    how = draw(st.sampled_from(['cut', 'lines', 'bytes']))
    if how == 'cut':
        return text[:draw(st.integers(min_value=0, max_value=len(text)))]
    data = draw(st.data())
    if how == 'lines':
        return edit_lines(text, data, st.text(max_size=80), TOKENS)
    return edit_bytes(text, data)


@SETTINGS
@given(mutated())
def test_mutated_outputs(text):
    _check(text)


@SETTINGS
@given(st.one_of(st.text(max_size=400),
                 st.lists(st.sampled_from([line for text in TEXTS for line in text.split('\n')]), max_size=30).map('\n'.join)))
def test_random_text_and_shuffled_real_lines(text):
    _check(text)


@SETTINGS
@given(numbers_injected(TEXTS))
def test_huge_and_non_finite_numbers(text):
    _check(text)


def test_not_text():
    assert_rejects_non_text(parse_clock_events, ParseError)
