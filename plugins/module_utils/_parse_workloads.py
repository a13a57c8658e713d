# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser of the result lines the collection's workloads print (roles/torch_workloads/files: ``XUANWU_RESULT {json}``,
one line per result) (private to the collection). Text in, a list of dicts out; anything but text is a ParseError."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError

RESULT_TAG = 'XUANWU_RESULT'


# A figure of a result is a count, a time or a rate: NaN, an infinity or an integer beyond 64 bits is none. Such a
# value is kept as the text that was printed (never a number): the checks read text where a figure belongs as an
# invalid measurement and name it (``_collectives._bench_value``).
INT_BOUND = 2 ** 64


def _as_printed(text):
    return text


def _bounded_int(text):
    value = int(text)
    return value if abs(value) <= INT_BOUND else text[:40]


def _finite_float(text):
    value = float(text)
    return value if math.isfinite(value) else text[:40]


def parse_result_lines(text):
    """Return every ``XUANWU_RESULT {json}`` object printed in ``text`` (in order); NaN, infinities and integers
    beyond 64 bits as the text printed. ParseError for a line that is not one JSON object, or for anything but text."""
    results = []
    if not isinstance(text, str):
        raise ParseError('workload', 'expected text, got %s' % type(text).__name__, text)
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith(RESULT_TAG + ' '):
            continue
        try:
            value = json.loads(line[len(RESULT_TAG) + 1:], parse_constant=_as_printed, parse_int=_bounded_int,
                               parse_float=_finite_float)
        except ValueError as err:
            raise ParseError('workload', 'malformed %s line: %s' % (RESULT_TAG, err), line)
        if not isinstance(value, dict):
            raise ParseError('workload', '%s is not a JSON object' % RESULT_TAG, line)
        results.append(value)
    return results
