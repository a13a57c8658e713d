# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inline SVG plots of report.html (docs/report-format.md): pure functions, text in, SVG text out.

:func:`busbw_plot` draws bus bandwidth per message size (log2 x axis) against a profile's floor (a step line,
each point of the curve holding from its ``min_bytes`` up) and marks the points under the floor;
:func:`sparkline` draws a small line of samples. Every text and attribute value taken from data is
escaped; values that are not finite numbers are left out (a gap in a sparkline), never drawn as zero.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
import math

from ansible_collections.xuanwu.cluster.plugins.module_utils._collectives import human_bytes

# plot geometry: the plot area inside the margins
WIDTH, HEIGHT = 480, 250
LEFT, RIGHT, TOP, BOTTOM = 60, 16, 14, 46
COLOURS = {'busbw': '#1f6fb2', 'floor': '#555', 'under': '#c0392b', 'grid': '#e4e4e4', 'axis': '#333'}

# the fill of the points, once per plot (a standalone copy of the SVG draws the same)
STYLE = '<style>.pt{fill:%s}.under{fill:%s}</style>' % (COLOURS['busbw'], COLOURS['under'])


def _esc(value):
    return html.escape(str(value), quote=True)


def number(value):
    """``value`` as a float when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def num_text(value):
    """A figure as text: at most two decimals, no trailing zeros (``224.927019`` -> ``224.93``, ``324.0`` -> ``324``)."""
    return ('%.2f' % value).rstrip('0').rstrip('.')


def _c(value):
    """A coordinate: one decimal, no trailing zeros."""
    return ('%.1f' % value).rstrip('0').rstrip('.')


def _g(value):
    return '%g' % value


def sizes_of(busbw):
    """``[(size bytes, GB/s)]`` sorted by size, of a ``busbw_gbps`` mapping (size as text -> GB/s); entries
    whose size is not a positive integer or whose value is not a finite number are left out."""
    out = []
    for size, value in (busbw or {}).items() if isinstance(busbw, dict) else ():
        size, value = str(size), number(value)
        if size.isdigit() and int(size) > 0 and value is not None:
            out.append((int(size), value))
    return sorted(out)


def floor_steps(curve):
    """``[(min_bytes, GB/s)]`` sorted, of a profile curve (``[{min_bytes, busbw_gbps_min}]``); bad points left out."""
    out = []
    for point in curve or () if isinstance(curve, (list, tuple)) else ():
        if not isinstance(point, dict):
            continue
        size, value = number(point.get('min_bytes')), number(point.get('busbw_gbps_min'))
        if size is not None and size > 0 and value is not None:
            out.append((int(size), value))
    return sorted(out)


def floor_at(steps, size):
    """The floor at ``size``: the value of the last step whose ``min_bytes`` is at most ``size``; None below the first."""
    found = None
    for min_bytes, value in steps:
        if min_bytes <= size:
            found = value
    return found


def _nice_step(span, count):
    """A step of 1, 2 or 5 x 10^n giving about ``count`` intervals over ``span``."""
    raw = span / float(count)
    magnitude = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if mult * magnitude >= raw:
            return mult * magnitude
    return 10 * magnitude


def _size_label(exponent):
    return human_bytes(1 << exponent) if exponent >= 0 else _g(2 ** exponent)


class Scale(object):
    """Maps (log2 size, GB/s) to SVG coordinates of the plot area."""

    def __init__(self, x_lo, x_hi, y_hi, width=WIDTH, height=HEIGHT):
        self.x_lo, self.x_hi, self.y_hi = x_lo, x_hi, y_hi
        self.left, self.right = LEFT, width - RIGHT
        self.top, self.bottom = TOP, height - BOTTOM

    def x(self, size):
        return self.left + (math.log(size, 2) - self.x_lo) / (self.x_hi - self.x_lo) * (self.right - self.left)

    def y(self, value):
        return self.bottom - max(0.0, value) / self.y_hi * (self.bottom - self.top)


def _scale(points, steps, width, height):
    logs = [math.log(s, 2) for s, _v in points] + [math.log(s, 2) for s, _v in steps]
    x_lo, x_hi = math.floor(min(logs)), math.ceil(max(logs))
    if x_hi - x_lo < 2:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    top = max([v for _s, v in points] + [v for _s, v in steps] + [1.0])
    step = _nice_step(top * 1.08, 5)
    return Scale(x_lo, x_hi, step * math.ceil(top * 1.08 / step), width, height), step


def _axes(scale, y_step, x_label, y_label):
    out = []
    value = 0.0
    while value <= scale.y_hi + 1e-9:
        y = _c(scale.y(value))
        out.append('<line class="grid" x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s"/>' % (
            _c(scale.left), _c(scale.right), y, y, COLOURS['grid']))
        out.append('<text class="ytick" x="%s" y="%s" text-anchor="end" dy="4">%s</text>' % (_c(scale.left - 6), y, _g(value)))
        value += y_step
    span = scale.x_hi - scale.x_lo
    every = max(1, int(math.ceil(span / 8.0)))
    for exponent in range(int(scale.x_lo), int(scale.x_hi) + 1):
        if exponent % every:
            continue
        x = _c(scale.x(2.0 ** exponent))
        out.append('<line class="xtick" x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s"/>' % (
            x, x, _c(scale.bottom), _c(scale.bottom + 4), COLOURS['axis']))
        out.append('<text class="xtick" x="%s" y="%s" text-anchor="middle">%s</text>' % (x, _c(scale.bottom + 16), _esc(_size_label(exponent))))
    out.append('<path class="axis" d="M%s %sV%sH%s" fill="none" stroke="%s"/>' % (
        _c(scale.left), _c(scale.top), _c(scale.bottom), _c(scale.right), COLOURS['axis']))
    out.append('<text class="xlabel" x="%s" y="%s" text-anchor="middle">%s</text>' % (
        _c((scale.left + scale.right) / 2.0), _c(scale.bottom + 34), _esc(x_label)))
    out.append('<text class="ylabel" transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>' % (
        _c((scale.top + scale.bottom) / 2.0), _esc(y_label)))
    return out


def _floor_path(scale, steps):
    """The step line: from each step's min_bytes to the next one's (the last to the right edge) at its value."""
    parts = []
    for i, (min_bytes, value) in enumerate(steps):
        x0 = scale.x(min_bytes)
        x1 = scale.x(steps[i + 1][0]) if i + 1 < len(steps) else scale.right
        y = _c(scale.y(value))
        parts.append('%s%s %s' % ('M' if i == 0 else 'L', _c(x0), y))
        parts.append('L%s %s' % (_c(x1), y))
    return '<path class="floor" d="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6 3"/>' % (
        ' '.join(parts), COLOURS['floor'])


def _legend(scale, steps, under):
    items = [('busbw', 'measured busbw', COLOURS['busbw'], '')]
    if steps:
        items.append(('floor', 'profile floor', COLOURS['floor'], ' stroke-dasharray="6 3"'))
    if under:
        items.append(('under', 'under the floor (%d)' % under, COLOURS['under'], ''))
    out = ['<g class="legend">']
    x, y = scale.left + 10, scale.top + 12
    for i, (kind, label, colour, dash) in enumerate(items):
        yy = _c(y + 16 * i)
        if kind == 'under':
            out.append('<circle cx="%s" cy="%s" r="4" fill="%s"/>' % (_c(x + 10), yy, colour))
        else:
            out.append('<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="2"%s/>' % (
                _c(x), _c(x + 20), yy, yy, colour, dash))
        out.append('<text x="%s" y="%s" dy="4">%s</text>' % (_c(x + 26), yy, _esc(label)))
    out.append('</g>')
    return out


def busbw_plot(busbw, curve=None, title='', width=WIDTH, height=HEIGHT):
    """An SVG line plot of ``busbw`` (``{size bytes as text: GB/s}``) over log2 message size against the floor
    ``curve`` (``[{min_bytes, busbw_gbps_min}]``, a step line); a point under the floor is a ``circle`` of class
    ``under`` (else ``pt``), each with ``data-bytes`` (its message size) and its figures as a tooltip. Empty text when nothing can be drawn."""
    points, steps = sizes_of(busbw), floor_steps(curve)
    if not points:
        return ''
    scale, y_step = _scale(points, steps, width, height)
    under = sum(1 for s, v in points if floor_at(steps, s) is not None and v < floor_at(steps, s))
    label = '%s: bus bandwidth per message size%s' % (title, ', %d point(s) under the floor' % under if under else '')
    out = ['<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
           'aria-label="%s" font-size="11">' % (width, height, width, height, _esc(label)),
           '<title>%s</title>' % _esc(label), STYLE]
    out += _axes(scale, y_step, 'message size (bytes, log2 scale)', 'busbw (GB/s)')
    if steps:
        out.append(_floor_path(scale, steps))
    out.append('<polyline class="busbw" points="%s" fill="none" stroke="%s" stroke-width="2"/>' % (
        ' '.join('%s,%s' % (_c(scale.x(s)), _c(scale.y(v))) for s, v in points), COLOURS['busbw']))
    for size, value in points:
        floor = floor_at(steps, size)
        low = floor is not None and value < floor
        tip = '%s: %s GB/s%s' % (human_bytes(size), _g(value), ' (floor %s)' % _g(floor) if floor is not None else '')
        out.append('<circle class="%s" cx="%s" cy="%s" r="%s" data-bytes="%d"><title>%s</title></circle>' % (
            'under' if low else 'pt', _c(scale.x(size)), _c(scale.y(value)), '4.5' if low else '2.5', size, _esc(tip)))
    out += _legend(scale, steps, under)
    out.append('</svg>')
    return '\n'.join(out)


def gpu_bars(values, floor=None, title='', unit='', width=WIDTH, bar_px=18):
    """An SVG bar chart of one figure per GPU (``[(gpu index, value)]``; a value of None is left out) against the
    profile's ``floor`` (a dashed line); a bar under the floor is of class ``under`` (else ``pt``), each with its figure
    as a tooltip. Empty text when nothing can be drawn."""
    rows = [(g, v) for g, v in values or [] if number(v) is not None]
    if not rows:
        return ''
    top = max([v for _g, v in rows] + ([floor] if number(floor) is not None else [])) * 1.1 or 1.0
    left, right, head = 60, 20, 24
    height = head + bar_px * len(rows) * 1.5 + 24
    span = width - left - right
    under = sum(1 for _g, v in rows if number(floor) is not None and v < floor)
    label = '%s: %s per GPU%s' % (title, unit, ', %d under the floor' % under if under else '')
    out = ['<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
           'aria-label="%s" font-size="11">' % (width, height, width, height, _esc(label)),
           '<title>%s</title>' % _esc(label), STYLE,
           '<text x="%d" y="14">%s</text>' % (left, _esc('%s (%s)' % (title, unit)))]
    for i, (gpu, value) in enumerate(rows):
        y = head + i * bar_px * 1.5
        low = number(floor) is not None and value < floor
        tip = 'GPU %s: %s %s%s' % (gpu, _g(value), unit, ' (floor %s)' % _g(floor) if number(floor) is not None else '')
        out.append('<text x="%d" y="%s" text-anchor="end">gpu%s</text>' % (left - 6, _c(y + bar_px * 0.7), _esc(gpu)))
        out.append('<rect class="%s" x="%d" y="%s" width="%s" height="%d"><title>%s</title></rect>' % (
            'under' if low else 'pt', left, _c(y), _c(span * value / top), bar_px, _esc(tip)))
        out.append('<text x="%s" y="%s">%s</text>' % (_c(left + span * value / top + 4), _c(y + bar_px * 0.7), _esc(_g(value))))
    if number(floor) is not None:
        x = left + span * floor / top
        out.append('<line class="floor" x1="%s" y1="%d" x2="%s" y2="%s" stroke="%s" stroke-dasharray="4 3"/>' % (
            _c(x), head - 4, _c(x), _c(height - 18), COLOURS['floor']))
        out.append('<text x="%s" y="%s">floor %s</text>' % (_c(x + 3), _c(height - 6), _esc(_g(floor))))
    out.append('</svg>')
    return '\n'.join(out)


def sparkline(values, width=120, height=26, colour=COLOURS['busbw'], label=''):
    """A small SVG line of ``values`` (numbers or None, in sample order): scaled from their min to their max, a
    gap where a value is missing; a ``polyline`` per run of values. Empty text when no value is a number."""
    nums = [number(v) for v in values or ()] if isinstance(values, (list, tuple)) else []
    have = [v for v in nums if v is not None]
    if not have:
        return ''
    lo, hi = min(have), max(have)
    pad = 2.0
    step = (width - 2 * pad) / float(max(1, len(nums) - 1))

    def y(value):
        if hi == lo:
            return height / 2.0
        return height - pad - (value - lo) / (hi - lo) * (height - 2 * pad)

    runs, run = [], []
    for i, value in enumerate(nums):
        if value is None:
            if run:
                runs.append(run)
            run = []
            continue
        run.append('%s,%s' % (_c(pad + i * step), _c(y(value))))
    if run:
        runs.append(run)
    out = ['<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">'
           % (width, height, width, height, _esc(label))]
    for points in runs:
        if len(points) == 1:
            x, yy = points[0].split(',')
            out.append('<circle cx="%s" cy="%s" r="1.5" fill="%s"/>' % (x, yy, colour))
        else:
            out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>' % (' '.join(points), colour))
    out.append('</svg>')
    return ''.join(out)
