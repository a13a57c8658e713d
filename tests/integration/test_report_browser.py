"""report.html in a real browser: headless Chromium (Debian's ``chromium`` package; .ci/run installs it) loads
the page of a real run report with floors and GPU samples (tests/report_data.py), offline, and

* writes a screenshot that is a PNG of the window's size, not blank, with the plots' colours painted;
* builds a DOM with the busbw plots, their floor lines, the points under the floor and the sparklines;
* logs no console message (a script error, a resource it could not load) while doing so.

Skipped with the reason when no Chromium is installed here; CI has one, so it runs there."""
import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

import png
import report_data
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report

pytestmark = pytest.mark.one_controller   # concerns the browser, not the ansible-core version

CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
WIDTH, HEIGHT = 1280, 2400
BUSBW_BLUE = (0x1f, 0x6f, 0xb2)      # _svg.COLOURS['busbw']: only the plots and sparklines use it
UNDER_RED = (0xc0, 0x39, 0x2b)       # _svg.COLOURS['under'] (also the fail badges)

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason='no chromium on PATH (Debian: apt-get install chromium); CI installs it')


def _chromium(tmp_path, url, *args):
    """Run headless Chromium on ``url``: (stdout, stderr). Its profile and caches stay under tmp_path."""
    cmd = [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--hide-scrollbars',
           '--user-data-dir=%s' % (tmp_path / 'profile'), '--enable-logging=stderr', '--v=0'] + list(args) + [url]
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / 'config'), XDG_CACHE_HOME=str(tmp_path / 'cache'))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


def _console(stderr):
    """Console messages Chromium logged (script errors, failed loads, console.*)."""
    return [line for line in stderr.splitlines() if ':CONSOLE' in line or 'Uncaught' in line]


class _Dom(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.fixture(scope='module')
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp('report')
    report = report_data.fleet_report(3)       # gpu0000 warns, gpu0001-slow under the floor, gpu0002-throttled
    path = folder / 'report.html'
    path.write_text(_report.render_html(report), encoding='utf-8')
    return report, path


@needs_chromium
def test_the_console_check_sees_a_script_error(tmp_path):
    """The check below would see an error: a page with one logs it."""
    bad = tmp_path / 'bad.html'
    bad.write_text('<!DOCTYPE html><html><body><script>throw new Error("deliberate")</script></body></html>', encoding='utf-8')
    _out, err = _chromium(tmp_path, bad.as_uri(), '--dump-dom')
    assert any('deliberate' in line for line in _console(err)), err[-2000:]


@needs_chromium
def test_the_page_loads_offline_with_its_plots_and_no_console_message(tmp_path, page):
    report, path = page
    dom, err = _chromium(tmp_path, path.as_uri(), '--dump-dom')
    assert _console(err) == []
    parser = _Dom()
    parser.feed(dom)
    tags = parser.tags
    # nothing outside the page: no script, no external stylesheet, font or image
    assert not [t for t, _a in tags if t in ('script', 'link', 'img', 'iframe')]
    assert not [a for _t, a in tags if any(a.get(k, '#').split(':')[0] in ('http', 'https', '//') for k in ('src', 'href'))]
    plots = [a for t, a in tags if t == 'svg' and a.get('class') == 'plot']
    runs = dict((h, [r for r in e['workloads'] if r.get('busbw_gbps')]) for h, e in report['hosts'].items())
    assert len(plots) == sum(len(r) for r in runs.values())
    assert len([a for t, a in tags if t == 'path' and a.get('class') == 'floor']) == len(plots)
    under = [a for t, a in tags if t == 'circle' and a.get('class') == 'under']
    assert under and len(under) == sum(int(p['aria-label'].split(', ')[-1].split()[0]) for p in plots if 'under the floor' in p['aria-label'])
    sparks = [a for t, a in tags if t == 'svg' and a.get('class') == 'spark']
    gpus = sum(len(r['dmon']['gpus']) for e in report['hosts'].values() for r in e['workloads']
               if isinstance(r.get('dmon'), dict) and r['dmon'].get('gpus'))
    assert len(sparks) == gpus * len(_report.DMON_COLUMNS)


@needs_chromium
def test_the_screenshot_is_an_image_of_the_window_with_the_plots_painted(tmp_path, page):
    _report_data, path = page
    shot = tmp_path / 'report.png'
    _out, err = _chromium(tmp_path, path.as_uri(), '--screenshot=%s' % shot, '--window-size=%d,%d' % (WIDTH, HEIGHT))
    assert _console(err) == []
    data = shot.read_bytes()
    width, height, depth, _colour, _interlace = png.header(data)
    assert (width, height, depth) == (WIDTH, HEIGHT, 8)
    counts = png.colour_counts(data)
    white = counts.get((255, 255, 255), 0)
    assert len(counts) > 100, 'a near-blank screenshot: %d colours' % len(counts)
    assert white < 0.95 * width * height, 'a near-blank screenshot: %d of %d pixels white' % (white, width * height)
    assert counts.get(BUSBW_BLUE, 0) > 500, 'the busbw lines were not painted'
    assert counts.get(UNDER_RED, 0) > 100, 'the points under the floor and the fail badges were not painted'
