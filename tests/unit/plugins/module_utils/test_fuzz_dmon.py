"""Fuzz the nvidia-smi dmon parser with truncated, mutated and random texts derived from the real
captures, the public outputs and the derived faults: only ParseError may escape, and whatever parses
can be summarised and checked."""
import glob
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import _dmon_checks
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_dmon import parse_dmon
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import (
    assert_finite, assert_rejects_non_text, edit_bytes, edit_lines, numbers_injected,
)

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures'))
TEXTS = []
for _path in sorted(glob.glob(os.path.join(FIXTURES, 'dmon', '*.txt'))):
    with open(_path) as _handle:
        TEXTS.append(_handle.read())
BOUNDS = {'gtemp_max_c': 85, 'mtemp_max_c': 95, 'fb_growth_max_mb': 1024, 'sm_clock_mhz': 1980}
# Examples per test: the loaded profile (tests/conftest.py: 150 for make unit, 10,000 for make fuzz).
SETTINGS = settings()
TOKENS = ['-', 'N/A', 'nan', 'inf', '1e+99', '', 'x', '0', '#', '# gpu', '# Idx', '-1', '1.2.3', '20240104', '13:54:35',
          '99999999999999999999999', '\x1b[4m']


def _check(text):
    try:
        result = parse_dmon(text)
    except ParseError:
        return
    assert isinstance(result, dict)
    assert_finite(result)
    names = [column['name'] for column in result['columns']]
    for gpu in result['gpus']:
        assert isinstance(gpu['index'], int)
        for sample in gpu['samples']:
            assert set(sample) == set(names) - {'gpu'}
    summary = _dmon_checks.summarise(result)
    assert_finite(summary)
    findings = _dmon_checks.findings(summary, BOUNDS, host='h')
    assert isinstance(findings, list)


def test_corpus_present():
    assert len(TEXTS) >= 10


@st.composite
def mutated(draw):
    """A capture, public output or derived fault of dmon/: cut anywhere, its lines edited or its bytes edited."""
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
                 st.lists(st.sampled_from([line for text in TEXTS for line in text.split('\n')]), max_size=30)
                 .map('\n'.join)))
def test_random_text_and_shuffled_real_lines(text):
    _check(text)


@SETTINGS
@given(numbers_injected(TEXTS))
def test_huge_and_non_finite_numbers(text):
    _check(text)


def test_not_text():
    assert_rejects_non_text(parse_dmon, ParseError)
