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


SECTION_ERROR_KEY = 'parse_error'


def section_error(section, reason, text):
    """Record for one section of a tool's output (a GPU, an HCA, a port...) that could not be read.

    Parsers that read output made of independent sections keep the sections they understood and
    store this record under ``parse_error`` in the dict of the section that holds the odd text
    (``section`` names it as a finding should, ``reason`` says what was wrong, ``excerpt`` quotes
    what was read). The probe engine lists them in the probe's status (``section_errors``) and the
    checks turn each into a finding, so one odd line spoils only its own section.
    """
    return {'section': section, 'error': reason, 'excerpt': excerpt(text)}


def section_errors(value, depth=4):
    """The ``section_error`` records found in a parser's result (dicts and lists, ``depth`` levels)."""
    found = []
    if depth < 0:
        return found
    if isinstance(value, dict):
        record = value.get(SECTION_ERROR_KEY)
        if isinstance(record, dict) and 'section' in record and 'error' in record:
            found.append(record)
        children = [v for k, v in value.items() if k != SECTION_ERROR_KEY]
    elif isinstance(value, list):
        children = value
    else:
        return found
    for child in children:
        if isinstance(child, (dict, list)):
            found.extend(section_errors(child, depth - 1))
    return found


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
