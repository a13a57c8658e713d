# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rewrite tests/fixtures/profiles/resolved.json: every shipped profile resolved (its ``extends`` merged, validated,
defaults filled), the snapshot that tests/unit/plugins/plugin_utils/test_profile_extends.py holds each profile to.

    .venv/bin/python scripts/write_profile_snapshot.py    # rewrite the snapshot; name the profiles that changed

Run it after a change that is meant to change what a shipped profile resolves to (a new profile, a value of a profile
or a policy file, a schema key with a default), then read the snapshot's diff: every value it shows changing is one the
checks now compare against. A change that is not meant to is what the test is there to catch: mend the change instead.
"""
from __future__ import print_function

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SNAPSHOT = os.path.join(ROOT, 'tests', 'fixtures', 'profiles', 'resolved.json')
# the xuanwu package of this checkout, which imports the collection's code by its name (xuanwu.collection)
if os.path.join(ROOT, 'src') not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, 'src'))

from xuanwu.collection import import_module  # noqa: E402  pylint: disable=wrong-import-position


def resolved():
    """{name: resolved profile} of every shipped profile, as the snapshot holds them."""
    collection = import_module('plugins.plugin_utils._collection')
    return dict((name, collection.resolve_profile(name)[0]) for name in collection.available_profiles())


def render(profiles):
    """The snapshot's text: every key in its order, every value and its type (1 is not 1.0)."""
    return json.dumps(profiles, indent=1) + '\n'


def changes(before, after):
    """``name added|removed|changed`` of each profile that differs between two snapshots."""
    out = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            out.append('%s added' % name)
        elif name not in after:
            out.append('%s removed' % name)
        elif json.dumps(before[name], indent=1) != json.dumps(after[name], indent=1):
            out.append('%s changed' % name)
    return out


def main(path=SNAPSHOT):
    profiles = resolved()
    before = {}
    if os.path.exists(path):
        with open(path) as handle:
            before = json.load(handle)
    with open(path, 'w') as handle:
        handle.write(render(profiles))
    changed = changes(before, profiles)
    print('%s: %s' % (os.path.relpath(path, ROOT), ', '.join(changed) if changed else 'current, nothing changed'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
