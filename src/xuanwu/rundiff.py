# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The differences between two run records (``runs/<run id>/``, docs/run-record.md): ``xuanwu diff`` and
``scripts/xuanwu-run-diff``.

Only the standard library, and nothing else of the package: the script imports this module from the checkout's
``src/`` without anything installed.
"""

import json
import os


class RunDiffError(Exception):
    """A run folder that cannot be read; the message names the folder, the file and the problem."""


def _load(folder, name, required):
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        if required:
            raise RunDiffError('%s: no %s here; a run record folder (runs/<run id>/) holds state.json' % (folder, name))
        return None
    try:
        with open(path, encoding='utf-8') as handle:
            data = json.load(handle)
    except (IOError, OSError) as err:
        raise RunDiffError('%s: cannot read %s: %s' % (folder, name, err.strerror or err))
    except ValueError as err:
        raise RunDiffError('%s: %s is not valid JSON: %s' % (folder, name, err))
    if not isinstance(data, dict):
        raise RunDiffError('%s: %s is not a JSON object' % (folder, name))
    return data


def load_run(folder):
    """``{folder, state, versions, report}`` of a run folder; ``RunDiffError`` for one that is not a run record."""
    if not os.path.isdir(folder):
        raise RunDiffError('%s: not a folder' % folder)
    state = _load(folder, 'state.json', True)
    if not isinstance(state.get('batches', []), list):
        raise RunDiffError('%s: state.json: batches is not a list' % folder)
    versions = _load(folder, 'versions.json', False) or {}
    report = _load(os.path.join(folder, 'reports'), 'report.json', False) if os.path.isdir(os.path.join(folder, 'reports')) else None
    if report is not None and not isinstance(report.get('hosts', {}), dict):
        raise RunDiffError('%s: reports/report.json: hosts is not an object' % folder)
    return {'folder': folder, 'state': state, 'versions': versions, 'report': report}


def _flat(value, prefix=''):
    """``{dotted key: value}`` of nested mappings (a version record)."""
    if isinstance(value, dict):
        out = {}
        for key in value:
            out.update(_flat(value[key], '%s%s.' % (prefix, key)))
        return out
    return {prefix[:-1]: value}


def _hosts(run):
    hosts = set(run['state'].get('hosts') or [])
    hosts.update(run['versions'])
    if run['report']:
        hosts.update(run['report'].get('hosts') or {})
    for batch in run['state'].get('batches') or []:
        if isinstance(batch, dict) and isinstance(batch.get('outcomes'), dict):
            hosts.update(batch['outcomes'])
    return hosts


def _failing(run):
    """``{host: set of failing checks}``: the report's ``fail`` findings (``check (component)``) where the host is in
    the report, else the ``failed_checks`` of its latest outcome in state.json."""
    found = {}
    for batch in run['state'].get('batches') or []:
        if isinstance(batch, dict) and isinstance(batch.get('outcomes'), dict):
            for host, entry in batch['outcomes'].items():
                found[host] = set(str(c) for c in (entry or {}).get('failed_checks') or []) if isinstance(entry, dict) else set()
    for host, entry in ((run['report'] or {}).get('hosts') or {}).items():
        if not isinstance(entry, dict):
            continue
        checks = set()
        for finding in entry.get('findings') or []:
            if isinstance(finding, dict) and finding.get('severity') == 'fail':
                checks.add('%s (%s)' % (finding.get('check'), finding.get('component')) if finding.get('component') else str(finding.get('check')))
        if entry.get('error'):
            checks.add('not validated: %s' % entry['error'])
        found[host] = checks
    return found


def _busbw(run):
    """``{(host, collective, size in bytes): busbw GB/s}`` of the report's nccl-tests runs."""
    found = {}
    for host, entry in ((run['report'] or {}).get('hosts') or {}).items():
        for workload in (entry or {}).get('workloads') or [] if isinstance(entry, dict) else []:
            if not isinstance(workload, dict) or not isinstance(workload.get('busbw_gbps'), dict):
                continue
            for size, value in workload['busbw_gbps'].items():
                try:
                    found[(host, str(workload.get('component')), int(size))] = float(value)
                except (TypeError, ValueError):
                    continue
    return found


def diff(run_a, run_b, tolerance=0.0):
    """The differences of two loaded runs.

    ``tolerance``: a relative busbw change whose size is at most this (0.05 = 5 %) is listed but not counted.
    Returns ``{a, b, only_in_a, only_in_b, versions, checks, busbw, differences}``.
    """
    hosts_a, hosts_b = _hosts(run_a), _hosts(run_b)
    both = sorted(hosts_a & hosts_b)
    out = {'a': _describe(run_a), 'b': _describe(run_b),
           'only_in_a': sorted(hosts_a - hosts_b), 'only_in_b': sorted(hosts_b - hosts_a),
           'versions': {}, 'checks': {}, 'busbw': []}
    for host in both:
        va = _flat(run_a['versions'].get(host) or {}) if isinstance(run_a['versions'].get(host), dict) else {}
        vb = _flat(run_b['versions'].get(host) or {}) if isinstance(run_b['versions'].get(host), dict) else {}
        changed = dict((key, {'a': va.get(key), 'b': vb.get(key)}) for key in sorted(set(va) | set(vb))
                       if key != 'batch' and va.get(key) != vb.get(key))
        if changed:
            out['versions'][host] = changed
    fail_a, fail_b = _failing(run_a), _failing(run_b)
    for host in both:
        new, fixed = sorted(fail_b.get(host, set()) - fail_a.get(host, set())), sorted(fail_a.get(host, set()) - fail_b.get(host, set()))
        if new or fixed:
            out['checks'][host] = {'new': new, 'fixed': fixed}
    # a host in one run only is listed as such, not size by size
    shared = set(both)
    bw_a = dict((k, v) for k, v in _busbw(run_a).items() if k[0] in shared)
    bw_b = dict((k, v) for k, v in _busbw(run_b).items() if k[0] in shared)
    counted = 0
    for key in sorted(set(bw_a) & set(bw_b)):
        a, b = bw_a[key], bw_b[key]
        change = (b - a) / a if a else None
        beyond = a != b and (change is None or abs(change) > tolerance)
        counted += 1 if beyond else 0
        out['busbw'].append({'host': key[0], 'collective': key[1], 'size_bytes': key[2], 'a': a, 'b': b,
                             'change': None if change is None else round(change, 6), 'counted': beyond})
    for key in sorted(set(bw_a) ^ set(bw_b)):
        counted += 1
        out['busbw'].append({'host': key[0], 'collective': key[1], 'size_bytes': key[2], 'a': bw_a.get(key), 'b': bw_b.get(key),
                             'change': None, 'counted': True})
    out['differences'] = (len(out['only_in_a']) + len(out['only_in_b']) + sum(len(v) for v in out['versions'].values())
                          + sum(len(v['new']) + len(v['fixed']) for v in out['checks'].values()) + counted)
    return out


def _describe(run):
    state = run['state']
    return {'folder': run['folder'], 'run_id': state.get('run_id'), 'started': state.get('started'),
            'finished': state.get('finished'), 'outcome': state.get('outcome'), 'check_mode': state.get('check_mode')}


def _size(size):
    for unit, factor in (('GiB', 1 << 30), ('MiB', 1 << 20), ('KiB', 1 << 10)):
        if size >= factor and size % factor == 0:
            return '%d %s' % (size // factor, unit)
    return '%d B' % size


def _value(value):
    return 'absent' if value is None else (json.dumps(value) if isinstance(value, (dict, list)) else str(value))


def render_text(result):
    """The differences as text a person reads."""
    lines = []
    for side in ('a', 'b'):
        d = result[side]
        lines.append('run %s: %s (run id %s, started %s, finished %s, outcome %s%s)' % (
            side.upper(), d['folder'], d['run_id'], d['started'], d['finished'] or 'not finished', d['outcome'] or 'none',
            ', check mode' if d.get('check_mode') else ''))
    for side in ('a', 'b'):
        if result['only_in_' + side]:
            lines.append('hosts only in run %s: %s' % (side.upper(), ', '.join(result['only_in_' + side])))
    if result['versions']:
        lines.append('versions changed:')
        for host, keys in sorted(result['versions'].items()):
            for key, values in keys.items():
                lines.append('  %s  %s: %s -> %s' % (host, key, _value(values['a']), _value(values['b'])))
    if result['checks']:
        lines.append('failing checks:')
        for host, entry in sorted(result['checks'].items()):
            for check in entry['new']:
                lines.append('  %s  new:   %s' % (host, check))
            for check in entry['fixed']:
                lines.append('  %s  fixed: %s' % (host, check))
    rows = [r for r in result['busbw'] if r['counted']]
    if rows:
        lines.append('bus bandwidth (GB/s, out-of-place):')
        for r in rows:
            change = '' if r['change'] is None else ' (%+.1f%%)' % (100 * r['change'])
            lines.append('  %s  %s  %s: %s -> %s%s' % (r['host'], r['collective'], _size(r['size_bytes']), _value(r['a']),
                                                       _value(r['b']), change))
    quiet = [r for r in result['busbw'] if not r['counted'] and r['a'] != r['b']]
    if quiet:
        lines.append('bus bandwidth: %d other size(s) changed within the tolerance (--json lists them)' % len(quiet))
    lines.append('%d difference(s)' % result['differences'] if result['differences'] else 'no difference')
    return '\n'.join(lines) + '\n'


def main(argv, out, err):
    """The command: ``RUN_A RUN_B [--json] [--tolerance PCT]``; returns the exit status (0 same, 1 differ, 2 bad input)."""
    usage = 'usage: xuanwu-run-diff RUN_A RUN_B [--json] [--tolerance PERCENT]\n'
    args, as_json, tolerance = [], False, 0.0
    items = list(argv)
    while items:
        item = items.pop(0)
        if item in ('-h', '--help'):
            out.write(usage + 'Differences between two run records (runs/<run id>/): versions per host, failing checks '
                      'new and fixed, bus bandwidth per collective and size, hosts only in one run.\nExit status: 0 no '
                      'difference, 1 differences, 2 bad input.\n')
            return 0
        if item == '--json':
            as_json = True
        elif item == '--tolerance':
            if not items:
                err.write(usage + 'xuanwu-run-diff: --tolerance needs a percentage\n')
                return 2
            value = items.pop(0)
            try:
                tolerance = float(value) / 100.0
            except ValueError:
                tolerance = -1.0
            if not tolerance >= 0.0 or tolerance == float('inf'):
                err.write('xuanwu-run-diff: --tolerance %s: not a percentage (a number, 0 or more)\n' % value)
                return 2
        elif item.startswith('-') and item != '-':
            err.write(usage + 'xuanwu-run-diff: unknown option %s\n' % item)
            return 2
        else:
            args.append(item)
    if len(args) != 2:
        err.write(usage + 'xuanwu-run-diff: two run folders are needed, %d given\n' % len(args))
        return 2
    try:
        result = diff(load_run(args[0]), load_run(args[1]), tolerance)
    except RunDiffError as error:
        err.write('xuanwu-run-diff: %s\n' % error)
        return 2
    out.write(json.dumps(result, indent=2, sort_keys=True) + '\n' if as_json else render_text(result))
    return 1 if result['differences'] else 0
