# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spec language of the profile schema (``_profile_schema.SCHEMA``) and of the facts schema (``_facts.FACTS``):
one validator that lists every problem, and one renderer of the Markdown tables of docs/profiles.md and docs/facts.md.

A spec is a dict. ``type``:

- ``dict``: fixed ``keys`` (a spec each); ``refused``: ``{key: reason}`` of keys that are never valid here, each
  with why (a profile's ``extends`` where only a file may have one).
- ``map``: any keys, ``key`` a spec of the key (``str``; ``pattern``, ``choices``, ``check``; its ``description``
  names a key in the docs: ``<description>``), each value ``values``.
- ``list``: ``elements`` a spec; ``min_items``.
- scalars: ``str`` (``pattern``, a regular expression searched), ``int``, ``float`` (an int or a float, finite;
  normalised to a float), ``bool``, ``version`` (a string, stripped; a number is explained as YAML's doing), ``port``
  (``29500`` or ``"5353/udp"``, normalised to ``"29500/tcp"``), ``link`` (a topology link: NV<n>, PIX, PXB, PHB,
  NODE, SYS; upper-cased). ``choices``: the values allowed; ``min`` / ``max`` for numbers.

Any spec: ``null`` (the value may be null), ``required`` and ``default`` (deep-copied, then validated), ``check``
(the name of a further check, given to ``validate`` in ``checks``: ``function(ctx, key, value)``, which records each
problem with ``ctx.add(key, reason)``; run when everything under the value is valid), ``description``; for the docs
only: ``unit``, ``probe`` (the probes whose output the value comes from, space separated), ``vendor`` (``nvidia`` or
``amd``: that vendor's nodes only), ``shared`` (a spec used at several places: its keys are listed where it first
comes), ``notes``.

``validate(spec, value, path, mode)`` returns the value normalised and every problem, each naming the file (or
variable) and the dotted key. Modes: ``whole`` (a document on its own: defaults filled, required keys required,
every declared key in the result, a null key counts as absent), ``part`` (an override of one: only what it sets,
nothing required, a null kept: it resets the key where merged) and ``strict`` (data such as the node facts: nothing
filled, null only where the spec allows it).

Pure: no I/O, no Ansible; Python 3.8.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import copy
import difflib
import math
import re

WHOLE, PART, STRICT = 'whole', 'part', 'strict'

LINK_PATTERN = r'^(NV[1-9][0-9]*|PIX|PXB|PHB|NODE|SYS)$'

TYPE_WORDS = {
    'dict': 'a mapping', 'map': 'a mapping', 'list': 'a list', 'str': 'a string', 'int': 'an integer',
    'float': 'a number', 'bool': 'a boolean (true/false)', 'version': 'a quoted version string',
    'port': 'a port number or "PORT/tcp|udp"', 'link': 'a topology link (NV18, PIX, PXB, PHB, NODE, SYS)',
}
CONTAINERS = ('dict', 'map', 'list')


class Problem(collections.namedtuple('Problem', 'path key reason')):
    """One problem: the file or variable (``path``; None where none is known), the dotted key (``''``: the whole
    document) and what is wrong."""
    __slots__ = ()

    def __str__(self):
        return ': '.join(str(part) for part in (self.path, self.key, self.reason) if part not in (None, ''))


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


def join(prefix, key):
    """``prefix.key``, or ``key`` at the top; a key that is not printable text (a line break) as its repr, so that a
    problem stays one line."""
    text = str(key)
    if not text.isprintable():
        text = repr(text)
    return '%s.%s' % (prefix, text) if prefix else text


def suggest(word, candidates):
    """The candidate closest to ``word``, or None."""
    match = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return match[0] if match else None


class Invalid(Exception):
    """Raised by a step of the validation that cannot go on with a value; its problem is recorded already."""


class Context(object):
    """What a validation knows: the file, the mode, the further checks, and the problems found so far."""

    def __init__(self, path, mode, checks):
        self.path = path
        self.mode = mode
        self.checks = checks or {}
        self.problems = []

    @property
    def partial(self):
        return self.mode == PART

    def add(self, key, reason):
        """Record a problem at ``key`` and go on."""
        self.problems.append(Problem(self.path, key or '', reason))

    def error(self, key, reason):
        """Record a problem at ``key`` and stop validating this value."""
        self.add(key, reason)
        raise Invalid()


def validate(spec, value, path=None, mode=WHOLE, checks=None):
    """``(value normalised, [Problem])``: ``value`` against ``spec`` in ``mode`` (``whole``, ``part`` or ``strict``),
    every problem listed, each naming ``path`` and the dotted key. Never raises for what ``value`` holds."""
    ctx = Context(path, mode, checks)
    out = _value(ctx, '', spec, value)
    return out, ctx.problems


def _value(ctx, key, spec, value):
    """``value`` validated; the value itself where it has a problem (recorded in ``ctx``)."""
    before = len(ctx.problems)
    try:
        if value is None:
            if spec.get('null'):
                return None
            ctx.error(key, 'expected %s, got null' % TYPE_WORDS[spec['type']])
        kind = spec['type']
        if kind == 'dict':
            out = _dict(ctx, key, spec, value)
        elif kind == 'map':
            out = _map(ctx, key, spec, value)
        elif kind == 'list':
            out = _list(ctx, key, spec, value)
        else:
            out = _scalar(ctx, key, spec, value)
        if 'check' in spec and len(ctx.problems) == before:
            ctx.checks[spec['check']](ctx, key, out)
        return out
    except Invalid:
        return value


def _wrong_type(ctx, key, spec, value):
    ctx.error(key, 'expected %s, got %s' % (TYPE_WORDS[spec['type']], type_name(value)))


def _choices(ctx, key, spec, value):
    choices = spec.get('choices')
    if choices is not None and value not in choices:
        hint = suggest(value, choices)
        suffix = "; did you mean %r?" % hint if hint else ''
        ctx.error(key, '%r is not one of %s%s' % (value, ', '.join(repr(c) for c in choices), suffix))


def _range(ctx, key, spec, value):
    if 'min' in spec and value < spec['min']:
        ctx.error(key, 'must be at least %s, got %s' % (spec['min'], value))
    if 'max' in spec and value > spec['max']:
        ctx.error(key, 'must be at most %s, got %s' % (spec['max'], value))


def _finite(ctx, key, value):
    """A number as a float; NaN (YAML .nan), infinities (.inf) and ints too large for a float are problems: a NaN
    compares false with every measurement, so as a threshold it would switch the check off without a word."""
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


def _scalar(ctx, key, spec, value):
    kind = spec['type']
    if kind == 'bool':
        if not isinstance(value, bool):
            _wrong_type(ctx, key, spec, value)
    elif kind == 'int':
        if isinstance(value, bool) or not isinstance(value, int):
            _wrong_type(ctx, key, spec, value)
        _range(ctx, key, spec, value)
    elif kind == 'float':
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _wrong_type(ctx, key, spec, value)
        value = _finite(ctx, key, value)
        _range(ctx, key, spec, value)
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
    else:
        raise ValueError('unknown spec type %r' % (kind,))
    _choices(ctx, key, spec, value)
    return value


def _list(ctx, key, spec, value):
    if not isinstance(value, (list, tuple)):
        _wrong_type(ctx, key, spec, value)
    if len(value) < spec.get('min_items', 0):
        ctx.error(key, 'needs at least %d item(s)' % spec['min_items'])
    return [_value(ctx, '%s[%d]' % (key, i), spec['elements'], item) for i, item in enumerate(value)]


def _dict(ctx, key, spec, value):
    if not isinstance(value, dict):
        _wrong_type(ctx, key, spec, value)
    keys = spec['keys']
    refused = spec.get('refused') or {}
    out = {}
    for name in value:
        where = join(key, name)
        if name in refused:
            ctx.add(where, refused[name])
        elif name not in keys:
            hint = suggest(name, list(keys) + list(refused))
            reason = 'unknown key %r' % (name,)
            reason += "; did you mean %r?" % hint if hint else ' (valid keys: %s)' % ', '.join(sorted(keys))
            ctx.add(where, reason)
    for name in keys:
        sub = keys[name]
        if name not in value and ctx.mode == STRICT:
            continue
        item = value.get(name)
        if item is None and ctx.mode != STRICT:
            if ctx.partial:
                continue
            if sub.get('required'):
                ctx.add(join(key, name), 'missing required key %r' % name)
                continue
            if 'default' not in sub:
                continue
            item = copy.deepcopy(sub['default'])
            if item is None:
                out[name] = None
                continue
        out[name] = _value(ctx, join(key, name), sub, item)
    if ctx.mode == WHOLE:
        for name in keys:
            out.setdefault(name, None)
    return out


def _map(ctx, key, spec, value):
    if not isinstance(value, dict):
        _wrong_type(ctx, key, spec, value)
    out = {}
    kspec = spec.get('key') or {'type': 'str'}
    for name in value:
        where = join(key, name)
        try:
            if not isinstance(name, str):
                ctx.error(where, 'keys must be strings, got %s' % type_name(name))
            if 'choices' in kspec and name not in kspec['choices']:
                hint = suggest(name, kspec['choices'])
                suffix = "; did you mean %r?" % hint if hint else ' (valid keys: %s)' % ', '.join(kspec['choices'])
                ctx.error(where, 'unknown key %r%s' % (name, suffix))
            if 'pattern' in kspec and not re.search(kspec['pattern'], name):
                ctx.error(where, 'key %r does not match %s' % (name, kspec['pattern']))
            if 'check' in kspec:
                ctx.checks[kspec['check']](ctx, where, name)
        except Invalid:
            continue
        item = value[name]
        if item is None and ctx.partial:
            out[name] = None
            continue
        out[name] = _value(ctx, where, spec['values'], item)
    return out


# --------------------------------------------------------------------------------------------- the docs' tables

def children(spec):
    """The specs directly inside ``spec``."""
    if spec['type'] == 'dict':
        return list(spec['keys'].values())
    if spec['type'] == 'map':
        return [spec['values']]
    if spec['type'] == 'list':
        return [spec['elements']]
    return []


def at(spec, path):
    """The spec at the dotted ``path`` (keys of fixed mappings only) of ``spec``, or None where it declares none."""
    for step in path.split('.'):
        if spec.get('type') != 'dict' or step not in spec['keys']:
            return None
        spec = spec['keys'][step]
    return spec


def type_text(spec):
    """The type of ``spec`` in words, for the docs: ``list of mappings``, ``int (0..7)``, ``str (`a` / `b`)``."""
    kind = spec['type']
    if kind in ('list', 'map'):
        inner = spec['elements' if kind == 'list' else 'values']
        return '%s of %s' % ('list' if kind == 'list' else 'mapping', 'mappings' if inner['type'] == 'dict' else type_text(inner))
    text = {'dict': 'mapping', 'version': 'version string'}.get(kind, kind)
    extras = []
    if spec.get('choices'):
        extras.append(' / '.join('`%s`' % c for c in spec['choices']))
    if 'min' in spec or 'max' in spec:
        extras.append('%s..%s' % (spec.get('min', ''), spec.get('max', '')))
    return text + (' (%s)' % ', '.join(extras) if extras else '')


def default_text(value):
    """A default for the docs: empty for none, a built-in list of mappings by its length."""
    if value is None:
        return ''
    if value == '':
        return '`""`'
    if isinstance(value, bool):
        return '`%s`' % ('true' if value else 'false')
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return 'built-in list (%d)' % len(value)
    if isinstance(value, (list, dict)) and not value:
        return '`%s`' % ('[]' if isinstance(value, list) else '{}')
    if isinstance(value, list):
        return '`[%s]`' % ', '.join(str(v) for v in value)
    return '`%s`' % (value,)


def _description(_path, spec, shared_at):
    vendor = {'nvidia': '**NVIDIA** ', 'amd': '**AMD** '}.get(spec.get('vendor'), '')
    text = vendor + spec.get('description', '')
    if shared_at:
        text += ' Its keys: as `%s`.' % shared_at
    return text.replace('|', '\\|').replace('\n', ' ')


# column -> (header, cell of (path, spec, where a shared spec first came or None))
COLUMNS = {
    'key': ('key', lambda path, spec, shared_at: '`%s`' % path),
    'type': ('type', lambda path, spec, shared_at: type_text(spec)),
    'required': ('required', lambda path, spec, shared_at: 'yes' if spec.get('required') else ''),
    'default': ('default', lambda path, spec, shared_at: default_text(spec.get('default'))),
    'null': ('null', lambda path, spec, shared_at: 'yes' if spec.get('null') else ''),
    'unit': ('unit', lambda path, spec, shared_at: spec.get('unit', '')),
    'from': ('from', lambda path, spec, shared_at: ', '.join('`%s`' % p for p in (spec.get('probe') or '').split())),
    'description': ('description', _description),
}


def entries(path, spec, seen):
    """``(path, spec, shared_at)`` of ``spec`` at ``path`` and of every spec in it, in order: a mapping's keys as
    ``path.key``, a map's values as ``path.<key>`` and a list's items as ``path[]`` where they are containers;
    a ``shared`` spec's keys only where it first comes (``seen``: {id: path}), ``shared_at`` that place after."""
    shared_at = seen.get(id(spec)) if spec.get('shared') else None
    yield path, spec, shared_at
    if spec.get('shared'):
        if shared_at is not None:
            return
        seen[id(spec)] = path
    kind = spec['type']
    if kind == 'dict':
        for name, sub in spec['keys'].items():
            yield from entries(join(path, name), sub, seen)
    elif kind == 'map' and spec['values']['type'] in CONTAINERS:
        name = (spec.get('key') or {}).get('description', 'key')
        yield from entries('%s.<%s>' % (path, name), spec['values'], seen)
    elif kind == 'list' and spec['elements']['type'] in CONTAINERS:
        yield from entries(path + '[]', spec['elements'], seen)


def table_header(columns):
    """The header and rule of a table of ``columns`` (names of COLUMNS)."""
    return ['| %s |' % ' | '.join(COLUMNS[column][0] for column in columns), '|%s' % ('---|' * len(columns))]


def table_rows(columns, specs, seen=None):
    """The rows of the ``(path, spec)`` pairs of ``specs`` and of everything in them (``entries``)."""
    seen = {} if seen is None else seen
    out = []
    for path, spec in specs:
        for where, sub, shared_at in entries(path, spec, seen):
            out.append('| %s |' % ' | '.join(COLUMNS[column][1](where, sub, shared_at) for column in columns))
    return out
