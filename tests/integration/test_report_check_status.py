"""Integration: every format of one run's report states the same status for each check of each host
(docs/report-format.md, "Check status"): a finding (its severity), passed, not applicable (why), not measured (why).

The run is the demo (inventories/demo: four 4x H200 nodes replayed from capture bundles, one healthy and three with a
derived fault) with two more hosts: gpu-node05, the healthy gpu-node01 bundle whose ibstat probe failed, and
dead-node, which cannot be reached. report.json, junit.xml, report.md, report.html and xuanwu.prom are each read on
their own, without the collection's code, and compared host by host, check by check. junit.xml never lists as a
passed test case what does not apply (the AMD checks on these NVIDIA hosts) or was not measured (the InfiniBand checks
behind the failed ibstat, every check of the host that was not probed)."""
import html
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET

import pytest
import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue
from test_validate_playbook import ROOT, playbook, the_report

DEMO = os.path.join(ROOT, 'inventories', 'demo')
BUNDLES = os.path.join(ROOT, 'inventories', 'demo-bundles')
IBSTAT_ERROR = "ibpanic: [4127] main: stat of IB device 'mlx5_0' failed: No such file or directory"
# how each status reads in junit.xml's skipped messages, report.md and report.html
WORDS = {'fail': 'fail', 'warn': 'warn', 'info': 'info', 'pass': 'passed', 'not_measured': 'not measured',
         'not_applicable': 'not applicable'}
STATUS_OF_WORDS = dict((words, status) for status, words in WORDS.items())
SEVERITY = {0: 'info', 1: 'warn', 2: 'fail'}

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def _failed_ibstat(tmp_path):
    """The healthy demo bundle, its ibstat probe failed (an HCA the driver does not see)."""
    path = str(tmp_path / 'gpu-node05')
    shutil.copytree(os.path.join(BUNDLES, 'gpu-node01'), path)
    with open(os.path.join(path, 'manifest.json')) as handle:
        manifest = json.load(handle)
    for entry in manifest['probes']:
        if entry['probe'] == 'ibstat':
            entry.update(rc=1, status='failed', stderr=IBSTAT_ERROR)
            with open(os.path.join(path, entry['file']), 'w') as handle:
                handle.write('')
    manifest['host'] = 'gpu-node05'
    with open(os.path.join(path, 'manifest.json'), 'w') as handle:
        json.dump(manifest, handle, indent=2)
    return path


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    """The report folder of one validate.yml run of the demo and the two hosts above."""
    tmp_path = tmp_path_factory.mktemp('check-status')
    with open(os.path.join(DEMO, 'hosts.yml')) as handle:
        hosts = yaml.safe_load(handle)['gpu_nodes']['hosts']
    for host in hosts:
        hosts[host] = {'xuanwu_replay_dir': os.path.join(BUNDLES, host)}
    hosts['gpu-node05'] = {'xuanwu_replay_dir': _failed_ibstat(tmp_path)}
    hosts['dead-node'] = {'ansible_connection': 'ssh', 'ansible_host': '127.0.0.1', 'ansible_port': 1,
                          'ansible_ssh_common_args': '-o ConnectTimeout=3'}
    group_vars = {}
    for name in ('connection.yml', 'profile.yml'):
        with open(os.path.join(DEMO, 'group_vars', 'all', name)) as handle:
            group_vars.update(yaml.safe_load(handle))
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(yaml.safe_dump({'all': {'vars': group_vars, 'hosts': hosts}}))
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', str(inventory), 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports)
    assert rc == 2, out[-4000:]
    folder, _report = the_report(reports)
    return folder


def _read(folder, name):
    with open(os.path.join(folder, name), encoding='utf-8') as handle:
        return handle.read()


def from_json(folder):
    """{host: {check: (status, why)}} of report.json."""
    report = json.loads(_read(folder, 'report.json'))
    return dict((host, dict((check, (value['status'], value['why'])) for check, value in entry['checks'].items()))
                for host, entry in report['hosts'].items())


def from_junit(folder):
    """``({host: {check: (status, why)}}, {host: (skipped test cases, the suite's skipped attribute)})`` of junit.xml:
    a failure is fail, a skipped test case not applicable or not measured as its message begins, a test case with
    [warn] / [info] findings in its system-out warn / info, any other test case passed. The test cases of the host's
    reachability and of the runs not judged or not applicable are no checks."""
    out, skips = {}, {}
    for suite in ET.fromstring(_read(folder, 'junit.xml')).iter('testsuite'):
        checks, skipped = {}, 0
        for case in suite.iter('testcase'):
            skipped += case.find('skipped') is not None
            name = case.get('name')
            if name == 'probe.reachable' or name.startswith(('not judged: ', 'not applicable: ')):
                continue
            if case.find('failure') is not None:
                checks[name] = ('fail', None)
            elif case.find('skipped') is not None:
                words, why = case.find('skipped').get('message').split(': ', 1)
                checks[name] = (STATUS_OF_WORDS[words], why)
            elif case.find('system-out') is not None:
                text = case.find('system-out').text
                checks[name] = ('warn' if '[warn] ' in text else 'info', None)
            else:
                checks[name] = ('pass', None)
        skips[suite.get('name')] = (skipped, suite.get('skipped'))
        out[suite.get('name')] = checks
    return out, skips


def _rows(pairs):
    """{check: (status, why)} of (words, comma-separated checks, why) rows."""
    checks = {}
    for words, names, why in pairs:
        why = html.unescape(why)
        for name in html.unescape(names).split(', '):
            checks[name] = (STATUS_OF_WORDS[html.unescape(words)], None if why == '-' else why)
    return checks


def from_markdown(folder):
    """{host: {check: (status, why)}} of report.md: the table under each host's **Checks:** line."""
    out = {}
    for section in re.split(r'^## ', _read(folder, 'report.md'), flags=re.M)[1:]:
        host = html.unescape(section.split(' — ', 1)[0])
        table = section[section.index('| check status | checks | why |'):].split('\n\n', 1)[0]
        out[host] = _rows(re.findall(r'^\| (.+?) \| <code>(.+?)</code> \| (.+) \|$', table, re.M))
    return out


def from_html(folder):
    """{host: {check: (status, why)}} of report.html: the checks table of each host's section."""
    out = {}
    for section in _read(folder, 'report.html').split('<details class="host" id="')[1:]:
        host = html.unescape(section.split('"', 1)[0])
        table = section[section.index('<table class="checks">'):].split('</table>', 1)[0]
        out[host] = _rows(re.findall(r'<tr><td class="[^"]*">([^<]*)</td><td><code>([^<]*)</code></td><td>([^<]*)</td></tr>', table))
    return out


def _samples(text):
    """[(metric, {label: value}, value)] of a Prometheus text file."""
    out = []
    for line in text.splitlines():
        match = re.match(r'^([a-z_]+)\{(.*)\} (\S+)$', line)
        if match:
            labels = dict((k, v.replace('\\"', '"').replace('\\\\', '\\'))
                          for k, v in re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', match.group(2)))
            out.append((match.group(1), labels, float(match.group(3))))
    return out


def from_prom(folder):
    """{host: {check: status}} of xuanwu.prom (no reasons there): the worst xuanwu_check_outcome of a check, else its
    xuanwu_check_not_measured / xuanwu_check_not_applicable sample, else passed (docs/metrics.md); and the counts of
    xuanwu_host_checks."""
    samples = _samples(_read(folder, 'xuanwu.prom'))
    hosts = set(labels['host'] for name, labels, _v in samples if name == 'xuanwu_host_status')
    out = dict((host, dict((check, 'pass') for check in _catalogue.CATALOGUE)) for host in hosts)
    counts = dict((host, {}) for host in hosts)
    worst = {}
    for name, labels, value in samples:
        if name == 'xuanwu_check_outcome':
            key = (labels['host'], labels['check'])
            worst[key] = max(worst.get(key, -1), int(value))
        elif name in ('xuanwu_check_not_measured', 'xuanwu_check_not_applicable'):
            out[labels['host']][labels['check']] = name[len('xuanwu_check_'):]
        elif name == 'xuanwu_host_checks':
            counts[labels['host']][labels['status']] = int(value)
    for (host, check), code in worst.items():
        out[host][check] = SEVERITY[code]
    return out, counts


def test_every_format_states_the_same_status_for_every_check_of_every_host(run):
    junit, skips = from_junit(run)
    # junit.xml: a check that does not apply or was not measured is a skipped test case that says so, never a pass
    assert junit['gpu-node01']['gpu.count'] == ('pass', None)
    assert junit['gpu-node02']['gpu.topology'] == ('fail', None)
    status, why = junit['gpu-node01']['gpu.bad_pages']
    assert (status, why) == ('not_applicable', "the profile's GPUs are NVIDIA (gpu.vendor nvidia): an AMD check")
    status, why = junit['gpu-node05']['ib.port_state']
    assert status == 'not_measured' and why == 'InfiniBand ports: probe ibstat failed: ' + IBSTAT_ERROR
    assert junit['gpu-node05']['probe.failed'] == ('fail', None)
    status, why = junit['dead-node']['gpu.count']
    assert status == 'not_measured' and why.startswith('the host was not probed: unreachable'), why
    assert not [check for check, (status, _why) in junit['dead-node'].items() if status != 'not_measured']
    # the stages the run did not ask for
    assert junit['gpu-node01']['collectives.busbw_low'] == ('not_applicable', 'the collectives (nccl-tests) did not run on this host')
    # each testsuite's skipped attribute counts its skipped test cases
    assert all(attribute == str(count) for count, attribute in skips.values()), skips

    state = from_json(run)
    assert set(state) == {'gpu-node01', 'gpu-node02', 'gpu-node03', 'gpu-node04', 'gpu-node05', 'dead-node'}
    assert state['gpu-node03']['ib.port_state'] == ('fail', None)
    assert state['gpu-node04']['host.time_sync'] == ('fail', None)
    for host, checks in state.items():
        assert set(checks) >= set(_catalogue.CATALOGUE), host
    prom, counts = from_prom(run)
    markdown, page = from_markdown(run), from_html(run)
    for host in sorted(state):
        for name, other in (('junit.xml', junit), ('report.md', markdown), ('report.html', page)):
            differ = sorted((check, state[host].get(check), other[host].get(check))
                            for check in set(state[host]) | set(other[host]) if state[host].get(check) != other[host].get(check))
            assert not differ, (host, name, differ[:5])
        differ = sorted((check, state[host][check][0], prom[host].get(check)) for check in state[host]
                        if state[host][check][0] != prom[host].get(check))
        assert not differ, (host, 'xuanwu.prom', differ[:5])
        tally = {}
        for status, _why in state[host].values():
            tally[status] = tally.get(status, 0) + 1
        assert dict((s, n) for s, n in counts[host].items() if n) == tally, host
