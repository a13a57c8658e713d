# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The differences between two run records (``runs/<run id>/``, docs/run-record.md) or two launch kits
(``runs/<run id>/launch-kit/``): ``xuanwu diff`` and ``scripts/xuanwu-run-diff``.

Only the standard library, and nothing else of the package: the script imports this module from the checkout's
``src/`` without anything installed.
"""

import json
import os
import re


# the launch kit of a run (plugins/plugin_utils/_launch_kit.py): its folder, its manifest and the run's note about it
KIT_DIR = 'launch-kit'
KIT_MANIFEST = 'kit.json'
KIT_NOTE = 'launch-kit.json'
# variables that change what NCCL and torch print, not what they do: listed, never counted as a difference
DIAGNOSTIC_ENV = frozenset(('NCCL_DEBUG', 'NCCL_DEBUG_SUBSYS', 'NCCL_DEBUG_FILE', 'NCCL_DEBUG_TIMESTAMP_FORMAT',
                            'NCCL_DEBUG_TIMESTAMP_LEVELS', 'TORCH_DISTRIBUTED_DEBUG', 'TORCH_CPP_LOG_LEVEL',
                            'TORCH_SHOW_CPP_STACKTRACES'))
# launch settings of a kit that count when they differ (the others follow the hosts: listed only)
KIT_LAUNCH_COUNTED = ('mpirun', 'mpirun_args', 'python')
KIT_LAUNCH_LISTED = ('nproc_per_node', 'master_addr', 'master_port', 'rdzv_endpoint')


# A run record or a kit nests a few levels; anything deeper is not one (and would exhaust the recursion of _flat).
MAX_DEPTH = 32
_CONTROL = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f]')


def printable(text):
    """``text`` for a terminal: control characters other than newline and tab (an escape sequence a kit carries
    would move the cursor or recolour it) shown as \\xNN."""
    return _CONTROL.sub(lambda m: '\\x%02x' % ord(m.group(0)), text)


def _depth(value, limit=MAX_DEPTH + 1):
    """How deep ``value`` nests (lists and mappings), counted no further than ``limit``."""
    depth, level = 0, [value]
    while level and depth < limit:
        depth += 1
        nested = []
        for item in level:
            if isinstance(item, dict):
                nested.extend(item.values())
            elif isinstance(item, list):
                nested.extend(item)
        level = [item for item in nested if isinstance(item, (dict, list))]
    return depth


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
    except RecursionError:
        raise RunDiffError('%s: %s is nested too deeply to be a run record or launch kit' % (folder, name))
    if _depth(data) > MAX_DEPTH:
        raise RunDiffError('%s: %s is nested deeper than %d levels: not a run record or launch kit' % (folder, name, MAX_DEPTH))
    if not isinstance(data, dict):
        raise RunDiffError('%s: %s is not a JSON object' % (folder, name))
    return data


def load_kit(folder):
    """``{folder, manifest, versions}`` of a launch kit folder (``kit.json``, ``versions.json``)."""
    manifest = _load(folder, KIT_MANIFEST, True)
    for key, kind in (('env', dict), ('env_per_host', dict), ('env_left_out', dict), ('hosts', list), ('launch', dict)):
        if not isinstance(manifest.get(key, kind()), kind):
            raise RunDiffError('%s: %s: %s is not %s' % (folder, KIT_MANIFEST, key, 'an object' if kind is dict else 'a list'))
    if not all(isinstance(h, dict) and isinstance(h.get('host'), str) for h in manifest.get('hosts') or []):
        raise RunDiffError('%s: %s: each of hosts must be an object with host' % (folder, KIT_MANIFEST))
    versions = _load(folder, 'versions.json', False) or {}
    if not isinstance(versions.get('hosts', {}), dict):
        raise RunDiffError('%s: versions.json: hosts is not an object' % folder)
    return {'folder': folder, 'manifest': manifest, 'versions': versions.get('hosts') or {}}


def load_run(folder):
    """``{folder, state, versions, report, kit, note}`` of a run folder, or of a launch kit folder (``kit.json``);
    ``RunDiffError`` for a folder that is neither.

    A rollout's record holds ``state.json``; a validation's (validate.yml) only its launch kit and ``launch-kit.json``
    (the note that says whether a kit was written); ``kit`` is None where no kit was written."""
    if not os.path.isdir(folder):
        raise RunDiffError('%s: not a folder' % folder)
    if os.path.isfile(os.path.join(folder, KIT_MANIFEST)):
        kit = load_kit(folder)
        return {'folder': folder, 'state': {}, 'versions': kit['versions'], 'report': None, 'kit': kit, 'note': None}
    note = _load(folder, KIT_NOTE, False)
    kit_dir = os.path.join(folder, KIT_DIR)
    kit = load_kit(kit_dir) if os.path.isfile(os.path.join(kit_dir, KIT_MANIFEST)) else None
    state = _load(folder, 'state.json', False)
    if state is None and note is None and kit is None:
        raise RunDiffError('%s: no state.json here, nor a launch kit (%s, %s/%s); a run record folder (runs/<run id>/) '
                           'holds one of them' % (folder, KIT_NOTE, KIT_DIR, KIT_MANIFEST))
    state = state or {}
    if not isinstance(state.get('batches', []), list):
        raise RunDiffError('%s: state.json: batches is not a list' % folder)
    versions = _load(folder, 'versions.json', False) if state else None
    versions = versions if versions is not None else (kit['versions'] if kit else {})
    report = _load(os.path.join(folder, 'reports'), 'report.json', False) if os.path.isdir(os.path.join(folder, 'reports')) else None
    if report is not None and not isinstance(report.get('hosts', {}), dict):
        raise RunDiffError('%s: reports/report.json: hosts is not an object' % folder)
    return {'folder': folder, 'state': state, 'versions': versions, 'report': report, 'kit': kit, 'note': note}


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
    # a validation's hosts: those of its kit and those left out of it (the note says so too where no kit was written)
    for about in (run['kit']['manifest'] if run.get('kit') else None, run.get('note')):
        if isinstance(about, dict) and isinstance(about.get('left_out_hosts'), dict):
            hosts.update(about['left_out_hosts'])
    if run.get('kit'):
        hosts.update(h['host'] for h in run['kit']['manifest'].get('hosts') or [])
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
        if host not in run_a['versions'] or host not in run_b['versions']:
            continue   # not read in one run (a host left out of a launch kit): nothing to compare
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
    out['kit'] = diff_kits(run_a, run_b)
    # a host of one run only is one difference, also where it is a host added to (or removed from) the launch kit
    twice = len(set(out['kit']['hosts_added']) & set(out['only_in_b'])) + len(set(out['kit']['hosts_removed']) & set(out['only_in_a']))
    out['differences'] = (len(out['only_in_a']) + len(out['only_in_b']) + sum(len(v) for v in out['versions'].values())
                          + sum(len(v['new']) + len(v['fixed']) for v in out['checks'].values()) + counted
                          + out['kit']['differences'] - twice)
    return out


def _kit_env(manifest):
    """``{NAME: value}`` of a kit: the exported values, and ``{host: value}`` of a variable that differs between hosts."""
    env = dict((str(k), v) for k, v in (manifest.get('env') or {}).items())
    env.update((str(k), v) for k, v in (manifest.get('env_per_host') or {}).items())
    return env


def _kit_reason(run):
    note = run.get('note') if isinstance(run.get('note'), dict) else {}
    return note.get('reason') or ('the run record holds no launch kit' if run.get('state') else 'no launch kit')


def diff_kits(run_a, run_b):
    """The differences of the launch kits of two runs: ``{a, b, hosts_added, hosts_removed, slots, addresses, env,
    env_left_out, launch, mixed_versions, differences}``.

    Counted: a kit in one run only (1); hosts added to or removed from the kit, a host's slots (GPUs); environment
    variables added, removed or changed (``DIAGNOSTIC_ENV`` listed only), a variable left out (a secret) in one kit only;
    the launch settings ``KIT_LAUNCH_COUNTED``. Listed only: a host's address, ``KIT_LAUNCH_LISTED`` and the versions
    that differ between the hosts of one kit. Versions changed per host are the run's ``versions`` (counted there).
    """
    kit_a, kit_b = run_a.get('kit'), run_b.get('kit')
    out = {'a': kit_a['folder'] if kit_a else None, 'b': kit_b['folder'] if kit_b else None,
           'missing': {}, 'hosts_added': [], 'hosts_removed': [], 'slots': {}, 'addresses': {},
           'env': {'added': {}, 'removed': {}, 'changed': {}}, 'env_left_out': {'only_in_a': {}, 'only_in_b': {}},
           'launch': {}, 'mixed_versions': {}, 'differences': 0}
    if not kit_a and not kit_b:
        return out
    if not kit_a or not kit_b:
        side, run = ('a', run_a) if not kit_a else ('b', run_b)
        out['missing'][side] = _kit_reason(run)
        out['differences'] = 1
        return out
    ma, mb = kit_a['manifest'], kit_b['manifest']
    hosts_a = dict((h['host'], h) for h in ma.get('hosts') or [])
    hosts_b = dict((h['host'], h) for h in mb.get('hosts') or [])
    out['hosts_added'] = sorted(set(hosts_b) - set(hosts_a))
    out['hosts_removed'] = sorted(set(hosts_a) - set(hosts_b))
    for host in sorted(set(hosts_a) & set(hosts_b)):
        for key, target in (('slots', out['slots']), ('address', out['addresses'])):
            if hosts_a[host].get(key) != hosts_b[host].get(key):
                target[host] = {'a': hosts_a[host].get(key), 'b': hosts_b[host].get(key)}
    env_a, env_b = _kit_env(ma), _kit_env(mb)
    counted = 0
    for name in sorted(set(env_a) | set(env_b)):
        diagnostic = name in DIAGNOSTIC_ENV
        if name not in env_a:
            out['env']['added'][name] = {'b': env_b[name], 'counted': not diagnostic}
        elif name not in env_b:
            out['env']['removed'][name] = {'a': env_a[name], 'counted': not diagnostic}
        elif env_a[name] != env_b[name]:
            out['env']['changed'][name] = {'a': env_a[name], 'b': env_b[name], 'counted': not diagnostic}
        else:
            continue
        counted += 0 if diagnostic else 1
    left_a, left_b = ma.get('env_left_out') or {}, mb.get('env_left_out') or {}
    out['env_left_out']['only_in_a'] = dict((n, left_a[n]) for n in sorted(set(left_a) - set(left_b)))
    out['env_left_out']['only_in_b'] = dict((n, left_b[n]) for n in sorted(set(left_b) - set(left_a)))
    launch_a, launch_b = ma.get('launch') or {}, mb.get('launch') or {}
    for key in KIT_LAUNCH_COUNTED + KIT_LAUNCH_LISTED:
        if launch_a.get(key) != launch_b.get(key):
            out['launch'][key] = {'a': launch_a.get(key), 'b': launch_b.get(key), 'counted': key in KIT_LAUNCH_COUNTED}
            counted += 1 if key in KIT_LAUNCH_COUNTED else 0
    for side, manifest in (('a', ma), ('b', mb)):
        if manifest.get('versions_differ'):
            out['mixed_versions'][side] = list(manifest['versions_differ'])
    out['differences'] = (len(out['hosts_added']) + len(out['hosts_removed']) + len(out['slots']) + counted
                          + len(out['env_left_out']['only_in_a']) + len(out['env_left_out']['only_in_b']))
    return out


def _describe(run):
    state = run['state']
    if not state:
        # a validation's record or a launch kit: what the kit (or the note about it) says
        about = run['kit']['manifest'] if run.get('kit') else (run.get('note') or {})
        outcome = ('passed, partly' if about.get('partial') else 'passed') if run.get('kit') else 'no host passed'
        return {'folder': run['folder'], 'run_id': about.get('run_id'), 'started': None, 'finished': None,
                'written': about.get('written_at'), 'outcome': outcome, 'check_mode': None}
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
        if 'written' in d:   # a validation's record or a launch kit
            lines.append('run %s: %s (run id %s, launch kit written %s, outcome %s)' % (
                side.upper(), d['folder'], d['run_id'], d['written'], d['outcome']))
            continue
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
    lines.extend(_kit_lines(result.get('kit') or {}))
    lines.append('%d difference(s)' % result['differences'] if result['differences'] else 'no difference')
    return '\n'.join(lines) + '\n'


def _kit_lines(kit):
    """The launch kits' differences as text (``diff_kits``)."""
    lines = []
    for side, reason in sorted((kit.get('missing') or {}).items()):
        lines.append('launch kit: none in run %s (%s)' % (side.upper(), reason))
    if kit.get('hosts_added'):
        lines.append('launch kit hosts added: %s' % ', '.join(kit['hosts_added']))
    if kit.get('hosts_removed'):
        lines.append('launch kit hosts removed: %s' % ', '.join(kit['hosts_removed']))
    for host, values in sorted((kit.get('slots') or {}).items()):
        lines.append('launch kit slots (GPUs): %s: %s -> %s' % (host, _value(values['a']), _value(values['b'])))
    for host, values in sorted((kit.get('addresses') or {}).items()):
        lines.append('launch kit address (not counted): %s: %s -> %s' % (host, _value(values['a']), _value(values['b'])))
    env = kit.get('env') or {}
    rows = []
    for name, values in sorted((env.get('added') or {}).items()):
        rows.append((values['counted'], '  added:   %s=%s' % (name, _value(values['b']))))
    for name, values in sorted((env.get('removed') or {}).items()):
        rows.append((values['counted'], '  removed: %s=%s' % (name, _value(values['a']))))
    for name, values in sorted((env.get('changed') or {}).items()):
        rows.append((values['counted'], '  changed: %s: %s -> %s' % (name, _value(values['a']), _value(values['b']))))
    for side in ('a', 'b'):
        for name, reason in sorted(((kit.get('env_left_out') or {}).get('only_in_' + side) or {}).items()):
            rows.append((True, '  left out in run %s only: %s (%s)' % (side.upper(), name, reason)))
    if rows:
        lines.append('launch kit environment:')
        lines.extend(text + ('' if counted else ' (diagnostic: not counted)') for counted, text in rows)
    for key, values in sorted((kit.get('launch') or {}).items()):
        lines.append('launch kit %s%s: %s -> %s' % (key, '' if values['counted'] else ' (not counted)', _value(values['a']), _value(values['b'])))
    for side, keys in sorted((kit.get('mixed_versions') or {}).items()):
        lines.append('launch kit of run %s: versions differ between its hosts (not counted): %s' % (side.upper(), ', '.join(keys)))
    return lines


def main(argv, out, err):
    """The command: ``RUN_A RUN_B [--json] [--tolerance PCT]``; returns the exit status (0 same, 1 differ, 2 bad input)."""
    usage = 'usage: xuanwu-run-diff RUN_A RUN_B [--json] [--tolerance PERCENT]\n'
    args, as_json, tolerance = [], False, 0.0
    items = list(argv)
    while items:
        item = items.pop(0)
        if item in ('-h', '--help'):
            out.write(usage + 'Differences between two run records (runs/<run id>/) or launch kits (runs/<run id>/launch-kit/): '
                      'versions per host, failing checks new and fixed, bus bandwidth per collective and size, hosts only in '
                      'one run; the launch kits\' hosts, slots, environment and launch settings.\nExit status: 0 no '
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
        err.write('xuanwu-run-diff: %s\n' % printable(str(error)))
        return 2
    out.write(json.dumps(result, indent=2, sort_keys=True) + '\n' if as_json else printable(render_text(result)))
    return 1 if result['differences'] else 0
