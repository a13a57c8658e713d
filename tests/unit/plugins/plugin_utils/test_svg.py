"""The SVG plots of report.html, read back as XML: points sit where the data puts them (log2 x, linear y),
the floor is a step line at the curve's values, points under it are marked, gaps stay gaps."""
import math
import re
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _svg

NS = '{http://www.w3.org/2000/svg}'
GIB = 1 << 30
# busbw of a real all_reduce sweep from 1 MiB (tests/fixtures/report/), 1 GiB and 4 GiB lowered under the floor
BUSBW = {str(1 << 20): 30.5, str(1 << 24): 214.3, str(1 << 27): 283.8, str(GIB): 300.0, str(2 * GIB): 336.5,
         str(4 * GIB): 320.0, str(8 * GIB): 346.7}
CURVE = [{'min_bytes': 1 << 24, 'busbw_gbps_min': 171.4}, {'min_bytes': 1 << 27, 'busbw_gbps_min': 255.4},
         {'min_bytes': GIB, 'busbw_gbps_min': 314.9}, {'min_bytes': 2 * GIB, 'busbw_gbps_min': 326.4},
         {'min_bytes': 4 * GIB, 'busbw_gbps_min': 333.1}]


def _svg_root(text):
    return ET.fromstring(text)


def _circles(root):
    return [(int(c.get('data-bytes')), float(c.get('cx')), float(c.get('cy')), c.get('class')) for c in root.iter(NS + 'circle')
            if c.get('data-bytes')]


def _linear(xs, ys):
    """Slope and intercept through the first and last point; every point must lie on the line (0.1 rounding)."""
    slope = (ys[-1] - ys[0]) / (xs[-1] - xs[0])
    for x, y in zip(xs, ys):
        assert abs(ys[0] + slope * (x - xs[0]) - y) < 0.15, (x, y)
    return slope, ys[0] - slope * xs[0]


def _maps(root, busbw):
    """The x map (log2 bytes -> px) and y map (GB/s -> px) the points follow."""
    points = _circles(root)
    sizes = [b for b, _x, _y, _c in points]
    assert sizes == sorted(int(s) for s in busbw)
    x_slope, x_icpt = _linear([math.log(b, 2) for b in sizes], [x for _b, x, _y, _c in points])
    y_slope, y_icpt = _linear([busbw[str(b)] for b in sizes], [y for _b, _x, y, _c in points])
    assert x_slope > 0 and y_slope < 0     # larger sizes to the right, more GB/s higher up
    return (lambda b: x_icpt + x_slope * math.log(b, 2)), (lambda v: y_icpt + y_slope * v)


def test_points_follow_the_data_on_a_log2_x_axis():
    root = _svg_root(_svg.busbw_plot(BUSBW, CURVE, title='all_reduce_perf'))
    _maps(root, BUSBW)
    line = root.find(NS + 'polyline')
    assert line.get('class') == 'busbw'
    assert [tuple(map(float, p.split(','))) for p in line.get('points').split()] == [(x, y) for _b, x, y, _c in _circles(root)]


def test_floor_is_a_step_line_at_the_curve_values_from_each_min_bytes_up():
    root = _svg_root(_svg.busbw_plot(BUSBW, CURVE))
    x_of, y_of = _maps(root, BUSBW)
    floor = [p for p in root.iter(NS + 'path') if p.get('class') == 'floor']
    assert len(floor) == 1
    coords = [(float(x), float(y)) for x, y in re.findall(r'[ML]([\d.]+) ([\d.]+)', floor[0].get('d'))]
    assert len(coords) == 2 * len(CURVE)
    for i, point in enumerate(CURVE):
        (x0, y0), (x1, y1) = coords[2 * i], coords[2 * i + 1]
        assert y0 == y1 and abs(y0 - y_of(point['busbw_gbps_min'])) < 0.15     # horizontal, at the floor value
        assert abs(x0 - x_of(point['min_bytes'])) < 0.15                       # starting at min_bytes
        if i + 1 < len(CURVE):
            assert abs(x1 - x_of(CURVE[i + 1]['min_bytes'])) < 0.15
    assert coords[-1][0] >= x_of(8 * GIB) - 0.15                               # the last step to the right edge


def test_points_under_the_floor_are_marked_and_counted_in_the_legend():
    root = _svg_root(_svg.busbw_plot(BUSBW, CURVE))
    under = sorted(b for b, _x, _y, cls in _circles(root) if cls == 'under')
    assert under == [GIB, 4 * GIB]                           # 1 MiB has no floor: below the first min_bytes
    assert all(cls == 'pt' for b, _x, _y, cls in _circles(root) if b not in under)
    legend = [t.text for t in root.iter(NS + 'text') if t.text and 'floor' in t.text]
    assert legend == ['profile floor', 'under the floor (2)']
    assert 'under the floor' in root.get('aria-label')


def test_axes_have_labels_with_units_and_size_ticks():
    root = _svg_root(_svg.busbw_plot(BUSBW, CURVE))
    texts = [t.text for t in root.iter(NS + 'text')]
    assert 'busbw (GB/s)' in texts and 'message size (bytes, log2 scale)' in texts
    assert {'1 MiB', '1 GiB'} <= set(texts) and '0' in texts


def test_without_a_curve_there_is_no_floor_and_nothing_is_under_it():
    root = _svg_root(_svg.busbw_plot(BUSBW))
    assert not [p for p in root.iter(NS + 'path') if p.get('class') == 'floor']
    assert set(cls for _b, _x, _y, cls in _circles(root)) == {'pt'}


@pytest.mark.parametrize('busbw', [None, {}, {'x': 1.0}, {'0': 1.0}, {'1024': 'NaN'}, {'1024': float('inf')}, {'1024': True}, []])
def test_nothing_to_draw_is_no_plot(busbw):
    assert _svg.busbw_plot(busbw, CURVE) == ''


def test_values_that_are_not_finite_numbers_are_left_out_and_bad_curve_points_ignored():
    busbw = dict(BUSBW, **{str(1 << 22): 'NaN', str(1 << 23): None})
    curve = CURVE + [{'min_bytes': 'x', 'busbw_gbps_min': 1}, 'junk', {'min_bytes': 1 << 33}]
    root = _svg_root(_svg.busbw_plot(busbw, curve))
    assert [b for b, _x, _y, _c in _circles(root)] == sorted(int(s) for s in BUSBW)


def test_a_hostile_title_is_text():
    title = '<script>alert(1)</script>" onload="x'
    root = _svg_root(_svg.busbw_plot(BUSBW, CURVE, title=title))
    assert root.find(NS + 'title').text.startswith(title) and root.get('aria-label').startswith(title)
    assert not list(root.iter('script')) and not list(root.iter(NS + 'script'))


def _spark_runs(text):
    root = _svg_root(text)
    return [[tuple(map(float, p.split(','))) for p in line.get('points').split()] for line in root.iter(NS + 'polyline')]


def test_sparkline_follows_the_values_and_breaks_at_gaps():
    values = [100, 300, 200, None, 'NaN', 250, 260, None, 90]
    runs = _spark_runs(_svg.sparkline(values))
    assert [len(r) for r in runs] == [3, 2]                        # a lone value is a dot, not a line
    points = runs[0] + runs[1]
    nums = [100, 300, 200, 250, 260]
    assert [x for x, _y in points] == sorted(x for x, _y in points)
    # higher values higher up (smaller y), linear in the value
    _linear(nums, [y for _x, y in points])
    root = _svg_root(_svg.sparkline(values))
    assert len(list(root.iter(NS + 'circle'))) == 1


def test_sparkline_of_a_constant_and_of_nothing():
    assert len(set(y for _x, y in _spark_runs(_svg.sparkline([5, 5, 5]))[0])) == 1
    for values in (None, [], [None, 'NaN'], 'text'):
        assert _svg.sparkline(values) == ''


def test_floor_at_holds_from_each_min_bytes_up():
    steps = _svg.floor_steps(CURVE)
    assert _svg.floor_at(steps, (1 << 24) - 1) is None
    assert _svg.floor_at(steps, 1 << 24) == 171.4 and _svg.floor_at(steps, GIB - 1) == 255.4
    assert _svg.floor_at(steps, 8 * GIB) == 333.1
