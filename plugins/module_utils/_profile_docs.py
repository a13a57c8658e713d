# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware profiles: the Markdown of docs/profiles.md (``schema_markdown``, ``scripts/docs.py``): the page around the
schema's tables (rendered by the spec language's ``_spec.table_rows``, as docs/facts.md's) and each shipped profile
resolved (``resolved_markdown``).

Only the controller renders it (the shipped profiles are passed in: this module reads no file and imports no controller
code); the nodes validate profiles with ``_profile`` and never import this module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _spec
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import EXTENDS, EXTENDS_WORDS
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile_schema import DEFAULT_XID_FATAL, DEFAULT_XID_WARN, SCHEMA, SCHEMA_VERSION


# The columns of the schema's tables (_spec.COLUMNS).
COLUMNS = ('key', 'type', 'required', 'default', 'description')


def _flow(value):
    """A resolved value as YAML flow text, for one table cell."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, dict):
        return '{%s}' % ', '.join('%s: %s' % (k, _flow(v)) for k, v in value.items() if v is not None)
    if isinstance(value, (list, tuple)):
        return '[%s]' % ', '.join(_flow(v) for v in value)
    return str(value)


def _leaves(value, key=''):
    """``(dotted key, value)`` of every value a document sets: mappings are followed (an empty one is a value), lists
    and scalars are values; nulls are left out."""
    if isinstance(value, dict) and value:
        for name, item in value.items():
            yield from _leaves(item, _spec.join(key, name))
    elif value is not None:
        yield key, value


def _resolved_rows(entry):
    """The table rows of one resolved profile: every value a file of it sets, with the file that sets it (the last
    one merged); a list of mappings is one row per item."""
    set_in = {}
    for merged in entry['files']:
        for key, _value in _leaves(merged['document']):
            set_in[key] = merged['path']
    rows = []
    for key, value in _leaves(entry['profile']):
        if key not in set_in:
            continue        # a default: the tables above
        items = [('%s[%d]' % (key, i), item) for i, item in enumerate(value)] \
            if isinstance(value, list) and value and all(isinstance(item, dict) for item in value) else [(key, value)]
        for name, item in items:
            rows.append('| `%s` | `%s` | %s |' % (name, _flow(item).replace('|', '\\|'), set_in[key]))
    return rows


def resolved_markdown(shipped):
    """The section of docs/profiles.md that shows each shipped profile resolved: the files merged (what it extends) and
    every value they set. ``shipped``: ``[{'name', 'files': [{'path', 'extends', 'document'}], 'profile'}]``, the
    files the farthest parent first (plugin_utils/_collection.py ``shipped_profiles``)."""
    out = ['## Shipped profiles, resolved', '',
           'Each profile of profiles/ as the checks read it: the files merged (the farthest parent first; policy files are',
           'in profiles/policy/), then every value those files set, with the file that sets it (the last one merged).',
           'Keys not listed take their defaults (the tables above); the files give each number\'s source in a comment.', '']
    for entry in shipped:
        files = ', '.join('`%s`%s' % (merged['path'], ' (extends %s)' % ', '.join('`%s`' % ref for ref in merged['extends'])
                                      if merged['extends'] else '') for merged in entry['files'])
        out.extend(['### `%s`' % entry['name'], '', 'Files merged: %s.' % files, '',
                    '| key | value | set in |', '|---|---|---|'])
        out.extend(_resolved_rows(entry))
        out.append('')
    return out


def schema_markdown(shipped):
    """Render SCHEMA, and each shipped profile resolved, as the Markdown of docs/profiles.md.

    ``shipped``: the shipped profiles (``resolved_markdown``), as the controller reads them from profiles/
    (``plugin_utils._collection.shipped_profiles``: this module reads no file and imports no controller code)."""
    out = [
        '# Hardware profiles (schema version %d)' % SCHEMA_VERSION,
        '',
        '<!-- Generated from plugins/module_utils/_profile_docs.py (schema_markdown); do not edit by hand. -->',
        '',
        'A profile (`profiles/<name>.yml`) describes one node type: what the checks (docs/checks.md)',
        'compare the facts (docs/facts.md) against. Sections that a profile leaves out are not checked.',
        'Inventory groups and hosts can adjust a profile with `xuanwu_profile_overrides`: mappings merge',
        'key by key, lists and scalars replace, `null` resets a key to its default or drops a section.',
        '',
        'A profile file can `extends:` other profiles and shared policy files: a profile name, or a path',
        'relative to a profile folder (`policy/nvidia-xid`, `.yml` optional), or a list of them, looked up',
        'in `xuanwu_profile_dirs` and then in the collection\'s profiles/. The file is merged over what it',
        'extends (over each in turn, the last one winning) by the rules of the overrides: mappings merge key',
        'by key, the file wins; lists and scalars replace; `null` resets a key to its default or drops a',
        'section. A parent may itself extend others. The inventory\'s overrides apply to the result. Every',
        'file is checked on its own (an unknown key of a parent names the parent\'s file), then the result',
        'as a whole. A profile sets its own `name` (never inherited). A file that extends its own name (a',
        'site\'s `h100-sxm-8.yml` in `xuanwu_profile_dirs` that extends `h100-sxm-8`) gets the next one on',
        'the search path: the shipped profile. A cycle, a parent not found or a parent that is not a mapping',
        'is an error naming the file and its `extends`.',
        '',
        'Rules that apply everywhere:',
        '',
        '- Unknown keys are errors (with a "did you mean" suggestion); so are wrong types and values',
        '  outside the listed choices.',
        '- Numbers are finite: `.nan`, `.inf` and `-.inf` (or a number too large for a float) are errors,',
        '  never a threshold that no measurement can fail.',
        '- Versions are strings: quote them (`"13.0"`, not `13.0`). A version pattern matches a version',
        '  that starts with its components (`"580"` and `"580."` match 580.159.04, `"2.28"` does not match',
        '  2.2.1) or is a glob (`"580.*"`); `*_min` keys compare numerically, component by component.',
        '- Topology links: `NV<n>` means at least n bonded NVLinks; PCIe paths rank',
        '  PIX > PXB > PHB > NODE > SYS (the `nvidia-smi topo -m` legend). Any NVLink beats any PCIe path.',
        '- Units are in the key: `_mib`, `_gb` (10^9 bytes), `_mbps` (Mb/s), `rate_gbps` (Gb/s, as',
        '  ibstat prints it), `speed_gbps` and `busbw_gbps` (GB/s, as nvidia-smi and nccl-tests print them).',
        '',
    ]
    out.append('## Top level')
    out.append('')
    out.extend(_spec.table_header(COLUMNS))
    out.extend(_spec.table_rows(COLUMNS, [(name, spec) for name, spec in SCHEMA['keys'].items()
                                          if spec['type'] not in ('dict', 'map')]))
    out.append('| `%s` | string or list of strings |  |  | Profile files only: what the file extends, %s (above). |'
               % (EXTENDS, EXTENDS_WORDS))
    out.append('')
    for name in SCHEMA['keys']:
        spec = SCHEMA['keys'][name]
        if spec['type'] not in ('dict', 'map'):
            continue
        out.append('## `%s`' % name)
        out.append('')
        out.append(spec.get('description', ''))
        out.append('')
        out.extend(_spec.table_header(COLUMNS))
        out.extend(_spec.table_rows(COLUMNS, [(name, spec)]))
        out.append('')
    out.append('## Built-in Xid classification')
    out.append('')
    out.append('Used when a profile has no `gpu.xid` lists. An Xid in neither list warns.')
    out.append('')
    out.append('| Xid | class | reason |')
    out.append('|---|---|---|')
    for group, entries in (('fatal', DEFAULT_XID_FATAL), ('warn', DEFAULT_XID_WARN)):
        for entry in entries:
            out.append('| %d | %s | %s |' % (entry['xid'], group, entry['reason']))
    out.append('')
    out.extend(resolved_markdown(shipped))
    return '\n'.join(out)
