"""Helpers shared by the fuzz tests (test_fuzz_*.py)."""
import math


def assert_finite(value, where='result'):
    """Every float in a parser's result (dicts and lists, any depth) is finite: no inf, no nan."""
    if isinstance(value, float):
        assert math.isfinite(value), '%s is %r' % (where, value)
    elif isinstance(value, dict):
        for key, item in value.items():
            assert_finite(item, '%s.%s' % (where, key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            assert_finite(item, '%s[%d]' % (where, index))
