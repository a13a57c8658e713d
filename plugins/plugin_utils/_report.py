# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build and render the run report: report.json (docs/report-format.md), junit.xml, report.md and report.html."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
import json
import math
import re
from xml.sax.saxutils import escape, quoteattr

from ansible_collections.xuanwu.cluster.plugins.module_utils import _check_status, _findings
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _fleet_step, _svg

REPORT_SCHEMA_VERSION = 1
STATUS_ORDER = ('fail', 'error', 'warn', 'pass')


# characters XML 1.0 forbids (C0 controls other than tab, LF and CR; U+FFFE, U+FFFF), also C1 controls
# and DEL, which terminals and browsers would interpret: removed from every text the reports write
_CONTROL = re.compile('[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]')
_SURROGATE = re.compile('[\ud800-\udfff]')
_NON_FINITE = {'nan': 'NaN', 'inf': 'Infinity', '-inf': '-Infinity'}
_PLAIN = (int, bool)    # exact types that _scrub returns as they are


def _clean_text(text, controls=True):
    """``text`` without lone surrogates (replaced by U+FFFD) and, with ``controls``, without control characters."""
    if text.isascii() and (text.isprintable() or not controls):
        return text     # the common case, without the regular expressions (report.html of 1,000 hosts: bench/report_html.py)
    text = _SURROGATE.sub('\ufffd', text)
    return _CONTROL.sub('', text) if controls else text


def _scrub(value, controls=True):
    """A copy of report data that every format can hold: strings cleaned by ``_clean_text`` (keys too),
    non-finite floats written as the strings ``NaN``, ``Infinity`` and ``-Infinity``."""
    if value is None or type(value) in _PLAIN:
        return value
    if isinstance(value, str):
        return _clean_text(value, controls)
    if isinstance(value, float):
        return value if math.isfinite(value) else _NON_FINITE[repr(value)]
    if isinstance(value, dict):
        return dict((_scrub(k, controls) if isinstance(k, str) else k, _scrub(v, controls)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if all(type(v) in _PLAIN for v in value):
            return list(value)      # a series of integers (dmon samples)
        return [_scrub(v, controls) for v in value]
    return value


def _facts_summary(facts):
    facts = facts or {}
    gpu = facts.get('gpu') or {}
    host = facts.get('host') or {}
    software = facts.get('software') or {}
    devices = gpu.get('devices') or []
    ib = (facts.get('infiniband') or {}).get('cas') or {}
    return {
        'source': facts.get('source'),
        'os': (host.get('os') or {}).get('pretty_name'),
        'kernel': (host.get('kernel') or {}).get('release'),
        'gpu_count': gpu.get('count'),
        'gpu_model': devices[0].get('name') if devices else None,
        'driver_version': software.get('driver_version'),
        'cuda_driver_version': software.get('cuda_driver_version'),
        'cuda_toolkit_version': software.get('cuda_toolkit_version'),
        'nccl_version': software.get('nccl_version'),
        'ib_ports': sum(len(ca.get('ports') or {}) for ca in ib.values()),
    }


def host_entry(host, status, findings, facts, profile_name, profile_path, error=None, workloads=None, checks=None):
    """A host's entry of the report; ``checks``: what its node account says of the checks that judged nothing on it
    (``xuanwu_node.checks``: ``{check: {status, why}}``), ``build_report`` makes every check's status of it."""
    findings = sorted(findings or [], key=_findings.root_cause_key)
    counts = dict((sev, sum(1 for f in findings if f.get('severity') == sev)) for sev in ('fail', 'warn', 'info'))
    entry = {
        'status': status,
        'profile': profile_name,
        'profile_path': profile_path,
        'counts': counts,
        'findings': findings,
        'facts_summary': _facts_summary(facts),
        'workloads': list(workloads or []),
        # what ran but was not compared with anything: {component: why}; never a silent pass
        'not_judged': dict((w.get('component') or w.get('kind'), w['not_judged']) for w in workloads or [] if w.get('not_judged')),
        # what ran and cannot apply to this host (a collective on one GPU): {component: why}; neither pass nor failure
        'not_applicable': dict((w.get('component') or w.get('kind'), w['not_applicable'])
                               for w in workloads or [] if isinstance(w, dict) and w.get('not_applicable')),
        'checks': dict(checks or {}),
    }
    if error:
        entry['error'] = error
    return entry


def build_report(run_id, started_at, finished_at, collection_version, ansible_version, playbook, hosts, profiles):
    """``hosts`` maps host name to a ``host_entry``; ``profiles`` maps profile name to its path. Each host's ``checks``
    becomes the status of every check of the catalogue on it (``host_checks``), the one every format states."""
    hosts = dict((host, dict(entry, checks=host_checks(entry))) for host, entry in hosts.items())
    counts = dict((s, 0) for s in STATUS_ORDER)
    for entry in hosts.values():
        counts[entry['status']] = counts.get(entry['status'], 0) + 1
    failed = sorted(h for h, e in hosts.items() if e['status'] in ('fail', 'error'))
    return {
        'schema_version': REPORT_SCHEMA_VERSION,
        'run_id': run_id,
        'started_at': started_at,
        'finished_at': finished_at,
        'collection': {'name': 'xuanwu.cluster', 'version': collection_version},
        'ansible_version': ansible_version,
        'playbook': playbook,
        'profiles': profiles,
        'summary': {'hosts': len(hosts), 'status': counts, 'failed_hosts': failed,
                    'result': 'fail' if failed else ('warn' if counts.get('warn') else 'pass')},
        'hosts': dict(sorted(hosts.items())),
    }


def render_json(report):
    """Strict JSON (never ``NaN``); control characters are kept, escaped by JSON, as the tools wrote them."""
    return json.dumps(_scrub(json.loads(json.dumps(report, default=str)), controls=False),
                      indent=2, sort_keys=True, allow_nan=False) + '\n'


def _fmt(value):
    if value is None:
        return '-'
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


# The checks of a stage and the other parts of the derivation of a check's status (plugins/module_utils/_check_status.py)
STAGE_AREAS = _check_status.STAGE_AREAS
WORKLOAD_OF_CHECKS = _check_status.WORKLOAD_OF_CHECKS
HOST_CPU_CHECKS = _check_status.HOST_CPU_CHECKS
STEP_CHECKS = _check_status.STEP_CHECKS


def host_checks(entry, catalogue=None):
    """``{check: {status, why}}`` of a host's report entry: the one derivation every format states
    (``_check_status.host_checks``; ``catalogue``: the check ids, the whole catalogue by default)."""
    return _check_status.host_checks(entry, catalogue)


def render_junit(report, catalogue):
    """One testsuite per host, one testcase per host × check (``catalogue`` maps check id to its title), each as its
    status says (``host_checks``).

    A check with a ``fail`` finding is a failure, ``warn``/``info`` findings are written to the testcase's
    system-out (the test case passes), a check that was not measured or does not apply is a skipped test case whose
    message says which and why (``not measured: ...``, ``not applicable: ...``), never a pass; a host that could not be
    probed is one errored testcase, its checks not measured. A measurement that was not judged and a run that cannot
    apply to the host are skipped test cases of their own. ``skipped`` counts the skipped test cases.
    """
    report, catalogue = _scrub(report), _scrub(catalogue)
    suites = []
    total = failures = errors = skips = 0
    for host, entry in report['hosts'].items():
        by_check = {}
        for finding in entry['findings']:
            by_check.setdefault(finding['check'], []).append(finding)
        statuses = host_checks(entry, catalogue)
        cases = []
        h_fail = h_err = h_skip = 0
        if entry.get('error'):
            cases.append('    <testcase classname=%s name="probe.reachable"><error message=%s/></testcase>'
                         % (quoteattr('xuanwu.%s' % host), quoteattr(entry['error'])))
            h_err += 1
        for check in sorted(statuses):
            found = by_check.get(check, [])
            body = []
            fails = [f for f in found if f['severity'] == 'fail']
            if fails:
                h_fail += 1
                text = '\n'.join('%s: measured %s, expected %s. %s Fix: %s' % (
                    f['component'], _fmt(f.get('measured')), _fmt(f.get('expected')), f.get('message', ''), f.get('remediation', ''))
                    for f in fails)
                body.append('<failure message=%s type="fail">%s</failure>' % (
                    quoteattr('%s: %s' % (fails[0]['component'], fails[0].get('message', ''))), escape(text)))
            status = statuses[check]
            if status['status'] in _check_status.SKIPPED:
                h_skip += 1
                body.append('<skipped message=%s/>' % quoteattr('%s: %s' % (_check_status.WORDS[status['status']], status['why'])))
            others = [f for f in found if f['severity'] != 'fail']
            if others:
                body.append('<system-out>%s</system-out>' % escape('\n'.join(
                    '[%s] %s: measured %s, expected %s. %s' % (f['severity'], f['component'], _fmt(f.get('measured')),
                                                               _fmt(f.get('expected')), f.get('message', '')) for f in others)))
            cases.append('    <testcase classname=%s name=%s>%s</testcase>' % (
                quoteattr('xuanwu.%s' % host), quoteattr(check), ''.join(body)))
        for component, why in sorted((entry.get('not_judged') or {}).items()):
            h_skip += 1
            cases.append('    <testcase classname=%s name=%s><skipped message=%s/></testcase>' % (
                quoteattr('xuanwu.%s' % host), quoteattr('not judged: %s' % component), quoteattr('not judged: %s' % why)))
        for component, why in sorted((entry.get('not_applicable') or {}).items()):
            h_skip += 1
            cases.append('    <testcase classname=%s name=%s><skipped message=%s/></testcase>' % (
                quoteattr('xuanwu.%s' % host), quoteattr('not applicable: %s' % component), quoteattr(str(why))))
        total += len(cases)
        failures += h_fail
        errors += h_err
        skips += h_skip
        suites.append('  <testsuite name=%s tests="%d" failures="%d" errors="%d" skipped="%d">\n%s\n  </testsuite>' % (
            quoteattr(host), len(cases), h_fail, h_err, h_skip, '\n'.join(cases)))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name=%s tests="%d" failures="%d" errors="%d" skipped="%d">\n%s\n'
            '</testsuites>\n' % (quoteattr('xuanwu.cluster %s' % report['run_id']), total, failures, errors, skips, '\n'.join(suites)))


def _figures(run):
    """A short text of a workload run's figures."""
    parts = []
    if run.get('not_measured'):
        parts.append('NOT MEASURED: %s' % run['not_measured'])
    if run.get('not_judged'):
        parts.append('NOT JUDGED: %s' % run['not_judged'])
    if run.get('not_applicable'):
        parts.append('NOT APPLICABLE: %s' % run['not_applicable'])
    if run.get('implausible'):
        parts.append('IMPLAUSIBLE, not a measurement: %s' % run['implausible'])
    container = run.get('container') if isinstance(run.get('container'), dict) else {}
    if container.get('gpus_in_container') is not None:
        parts.append('%s GPU(s) in a %s container%s, %s on the host' % (
            container['gpus_in_container'], container.get('engine'), ' of %s' % container['image'] if container.get('image') else '',
            _fmt(container.get('gpus_on_host'))))
    elif container.get('cause'):
        parts.append('%s run failed: %s' % (container.get('engine'), container['cause']))
    scheduler = run.get('scheduler') if isinstance(run.get('scheduler'), dict) else {}
    if scheduler:
        parts.append('; '.join(text for text in (
            scheduler.get('daemon'), scheduler.get('state') and '%s in the controller' % scheduler['state'],
            scheduler.get('node_view') and 'slurmd -C %s' % scheduler['node_view'],
            scheduler.get('errors') and '%s read(s) failed' % scheduler['errors']) if text))
    picks = [(s, v) for s, v in _svg.sizes_of(run.get('busbw_gbps')) if s in (16 << 20, 128 << 20, 1 << 30, 8 << 30)]
    if picks:
        parts.append('busbw ' + ', '.join('%s: %s GB/s' % (_size(s), _svg.num_text(v)) for s, v in picks))
    if run.get('avg_busbw_gbps') is not None:
        parts.append('avg busbw %s GB/s' % run['avg_busbw_gbps'])
    result = run.get('result') or {}
    for gpu in gpu_single_rows(run):
        parts.append('gpu%s %s TFLOP/s bf16, %s GB/s copy%s' % (gpu['index'], _fmt(gpu['bf16_tflops']), _fmt(gpu['membw_gbps']),
                                                                ' (%s)' % gpu['error'] if gpu.get('error') else ''))
    for key, label in (('step_time_ms_median', 'step %s ms'), ('tokens_per_s', '%s tokens/s'), ('first_loss', 'loss %s'),
                       ('last_loss', '-> %s'), ('seconds', 'ended in %s s'), ('rss_growth_pct', 'RSS %+.1f%%'),
                       ('gpu_mem_growth_pct', 'GPU mem %+.1f%%')):
        value = result.get(key) if run.get('kind') != 'elastic_restart' else None
        if isinstance(value, float):
            value = round(value, 2)
        if value is not None:
            parts.append(label % value)
    parts.extend(elastic_figures(run))
    timing = run.get('step_times') if isinstance(run.get('step_times'), dict) else {}
    if timing.get('p99_ratio') is not None:
        parts.append('steps after warm-up: median %s ms, p99 %s ms (%sx)' % (
            _fmt(timing.get('median_ms')), _fmt(timing.get('p99_ms')), _fmt(timing.get('p99_ratio'))))
        last = timing.get('last_rank') if isinstance(timing.get('last_rank'), dict) else {}
        if last:
            parts.append('last to the all-reduce: rank %s (%s) in %s%% of steps, +%s ms' % (
                _fmt(last.get('rank')), _fmt(last.get('host')), _fmt(last.get('share_pct')), _fmt(last.get('lag_ms'))))
        if timing.get('straggler'):
            parts.append(timing['straggler'])
    elif timing.get('not_judged'):
        parts.append('step times not judged: %s' % timing['not_judged'])
    dmon = run.get('dmon') if isinstance(run.get('dmon'), dict) else {}
    if dmon.get('not_measured'):
        parts.append('GPU samples NOT MEASURED: %s' % dmon['not_measured'])
    cpu = run.get('host_cpu') if isinstance(run.get('host_cpu'), dict) else {}
    if cpu.get('not_measured'):
        parts.append('host CPU samples NOT MEASURED: %s' % cpu['not_measured'])
    if run.get('timed_out'):
        parts.append('TIMED OUT')
    if run.get('debug_log_tail'):
        parts.append('NCCL_DEBUG=INFO log kept')
    return '; '.join(parts) or '-'


def elastic_figures(run):
    """The figures of an elastic restart run (``[text]``): the kill, the restarts, the resume, the steps redone, the
    time to recover and the whole job; [] for other runs."""
    result = run.get('result') if isinstance(run.get('result'), dict) else {}
    if run.get('kind') != 'elastic_restart' or not result:
        return []
    if not result.get('killed'):
        return ['no rank killed: restart not tested%s' % (' (%s)' % result['error'] if result.get('error') else '')]
    return ['rank %s killed after step %s' % (_fmt(result.get('victim_rank')), _fmt(result.get('kill_step'))),
            '%s restart(s) of at most %s' % (_fmt(result.get('restarts')), _fmt(result.get('max_restarts'))),
            'resumed from step %s (checkpoint every %s), %s step(s) redone' % (
                _fmt(result.get('resumed_from')), _fmt(result.get('checkpoint_every')), _fmt(result.get('steps_redone'))),
            'recovered in %s s' % _fmt(result.get('recover_s')),
            '%s of %s steps in %s s, loss %s -> %s' % (
                _fmt(result.get('steps_done')), _fmt(result.get('steps')), _fmt(result.get('total_s')),
                _fmt(result.get('first_loss')), _fmt(result.get('final_loss')))]


def gpu_single_rows(run):
    """The GPUs a single-GPU run measured (``[{index, bf16_tflops, membw_gbps, error}]``, in GPU order); [] for other runs."""
    if run.get('kind') != 'gpu_single':
        return []
    gpus = (run.get('result') or {}).get('gpus') if isinstance(run.get('result'), dict) else None
    rows = [g for g in gpus or [] if isinstance(g, dict) and g.get('index') is not None]
    return sorted(rows, key=lambda g: (len(str(g['index'])), str(g['index'])))


def _size(n):
    for unit, div in (('GiB', 1 << 30), ('MiB', 1 << 20), ('KiB', 1 << 10)):
        if n >= div:
            return '%g %s' % (n / float(div), unit)
    return '%d B' % n


# dmon series shown per GPU in report.md and report.html: (series, heading)
DMON_COLUMNS = (('pwr', 'power (W)'), ('sm', 'SM (%)'), ('gtemp', 'GPU temp (°C)'), ('fb', 'memory used (MiB)'), ('pclk', 'SM clock (MHz)'))


# host CPU series shown per run next to the GPU samples (_host_samples.judge_run's series): (series, heading)
HOST_CPU_COLUMNS = (('busy', 'busy (%)'), ('iowait', 'iowait (%)'), ('steal', 'steal (%)'), ('core_max', 'busiest core (%)'),
                    ('load1', 'load 1 min'), ('proc_cpu', 'workload CPU (cores)'), ('proc_max', 'busiest process (% of a core)'))


def host_cpu_rows(runs):
    """``(rows, notes)`` of the runs' host CPU samples: a row ``(during, samples, cells, busiest cores, command)`` per run
    that has them (``cells``: min / median / max of each HOST_CPU_COLUMNS series), ``notes`` what was not measured or not
    judged."""
    rows, notes = [], []
    for run in runs:
        cpu = run.get('host_cpu') if isinstance(run.get('host_cpu'), dict) else None
        name = _fmt(run.get('component') or run.get('kind'))
        if cpu is None:
            continue
        if cpu.get('not_measured'):
            notes.append('host CPU samples during %s NOT MEASURED: %s' % (name, cpu['not_measured']))
            continue
        series = cpu.get('series') if isinstance(cpu.get('series'), dict) else {}
        notes += ['during %s, not judged: %s' % (name, why) for why in cpu.get('not_judged') or []]
        busiest = ', '.join('%s %s%%' % (k, v) for k, v in (cpu.get('busiest_cores') or {}).items()) or '-'
        rows.append((name, _fmt(cpu.get('samples')), [_dmon_stats(series.get(c)) for c, _h in HOST_CPU_COLUMNS], busiest,
                     _fmt(cpu.get('command'))))
    return rows, notes


def _md_host_cpu(runs):
    """A table of the host CPU samples of the runs that have them, then what was not measured or not judged."""
    rows, notes = host_cpu_rows(runs)
    out = []
    if rows:
        out += ['Host CPU samples (/proc/stat, /proc/loadavg, the workload\'s processes), min / median / max:', '',
                '| during | samples | %s | busiest cores over the run |' % ' | '.join(h for _c, h in HOST_CPU_COLUMNS),
                '|---|---|%s---|' % ('---|' * len(HOST_CPU_COLUMNS))]
        out += ['| %s | %s | %s | %s |' % (_md(name), _md(count), ' | '.join(_md(c) for c in cells), _md(busiest))
                for name, count, cells, busiest, _command in rows] + ['']
    for note in notes:
        out += ['**Host CPU:** %s' % _md(note), '']
    return out


def _md_workloads(runs):
    if not runs:
        return []
    lines = ['| measured | component | figures | seconds |', '|---|---|---|---|']
    for run in runs:
        lines.append('| %s | %s | %s | %s |' % (_md(run.get('kind')), _md(run.get('component')), _md(_figures(run)), _md(run.get('seconds'))))
    lines.append('')
    for run in runs:
        if run.get('not_judged'):
            lines += ['**Not judged:** %s — %s' % (_md(run.get('component')), _md(run['not_judged'])), '']
        if run.get('not_applicable'):
            lines += ['**Not applicable:** %s — %s' % (_md(run.get('component')), _md(run['not_applicable'])), '']
    lines += _md_dmon(runs)
    lines += _md_host_cpu(runs)
    for run in runs:
        if run.get('debug_log_tail'):
            lines += ['<details><summary>%s: NCCL_DEBUG=INFO re-run</summary>' % _md(run.get('component')), ''
                      ] + _md_fence(run['debug_log_tail'][-3000:]) + ['</details>', '']
    return lines


def _dmon_gpus(run):
    """``[(gpu, entry)]`` of a run's dmon summary, in GPU order; [] when it has none."""
    dmon = run.get('dmon') if isinstance(run.get('dmon'), dict) else {}
    gpus = dmon.get('gpus') if isinstance(dmon.get('gpus'), dict) else {}
    return [(g, gpus[g] if isinstance(gpus[g], dict) else {}) for g in sorted(gpus, key=lambda g: (len(str(g)), str(g)))]


def _series(entry, column):
    series = entry.get('series') if isinstance(entry.get('series'), dict) else {}
    return series.get(column)


def _dmon_stats(stats):
    if not isinstance(stats, dict):
        return '-'
    return ' / '.join(_fmt(stats.get(k)) for k in ('min', 'median', 'max'))


def _clock_reasons(run, gpu):
    """The clock event reasons sampled on ``gpu`` during ``run``: each reason with the share of samples that had it,
    the most frequent first (``sw_power_cap 40/48``); why they were not sampled; or ``-``."""
    dmon = run.get('dmon') if isinstance(run.get('dmon'), dict) else {}
    events = dmon.get('clock_events') if isinstance(dmon.get('clock_events'), dict) else {}
    if events.get('not_measured'):
        return 'not sampled'
    entry = (events.get('gpus') or {}).get(gpu) if isinstance(events.get('gpus'), dict) else None
    if not isinstance(entry, dict):
        return '-'
    counts = entry.get('reasons') if isinstance(entry.get('reasons'), dict) else {}
    shown = sorted(counts.items(), key=lambda item: (-item[1] if isinstance(item[1], int) else 0, str(item[0])))
    return ', '.join('%s %s/%s' % (name, count, _fmt(entry.get('samples'))) for name, count in shown) or 'none'


def _md_dmon(runs):
    """A table of the GPU samples (min / median / max) of the runs that have them, and the clock event reasons."""
    rows = []
    for run in runs:
        for gpu, entry in _dmon_gpus(run):
            rows.append('| %s | %s | %s | %s | %s |' % (
                _md(run.get('component') or run.get('kind')), _md(gpu), _md(entry.get('samples')),
                ' | '.join(_md(_dmon_stats(_series(entry, c))) for c, _h in DMON_COLUMNS), _md(_clock_reasons(run, gpu))))
    if not rows:
        return []
    return (['GPU samples (nvidia-smi dmon), min / median / max, and the clock event reasons (samples that had each):', '',
             '| during | GPU | samples | %s | clock event reasons |' % ' | '.join(h for _c, h in DMON_COLUMNS),
             '|---|---|---|' + '---|' * (len(DMON_COLUMNS) + 1)]
            + rows + [''])


def _no_findings(entry):
    """The line of a host without findings: what was not judged, not measured, not applicable; "every check passed"
    only where every check of the host passed (``host_checks``)."""
    applicable = entry.get('not_applicable') or {}
    count = _check_status.counts(host_checks(entry))
    tail = (' %d not applicable to this host (%s).' % (len(applicable), ', '.join(sorted(applicable)))) if applicable else ''
    unmeasured = (' %d check(s) not measured (listed under "Checks").' % count['not_measured']) if count['not_measured'] else ''
    if entry.get('not_judged'):
        return 'No findings, but %d measurement(s) not judged (%s): no curve to compare them with.%s%s' % (
            len(entry['not_judged']), ', '.join(sorted(entry['not_judged'])), tail, unmeasured)
    if unmeasured:
        return 'No findings, but' + unmeasured + tail
    if applicable:
        return 'No findings: every check that applies passed;' + tail
    if count['not_applicable']:
        return 'No findings: every check that applies passed; %d check(s) not applicable to this host.' % count['not_applicable']
    return 'No findings: every check passed.'


def check_summary(checks):
    """``2 fail, 58 passed, 3 not measured, 10 not applicable``: how many checks of ``host_checks``'s result have each
    status, worst first, statuses without a check left out."""
    count = _check_status.counts(checks)
    return ', '.join('%d %s' % (count[status], _check_status.WORDS[status]) for status in _check_status.STATUSES if count[status])


def _md_checks(entry):
    """The status of every check of a host (``host_checks``): a line of counts, then one row per status and reason."""
    checks = host_checks(entry)
    lines = ['**Checks:** %s' % _md(check_summary(checks)), '', '| check status | checks | why |', '|---|---|---|']
    for status, why, names in _check_status.grouped(checks):
        lines.append('| %s | %s | %s |' % (_md(_check_status.WORDS[status]), _md_code(', '.join(names)), _md(why)))
    return lines + ['']


# characters Markdown or HTML would read as markup, written as entities (which tables, headings and
# paragraphs show as the character itself); ampersand first so no entity is escaped twice
_MD_ENTITIES = (('&', '&amp;'), ('\\', '&#92;'), ('<', '&lt;'), ('>', '&gt;'), ('|', '&#124;'), ('`', '&#96;'),
                ('[', '&#91;'), (']', '&#93;'), ('*', '&#42;'))


def _md(value):
    """``value`` as Markdown text of one table cell or line: no markup, no HTML, no line break."""
    text = _fmt(value)
    for char, entity in _MD_ENTITIES:
        text = text.replace(char, entity)
    return ' '.join(text.splitlines())


def _md_code(value):
    """``value`` shown as code: an HTML ``code`` element holding the escaped text (a Markdown code span
    would show the entities literally and could be closed by a backtick in the data)."""
    return '<code>%s</code>' % _md(value)


def _md_fence(text):
    """``text`` as a fenced code block whose fence is longer than any run of backticks in it."""
    longest = max([len(run) for run in re.findall('`+', text)] or [0])
    fence = '`' * max(3, longest + 1)
    return [fence, text, fence]


def render_markdown(report):
    report = _scrub(report)
    s = report['summary']
    lines = ['# xuanwu.cluster validation report', '',
             '- run: %s (%s → %s)' % (_md_code(report['run_id']), _md(report['started_at']), _md(report['finished_at'])),
             '- collection %s, ansible-core %s, playbook %s' % (_md(report['collection']['version']), _md(report['ansible_version']),
                                                                _md_code(report['playbook'])),
             '- profiles: %s' % ', '.join(_md_code(p) for p in sorted(report['profiles'])),
             '- result: **%s** — %d hosts: %s' % (_md(s['result'].upper()), s['hosts'],
                                                  ', '.join('%d %s' % (n, _md(k)) for k, n in s['status'].items() if n)),
             '']
    if s['failed_hosts']:
        lines += ['Failed hosts: ' + ', '.join(_md_code(h) for h in s['failed_hosts']), '']
    lines += _fleet_step.markdown(report.get('fleet'), _md)
    for host, entry in report['hosts'].items():
        fs = entry['facts_summary']
        lines += ['## %s — %s' % (_md(host), _md(entry['status'].upper())), '',
                  'profile %s; %s GPU(s) %s; driver %s; CUDA %s; NCCL %s; %s; kernel %s; source %s' % (
                      _md_code(entry['profile']), _md(fs.get('gpu_count')), _md(fs.get('gpu_model')), _md(fs.get('driver_version')),
                      _md(fs.get('cuda_driver_version')), _md(fs.get('nccl_version')), _md(fs.get('os')), _md(fs.get('kernel')),
                      _md(fs.get('source'))), '']
        if entry.get('error'):
            lines += ['**Not probed:** %s' % _md(entry['error']), '']
        lines += _md_workloads(entry.get('workloads') or [])
        if not entry['findings']:
            lines += [_md(_no_findings(entry)), '']
        else:
            lines += ['| severity | check | component | measured | expected | remediation |', '|---|---|---|---|---|---|']
            for f in entry['findings']:
                lines.append('| %s | %s | %s | %s | %s | %s |' % (
                    _md(f['severity']), _md_code(f['check']), _md(f['component']), _md(f.get('measured')), _md(f.get('expected')),
                    _md(f.get('remediation'))))
            lines.append('')
        lines += _md_checks(entry)
    return '\n'.join(lines) + '\n'


# report.html: the fleet table lists every host; the per-host sections are <details>, open for the hosts that
# failed when the run has at most OPEN_HOSTS_MAX hosts; plots are drawn for the first PLOT_HOSTS_MAX hosts of
# the table's order (failing first), the others keep their numbers (tables) so that the page stays small.
OPEN_HOSTS_MAX = 32
PLOT_HOSTS_MAX = 50
WORST_TEXT_MAX = 160

_CSS = ('body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em 2em;color:#222;background:#fff}'
        'h1{font-size:22px;margin:0 0 .4em}h2{font-size:17px}summary h2{display:inline;margin:0}h3{font-size:15px;margin:1em 0 .4em}'
        'table{border-collapse:collapse;margin:.4em 0 1.2em}'
        'td,th{border:1px solid #d5d5d5;padding:3px 8px;text-align:left;vertical-align:top;font-size:13px}'
        'th{background:#f3f3f3}table.fleet td:first-child,table.fleet td:last-child{white-space:nowrap}td.num{text-align:right}'
        '.fail{color:#fff;background:#c0392b}.error{color:#fff;background:#8e44ad}'
        '.warn{background:#f1c40f}.pass{color:#fff;background:#27ae60}.info{background:#d6eaf8}'
        'span.badge{padding:1px 8px;border-radius:4px;font-weight:bold;font-size:12px}code{font-size:12px}'
        'details.host{border:1px solid #ddd;border-radius:6px;margin:.6em 0;padding:.3em .8em}'
        'details.host>summary{cursor:pointer;padding:.3em 0}details.host>summary .worst{color:#555;font-size:13px;margin-left:1em}'
        '.plots{display:flex;flex-wrap:wrap;gap:8px 16px}figure{margin:0}figcaption{font-size:13px;font-weight:bold}'
        'svg text{fill:#333;font-family:inherit}svg.spark{vertical-align:middle;margin-right:6px}'
        '.stats{font-size:12px;color:#444;white-space:nowrap}.not-measured{color:#8e44ad;font-weight:bold}.not-applicable{color:#555}'
        'details.checks{margin:.4em 0 1em}details.checks>summary{cursor:pointer;font-size:14px}'
        '.note{color:#555;font-size:13px}table.findings td:nth-child(6){min-width:14em}table.findings td:nth-child(7){min-width:18em}')


def _worst_text(entry):
    """One line of a host's worst finding (or why it was not probed), at most WORST_TEXT_MAX characters."""
    if entry.get('error'):
        text = 'not probed: %s' % entry['error']
    elif entry['findings']:
        f = _findings.worst(entry['findings'])     # root cause first: gpu.count before the bandwidth it costs
        text = '%s %s: measured %s, expected %s' % (
            f.get('check'), _fmt(f.get('component')), _fmt(f.get('measured')), _fmt(f.get('expected')))
    elif entry.get('not_judged') or entry.get('not_applicable'):
        text = _no_findings(entry)
    else:
        text = ''
    text = ' '.join(text.split())
    return text if len(text) <= WORST_TEXT_MAX else text[:WORST_TEXT_MAX - 1] + '…'


def fleet_order(hosts):
    """Host names, failing first (then error, warn, pass, any other status), by name within a status."""
    rank = dict((s, i) for i, s in enumerate(STATUS_ORDER))
    return sorted(hosts, key=lambda h: (rank.get(hosts[h].get('status'), len(rank)), h))


def _dmon_html(runs, e, plots):
    """One table of the GPU samples of every run that has them (a sparkline per series when ``plots``), then a line
    per run whose sampling was requested and did not run."""
    rows, missing = [], []
    for run in runs:
        dmon = run.get('dmon') if isinstance(run.get('dmon'), dict) else {}
        name = e(_fmt(run.get('component') or run.get('kind')))
        if dmon.get('not_measured'):
            missing.append('<p class="not-measured">GPU samples (nvidia-smi dmon) during %s NOT MEASURED: %s</p>' % (
                name, e(_fmt(dmon['not_measured']))))
        how = e('%s samples every %s s: %s' % (_fmt(dmon.get('samples')), _fmt(dmon.get('interval_s')), _fmt(dmon.get('command'))))
        for gpu, entry in _dmon_gpus(run):
            values = entry.get('values') if isinstance(entry.get('values'), dict) else {}
            cells = ''.join('<td>%s<span class="stats">%s</span></td>' % (
                _svg.sparkline(values.get(column), label='%s %s' % (gpu, heading)) if plots else '', e(_dmon_stats(_series(entry, column))))
                for column, heading in DMON_COLUMNS)
            rows.append('<tr><td title="%s">%s</td><td>%s</td><td class="num">%s</td>%s<td>%s</td></tr>' % (
                how, name, e(str(gpu)), e(_fmt(entry.get('samples'))), cells, e(_clock_reasons(run, gpu))))
    if not rows:
        return missing
    return (['<h3>GPU samples (nvidia-smi dmon) during the workloads</h3>',
             '<p class="note">min / median / max of each series%s</p>' % (', its samples as a line' if plots else ''),
             '<table class="dmon"><tr><th>during</th><th>GPU</th><th>samples</th>%s<th>clock event reasons</th></tr>' % ''.join(
                 '<th>%s</th>' % e(h) for _c, h in DMON_COLUMNS)]
            + rows + ['</table>'] + missing)


def _host_cpu_html(runs, e):
    """The host CPU samples of every run that has them, next to the GPU samples; what was not measured or judged."""
    rows, notes = host_cpu_rows(runs)
    out = []
    if rows:
        out += ['<h3>Host CPU samples during the workloads</h3>', '<p class="note">min / median / max of each series</p>',
                '<table class="dmon"><tr><th>during</th><th>samples</th>%s<th>busiest cores over the run</th></tr>' % ''.join(
                    '<th>%s</th>' % e(h) for _c, h in HOST_CPU_COLUMNS)]
        out += ['<tr><td title="%s">%s</td><td class="num">%s</td>%s<td>%s</td></tr>' % (
            e(command), e(name), e(count), ''.join('<td>%s</td>' % e(c) for c in cells), e(busiest))
            for name, count, cells, busiest, command in rows] + ['</table>']
    return out + ['<p class="not-measured">%s</p>' % e(note) for note in notes]


def _plots_html(runs, e):
    figures = []
    for run in runs:
        rows = gpu_single_rows(run)
        floors = run.get('floors') if isinstance(run.get('floors'), dict) else {}
        for key, floor, title, unit in (('bf16_tflops', 'min_bf16_tflops', 'dense bf16 matmul, each GPU alone', 'TFLOP/s'),
                                        ('membw_gbps', 'min_membw_gbps', 'device memory copy, each GPU alone', 'GB/s')):
            svg = _svg.gpu_bars([(g['index'], g.get(key)) for g in rows], floors.get(floor), title, unit)
            if svg:
                figures.append('<figure><figcaption>%s</figcaption>%s</figure>' % (
                    e('%s: %s%s' % (_fmt(run.get('component')), title, '' if floors.get(floor) is not None else ': no floor in the profile')), svg))
        svg = _svg.busbw_plot(run.get('busbw_gbps'), run.get('curve'), title=_fmt(run.get('component') or run.get('kind')))
        if svg:
            caption = '%s (%s)%s' % (_fmt(run.get('component')), _fmt(run.get('kind')),
                                     '' if run.get('curve') else ': no floor in the profile')
            figures.append('<figure><figcaption>%s</figcaption>%s</figure>' % (e(caption), svg))
    return ['<div class="plots">'] + figures + ['</div>'] if figures else []


def _host_html(host, entry, e, open_, plots):
    fs = entry['facts_summary']
    worst = _worst_text(entry)
    out = ['<details class="host" id="%s"%s><summary><h2>%s</h2> <span class="badge %s">%s</span>%s</summary>' % (
        e(host), ' open' if open_ else '', e(host), e(entry['status']), e(entry['status'].upper()),
        '<span class="worst">%s</span>' % e(worst) if worst else ''),
        '<p>%s GPU(s) %s, driver %s, CUDA %s, NCCL %s, %s, kernel %s, source %s; profile <code>%s</code></p>' % tuple(
            e(_fmt(v)) for v in [fs.get(k) for k in ('gpu_count', 'gpu_model', 'driver_version', 'cuda_driver_version', 'nccl_version',
                                                     'os', 'kernel', 'source')] + [entry['profile']])]
    if entry.get('error'):
        out.append('<p><b>Not probed:</b> %s</p>' % e(entry['error']))
    if entry['findings']:
        out.append('<table class="findings"><tr><th>severity</th><th>check</th><th>component</th><th>measured</th><th>expected</th>'
                   '<th>finding</th><th>what to do</th></tr>')
        previous = None
        for f in entry['findings']:
            remediation = _fmt(f.get('remediation'))
            out.append('<tr><td class="%s">%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>%s</tr>' % (
                e(f['severity']), e(f['severity']), e(f['check']), e(_fmt(f['component'])), e(_fmt(f.get('measured'))),
                e(_fmt(f.get('expected'))), e(_fmt(f.get('message'))),
                '<td class="note">as above</td>' if remediation == previous else '<td>%s</td>' % e(remediation)))
            previous = remediation
        out.append('</table>')
    else:
        out.append('<p>%s</p>' % e(_no_findings(entry)))
    out += _html_checks(entry, e)
    runs = [r for r in entry.get('workloads') or [] if isinstance(r, dict)]
    if runs:
        out.append('<table><tr><th>measured</th><th>component</th><th>figures</th><th>seconds</th></tr>')
        for run in runs:
            out.append('<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>' % (
                e(_fmt(run.get('kind'))), e(_fmt(run.get('component'))), e(_figures(run)), e(_fmt(run.get('seconds')))))
        out.append('</table>')
        for run in runs:
            if run.get('not_judged'):
                out.append('<p class="not-judged"><b>Not judged:</b> %s — %s</p>' % (e(_fmt(run.get('component'))), e(run['not_judged'])))
            if run.get('not_applicable'):
                out.append('<p class="not-applicable"><b>Not applicable:</b> %s — %s</p>' % (
                    e(_fmt(run.get('component'))), e(_fmt(run['not_applicable']))))
        if plots:
            out += _plots_html(runs, e)
        out += _dmon_html(runs, e, plots)
        out += _host_cpu_html(runs, e)
        for run in runs:
            if run.get('debug_log_tail'):
                out.append('<details><summary>%s: NCCL_DEBUG=INFO re-run</summary><pre>%s</pre></details>' % (
                    e(_fmt(run.get('component'))), e(run['debug_log_tail'][-3000:])))
    out.append('</details>')
    return out


def _html_checks(entry, e):
    """The status of every check of a host (``host_checks``): a closed section whose summary counts them, a row per
    status and reason."""
    checks = host_checks(entry)
    out = ['<details class="checks"><summary>Checks: %s</summary>' % e(check_summary(checks)),
           '<table class="checks"><tr><th>check status</th><th>checks</th><th>why</th></tr>']
    for status, why, names in _check_status.grouped(checks):
        out.append('<tr><td class="%s">%s</td><td><code>%s</code></td><td>%s</td></tr>' % (
            e(status.replace('_', '-')), e(_check_status.WORDS[status]), e(', '.join(names)), e(_fmt(why))))
    return out + ['</table></details>']


def render_html(report):
    """report.html: a summary, the fleet table (failing hosts first, their failing checks and worst finding), the
    fleet section, then a collapsible section per host with its findings, figures, busbw plots against the
    profile's floor and the GPU samples as sparklines. Offline: inline CSS and SVG, no script."""
    report = _scrub(report)
    e = html.escape
    s = report['summary']
    hosts = report['hosts']
    order = fleet_order(hosts)
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
           '<title>xuanwu.cluster report %s</title><style>%s</style></head><body>' % (e(report['run_id']), _CSS),
           '<h1>xuanwu.cluster validation report</h1>',
           '<p>Run <code>%s</code>, %s → %s. Collection %s, ansible-core %s, playbook <code>%s</code>.</p>' % (
               e(report['run_id']), e(str(report['started_at'])), e(str(report['finished_at'])), e(str(report['collection']['version'])),
               e(str(report['ansible_version'])), e(str(report['playbook']))),
           '<p>Result: <span class="badge %s">%s</span> — %d hosts: %s</p>' % (
               e(s['result']), e(s['result'].upper()), s['hosts'], e(', '.join('%d %s' % (n, k) for k, n in s['status'].items() if n))),
           '<table class="fleet"><tr><th>host</th><th>status</th><th>failing checks</th><th>warn</th><th>worst finding</th><th>profile</th></tr>']
    for host in order:
        entry = hosts[host]
        out.append('<tr><td><a href="#%s">%s</a></td><td><span class="badge %s">%s</span></td><td class="num">%d</td><td class="num">%d</td>'
                   '<td>%s</td><td>%s</td></tr>' % (
                       e(host), e(host), e(entry['status']), e(entry['status']), len(_findings.failed_checks(entry['findings'])),
                       entry['counts']['warn'], e(_worst_text(entry)), e(str(entry['profile']))))
    out.append('</table>')
    out += _fleet_step.html(report.get('fleet'), e)
    if len(order) > PLOT_HOSTS_MAX:
        out.append('<p class="note">Plots are drawn for the first %d hosts of the table (failing first); the other %d hosts show '
                   'their figures as numbers (report.json has every value).</p>' % (PLOT_HOSTS_MAX, len(order) - PLOT_HOSTS_MAX))
    for i, host in enumerate(order):
        entry = hosts[host]
        out += _host_html(host, entry, e, entry['status'] in ('fail', 'error') and len(order) <= OPEN_HOSTS_MAX, i < PLOT_HOSTS_MAX)
    out.append('</body></html>')
    return '\n'.join(out) + '\n'
