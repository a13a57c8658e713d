"""Shards of the integration suite: with XUANWU_SHARD=i/n (scripts/test.py sets it) this pytest runs only every
n-th test, starting with the i-th, of the tests it collected; the n shards together run each test once. Tests are
dealt one by one, not file by file, so that a file of slow tests is spread over the shards."""
import os
import re

import pytest


def shard_of(value):
    """(index, count) from 'i/n' with 1 <= i <= n; ValueError with the fix otherwise."""
    match = re.match(r'^\s*(\d+)\s*/\s*(\d+)\s*$', value or '')
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise ValueError('XUANWU_SHARD must be i/n with 1 <= i <= n (e.g. 1/2), got %r' % value)
    return int(match.group(1)) - 1, int(match.group(2))


def pytest_collection_modifyitems(config, items):
    value = os.environ.get('XUANWU_SHARD')
    if not value:
        return
    try:
        index, count = shard_of(value)
    except ValueError as exc:
        raise pytest.UsageError(str(exc))
    keep, drop = [], []
    for position, item in enumerate(items):
        (keep if position % count == index else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
