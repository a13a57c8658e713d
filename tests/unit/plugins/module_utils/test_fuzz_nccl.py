"""Fuzz the nccl-tests parser: truncated, mutated and random texts derived from the real captures
and the derived faulty outputs. Only ParseError may escape, and whatever parses can be evaluated."""
import glob
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils._collectives import evaluate_curve
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import (
    assert_finite, assert_rejects_non_text, edit_bytes, edit_lines, numbers_injected,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nccl import parse_nccl_tests

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures'))
FILES = sorted(glob.glob(os.path.join(FIXTURES, 'hardware', '*', 'nccl-tests_*.txt'))
               + glob.glob(os.path.join(FIXTURES, 'derived', 'nccl', '*.txt')))
TEXTS = []
for _path in FILES:
    with open(_path) as _handle:
        TEXTS.append(_handle.read())

CURVE = [{'min_bytes': 16 << 20, 'busbw_gbps_min': 200.0}, {'min_bytes': 1 << 30, 'busbw_gbps_min': 300.0}]
# Examples per test: the loaded profile (tests/conftest.py: 150 for make unit, 10,000 for make fuzz).
SETTINGS = settings()
NOISE = st.text(alphabet=st.characters(blacklist_categories=('Cs',)), max_size=80)


def _check(text):
    try:
        result = parse_nccl_tests(text)
    except ParseError:
        return
    assert isinstance(result, dict)
    assert_finite(result)
    for row in result['rows']:
        assert isinstance(row['size_bytes'], int)
        assert isinstance(row['out_of_place'], dict)
    findings = evaluate_curve(result, CURVE, 'h', 'all_reduce')
    assert isinstance(findings, list)


def test_corpus_present():
    assert len(TEXTS) >= 14


@SETTINGS
@given(st.sampled_from(TEXTS), st.floats(min_value=0.0, max_value=1.0))
def test_truncated(text, where):
    _check(text[:int(len(text) * where)])


@SETTINGS
@given(st.sampled_from(TEXTS), st.data())
def test_line_edits(text, data):
    _check(edit_lines(text, data, NOISE, ['N/A', '-1', 'nan', 'inf', '1e+99', '', 'x', '0', '#', '-', '1.2.3']))


@SETTINGS
@given(st.sampled_from(TEXTS), st.data())
def test_byte_edits(text, data):
    _check(edit_bytes(text, data))


@SETTINGS
@given(st.text(max_size=400))
def test_random_text(text):
    _check(text)


@SETTINGS
@given(st.lists(st.sampled_from([line for text in TEXTS for line in text.split('\n')[:60]]), max_size=30))
def test_shuffled_real_lines(lines):
    _check('\n'.join(lines))


@SETTINGS
@given(numbers_injected(TEXTS))
def test_huge_and_non_finite_numbers(text):
    """Issue 8 item 7: 4,300+ digit runs, values past 2**64, nan and inf in place of real numbers."""
    _check(text)


def test_not_text():
    assert_rejects_non_text(parse_nccl_tests, ParseError)
