# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text normalisation shared by the parsers (private to the collection)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError

ANSI_RE = re.compile(r'\x1b\[[0-9;?]*[ -/]*[@-~]')
TRAILER_RE = re.compile(r'^exit=[0-9]+$')


def split_lines(text, source):
    """Normalise ``text`` (CRLF, ANSI colour codes, a capture script's ``exit=N`` trailer) into lines.

    Raises ParseError when ``text`` is not text at all.
    """
    if not isinstance(text, str):
        raise ParseError(source, 'expected text, got %s' % type(text).__name__, text)
    text = ANSI_RE.sub('', text.replace('\r\n', '\n').replace('\r', '\n'))
    lines = text.split('\n')
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and TRAILER_RE.match(lines[-1].strip()):
        lines.pop()
    return lines
