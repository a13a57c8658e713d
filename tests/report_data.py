"""Run reports with plots and GPU samples, for the tests of report.html (unit and browser) and bench/report_html.py.

:func:`real_report` is the report.json of a real validate.yml run on the 2x H200 host
(tests/fixtures/report/) with what the monitoring adds to it (docs/report-format.md): each nccl-tests run's
floor ``curve`` (the h200x2-nvlink profile's), the torch all-reduce judged on the all_reduce curve, and the
``dmon`` summaries of real ``nvidia-smi dmon -s pucvmet`` captures (tests/fixtures/dmon/) through
``_dmon_checks.summarise``, with the samples as ``values``. :func:`fleet_report` copies its host ``n`` times;
some copies are derived faults (all_reduce busbw 6 % lower from 1 GiB up, a throttled GPU), said in the host's name.
"""
import copy
import json
import os

import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collectives, _dmon_checks, _findings
from ansible_collections.xuanwu.cluster.plugins.module_utils._collectives import normalise_collective
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_dmon import parse_dmon
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
VALUES_MAX = 120
DMON_COMMAND = 'nvidia-smi dmon -s pucvmet -d 1'


def _load(*path):
    with open(os.path.join(*path), encoding='utf-8') as stream:
        return stream.read()


def curves():
    """{collective: curve} of the h200x2-nvlink profile."""
    profile = yaml.safe_load(_load(ROOT, 'profiles', 'h200x2-nvlink.yml'))
    return dict((name, spec['curve']) for name, spec in profile['collectives'].items() if spec.get('curve'))


def dmon_of(capture, interval_s=1):
    """The ``dmon`` entry of a workload run from a dmon capture of tests/fixtures/dmon/: the summary of
    ``_dmon_checks.summarise`` with each GPU's samples of the plotted series as ``values`` (every n-th sample
    when there are more than VALUES_MAX)."""
    parsed = parse_dmon(_load(FIXTURES, 'dmon', capture))
    summary = _dmon_checks.summarise(parsed)
    gpus = {}
    for gpu in parsed['gpus']:
        samples = gpu['samples']
        step = max(1, -(-len(samples) // VALUES_MAX))
        entry = dict(summary['gpus']['gpu%d' % gpu['index']])
        entry['values'] = dict((c, [s.get(c) for s in samples[::step]]) for c in ('pwr', 'sm', 'gtemp', 'fb', 'pclk'))
        gpus['gpu%d' % gpu['index']] = entry
    return {'command': DMON_COMMAND, 'interval_s': interval_s, 'samples': summary['samples'], 'gpus': gpus}


def real_report():
    report = json.loads(_load(FIXTURES, 'report', 'h200x2_report_with_workloads.json'))
    floors = curves()
    for entry in report['hosts'].values():
        for run in entry['workloads']:
            if run['kind'] == 'nccl_tests':
                run['curve'] = floors[normalise_collective(run['component'])]
                run['dmon'] = dmon_of('h200x2_dmon_busy.txt')
            elif run['kind'] == 'torch_allreduce':
                run['curve'] = floors['all_reduce']
                run['dmon'] = dmon_of('h200x2_dmon_busy.txt')
            elif run['kind'] == 'soak':
                run['dmon'] = {'not_measured': 'nvidia-smi dmon exited 6 before the first sample: no GPU samples of soak'}
    return report


def _slower(entry, host):
    """Derived fault: all_reduce busbw 6 % lower from 1 GiB up, with the findings the collectives check gives."""
    for run in entry['workloads']:
        if run['component'] == 'all_reduce_perf':
            for size in run['busbw_gbps']:
                if int(size) >= 1 << 30:
                    run['busbw_gbps'][size] = round(run['busbw_gbps'][size] * 0.94, 2)
            rows = [{'size_bytes': int(s), 'out_of_place': {'busbw_gbps': v}} for s, v in run['busbw_gbps'].items()]
            return _collectives._curve_findings({'rows': rows}, run['curve'], host, run['component'], 0)
    return []


def _throttled(entry, host):
    """Derived fault: the dmon samples of a GPU whose SM clock under load stayed at 1410 MHz (tests/fixtures/dmon/, derived
    capture), under a sustained clock floor of 1500 MHz (power-capped clocks are no finding without a floor above them)."""
    for run in entry['workloads']:
        if run['kind'] == 'torch_allreduce':
            run['dmon'] = dmon_of('h200x2_dmon_busy-derived-throttle-gpu1.txt')
            summary = {'gpus': run['dmon']['gpus']}
            return _dmon_checks.findings(summary, {'sustained_sm_clock_min_mhz': 1500}, host=host)
    return []


def fleet_report(n, faults_every=10):
    """A report of ``n`` copies of the real host; every ``faults_every``-th copy is slower (``-slow``), the one
    after it throttled (``-throttled``)."""
    base = real_report()
    template = next(iter(base['hosts'].values()))
    hosts = {}
    for i in range(n):
        entry = copy.deepcopy(template)
        name = 'gpu%04d' % i
        extra = []
        if faults_every and i % faults_every == 1:
            name += '-slow'
            extra = _slower(entry, name)
        elif faults_every and i % faults_every == 2:
            name += '-throttled'
            extra = _throttled(entry, name)
        findings = sorted(entry['findings'] + extra, key=_findings.sort_key)
        hosts[name] = _report.host_entry(name, _findings.status_of(findings), findings, None, entry['profile'],
                                         entry['profile_path'], workloads=entry['workloads'])
        hosts[name]['facts_summary'] = entry['facts_summary']
    return _report.build_report(base['run_id'], base['started_at'], base['finished_at'], base['collection']['version'],
                                base['ansible_version'], base['playbook'], hosts, base['profiles'])
