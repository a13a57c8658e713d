"""Profiles that extend other profiles and shared policy files (``extends:``): every shipped profile resolves to exactly
the values it had before the shared parts moved out (tests/fixtures/profiles/resolved.json, the resolved profiles as
they were when each profile was still one whole file)."""
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
SNAPSHOT = os.path.join(ROOT, 'tests', 'fixtures', 'profiles', 'resolved.json')
SHIPPED = _collection.available_profiles()


def _canonical(profile):
    """A resolved profile as text: the comparison sees every key in its order, every value and its type (1 is not 1.0)."""
    return json.dumps(profile, indent=1)


def resolved_snapshot():
    """{name: resolved profile} of every shipped profile, as the snapshot file holds them."""
    return dict((name, _collection.resolve_profile(name)[0]) for name in _collection.available_profiles())


def test_the_snapshot_holds_every_shipped_profile():
    with open(SNAPSHOT) as handle:
        assert sorted(json.load(handle)) == SHIPPED


@pytest.mark.parametrize('name', SHIPPED)
def test_shipped_profile_resolves_exactly_as_the_snapshot(name):
    with open(SNAPSHOT) as handle:
        before = json.load(handle)[name]
    after = _collection.resolve_profile(name)[0]
    assert _canonical(after) == _canonical(before), '%s resolves to other values than tests/fixtures/profiles/resolved.json' % name
