# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware profiles: validation, inventory overrides and ``extends``.

A profile is plain data (already loaded from YAML by the caller): this module imports no YAML
library. ``validate_profile`` returns a normalised copy (defaults filled, versions and ports in
canonical form) or raises one ``ProfileError`` that names every problem, one line each (``path: dotted.key: reason``). A profile file may ``extends:``
other profiles and policy files: the caller reads the files (plugin_utils/_collection.py) and merges
them here (``extends_refs``, ``extend``), each file checked on its own (``check_override``) before the
result is validated whole.

The schema it validates against is data of its own (``_profile_schema``: ``SCHEMA`` and the built-in values, in the
spec language of ``_spec``, whose validator this module runs with the checks below), its names re-exported here, so
``from _profile import SCHEMA`` keeps working; docs/profiles.md is put together by ``_profile_docs``, which the nodes
never need.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import fnmatch
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils import _spec
from ansible_collections.xuanwu.cluster.plugins.module_utils._catalogue import CATALOGUE
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
# Re-exported: every public name of the schema's module, and the default leftover patterns, as importers had them before
# the schema moved out (``from _profile import SCHEMA``).
from ansible_collections.xuanwu.cluster.plugins.module_utils._hygiene import DEFAULT_LEFTOVER_PATTERNS  # noqa: F401 pylint: disable=unused-import
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile_schema import (  # noqa: F401 pylint: disable=unused-import
    CLOCK_EVENT_REASONS, COLLECTIVES, COMPUTE_MODES, DEFAULT_COUNTERS_GROWTH_MAX, DEFAULT_XID_FATAL, DEFAULT_XID_WARN,
    EXTENDS, LINK_FLAPS_IGNORE, LINK_PATTERN, SCHEMA, SCHEMA_VERSION,
)


# ---------------------------------------------------------------------------------------------
# Validation: the spec language's (``_spec``), with the checks below that the schema names (``check``).

# re-exported: the messages' words for a value, as importers had them before the spec language moved out
type_name = _spec.type_name


def _problems_error(problems):
    """The ProfileError of ``problems`` (``_spec.Problem``: file, dotted key, reason), all of them, one line each."""
    return ProfileError.listing([(problem.path, problem.key or None, problem.reason) for problem in problems])


def _check_xid_lists(ctx, key, value):
    seen = {}
    for group in ('fatal', 'warn'):
        for i, entry in enumerate(value.get(group) or []):
            xid = entry['xid']
            if xid in seen:
                ctx.add('%s.%s[%d].xid' % (key, group, i), 'Xid %d is already listed under %s' % (xid, seen[xid]))
            else:
                seen[xid] = group


def _check_curve_sorted(ctx, key, value):
    sizes = [point['min_bytes'] for point in value if point and point.get('min_bytes') is not None]
    if sizes != sorted(set(sizes)):
        ctx.add(key, 'points must be sorted by min_bytes, ascending and without repeats (got %s)' % sizes)


# The check ids a profile's ``checks`` section may name, resolved once from the catalogue: every id or glob of
# ``checks.disable`` and ``checks.severity`` is matched against this set.
CHECK_IDS = frozenset(CATALOGUE)
_SORTED_CHECK_IDS = tuple(sorted(CHECK_IDS))


def unmatched_check_ids(patterns, ids=CHECK_IDS):
    """The patterns (check ids or globs) of ``patterns`` that match no id of ``ids``, in their order."""
    return [pattern for pattern in patterns
            if pattern not in ids and not any(fnmatch.fnmatchcase(cid, pattern) for cid in ids)]


def _check_id(ctx, key, pattern):
    """An id or glob of ``checks.disable`` or ``checks.severity``: it must match a check id (CHECK_IDS)."""
    if unmatched_check_ids([pattern]):
        hint = _spec.suggest(pattern, _SORTED_CHECK_IDS)
        ctx.add(key, 'no check id matches %r%s (see docs/checks.md)' % (pattern, "; did you mean %r?" % hint if hint else ''))


def _check_regex(ctx, key, value):
    try:
        re.compile(value)
    except (re.error, OverflowError, RecursionError) as err:    # a repeat count too large, groups nested too deep
        ctx.add(key, '%r is not a regular expression: %s' % (value, err))


# Keys of one vendor's tools: a profile of the other vendor that sets them would be checked by nothing.
VENDOR_KEYS = {'amd': ('xgmi', 'bad_pages'), 'nvidia': ('topology', 'nvlink', 'retired_pages_max')}


def _check_vendor_keys(ctx, key, value):
    if ctx.partial:
        return    # an override: the merged profile is validated whole (merge_profile)
    vendor = value.get('vendor') or 'nvidia'
    for other, names in sorted(VENDOR_KEYS.items()):
        if other == vendor:
            continue
        for name in names:
            if value.get(name) not in (None, {}):
                ctx.add('%s.%s' % (key, name), 'is a check of %s GPUs; this profile has gpu.vendor %s' % (other, vendor))


_EXTRA_CHECKS = {
    'vendor_keys': _check_vendor_keys,
    'regex': _check_regex,
    'xid_lists': _check_xid_lists,
    'curve_sorted': _check_curve_sorted,
    'check_id': _check_id,
}


def validate_profile(data, path='<profile>'):
    """Validate a loaded profile and return a normalised deep copy.

    Every key of the schema is present in the result (``None`` where unset and without default);
    optional sections the profile leaves out (``gpu``, ``infiniband``, ...) are ``None``.
    Raises ``ProfileError`` naming every problem, one line each (``path: dotted.key: reason``); its ``path``,
    ``key`` and ``reason`` are the first one's.
    """
    if not isinstance(data, dict):
        raise ProfileError(path, None, 'a profile must be a mapping, got %s' % type_name(data))
    out, problems = _spec.validate(SCHEMA, data, path, _spec.WHOLE, _EXTRA_CHECKS)
    problems += _intra_node_curves(out, path)
    if problems:
        raise _problems_error(problems)
    return out


def _intra_node_curves(profile, path):
    """Intra-node collectives need two ranks or more: a profile of one GPU per node cannot expect their busbw
    (nccl-tests on one GPU reports 0 for the reductions by definition, and copies within the GPU for the others).
    The problems, one per collective with a curve."""
    gpu = profile.get('gpu')
    count = gpu.get('count') if isinstance(gpu, dict) else None
    collectives = profile.get('collectives')
    if not isinstance(count, int) or isinstance(count, bool) or count >= 2 or not isinstance(collectives, dict):
        return []
    return [_spec.Problem(path, 'collectives.%s.curve' % name,
                          'intra-node collective curves need 2 GPUs or more, gpu.count is %d: a bus bandwidth within one '
                          'GPU is 0 (reductions) or a copy in its own memory; remove the curves (collectives: null in an '
                          'override) or move them to collectives_multinode' % count)
            for name, spec in sorted(collectives.items(), key=lambda item: str(item[0]))
            if isinstance(spec, dict) and spec.get('curve')]


def check_override(data, path='<override>'):
    """Validate a partial profile (an inventory override, a file that others extend): keys, types and choices, no
    required keys. Raises ``ProfileError`` naming every problem."""
    if not isinstance(data, dict):
        raise ProfileError(path, None, 'an override must be a mapping, got %s' % type_name(data))
    out, problems = _spec.validate(SCHEMA, data, path, _spec.PART, _EXTRA_CHECKS)
    if problems:
        raise _problems_error(problems)
    return out


def _merge(base, override):
    if not isinstance(base, dict) or not isinstance(override, dict):
        return copy.deepcopy(override)
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merge_profile(base, override, path='<override>'):
    """Deep-merge ``override`` into ``base`` and return the validated result.

    Mappings merge key by key; lists and scalars replace. A ``null`` value resets a key to its
    default (or removes an optional section). Used for ``xuanwu_profile_overrides`` set on inventory
    groups and hosts; ``path`` names the override in error messages.
    """
    if override is None:
        override = {}
    check_override(override, path)
    merged = _merge(base if isinstance(base, dict) else {}, override)
    return validate_profile(_drop_nones(merged), path)


def _drop_nones(value):
    if isinstance(value, dict):
        return dict((k, _drop_nones(v)) for k, v in value.items() if v is not None)
    if isinstance(value, list):
        return [_drop_nones(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------
# Profiles that extend others. ``extends:`` (a profile file's top-level key, never a schema key) names the
# profiles and policy files (a profile name, or a path relative to a profile directory such as
# policy/nvidia-xid) the file is merged over, in order: mappings merge key by key, lists and scalars
# replace, a null resets a key to its default or drops a section, as in overrides. Reading the files is
# the caller's (plugin_utils/_collection.py).

EXTENDS_WORDS = 'a profile name or a path of a policy file relative to a profile directory (policy/nvidia-xid), or a list of them'


def extends_refs(data, path):
    """The references of a profile document's ``extends`` (``[]`` without one), checked: a non-empty string or a
    non-empty list of them, else ``ProfileError(path, 'extends', ...)``."""
    value = data.get(EXTENDS) if isinstance(data, dict) else None
    if value is None:
        return []
    refs = value if isinstance(value, list) else [value]
    if not refs:
        raise ProfileError(path, EXTENDS, 'must be %s, got an empty list' % EXTENDS_WORDS)
    for i, ref in enumerate(refs):
        if not isinstance(ref, str) or not ref.strip():
            where = EXTENDS if refs is not value else '%s[%d]' % (EXTENDS, i)
            raise ProfileError(path, where, 'must be %s, got %s' % (EXTENDS_WORDS, type_name(ref)))
    return refs


def own_document(data):
    """A profile file's own keys: its document without ``extends``."""
    return dict((k, v) for k, v in data.items() if k != EXTENDS)


def extend(base, document):
    """``document`` (a profile file's own keys) merged over ``base`` (what it extends, merged): mappings merge key by
    key, lists and scalars replace; a null is kept (``extended`` drops it: the key takes its default)."""
    return _merge(base, document)


def extended(merged):
    """The merged document of a profile that extends others, ready for ``validate_profile``: its nulls dropped."""
    return _drop_nones(merged)
