# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware profiles: validation, inventory overrides and ``extends``.

A profile is plain data (already loaded from YAML by the caller): this module imports no YAML
library. ``validate_profile`` returns a normalised copy (defaults filled, versions and ports in
canonical form) or raises ``ProfileError(path, dotted_key, reason)``. A profile file may ``extends:``
other profiles and policy files: the caller reads the files (plugin_utils/_collection.py) and merges
them here (``extends_refs``, ``extend``), each file checked on its own (``check_override``) before the
result is validated whole.

The schema it validates against is data of its own (``_profile_schema``: ``SCHEMA`` and the built-in values), its
names re-exported here, so ``from _profile import SCHEMA`` keeps working; docs/profiles.md is rendered by
``_profile_docs``, which the nodes never need.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import difflib
import fnmatch
import math
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._catalogue import CATALOGUE
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
# Re-exported: every public name of the schema's module, and the default leftover patterns, as importers had them before
# the schema moved out (``from _profile import SCHEMA``).
from ansible_collections.xuanwu.cluster.plugins.module_utils._hygiene import DEFAULT_LEFTOVER_PATTERNS  # noqa: F401 pylint: disable=unused-import
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile_schema import (  # noqa: F401 pylint: disable=unused-import
    CLOCK_EVENT_REASONS, COLLECTIVES, COMPUTE_MODES, DEFAULT_COUNTERS_GROWTH_MAX, DEFAULT_XID_FATAL, DEFAULT_XID_WARN,
    LINK_FLAPS_IGNORE, LINK_PATTERN, SCHEMA, SCHEMA_VERSION,
)


# ---------------------------------------------------------------------------------------------
# Validation.

_TYPE_NAMES = {
    'dict': 'a mapping', 'map': 'a mapping', 'list': 'a list', 'str': 'a string', 'int': 'an integer',
    'float': 'a number', 'bool': 'a boolean (true/false)', 'version': 'a quoted version string',
    'port': 'a port number or "PORT/tcp|udp"', 'link': 'a topology link (NV18, PIX, PXB, PHB, NODE, SYS)',
}


def type_name(value):
    """A value in words for a message: its plain type and, for scalars, the value; never an internal class name."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'bool (%s)' % ('true' if value else 'false')
    if isinstance(value, dict):
        return 'mapping'
    if isinstance(value, (list, tuple)):
        return 'list'
    # The base type's name: values from Ansible may be subclasses with internal names.
    for kind in (str, int, float):
        if isinstance(value, kind):
            text = repr(kind(value))
            break
    else:
        return 'a value of another kind'
    if len(text) > 40:
        text = text[:37] + '...'
    return '%s (%s)' % (kind.__name__, text)


def _join(prefix, key):
    return '%s.%s' % (prefix, key) if prefix else str(key)


def _suggest(word, candidates):
    match = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return match[0] if match else None


class _Ctx(object):
    def __init__(self, path, partial):
        self.path = path
        self.partial = partial

    def error(self, key, reason):
        raise ProfileError(self.path, key or '<top>', reason)


def _wrong_type(ctx, key, spec, value):
    ctx.error(key, 'expected %s, got %s' % (_TYPE_NAMES[spec['type']], type_name(value)))


def _check_choices(ctx, key, spec, value):
    choices = spec.get('choices')
    if choices is not None and value not in choices:
        hint = _suggest(value, choices)
        suffix = "; did you mean %r?" % hint if hint else ''
        ctx.error(key, '%r is not one of %s%s' % (value, ', '.join(repr(c) for c in choices), suffix))


def _check_range(ctx, key, spec, value):
    if 'min' in spec and value < spec['min']:
        ctx.error(key, 'must be at least %s, got %s' % (spec['min'], value))
    if 'max' in spec and value > spec['max']:
        ctx.error(key, 'must be at most %s, got %s' % (spec['max'], value))


def _scalar(ctx, key, spec, value):
    kind = spec['type']
    if kind == 'bool':
        if not isinstance(value, bool):
            _wrong_type(ctx, key, spec, value)
    elif kind == 'int':
        if isinstance(value, bool) or not isinstance(value, int):
            _wrong_type(ctx, key, spec, value)
        _check_range(ctx, key, spec, value)
    elif kind == 'float':
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _wrong_type(ctx, key, spec, value)
        value = _finite(ctx, key, value)
        _check_range(ctx, key, spec, value)
    elif kind == 'str':
        if not isinstance(value, str):
            _wrong_type(ctx, key, spec, value)
        if 'pattern' in spec and not re.search(spec['pattern'], value):
            ctx.error(key, '%r does not match %s' % (value, spec['pattern']))
    elif kind == 'version':
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            ctx.error(key, 'expected a quoted version string, got the number %r: write "%s" with quotes '
                           '(YAML reads 12.10 as the number 12.1)' % (value, value))
        if not isinstance(value, str) or not value.strip():
            _wrong_type(ctx, key, spec, value)
        value = value.strip()
    elif kind == 'link':
        if not isinstance(value, str):
            _wrong_type(ctx, key, spec, value)
        value = value.strip().upper()
        if not re.match(LINK_PATTERN, value):
            ctx.error(key, '%r is not a topology link: use NV<n>, PIX, PXB, PHB, NODE or SYS' % value)
    elif kind == 'port':
        value = _port(ctx, key, value)
    _check_choices(ctx, key, spec, value)
    return value


def _finite(ctx, key, value):
    """A threshold as a float; NaN (YAML .nan), infinities (.inf) and ints too large for a float are errors:
    a NaN compares false with every measurement, so it would switch the check off without a word."""
    try:
        number = float(value)
    except OverflowError:
        number = float('inf')
    if math.isnan(number) or math.isinf(number):
        ctx.error(key, 'must be a finite number, got %s' % type_name(value))
    return number


def _port(ctx, key, value):
    if isinstance(value, int) and not isinstance(value, bool):
        number, proto = value, 'tcp'
    elif isinstance(value, str) and re.match(r'^\s*[0-9]+\s*(/\s*(tcp|udp)\s*)?$', value, re.I):
        parts = value.replace(' ', '').lower().split('/')
        number, proto = int(parts[0]), (parts[1] if len(parts) > 1 else 'tcp')
    else:
        ctx.error(key, 'expected a port number or "PORT/tcp|udp", got %s' % type_name(value))
    if not 1 <= number <= 65535:
        ctx.error(key, 'port %s is outside 1-65535' % number)
    return '%d/%s' % (number, proto)


def _validate(ctx, key, spec, value):
    kind = spec['type']
    if kind == 'dict':
        value = _validate_dict(ctx, key, spec, value)
    elif kind == 'map':
        value = _validate_map(ctx, key, spec, value)
    elif kind == 'list':
        if not isinstance(value, (list, tuple)):
            _wrong_type(ctx, key, spec, value)
        if len(value) < spec.get('min_items', 0):
            ctx.error(key, 'needs at least %d item(s)' % spec['min_items'])
        value = [_validate(ctx, '%s[%d]' % (key, i), spec['elements'], item) for i, item in enumerate(value)]
    else:
        value = _scalar(ctx, key, spec, value)
    if 'check' in spec:
        _EXTRA_CHECKS[spec['check']](ctx, key, value)
    return value


def _validate_dict(ctx, key, spec, value):
    if not isinstance(value, dict):
        _wrong_type(ctx, key, spec, value)
    keys = spec['keys']
    out = {}
    for name in value:
        if name == EXTENDS and spec is SCHEMA:
            ctx.error(EXTENDS, 'only a profile file can extend others (xuanwu_profile and xuanwu_profile_dirs name the files): an '
                               'override, or a profile given as data, cannot')
        if name not in keys:
            hint = _suggest(name, list(keys) + ([EXTENDS] if spec is SCHEMA else []))
            reason = 'unknown key %r' % (name,)
            reason += "; did you mean %r?" % hint if hint else ' (valid keys: %s)' % ', '.join(sorted(keys))
            ctx.error(_join(key, name), reason)
    for name in keys:
        sub = keys[name]
        item = value.get(name)
        if item is None:
            if ctx.partial:
                continue
            if sub.get('required'):
                ctx.error(_join(key, name), 'missing required key %r' % name)
            if 'default' not in sub:
                continue
            item = copy.deepcopy(sub['default'])
            if item is None:
                out[name] = None
                continue
        out[name] = _validate(ctx, _join(key, name), sub, item)
    if not ctx.partial:
        for name in keys:
            out.setdefault(name, None)
    return out


def _validate_map(ctx, key, spec, value):
    if not isinstance(value, dict):
        _wrong_type(ctx, key, spec, value)
    out = {}
    kspec = spec.get('key', {'type': 'str'})
    for name in value:
        where = _join(key, name)
        if not isinstance(name, str):
            ctx.error(where, 'keys must be strings, got %s' % type_name(name))
        if 'choices' in kspec and name not in kspec['choices']:
            hint = _suggest(name, kspec['choices'])
            suffix = "; did you mean %r?" % hint if hint else ' (valid keys: %s)' % ', '.join(kspec['choices'])
            ctx.error(where, 'unknown key %r%s' % (name, suffix))
        if 'pattern' in kspec and not re.search(kspec['pattern'], name):
            ctx.error(where, 'key %r does not match %s' % (name, kspec['pattern']))
        if 'check' in kspec:
            _EXTRA_CHECKS[kspec['check']](ctx, where, name)
        item = value[name]
        if item is None:
            if ctx.partial:
                out[name] = None
                continue
            ctx.error(where, 'expected %s, got null' % _TYPE_NAMES[spec['values']['type']])
        out[name] = _validate(ctx, where, spec['values'], item)
    return out


def _check_xid_lists(ctx, key, value):
    seen = {}
    for group in ('fatal', 'warn'):
        for i, entry in enumerate(value.get(group) or []):
            xid = entry['xid']
            if xid in seen:
                ctx.error('%s.%s[%d].xid' % (key, group, i), 'Xid %d is already listed under %s' % (xid, seen[xid]))
            seen[xid] = group


def _check_curve_sorted(ctx, key, value):
    sizes = [point['min_bytes'] for point in value if point and point.get('min_bytes') is not None]
    if sizes != sorted(set(sizes)):
        ctx.error(key, 'points must be sorted by min_bytes, ascending and without repeats (got %s)' % sizes)


# The check ids a profile's ``checks`` section may name, resolved once from the catalogue: every id or glob of
# ``checks.disable`` and ``checks.severity`` is matched against this set.
CHECK_IDS = frozenset(CATALOGUE)
_SORTED_CHECK_IDS = tuple(sorted(CHECK_IDS))


def unmatched_check_ids(patterns, ids=CHECK_IDS):
    """The patterns (check ids or globs) of ``patterns`` that match no id of ``ids``, in their order."""
    return [pattern for pattern in patterns
            if pattern not in ids and not any(fnmatch.fnmatchcase(cid, pattern) for cid in ids)]


def _check_ids(ctx, key, value):
    """``checks.disable`` and ``checks.severity``: each id or glob must match a check id (CHECK_IDS)."""
    named = [('%s.disable[%d]' % (key, i), pattern) for i, pattern in enumerate(value.get('disable') or [])]
    named += [(_join(_join(key, 'severity'), pattern), pattern) for pattern in value.get('severity') or {}]
    unmatched = set(unmatched_check_ids([pattern for _where, pattern in named]))
    for where, pattern in named:
        if pattern in unmatched:
            hint = _suggest(pattern, _SORTED_CHECK_IDS)
            ctx.error(where, 'no check id matches %r%s (see docs/checks.md)' % (pattern, "; did you mean %r?" % hint if hint else ''))


def _check_regex(ctx, key, value):
    try:
        re.compile(value)
    except re.error as err:
        ctx.error(key, '%r is not a regular expression: %s' % (value, err))


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
                ctx.error('%s.%s' % (key, name), 'is a check of %s GPUs; this profile has gpu.vendor %s' % (other, vendor))


_EXTRA_CHECKS = {
    'vendor_keys': _check_vendor_keys,
    'regex': _check_regex,
    'xid_lists': _check_xid_lists,
    'curve_sorted': _check_curve_sorted,
    'check_ids': _check_ids,
}


def validate_profile(data, path='<profile>'):
    """Validate a loaded profile and return a normalised deep copy.

    Every key of the schema is present in the result (``None`` where unset and without default);
    optional sections the profile leaves out (``gpu``, ``infiniband``, ...) are ``None``.
    Raises ``ProfileError(path, dotted_key, reason)``.
    """
    if not isinstance(data, dict):
        raise ProfileError(path, None, 'a profile must be a mapping, got %s' % type_name(data))
    out = _validate(_Ctx(path, partial=False), '', SCHEMA, data)
    _check_intra_node_curves(out, path)
    return out


def _check_intra_node_curves(profile, path):
    """Intra-node collectives need two ranks or more: a profile of one GPU per node cannot expect their busbw
    (nccl-tests on one GPU reports 0 for the reductions by definition, and copies within the GPU for the others)."""
    count = (profile.get('gpu') or {}).get('count')
    if count is None or count >= 2:
        return
    for name, spec in sorted((profile.get('collectives') or {}).items()):
        if isinstance(spec, dict) and spec.get('curve'):
            raise ProfileError(path, 'collectives.%s.curve' % name,
                               'intra-node collective curves need 2 GPUs or more, gpu.count is %d: a bus bandwidth within one '
                               'GPU is 0 (reductions) or a copy in its own memory; remove the curves (collectives: null in an '
                               'override) or move them to collectives_multinode' % count)


def check_override(data, path='<override>'):
    """Validate a partial profile (an inventory override): keys, types and choices, no required keys."""
    if not isinstance(data, dict):
        raise ProfileError(path, None, 'an override must be a mapping, got %s' % type_name(data))
    return _validate(_Ctx(path, partial=True), '', SCHEMA, data)


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

EXTENDS = 'extends'
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
