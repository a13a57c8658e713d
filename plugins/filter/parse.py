# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``xuanwu.cluster.parse``: a tool's output through the collection's own parser for it.

The probe (node_probe) and the roles read a tool's output with the same parser, so a role that
provisions a setting and the check that validates it cannot disagree on what the output says.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_host, _parse_ib, _parse_nccl, _parse_net, _parse_nvidia
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError


def parsers():
    """{name: parser}: every ``parse_<name>`` function of the parser modules."""
    table = {}
    for module in (_parse_host, _parse_ib, _parse_nccl, _parse_net, _parse_nvidia):
        for attr in dir(module):
            if attr.startswith('parse_') and callable(getattr(module, attr)):
                table[attr[len('parse_'):]] = getattr(module, attr)
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
