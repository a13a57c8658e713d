# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parser for ``nvidia-smi dmon`` (private to the collection).

:func:`parse_dmon` reads the output of ``nvidia-smi dmon`` with any ``-s`` selection and the optional
``-o D``/``-o T``/``-o DT`` date and time columns. dmon prints two header lines (the column names, then
their units), repeats them every few samples, and one line per GPU and sample; ``-`` is a value the GPU
does not report. The columns depend on the driver and on ``-s``: they are read from the header, never
assumed.

Only :class:`ParseError` leaves it: text that is not dmon output at all (no header, a sample before the
header, header lines that change mid-run) is a ParseError; a sample line that cannot be read spoils only
its GPU (``parse_error`` in that GPU's entry, see ``_errors.section_error``); a last line cut off by the
end of the capture is dropped and ``truncated`` says so.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import (
    SECTION_ERROR_KEY, ParseError, excerpt, float_from_text, int_from_text, section_error,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._text import split_lines

SOURCE = 'nvidia-smi dmon'
GPU_COLUMN = 'gpu'
# The columns of -o D / -o T: their values stay text.
TEXT_COLUMNS = {
    'date': re.compile(r'^(?:[0-9]{8}|[0-9]{4}[/-][0-9]{2}[/-][0-9]{2})$'),
    'time': re.compile(r'^[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?$'),
}
NOT_AVAILABLE = ('-', 'N/A')
MAX_GPU_INDEX = 4095
_NAME_RE = re.compile(r'^[A-Za-z][A-Za-z0-9_.]*$')
_INT_RE = re.compile(r'^[0-9]+$')
_FLOAT_RE = re.compile(r'^[0-9]+\.[0-9]+$')


def _header_tokens(line):
    return line.lstrip('#').split()


def _columns(names, units, text):
    """The columns of one header pair, checked: names unique and well formed, a ``gpu`` column."""
    if len(names) != len(units):
        raise ParseError(SOURCE, 'the header names %d columns but its units line %d' % (len(names), len(units)), text)
    columns = []
    for name, unit in zip(names, units):
        if not _NAME_RE.match(name):
            raise ParseError(SOURCE, 'not a column name: %r' % excerpt(name, 40), text)
        columns.append({'name': name.lower(), 'unit': unit})
    seen = [c['name'] for c in columns]
    if len(set(seen)) != len(seen):
        raise ParseError(SOURCE, 'a column is named twice in the header: %s' % ' '.join(seen), text)
    if GPU_COLUMN not in seen:
        raise ParseError(SOURCE, 'the header has no gpu column: %s' % ' '.join(seen), text)
    return columns


def _value(column, token, text):
    if token in NOT_AVAILABLE:
        return None
    what = 'value of %s' % column
    if column in TEXT_COLUMNS:
        if not TEXT_COLUMNS[column].match(token):
            raise ParseError(SOURCE, '%s is not a %s: %r' % (what, column, excerpt(token, 40)), text)
        return token
    if _INT_RE.match(token):
        return int_from_text(token, SOURCE, what, text)
    if _FLOAT_RE.match(token):
        return float_from_text(token, SOURCE, what, text)
    raise ParseError(SOURCE, '%s is not a number: %r' % (what, excerpt(token, 40)), text)


def _sample(columns, tokens, line):
    """(gpu index, sample) of one data line; ParseError names what is wrong."""
    if len(tokens) != len(columns):
        raise ParseError(SOURCE, '%d values for %d columns' % (len(tokens), len(columns)), line)
    sample = {}
    index = None
    for column, token in zip(columns, tokens):
        if column['name'] == GPU_COLUMN:
            index = int_from_text(token, SOURCE, 'gpu index', line, high=MAX_GPU_INDEX)
        else:
            sample[column['name']] = _value(column['name'], token, line)
    return index, sample


def _gpu_index(columns, tokens):
    """The GPU index of a line that could not be read, when its gpu column holds one (else None)."""
    names = [c['name'] for c in columns]
    position = names.index(GPU_COLUMN)
    if position < len(tokens) and _INT_RE.match(tokens[position]) and len(tokens[position]) <= 4:
        index = int(tokens[position])
        return index if index <= MAX_GPU_INDEX else None
    return None


def parse_dmon(text):
    """``nvidia-smi dmon`` output -> ``{columns, gpus, samples, headers, truncated}``.

    ``columns``: ``[{name, unit}]`` in printed order (names lower-cased: ``-o DT`` prints ``Date``/``Time``);
    ``gpus``: ``[{index, samples: [{column: number | None | text}]}]`` sorted by index, each sample holding every
    column except ``gpu`` (``None``: printed as ``-``; ``date``/``time`` stay text); ``samples``: lines read;
    ``headers``: header pairs read (dmon repeats them); ``truncated``: the last line was cut off and dropped.
    A GPU whose line could not be read has ``parse_error`` (its first bad line) and ``bad_lines``; a line
    that names no GPU gives ``parse_error`` at the top.
    """
    lines = [line.strip() for line in split_lines(text, SOURCE)]
    lines = [line for line in lines if line]
    columns = None
    pending = None          # the names line of a header pair whose units line has not come yet
    headers = 0
    truncated = False
    gpus = {}
    result = {'columns': [], 'gpus': [], 'samples': 0, 'headers': 0, 'truncated': False}
    last = len(lines) - 1
    for number, line in enumerate(lines):
        if line.startswith('#'):
            if pending is None:
                pending = _header_tokens(line)
                continue
            try:
                found = _columns(pending, _header_tokens(line), line)
            except ParseError:
                if number == last:
                    truncated = True
                    break
                raise
            pending = None
            headers += 1
            if columns is None:
                columns = found
            elif found != columns:
                raise ParseError(SOURCE, 'the columns changed mid-run: %s, then %s' % (
                    ' '.join(c['name'] for c in columns), ' '.join(c['name'] for c in found)), line)
            continue
        if pending is not None:
            raise ParseError(SOURCE, 'a header line without its units line before %r' % excerpt(line, 80), line)
        if columns is None:
            raise ParseError(SOURCE, 'no dmon header (# gpu ...) before %r' % excerpt(line, 80), line)
        tokens = line.split()
        if number == last and len(tokens) < len(columns):
            truncated = True
            break
        try:
            index, sample = _sample(columns, tokens, line)
        except ParseError as err:
            index = _gpu_index(columns, tokens)
            if index is None:
                result.setdefault(SECTION_ERROR_KEY, section_error('dmon', err.reason, line))
                result['bad_lines'] = result.get('bad_lines', 0) + 1
                continue
            entry = gpus.setdefault(index, {'index': index, 'samples': []})
            entry.setdefault(SECTION_ERROR_KEY, section_error('gpu%d' % index, err.reason, line))
            entry['bad_lines'] = entry.get('bad_lines', 0) + 1
            continue
        gpus.setdefault(index, {'index': index, 'samples': []})['samples'].append(sample)
        result['samples'] += 1
    if columns is None:
        if truncated or pending is not None:
            raise ParseError(SOURCE, 'the header is cut off: no units line', text)
        raise ParseError(SOURCE, 'no dmon header (# gpu ...) in the output', text)
    if pending is not None:
        truncated = True        # a repeated header cut off after its names line
    result.update(columns=columns, gpus=[gpus[i] for i in sorted(gpus)], headers=headers, truncated=truncated)
    return result
