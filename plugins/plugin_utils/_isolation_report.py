# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report of an isolation run (playbooks/isolate.yml): isolation.json, the pair-busbw heatmap
(inline SVG), report.md and report.html, rendered on the controller from _isolate.verdict()."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
import json

from ansible_collections.xuanwu.cluster.plugins.module_utils._isolate import MEASUREMENTS
from ansible_collections.xuanwu.cluster.plugins.plugin_utils._report import _md, _scrub

HEATMAP_FILE = 'isolation-heatmap.svg'
# ratio of the pair's busbw to the floor -> colour: under the floor red to orange, at or above it light to dark green
_LOW, _HIGH = 0.5, 1.2
_RED, _ORANGE, _LIGHT, _GREEN = (178, 24, 43), (253, 174, 97), (166, 217, 106), (26, 150, 65)
_NOT_MEASURED = '#8c8c8c'


def _mix(a, b, t):
    t = min(1.0, max(0.0, t))
    return '#%02x%02x%02x' % tuple(int(round(x + (y - x) * t)) for x, y in zip(a, b))


def colour(ratio):
    """Cell colour of a pair whose busbw is ``ratio`` x the floor (None: not measured)."""
    if ratio is None:
        return _NOT_MEASURED
    if ratio < 1.0:
        return _mix(_RED, _ORANGE, (ratio - _LOW) / (1.0 - _LOW))
    return _mix(_LIGHT, _GREEN, (ratio - 1.0) / (_HIGH - 1.0))


def _pair_text(entry):
    parts = []
    for key, what, unit in MEASUREMENTS:
        if key in entry:
            value = '-' if entry[key] is None else entry[key]
            parts.append('%s %s %s (floor %s)' % (what, value, unit, entry.get(key.replace('_gbps', '_floor_gbps'))))
    text = 'round %s: %s with %s, %s: %s' % (entry.get('round'), entry['pair'][0], entry['pair'][1], entry['outcome'], '; '.join(parts))
    if entry.get('error'):
        text += ' (%s)' % entry['error']
    return text


def heatmap_svg(verdict, hosts):
    """Hosts x hosts; a cell per tested pair (both halves), coloured by busbw / floor; untested cells
    empty; every label and tooltip escaped. The last run of a pair sets its cell."""
    e = html.escape
    hosts = sorted(hosts)
    index = dict((h, i) for i, h in enumerate(hosts))
    count = max(1, len(hosts))
    cell = max(3, min(24, 768 // count))
    label = 0 if cell < 8 else min(160, 7 * max([len(h) for h in hosts] or [1]))
    size = label + cell * count
    floor = verdict['floors'].get('busbw_gbps')
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" font-family="sans-serif" '
           'font-size="%d">' % (size + 8, size + 40, size + 8, size + 40, max(6, min(11, cell - 2))),
           '<title>%s</title>' % e('Pair bus bandwidth against the floor of %s GB/s: %d hosts, %d pair runs, %d round(s)' % (
               floor, len(hosts), verdict['pair_runs'], verdict['rounds'])),
           '<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#cccccc"/>' % (label, label, cell * count, cell * count)]
    if label:
        for host, i in sorted(index.items(), key=lambda kv: kv[1]):
            out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (label - 2, label + i * cell + cell - 2, e(host)))
            out.append('<text transform="translate(%d,%d) rotate(-90)" text-anchor="start">%s</text>' % (
                label + i * cell + cell - 2, label - 2, e(host)))
    for entry in verdict['pairs']:
        a, b = entry['pair']
        if a not in index or b not in index:
            continue
        value = entry.get('busbw_gbps')
        ratio = None if value is None or not floor else value / floor
        tip = e(_pair_text(entry))
        for x, y in ((index[a], index[b]), (index[b], index[a])):
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s</title></rect>' % (
                label + x * cell, label + y * cell, cell, cell, colour(ratio), tip))
    legend = size + 12
    for i, (ratio, text) in enumerate(((0.5, '50 %'), (0.9, '90 %'), (1.0, 'floor'), (1.2, '120 %'), (None, 'no figure'))):
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>' % (
            i * 80, legend, colour(ratio), i * 80 + 16, legend + 10, e(text)))
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def render_json(report):
    return json.dumps(_scrub(report), indent=2, sort_keys=True) + '\n'


def _sections(verdict):
    """(title, [(subject, reason, evidence lines)]) of the answer, in the order the report shows them."""
    return (
        ('Bad nodes', [(b['host'], b['reason'], [_pair_text(x) for x in b['evidence']]) for b in verdict['bad_nodes']]),
        ('Bad links', [('%s with %s' % tuple(b['pair']), b['reason'], [_pair_text(x) for x in b['evidence']])
                       for b in verdict['bad_links']]),
        ('Inconclusive', [(u['host'], u['reason'], [_pair_text(x) for x in u['evidence']]) for u in verdict['inconclusive']]),
    )


def _summary(report):
    v = report['verdict']
    return ('%d host(s), coverage %s, %d round(s), %d pair run(s); pair floor %s GB/s%s. %s.' % (
        len(report['hosts']), v['coverage']['mode'], v['rounds'], v['pair_runs'], v['floors']['busbw_gbps'],
        '' if v['floors'].get('ib_write_bw_gbps') is None else ', ib_write_bw floor %s Gb/s' % v['floors']['ib_write_bw_gbps'],
        v['answer'][:1].upper() + v['answer'][1:]))


def _coverage(verdict):
    """(line, [(subject, detail)]) of the coverage: how many links were tested, which, and the hosts by
    what was tested of their links."""
    cov = verdict['coverage']
    line = '%d of %d links tested (coverage %s, mode %s).' % (
        cov['links_tested'], cov['links_total'], 'full' if cov['complete'] else 'partial', cov['mode'])
    if cov.get('hosts_of_interest') is not None:
        line += ' Hosts of interest: %s (%d links between them tested, each also against references).' % (
            ', '.join(cov['hosts_of_interest']), cov['links_between_hosts_of_interest'])
    if not cov['complete']:
        count = cov['links_per_host'] + 1
        line += (' A host is a clean pass only when every one of its links was tested: run with -e xuanwu_isolation_coverage=full '
                 'to test every link (%d waves of disjoint pairs here).' % (count if count % 2 else count - 1))
    rows = [('Passed, every link tested', ', '.join(verdict['passed']) or 'none'),
            ('No fault found among its tested links, some untested', ', '.join(
                '%s (%d of %d)' % (h, cov['links_of_host'][h], cov['links_per_host']) for h in verdict['passed_partial']) or 'none')]
    if verdict['not_tested']:
        rows.append(('Not tested', ', '.join(verdict['not_tested'])))
    if cov['complete']:
        rows.append(('Links tested', 'every pair of the %d hosts' % (cov['links_per_host'] + 1)))
    else:
        partners = {}
        for a, b in cov['tested']:
            partners.setdefault(a, []).append(b)
        rows.append(('Links tested', '; '.join('%s with %s' % (a, ', '.join(partners[a])) for a in sorted(partners)) or 'none'))
    return line, rows


def render_markdown(report):
    report = _scrub(report)
    out = ['# xuanwu.cluster isolation report', '',
           'Run %s, %s to %s, playbook %s.' % (_md(report['run_id']), _md(report.get('started_at')), _md(report.get('finished_at')),
                                               _md(report.get('playbook'))), '',
           _md(_summary(report)), '']
    for title, entries in _sections(report['verdict']):
        out += ['## %s' % title, '']
        if not entries:
            out += ['None.', '']
            continue
        for subject, reason, evidence in entries:
            out += ['- **%s**: %s' % (_md(subject), _md(reason))] + ['  - %s' % _md(line) for line in evidence]
        out.append('')
    line, rows = _coverage(report['verdict'])
    out += ['## Coverage', '', _md(line), ''] + ['- **%s**: %s' % (_md(title), _md(text)) for title, text in rows] + ['']
    out += ['## Pair heatmap', '', 'Pair bus bandwidth against the floor, hosts x hosts: [%s](%s) (also inline in report.html).'
            % (HEATMAP_FILE, HEATMAP_FILE), '']
    return '\n'.join(out)


def render_html(report, svg):
    report = _scrub(report)
    e = html.escape
    out = ['<!DOCTYPE html><html><head><meta charset="utf-8"><title>xuanwu.cluster isolation %s</title>'
           '<style>body{font-family:sans-serif;margin:24px}li{margin:2px 0}</style></head><body>' % e(report['run_id']),
           '<h1>xuanwu.cluster isolation report</h1>',
           '<p>Run <code>%s</code>, %s to %s, playbook <code>%s</code>.</p>' % (
               e(report['run_id']), e(str(report.get('started_at'))), e(str(report.get('finished_at'))), e(str(report.get('playbook')))),
           '<p>%s</p>' % e(_summary(report))]
    for title, entries in _sections(report['verdict']):
        out.append('<h2>%s</h2>' % e(title))
        if not entries:
            out.append('<p>None.</p>')
            continue
        out.append('<ul>')
        for subject, reason, evidence in entries:
            out.append('<li><b>%s</b>: %s<ul>%s</ul></li>' % (e(subject), e(reason), ''.join('<li>%s</li>' % e(x) for x in evidence)))
        out.append('</ul>')
    line, rows = _coverage(report['verdict'])
    out += ['<h2>Coverage</h2>', '<p>%s</p>' % e(line), '<ul>%s</ul>' % ''.join('<li><b>%s</b>: %s</li>' % (e(t), e(x)) for t, x in rows)]
    out += ['<h2>Pair heatmap</h2>', svg, '</body></html>']
    return '\n'.join(out) + '\n'


def render_all(report):
    """{file name: text} of the isolation report folder."""
    report = _scrub(report)
    svg = heatmap_svg(report['verdict'], report['hosts'])
    return {'isolation.json': render_json(report), HEATMAP_FILE: svg,
            'report.md': render_markdown(report), 'report.html': render_html(report, svg)}
