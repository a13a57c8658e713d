"""Data-driven parser tests: every ``cases/*.yaml`` file lists captured tool outputs and the facts
each must produce (community.general's ``test_xfconf_info.{py,yaml}`` pattern).

A case::

    - id: h200x4 query-gpu            # unique within the file
      parser: _parse_nvidia.parse_query_gpu
      input: hardware/h200x4-nvlink/nvidia-smi_--query-gpu.csv   # under tests/fixtures/, or
      text: "inline text"                                         # the raw output inline
      expected: {...}      # the whole return value must equal this, or
      subset: {...}        # these keys (recursively, lists by position) must match, and/or
      error: "substring"   # the parser must raise ParseError whose message contains this
"""
import glob
import importlib
import os

import pytest
import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures'))
PKG = 'ansible_collections.xuanwu.cluster.plugins.module_utils.'


def _load_cases():
    cases = []
    for path in sorted(glob.glob(os.path.join(HERE, 'cases', '*.yaml'))):
        with open(path) as handle:
            data = yaml.safe_load(handle) or []
        for case in data:
            cases.append(pytest.param(case, id='%s:%s' % (os.path.basename(path)[:-5], case['id'])))
    return cases


def _resolve(dotted):
    module, func = dotted.rsplit('.', 1)
    return getattr(importlib.import_module(PKG + module), func)


def _read(case):
    if 'text' in case:
        return case['text']
    with open(os.path.join(FIXTURES, case['input'])) as handle:
        return handle.read()


def assert_subset(actual, expected, where='result'):
    if isinstance(expected, dict):
        assert isinstance(actual, dict), '%s: expected a dict, got %r' % (where, actual)
        for key, value in expected.items():
            assert key in actual, '%s: missing key %r (have %s)' % (where, key, sorted(actual))
            assert_subset(actual[key], value, '%s.%s' % (where, key))
    elif isinstance(expected, list) and expected and isinstance(expected[0], (dict, list)):
        assert isinstance(actual, list), '%s: expected a list, got %r' % (where, actual)
        assert len(actual) >= len(expected), '%s: %d items, expected at least %d' % (where, len(actual), len(expected))
        for i, value in enumerate(expected):
            assert_subset(actual[i], value, '%s[%d]' % (where, i))
    else:
        assert actual == expected, '%s: %r != %r' % (where, actual, expected)


@pytest.mark.parametrize('case', _load_cases())
def test_parser_case(case):
    parser = _resolve(case['parser'])
    text = _read(case)
    args = case.get('args', {})
    if 'error' in case:
        with pytest.raises(ParseError) as err:
            parser(text, **args)
        assert case['error'] in str(err.value)
        return
    result = parser(text, **args)
    if 'expected' in case:
        assert result == case['expected']
    if 'subset' in case:
        assert_subset(result, case['subset'])
    assert 'expected' in case or 'subset' in case, 'case %s asserts nothing' % case['id']
