# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``xuanwu.cluster.parse``: a tool's output through the collection's own parser for it.

The probe (node_probe) and the roles read a tool's output with the same parser, so a role that
provisions a setting and the check that validates it cannot disagree on what the output says.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import pkgutil

from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError

# The parsers live in the modules ``_parse_<area>`` of this package, each function ``parse_<name>``.
PACKAGE = 'ansible_collections.xuanwu.cluster.plugins.module_utils'
MODULE_PREFIX = '_parse_'
FUNCTION_PREFIX = 'parse_'


def parser_modules(package=PACKAGE):
    """Every ``_parse_*`` module of ``package``, imported, in name order (pkgutil lists the package's folders, in a
    checkout and in an installed collection alike)."""
    path = importlib.import_module(package).__path__
    names = sorted(name for _finder, name, is_package in pkgutil.iter_modules(path)
                   if name.startswith(MODULE_PREFIX) and not is_package)
    return [importlib.import_module('%s.%s' % (package, name)) for name in names]


def parsers(modules=None):
    """{name: parser}: every ``parse_<name>`` function defined in the parser modules (``parser_modules()``); one
    imported from another module is that module's. Two modules defining the same ``parse_<name>`` is an error: the
    filter could not say which one a role means."""
    table = {}
    owners = {}
    for module in parser_modules() if modules is None else modules:
        for attr in sorted(vars(module)):
            func = getattr(module, attr)
            if not attr.startswith(FUNCTION_PREFIX) or not callable(func) or getattr(func, '__module__', None) != module.__name__:
                continue
            name = attr[len(FUNCTION_PREFIX):]
            if name in table:
                raise AnsibleFilterError('xuanwu.cluster.parse: parser %r is defined twice, in %s and %s; rename one'
                                         % (name, owners[name], module.__name__))
            table[name] = func
            owners[name] = module.__name__
    return table


PARSERS = parsers()
ERRORS = ('strict', 'none')


def parse(text, parser, errors='strict'):
    if parser not in PARSERS:
        raise AnsibleFilterError('xuanwu.cluster.parse: unknown parser %r; one of: %s' % (parser, ', '.join(sorted(PARSERS))))
    if errors not in ERRORS:
        raise AnsibleFilterError('xuanwu.cluster.parse: errors must be one of %s, got %r' % (', '.join(ERRORS), errors))
    if text is None:
        text = ''
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise AnsibleFilterError('xuanwu.cluster.parse(%s): the input must be text, got %s' % (parser, type(text).__name__))
    try:
        return PARSERS[parser](text)
    except ParseError as err:
        if errors == 'none':
            return None
        raise AnsibleFilterError('xuanwu.cluster.parse(%s): %s; read: %r' % (parser, err, err.excerpt))


class FilterModule(object):
    def filters(self):
        return {'parse': parse}
