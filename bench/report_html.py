# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html at fleet sizes: render time and page size (docs/report-format.md, bench/README.md).

    .venv/bin/python bench/report_html.py [--hosts 10,100,1000] [--rounds 3]

Each host is a copy of the real 2x H200 run report (tests/fixtures/report/) with the profile's floor curves
and real dmon samples; every tenth host is slower, the next one throttled (tests/report_data.py). Prints, per
host count, the median and the spread of ``render_html``'s wall time over the rounds, the page size, and the
size of report.md for comparison.
"""
import argparse
import importlib
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
importlib.import_module('conftest')     # makes the collection importable as ansible_collections.xuanwu.cluster
report_data = importlib.import_module('report_data')
_report = importlib.import_module('ansible_collections.xuanwu.cluster.plugins.plugin_utils._report')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', default='10,100,1000')
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args()
    print('| hosts | render_html median (s) | min - max (s) | report.html (MB) | per host (kB) | report.md (MB) |')
    print('|---|---|---|---|---|---|')
    for count in [int(n) for n in args.hosts.split(',')]:
        report = report_data.fleet_report(count)
        times = []
        for _round in range(args.rounds):
            start = time.perf_counter()
            page = _report.render_html(report)
            times.append(time.perf_counter() - start)
        size = len(page.encode('utf-8'))
        md = len(_report.render_markdown(report).encode('utf-8'))
        print('| %d | %.3f | %.3f - %.3f | %.2f | %.1f | %.2f |' % (
            count, statistics.median(times), min(times), max(times), size / 1e6, size / 1e3 / count, md / 1e6))


if __name__ == '__main__':
    main()
