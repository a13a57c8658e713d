# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Errors shared by the collection's pure parsers and checks (private to the collection)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import math

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


def guarded(source):
    """Turn any stray exception of a parser into ``ParseError`` (the contract: nothing else escapes)."""
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except ParseError:
                raise
            except (IndexError, KeyError, ValueError, TypeError, AttributeError, RecursionError) as exc:
                raise ParseError(source, 'unexpected %s: %s' % (type(exc).__name__, exc), args[0] if args else None)
        return wrapper
    return decorate


# Numbers read from a tool's text: integers (counters, sizes, ids, ports) fit in MAX_INT; a token longer
# than MAX_NUMBER_CHARS is never a number a tool prints (and int() of more than 4,300 digits raises
# ValueError on Python 3.11+, while Python 3.8 would convert any length: the bound is ours).
MAX_INT = 2 ** 64
MAX_NUMBER_CHARS = 64


def _number_token(value, source, what, text):
    token = value.strip() if isinstance(value, str) else value
    if not isinstance(token, str) or not token:
        raise ParseError(source, '%s is not a number: %r' % (what, excerpt(token, 40)), text)
    if len(token) > MAX_NUMBER_CHARS:
        raise ParseError(source, '%s is not a number: %s... (%d characters)' % (what, token[:20], len(token)), text)
    return token


def int_from_text(value, source, what, text=None, low=0, high=MAX_INT, base=10):
    """An integer read from a tool's text, ``low <= n <= high``; anything else (not an integer, too many
    digits, out of range) is a ParseError of ``source`` naming ``what``, never ValueError."""
    token = _number_token(value, source, what, text)
    try:
        number = int(token, base)
    except ValueError:
        raise ParseError(source, '%s is not an integer: %r' % (what, token), text)
    if (low is not None and number < low) or (high is not None and number > high):
        raise ParseError(source, '%s %s is outside %s..%s' % (what, token, low, high), text)
    return number


def float_from_text(value, source, what, text=None, low=None, high=None):
    """A finite float read from a tool's text (nan, inf and overflowing values are a ParseError)."""
    token = _number_token(value, source, what, text)
    try:
        number = float(token)
    except (ValueError, OverflowError):
        raise ParseError(source, '%s is not a number: %r' % (what, token), text)
    if math.isnan(number) or math.isinf(number):
        raise ParseError(source, '%s is not a number: %r (not finite)' % (what, token), text)
    if (low is not None and number < low) or (high is not None and number > high):
        raise ParseError(source, '%s %s is outside %s..%s' % (what, token, low, high), text)
    return number


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

    ``path`` is the file (or variable) and ``key`` the dotted key that is wrong. A profile with several mistakes
    raises one error that lists them all (``listing``): ``problems`` holds each ``(path, key, reason)``, the message
    one line each, and ``path``, ``key`` and ``reason`` are the first one's.
    """

    def __init__(self, path, key, reason, problems=None):
        self.path = path
        self.key = key
        self.reason = reason
        self.problems = list(problems) if problems else [(path, key, reason)]
        super(ProfileError, self).__init__('\n'.join(self.line(*problem) for problem in self.problems))

    @staticmethod
    def line(path, key, reason):
        """One problem as a line: ``path: key: reason``."""
        where = '%s: %s' % (path, key) if key else str(path)
        return '%s: %s' % (where, reason)

    @classmethod
    def listing(cls, problems):
        """One error of every ``(path, key, reason)`` of ``problems`` (at least one)."""
        problems = list(problems)
        path, key, reason = problems[0]
        return cls(path, key, reason, problems)
