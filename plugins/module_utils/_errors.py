# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Errors shared by the collection's pure parsers and checks (private to the collection)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


EXCERPT_CHARS = 400


def excerpt(text, limit=EXCERPT_CHARS):
    """Return the first ``limit`` characters of ``text`` for quoting in a finding."""
    if text is None:
        return ''
    if not isinstance(text, str):
        text = repr(text)
    return text[:limit]


class ParseError(ValueError):
    """Raised by a parser when the text is not what the tool prints.

    ``source`` names the tool or file, ``reason`` says what was wrong, ``text`` is what was read
    (kept as an excerpt so that a finding can quote it).
    """

    def __init__(self, source, reason, text=None):
        self.source = source
        self.reason = reason
        self.excerpt = excerpt(text)
        super(ParseError, self).__init__('cannot parse %s output: %s' % (source, reason))


class ProfileError(ValueError):
    """Raised when a hardware profile or an inventory override is invalid.

    ``path`` is the file (or variable) and ``key`` the dotted key that is wrong.
    """

    def __init__(self, path, key, reason):
        self.path = path
        self.key = key
        self.reason = reason
        where = '%s: %s' % (path, key) if key else str(path)
        super(ProfileError, self).__init__('%s: %s' % (where, reason))
