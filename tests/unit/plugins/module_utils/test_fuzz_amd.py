"""Fuzz the amd-smi / rocm-smi parsers with truncated, mutated and random texts derived from the
fixtures of tests/fixtures/amd/ (and JSON documents whose values are replaced by arbitrary JSON):
only ParseError may escape, and whatever parses merges into devices and feeds the checks."""
import copy
import glob
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_amd as amd
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import (
    assert_finite, assert_rejects_non_text, edit_bytes, edit_lines, numbers_injected,
)

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures'))
TEXTS = []
for _path in sorted(glob.glob(os.path.join(FIXTURES, 'amd', '*'))):
    if not _path.endswith('.md'):
        with open(_path) as _handle:
            TEXTS.append(_handle.read())
PARSERS = [amd.parse_amd_static, amd.parse_amd_metric, amd.parse_amd_bad_pages, amd.parse_amd_topology,
           amd.parse_amd_xgmi, amd.parse_amd_version, amd.parse_rocm_smi_allinfo, amd.parse_rocm_smi_topo]
SETTINGS = settings()
TOKENS = ['N/A', 'nan', 'Infinity', '1e+99', '', '"x"', '0', '-1', 'null', 'true', '{}', '[]', '"Gen 99"', '"32 GT/s"',
          '99999999999999999999999', '{"value": -5, "unit": "MB"}', '{"value": 1, "unit": "PB"}']
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-2 ** 70, max_value=2 ** 70), st.text(max_size=20),
              st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(['N/A', 'Gen 5', '32 GT/s', 'ENABLED', 'gpu_1'])),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)),
    max_leaves=12)


def _check(text):
    for parser in PARSERS:
        try:
            result = parser(text)
        except ParseError:
            continue
        assert isinstance(result, dict)
        assert_finite(result)
        if parser in (amd.parse_amd_static, amd.parse_rocm_smi_allinfo):
            for device in amd.merge_devices(result, {}, {}):
                assert isinstance(device['index'], int)


def test_corpus_present():
    assert len(TEXTS) >= 10


@st.composite
def mutated(draw):
    """A fixture of amd/: cut anywhere, its lines or bytes edited, or one of its JSON values replaced."""
    text = draw(st.sampled_from(TEXTS))
    how = draw(st.sampled_from(['cut', 'lines', 'bytes', 'json']))
    if how == 'cut':
        return text[:draw(st.integers(min_value=0, max_value=len(text)))]
    data = draw(st.data())
    if how == 'lines':
        return edit_lines(text, data, st.text(max_size=80), TOKENS)
    if how == 'bytes':
        return edit_bytes(text, data)
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    doc = copy.deepcopy(doc)
    for _edit in range(data.draw(st.integers(min_value=1, max_value=4))):
        node = doc
        for _depth in range(6):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            key = data.draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, (dict, list)) and child and data.draw(st.booleans()):
                node = child
                continue
            node[key] = data.draw(JSON_VALUES)
            break
    return json.dumps(doc)


@SETTINGS
@given(mutated())
def test_mutated_outputs(text):
    _check(text)


@SETTINGS
@given(st.one_of(st.text(max_size=400), JSON_VALUES.map(json.dumps)))
def test_random_text_and_json(text):
    _check(text)


@SETTINGS
@given(numbers_injected(TEXTS))
def test_huge_and_non_finite_numbers(text):
    _check(text)


@pytest.mark.parametrize('parser', PARSERS[:5] + PARSERS[6:], ids=lambda p: p.__name__)
def test_deeply_nested_json_is_a_parse_error(parser):
    with pytest.raises(ParseError):
        parser('[' * 5000 + ']' * 5000)


def test_not_text():
    for parser in PARSERS:
        assert_rejects_non_text(parser, ParseError)
