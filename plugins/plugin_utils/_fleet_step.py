# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report step's fleet and history work, once per run on the controller (docs/fleet-history.md).

``judge`` reads the history database once and returns the fleet and regression findings of every host and
the report's ``fleet`` section; ``with_findings`` adds the findings to the host entries before the summary is
built; ``record`` stores the finished report in the database; ``markdown`` and ``html`` render the section.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings, _fleet, _history, _judge
from ansible_collections.xuanwu.cluster.plugins.module_utils._collectives import human_bytes, normalise_collective
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import COLLECTIVES


def figures_of(entry):
    """{component: {size: busbw}} of a host entry's nccl-tests runs on one node (multi-node jobs and the torch
    benchmark are left out: their component is not one collective of this host; so are runs that cannot apply to the
    host, one GPU's busbw of 0 compared with its peers' is no measurement)."""
    out = {}
    for run in entry.get('workloads') or []:
        component = run.get('component')
        if run.get('kind') != 'nccl_tests' or normalise_collective(component) not in COLLECTIVES or run.get('not_applicable'):
            continue
        sizes = dict((int(s), float(v)) for s, v in (run.get('busbw_gbps') or {}).items()
                     if str(s).isdigit() and _history._number(v) is not None)
        if sizes:
            out[component] = sizes
    return out


def _earlier(db_path, run_id, name, settings, per_host_runs, error):
    if not db_path or error:
        return {}
    return _history.recent_busbw(db_path, exclude_run_id=run_id, per_host_runs=per_host_runs, profile=name,
                                 min_bytes=settings['min_bytes'])


def _judge_profile(name, profile, hosts, entries, db_path, run_id, section):
    """Findings of the hosts of one profile; fills ``section['profiles'][name]``."""
    fleet, history = profile.get('fleet'), profile.get('history')
    figures = dict((h, figures_of(entries[h])) for h in hosts)
    statuses = dict((h, entries[h].get('status')) for h in hosts)
    found = []
    out = section['profiles'][name] = {}
    if fleet:
        samples = {}
        earlier = _earlier(db_path, run_id, name, fleet, fleet['runs'], section['history_error']) if fleet['runs'] else {}
        for host, components in earlier.items():
            for component, sizes in components.items():
                for size, values in sizes.items():
                    samples.setdefault((component, size), []).extend((host, v) for _run, v in values)
        findings, out['fleet'] = _fleet.evaluate_fleet(figures, statuses, fleet, name, samples)
        found += findings
    if history:
        out['history'] = {'regression_max_share': history['regression_max_share'], 'runs': history['runs'],
                          'min_runs': history['min_runs'], 'min_bytes': history['min_bytes'], 'regressed': {}, 'not_judged': {}}
        if not db_path or section['history_error']:
            out['history']['not_judged'] = dict((h, ['no history database: %s' % (section['history_error'] or 'history is off')])
                                                for h in hosts if figures[h])
        else:
            earlier = _earlier(db_path, run_id, name, history, history['runs'], None)
            for host in hosts:
                findings, regressed, not_judged = _fleet.evaluate_regression(host, figures[host], earlier.get(host) or {}, history)
                found += findings
                if regressed:
                    out['history']['regressed'][host] = regressed
                if not_judged:
                    out['history']['not_judged'][host] = not_judged
    return found


def judge(entries, profiles, db_path, run_id):
    """The fleet and regression findings of the run, and the report's ``fleet`` section.

    ``entries``: {host: entry} as built by ``_report.host_entry``; ``profiles``: {profile name: resolved profile};
    ``db_path``: the history database, or None (history off). Returns ``({host: [finding, ...]}, section)``; a
    database that cannot be read is the section's ``history_error`` (nothing is judged against history then).
    """
    section = {'history_db': db_path, 'history_error': None, 'profiles': {}}
    if db_path:
        try:
            _history.check(db_path)
        except _history.HistoryError as err:
            section['history_error'] = str(err)
    by_profile = {}
    for host, entry in entries.items():
        by_profile.setdefault(entry.get('profile'), []).append(host)
    extra = {}
    for name, hosts in sorted(by_profile.items(), key=lambda item: str(item[0])):
        profile = profiles.get(name) if name else None
        if not isinstance(profile, dict) or not (profile.get('fleet') or profile.get('history')):
            continue
        try:
            found = _judge_profile(name, profile, sorted(hosts), entries, db_path, run_id, section)
        except _history.HistoryError as err:
            section['history_error'] = str(err)
            continue
        try:
            judged = _judge.Judge(profile).fleet(found)
        except ProfileError as err:
            section['profiles'].setdefault(name, {})['error'] = str(err)
            continue
        for finding in judged:
            extra.setdefault(finding['host'], []).append(finding)
    return extra, section


def with_findings(entries, extra):
    """The entries with the extra findings added: findings sorted, counts and status updated (error stays error)."""
    out = {}
    for host, entry in entries.items():
        added = extra.get(host)
        if not added:
            out[host] = entry
            continue
        findings, summary = _findings.merged(entry.get('findings'), added)
        # root cause first, as every host entry of the report (_report.host_entry)
        new = dict(entry, findings=sorted(findings, key=_findings.root_cause_key), counts=summary['counts'])
        if new['status'] != 'error':
            new['status'] = summary['status']
        out[host] = new
    return out


def record(db_path, report):
    """Store the report in the history database; the error message, or None when stored (or history is off)."""
    if not db_path:
        return None
    try:
        _history.record(db_path, report)
    except _history.HistoryError as err:
        return str(err)
    return None


def _rows(section):
    """[(profile, component, size, median, mad, threshold, hosts, outliers)] of the fleet medians."""
    rows = []
    for name, per in sorted((section.get('profiles') or {}).items()):
        fleet = per.get('fleet') or {}
        for component, sizes in sorted((fleet.get('figures') or {}).items()):
            for size, fig in sorted(sizes.items(), key=lambda item: int(item[0])):
                below = sorted(h for h, names in (fleet.get('outliers') or {}).items()
                               if '%s %s' % (component, human_bytes(int(size))) in names)
                rows.append((name, component, human_bytes(int(size)), fig['median'], fig['mad'], fig['threshold'], fig['hosts'],
                             ', '.join(below) or '-'))
    return rows


def _notes(section):
    """Lines of what was not applied, not judged, regressed."""
    lines = []
    if section.get('history_error'):
        lines.append('History not used: %s' % section['history_error'])
    for name, per in sorted((section.get('profiles') or {}).items()):
        for note in (per.get('fleet') or {}).get('not_applied') or []:
            lines.append('%s: %s' % (name, note))
        history = per.get('history') or {}
        for host, items in sorted((history.get('regressed') or {}).items()):
            lines.append('%s: %s regressed: %s' % (name, host, '; '.join(items)))
        for host, items in sorted((history.get('not_judged') or {}).items()):
            lines.append('%s: %s not judged against its history: %s' % (name, host, '; '.join(items)))
    return lines


_HEAD = ('profile', 'collective', 'size', 'fleet median GB/s', 'MAD GB/s', 'threshold GB/s', 'hosts', 'below the threshold')


def markdown(section, md):
    """Lines of report.md for the ``fleet`` section (``md`` escapes one cell)."""
    if not section or not section.get('profiles') and not section.get('history_error'):
        return []
    lines = ['## Fleet and history', '', 'history database: %s' % md(section.get('history_db') or 'off'), '']
    rows = _rows(section)
    if rows:
        lines += ['| %s |' % ' | '.join(_HEAD), '|%s' % ('---|' * len(_HEAD))]
        lines += ['| %s |' % ' | '.join(md(v) for v in row) for row in rows] + ['']
    lines += ['- %s' % md(note) for note in _notes(section)]
    return lines + ['']


def html(section, esc):
    """Lines of report.html for the ``fleet`` section (``esc`` escapes text)."""
    if not section or not section.get('profiles') and not section.get('history_error'):
        return []
    out = ['<h2 id="fleet">Fleet and history</h2>', '<p>history database: <code>%s</code></p>' % esc(str(section.get('history_db') or 'off'))]
    rows = _rows(section)
    if rows:
        out.append('<table><tr>%s</tr>' % ''.join('<th>%s</th>' % esc(h) for h in _HEAD))
        out += ['<tr>%s</tr>' % ''.join('<td>%s</td>' % esc(str(v)) for v in row) for row in rows]
        out.append('</table>')
    out += ['<p class="fleet-note">%s</p>' % esc(note) for note in _notes(section)]
    return out
