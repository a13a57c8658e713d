"""Integration: run the real playbooks with ansible-playbook (from PATH, so `make integration` runs
them once per supported ansible-core) and assert on what they leave behind."""
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, 'tests', 'fixtures', 'corpus', 'corpus.yml')

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def playbook(*args, **kw):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_CACHE_PLUGIN='memory')
    args = list(args)
    reports = [a.split('=', 1)[1] for a in args if a.startswith('xuanwu_reports_dir=')]
    if reports and not any(a.startswith('xuanwu_runs_dir=') for a in args):
        # the run record (validate.yml's launch kit) beside the reports, never in the checkout
        args = ['-e', 'xuanwu_runs_dir=%s' % os.path.join(os.path.dirname(reports[0]), 'runs')] + args
    proc = subprocess.run(['ansible-playbook'] + args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=kw.get('timeout', 300), check=False)
    return proc.returncode, proc.stdout


def the_report(reports):
    runs = [d for d in os.listdir(str(reports)) if os.path.isdir(os.path.join(str(reports), d))]   # not history.sqlite
    assert len(runs) == 1, runs
    folder = os.path.join(str(reports), runs[0])
    with open(os.path.join(folder, 'report.json')) as handle:
        return folder, json.load(handle)


def expected_demo():
    with open(CORPUS) as handle:
        corpus = yaml.safe_load(handle)
    faults = dict((f['id'], f) for f in corpus['faults'])
    expected = {}
    for host, spec in corpus['demo'].items():
        entries = faults[spec['fault']]['expect'] if spec.get('fault') else spec.get('expect', [])
        expected[host] = sorted((e['check'], e['component']) for e in entries if e['severity'] == 'fail')
    return expected


@pytest.mark.both_controllers
@pytest.mark.parametrize('mode', ['run', 'check'])
def test_demo_reports_exactly_the_derived_faults(tmp_path, mode):
    reports = tmp_path / 'reports'
    extra = ['--check'] if mode == 'check' else []
    rc, out = playbook('-i', 'inventories/demo', 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports, *extra)
    assert rc == 2, out[-4000:]
    folder, report = the_report(reports)
    expected = expected_demo()
    assert report['schema_version'] == 1
    assert set(report['hosts']) == set(expected)
    assert report['summary']['failed_hosts'] == sorted(h for h, e in expected.items() if e)
    assert report['profiles'] == {'h200x4-nvlink': os.path.join(ROOT, 'profiles', 'h200x4-nvlink.yml')} or \
        list(report['profiles']) == ['h200x4-nvlink']
    for host, want in expected.items():
        entry = report['hosts'][host]
        got = sorted((f['check'], f['component']) for f in entry['findings'] if f['severity'] == 'fail')
        assert got == want, (host, got)
        assert entry['status'] == ('fail' if want else 'pass')
        assert entry['facts_summary']['gpu_count'] == 4
        assert entry['facts_summary']['source'] == 'replay'
        for f in entry['findings']:
            assert f['host'] == host and f['remediation'] and 'measured' in f and 'expected' in f
    # The end of the run names every failed host and its reason; the healthy one is not failed.
    recap = out[out.rindex('PLAY RECAP'):]
    flat = ' '.join(out.split())   # the callback wraps long messages
    for host, want in expected.items():
        line = [row for row in recap.splitlines() if row.startswith(host)][0]
        assert ('failed=1' in line) == bool(want), line
        # the gate's message: one line per check, listing its components (root cause first)
        gate = flat[flat.index('%s FAILED' % host):] if want else ''
        for check, component in want:
            assert '[%s]' % check in gate and '%s: measured' % component in gate, (host, check, component)
    junit = ET.parse(os.path.join(folder, 'junit.xml')).getroot()
    failures = dict((s.get('name'), int(s.get('failures'))) for s in junit.iter('testsuite'))
    assert failures == dict((h, len(set(pair[0] for pair in w))) for h, w in expected.items())
    assert all(int(s.get('tests')) > 20 for s in junit.iter('testsuite'))
    with open(os.path.join(folder, 'report.md')) as handle:
        md = handle.read()
    with open(os.path.join(folder, 'report.html')) as handle:
        page = handle.read()
    for host, want in expected.items():
        assert '## %s — %s' % (host, 'FAIL' if want else 'PASS') in md
        assert 'id="%s"' % host in page
    # the launch kit of the host that passed (a partial pass), in the run record (check mode: beside the real one)
    record = os.path.join(str(tmp_path / 'runs'), os.path.basename(folder), *(['check'] if mode == 'check' else []))
    kit = os.path.join(record, 'launch-kit')
    passed = sorted(h for h, e in expected.items() if not e)
    assert sorted(os.listdir(kit)) == ['env.sh', 'hostfile', 'kit.json', 'launch-mpirun.sh', 'launch-torchrun.sh', 'versions.json']
    with open(os.path.join(record, 'launch-kit.json')) as handle:
        note = json.load(handle)
    assert (note['written'], note['partial'], note['hosts']) == (True, True, passed)
    assert sorted(note['left_out_hosts']) == sorted(h for h, e in expected.items() if e)
    with open(os.path.join(kit, 'hostfile')) as handle:
        assert handle.read().splitlines()[1:] == ['%s slots=4' % h for h in passed]
    with open(os.path.join(kit, 'versions.json')) as handle:
        assert json.load(handle)['hosts'][passed[0]]['gpu_driver'] == report['hosts'][passed[0]]['facts_summary']['driver_version']
    for name in ('launch-mpirun.sh', 'launch-torchrun.sh'):
        assert os.stat(os.path.join(kit, name)).st_mode & 0o777 == 0o755
        assert subprocess.run(['bash', '-n', os.path.join(kit, name)], check=False).returncode == 0


def test_the_demo_prints_no_warning(tmp_path):
    """A newcomer's first run (`make demo`) shows nothing that is not about their cluster: no
    warning of any kind, with the repository's ansible.cfg as it is (its jsonfile fact cache, in a folder of the
    test's own). No host of the demo takes part in a later stage, so each keeps its facts and profile in brief
    (docs/facts.md, "Brief facts")."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / 'facts'))
    proc = subprocess.run(['ansible-playbook', '-i', 'inventories/demo', 'playbooks/validate.yml',
                           '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'reports'), '-e', 'xuanwu_runs_dir=%s' % (tmp_path / 'runs')],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=300, check=False)
    assert proc.returncode == 2, proc.stdout[-3000:]
    warnings = [line for line in proc.stdout.splitlines() if 'WARNING' in line]
    assert warnings == []
    for host in ('gpu-node01', 'gpu-node02', 'gpu-node03', 'gpu-node04'):
        # ansible-core 2.19 names a host's file s1_<host> (its serialisation profile), 2.16 <host>
        names = [n for n in os.listdir(str(tmp_path / 'facts')) if n in (host, 's1_' + host)]
        assert len(names) == 1, os.listdir(str(tmp_path / 'facts'))
        with open(str(tmp_path / 'facts' / names[0])) as handle:
            cached = json.load(handle)
        cached = json.loads(cached['__payload__']) if '__payload__' in cached else cached    # 2.19 wraps it
        assert cached['xuanwu_facts']['brief'] is True and cached['xuanwu_facts']['gpu']['count'] == 4, cached['xuanwu_facts']
        assert 'probes' not in cached['xuanwu_facts'] and 'nvlink' not in cached['xuanwu_facts']['gpu']
        assert cached['xuanwu_profile_resolved'] == {'brief': True, 'name': 'h200x4-nvlink', 'gpu': {'count': 4}}
        assert cached['xuanwu_node']['status'] == ('pass' if host == 'gpu-node01' else 'fail')


def write_inventory(tmp_path, host_vars, group_vars=None):
    inv = {'all': {'vars': dict({'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}',
                                 'xuanwu_profile': 'h200x4-nvlink'}, **(group_vars or {})),
                   'hosts': host_vars}}
    path = tmp_path / 'inventory.yml'
    path.write_text(yaml.safe_dump(inv))
    return str(path)


BUNDLE = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')


@pytest.mark.parametrize('host_vars, message', [
    ({'xuanwu_proflie': 'h200x4-nvlink'}, "unknown variable 'xuanwu_proflie' (did you mean 'xuanwu_profile'?)"),
    ({'xuanwu_profile': 'h200x4-nvlnk'}, "unknown profile 'h200x4-nvlnk' (did you mean 'h200x4-nvlink'?)"),
    ({'xuanwu_profile_overrides': {'gpu': {'cuont': 4}}}, 'gpu.cuont'),
    ({'xuanwu_profile_overrides': {'gpu': {'count': 'four'}}}, 'gpu.count'),
    ({'xuanwu_probe_timeout': 'soon'}, "variable 'xuanwu_probe_timeout' must be of type int"),
    ({'xuanwu_replay_dir': '/nonexistent/bundle'}, "is not a capture bundle"),
])
@pytest.mark.both_controllers
def test_bad_inventory_stops_before_anything_runs(tmp_path, host_vars, message):
    hosts = {'good-node': {'xuanwu_replay_dir': BUNDLE}, 'bad-node': dict({'xuanwu_replay_dir': BUNDLE}, **host_vars)}
    inv = write_inventory(tmp_path, hosts)
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports)
    assert rc != 0
    assert message in out, out[-3000:]
    assert 'bad-node' in out
    assert 'Traceback' not in out
    assert 'Probe the node' not in out, 'a node was probed although the inventory is invalid'
    assert not reports.exists()


# The command-line forms README.md and docs/*.md show, typed as they are there: `-e name=value`
# gives strings, which must work as the booleans and numbers they name.
README_COLLECTIVES = ['-e', 'xuanwu_validate_collectives=true', '-e', 'xuanwu_validate_workloads=true',
                      '-e', 'nccl_tests_build_archive=files/nccl-tests-2.19.6.tar.gz', '-e', 'nccl_tests_build_sha256=...']
INTERNAL_NAMES = ('Tagged', 'AnsibleUnicode', '<class', 'Traceback')


@pytest.mark.both_controllers
@pytest.mark.parametrize('switch', ['true', 'false'])
def test_the_documented_command_line_forms_work(tmp_path, switch):
    reports = tmp_path / 'reports'
    forms = [a.replace('=true', '=' + switch) for a in README_COLLECTIVES]
    rc, out = playbook('-i', 'inventories/demo', 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports,
                       '-e', 'xuanwu_run_id=docs-forms', '-e', 'xuanwu_probe_timeout=30', '-e', 'xuanwu_max_fail_percentage=10',
                       '-e', 'xuanwu_profile=h200x4-nvlink',
                       *forms)
    assert rc == 2, out[-4000:]
    assert 'must be of type' not in out and not any(name in out for name in INTERNAL_NAMES), out[-4000:]
    assert sorted(os.listdir(str(reports))) == ['docs-forms', 'history.sqlite']
    # The switches are honoured as the booleans they name: the collectives stage runs on the healthy node only
    # when true, and there (a replayed node whose bundle holds no nccl-tests output) it is requested and not
    # measured, which fails the node, so the workloads of the later stage do not run on it.
    assert ('TASK [xuanwu.cluster.collectives : ' in out) == (switch == 'true')
    flat = ' '.join(out.split())
    assert ('[workload.not_measured]' in flat and 'all_reduce_perf: measured' in flat) == (switch == 'true'), out[-4000:]
    assert 'TASK [xuanwu.cluster.torch_workloads : ' not in out


@pytest.mark.both_controllers
def test_command_line_mistakes_are_named_in_words(tmp_path):
    inv = write_inventory(tmp_path, {'node': {'xuanwu_replay_dir': BUNDLE}})
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports,
                       '-e', 'xuanwu_probe_timeout=abc', '-e', 'xuanwu_validate_collectives=maybe', '-e', 'xuanwu_check_variables=yes')
    assert rc != 0
    assert "variable 'xuanwu_probe_timeout' must be of type int (a whole number such as 30), got str ('abc')" in out, out[-3000:]
    assert "variable 'xuanwu_validate_collectives' must be of type bool (true/false, yes/no, on/off or 1/0), got str ('maybe')" in out
    assert not any(name in out for name in INTERNAL_NAMES), out[-3000:]
    assert 'Probe the node' not in out and not reports.exists()


def test_malformed_profile_file_is_named(tmp_path):
    profile = tmp_path / 'broken.yml'
    profile.write_text('schema_version: 1\nname: broken\ngpu: [unclosed\n')
    inv = write_inventory(tmp_path, {'node': {'xuanwu_replay_dir': BUNDLE}}, {'xuanwu_profile': str(profile)})
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'r'))
    assert rc != 0
    assert str(profile) in out and 'not valid YAML' in out, out[-3000:]


# The profile of this machine probed live. Its leftover-process check is off: the tests of other lanes run real
# distributed jobs here (torchrun soaks) at the same time, and they are no leftover of this node's last job.
PLAIN_HOST = {'schema_version': 1, 'name': 'plain-host', 'description': 'a host without accelerators',
              'host': {'disks': [{'path': '/', 'min_free_gb': 0.001}], 'leftover_process_patterns': []}}


@pytest.mark.both_controllers
def test_capture_then_replay_a_live_host(tmp_path):
    """capture.yml on this machine (probed live), then validate.yml replaying the bundle it made."""
    profile = tmp_path / 'plain-host.yml'
    profile.write_text(yaml.safe_dump(PLAIN_HOST))
    inv = write_inventory(tmp_path, {'live-node': {}}, {'xuanwu_profile': str(profile)})
    dest = tmp_path / 'bundles'
    rc, out = playbook('-i', inv, 'playbooks/capture.yml', '-e', 'xuanwu_capture_dest=%s' % dest)
    assert rc == 0, out[-3000:]
    bundle = dest / 'live-node'
    with open(str(bundle / 'manifest.json')) as handle:
        manifest = json.load(handle)
    assert manifest['format_version'] == 1
    keys = set(p['probe'] for p in manifest['probes'])
    assert {'os_release', 'uname', 'nvidia_query_gpu', 'ibstat', 'disks', 'ip_link'} <= keys
    for entry in manifest['probes']:
        assert (bundle / entry['file']).is_file()
    # replay it
    replay_inv = write_inventory(tmp_path, {'live-node': {'xuanwu_replay_dir': str(bundle)}}, {'xuanwu_profile': str(profile)})
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', replay_inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports)
    assert rc == 0, out[-3000:]
    _folder, report = the_report(reports)
    entry = report['hosts']['live-node']
    assert entry['status'] in ('pass', 'warn')
    assert entry['facts_summary']['source'] == 'replay'
    assert entry['profile'] == 'plain-host'


# A become method for the test below: runs the command as it is (through /bin/sh, named so the log shows it ran).
BECOME_PLUGIN = '''from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = """
name: %(name)s
short_description: run the command as it is (a stand-in become method of the tests)
description: [Runs the command through /bin/sh named xuanwu-test-become.]
author: xuanwu.cluster contributors
"""

import shlex

from ansible.plugins.become import BecomeBase


class BecomeModule(BecomeBase):
    name = '%(name)s'
    pipelining = %(pipelining)s

    def build_become_command(self, cmd, shell):
        super(BecomeModule, self).build_become_command(cmd, shell)
        if not cmd:
            return cmd
        return '/bin/sh -c %%s xuanwu-test-become' %% shlex.quote(self._build_success_command(cmd, shell))
'''


@pytest.mark.both_controllers
@pytest.mark.parametrize('pipelined, switch', [(True, True), (False, True), (True, False)],
                         ids=['pipelined: the direct answer', 'not pipelined: the module', 'switched off: the module'])
def test_a_live_probe_through_become_is_the_direct_answer_only_where_ansible_would_pipe(tmp_path, monkeypatch, pipelined, switch):
    """This machine probed live through a become method: with pipelining the probe goes as the direct answer (the
    node's Python, -I -c, code on standard input: plugin_utils/_direct), without it as the node_probe module, as
    Ansible sends any module, and so with xuanwu_probe_direct false (given on the command line, a string); all judge
    the node."""
    plugins = tmp_path / 'become'
    plugins.mkdir()
    name = 'xuanwu_test_become'
    (plugins / (name + '.py')).write_text(BECOME_PLUGIN % {'name': name, 'pipelining': pipelined})
    monkeypatch.setenv('ANSIBLE_BECOME_PLUGINS', str(plugins))
    profile = tmp_path / 'plain-host.yml'
    profile.write_text(yaml.safe_dump(PLAIN_HOST))
    inv = write_inventory(tmp_path, {'live-node': {}}, {'xuanwu_profile': str(profile), 'ansible_become': True,
                                                        'ansible_become_method': name, 'ansible_pipelining': pipelined})
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports, '-vvv',
                       *([] if switch else ['-e', 'xuanwu_probe_direct=false']))
    assert rc == 0, out[-3000:]
    # -vvv logs each command (the direct answer's program spans lines): the become method wrapped them
    assert 'xuanwu-test-become' in out
    direct = pipelined and switch
    # the module goes as a file (AnsiballZ) where Ansible does not pipe, on standard input where it does
    assert (' -I -c ' in out) == direct and ('AnsiballZ_node_probe' in out) == (not pipelined), out[-3000:]
    # the task's result says which way and why
    via = {(True, True): 'probe_via: direct', (False, True): "probe_via: 'module: become without pipelining",
           (True, False): "probe_via: 'module: switched off (direct: false, xuanwu_probe_direct)'"}[(pipelined, switch)]
    assert via in out, out[-3000:]
    _folder, report = the_report(reports)
    entry = report['hosts']['live-node']
    assert entry['status'] in ('pass', 'warn') and entry['facts_summary']['source'] == 'live', entry


@pytest.mark.both_controllers
def test_unreachable_host_is_reported_not_hidden(tmp_path):
    hosts = {'good-node': {'xuanwu_replay_dir': BUNDLE},
             'dead-node': {'ansible_connection': 'ssh', 'ansible_host': '127.0.0.1', 'ansible_port': 1,
                           'ansible_ssh_common_args': '-o ConnectTimeout=3'}}
    inv = write_inventory(tmp_path, hosts)
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports)
    assert rc != 0
    _folder, report = the_report(reports)
    assert report['hosts']['good-node']['status'] == 'pass'
    assert report['hosts']['dead-node']['status'] == 'error'
    assert 'unreachable' in report['hosts']['dead-node']['error']
    assert report['summary']['failed_hosts'] == ['dead-node']


def test_the_real_2x_h200_capture_replays_through_validate(tmp_path):
    """A capture bundle made by capture.yml on a real 2x H200 host (tools missing there: rc 127)."""
    bundle = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x2-nvlink-bundle')
    inv = write_inventory(tmp_path, {'h200x2': {'xuanwu_replay_dir': bundle}}, {'xuanwu_profile': 'h200x2-nvlink'})
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports)
    _folder, report = the_report(reports)
    entry = report['hosts']['h200x2']
    # That host has no chronyd: the profile requires synchronised time, so it fails there, on that alone.
    fails = sorted((f['check'], f['component']) for f in entry['findings'] if f['severity'] == 'fail')
    assert fails == [('host.chrony_missing', 'chrony')], entry['findings']
    assert rc == 2
    assert entry['facts_summary']['gpu_count'] == 2 and entry['facts_summary']['nccl_version'] == '2.28.9'
    # With time checks overridden (as for that VM), the same capture passes with one warning (no ss).
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'r2'),
                       '-e', '{"xuanwu_profile_overrides": {"host": {"time": null}}}')
    assert rc == 0, out[-3000:]
    _folder, report = the_report(tmp_path / 'r2')
    assert report['hosts']['h200x2']['status'] == 'warn'


def test_a_node_whose_driver_differs_from_its_group_is_named(tmp_path):
    """Three nodes of one profile; one carries another driver. With the profile's pin lifted, the
    group consistency check is what names it."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('make_bundles', os.path.join(ROOT, 'scripts', 'make_bundles.py'))
    make_bundles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_bundles)
    corpus = make_bundles.load_corpus()
    odd = str(tmp_path / 'odd')
    make_bundles.write_bundle(make_bundles.resolve(corpus, fault='driver-version-mismatch'), odd, {'host': 'n3'})
    hosts = {'n1': {'xuanwu_replay_dir': BUNDLE}, 'n2': {'xuanwu_replay_dir': BUNDLE}, 'n3': {'xuanwu_replay_dir': odd}}
    inv = write_inventory(tmp_path, hosts, {'xuanwu_profile_overrides': {'software': {'driver_version': None}}})
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports)
    _folder, report = the_report(reports)
    flagged = dict((h, [f for f in e['findings'] if f['check'] == 'consistency.software.driver_version'])
                   for h, e in report['hosts'].items())
    assert flagged['n1'] == [] and flagged['n2'] == []
    assert len(flagged['n3']) == 1
    assert flagged['n3'][0]['measured'] == '570.133.20' and flagged['n3'][0]['expected'] == '580.159.04'
    assert flagged['n3'][0]['severity'] == 'fail'
    assert report['hosts']['n3']['status'] == 'fail'


def test_ib_counters_read_again_after_the_load(tmp_path):
    """validate.yml replays two counter reads per host (the probe's, and the bundle's ib_counters_end for the
    read after the load): the host whose port went down under load fails on exactly that port; the other
    passes; a bundle without the second read is not a pass for the growth (warn)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('make_bundles', os.path.join(ROOT, 'scripts', 'make_bundles.py'))
    make_bundles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_bundles)
    corpus = make_bundles.load_corpus()
    command = 'grep -H . /sys/class/infiniband/*/ports/*/counters/*'
    hosts = {}
    for host, end in (('flaky', 'ib_counters_8x_after_load_mlx5_3_link_downed.txt'),
                      ('steady', 'ib_counters_8x_after_load_healthy.txt'), ('once', None)):
        probes = make_bundles.resolve(corpus, base='h200x4-healthy')
        if end:
            probes['ib_counters_end'] = {'file': 'derived/ib/' + end, 'command': command}
        make_bundles.write_bundle(probes, str(tmp_path / host), {'host': host})
        hosts[host] = {'xuanwu_replay_dir': str(tmp_path / host)}
    demo = yaml.safe_load(open(os.path.join(ROOT, 'inventories', 'demo', 'group_vars', 'all', 'profile.yml')))
    inv = write_inventory(tmp_path, hosts, {'xuanwu_profile_overrides': demo['xuanwu_profile_overrides'],
                                            'xuanwu_recheck_counters': True})
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports)
    _folder, report = the_report(reports)
    found = dict((h, sorted((f['check'], f['component'], f['severity']) for f in e['findings'] if f['check'].startswith('workload.ib')))
                 for h, e in report['hosts'].items())
    assert found == {'flaky': [('workload.ib_counter_growth', 'mlx5_3/1', 'fail')], 'steady': [],
                     'once': [('workload.ib_counters_unread', 'infiniband counters', 'warn')]}, out[-3000:]
    assert report['hosts']['flaky']['status'] == 'fail' and report['hosts']['steady']['status'] == 'pass'
    assert rc == 2
    assert '[workload.ib_counter_growth] mlx5_3/1' in out


def test_the_jobs_ports_must_be_free(tmp_path):
    """The rendezvous port and the port of NCCL_COMM_ID join the profile's ports: on the healthy demo node
    sshd holds 22 and nv-hostengine 5555, so a job configured for those ports fails there, naming the owners."""
    inv = write_inventory(tmp_path, {'node': {'xuanwu_replay_dir': BUNDLE}})
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports,
                       '-e', '{"xuanwu_torch_master_port": 22, "xuanwu_nccl_env": {"NCCL_COMM_ID": "head:5555"}}')
    _folder, report = the_report(reports)
    ports = dict((f['component'], f['message']) for f in report['hosts']['node']['findings'] if f['check'] == 'host.port_in_use')
    assert sorted(ports) == ['port 22/tcp', 'port 5555/tcp'], out[-3000:]
    assert 'sshd (pid 1204)' in ports['port 22/tcp'] and 'nv-hostengine (pid 2087)' in ports['port 5555/tcp']
    assert rc == 2


HOSTILE_HOSTS = ['../evil', 'a/../../b', '..', 'a/b', 'a:b', 'plain-node']


def _files_under(folder):
    return set(os.path.join(d, f) for d, _subdirs, files in os.walk(str(folder)) for f in files)


def test_capture_writes_nothing_outside_its_destination(tmp_path):
    """Inventory host names such as ../evil or a/../../b name a folder inside bundles/ (made a safe
    file name, a/b and a:b still apart), never a path outside it."""
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils._paths import safe_name
    work = tmp_path / 'work'
    dest = work / 'bundles'
    dest.mkdir(parents=True)
    inv = write_inventory(tmp_path, dict((h, {}) for h in HOSTILE_HOSTS), {'xuanwu_probe_gather': ['host']})
    before = _files_under(tmp_path)
    rc, out = playbook('-i', inv, 'playbooks/capture.yml', '-e', 'xuanwu_capture_dest=%s' % dest)
    assert rc == 0, out[-3000:]
    new = _files_under(tmp_path) - before
    assert new and all(path.startswith(str(dest) + os.sep) for path in new), sorted(new)
    folders = sorted(os.listdir(str(dest)))
    assert folders == sorted(safe_name(h) for h in HOSTILE_HOSTS) and len(set(folders)) == len(HOSTILE_HOSTS)
    assert 'plain-node' in folders
    for folder in folders:
        assert (dest / folder / 'manifest.json').is_file()


def test_hostile_host_names_and_run_id_stay_in_the_reports_folder(tmp_path):
    """validate.yml with host names such as <script>..|x and ../evil and a run id of ../../escape:
    the report lands inside xuanwu_reports_dir and every format still parses; the run record inside xuanwu_runs_dir."""
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils._paths import safe_name
    hosts = {'../evil': {'xuanwu_replay_dir': BUNDLE}, '<b>x</b>|y': {'xuanwu_replay_dir': BUNDLE}}
    inv = write_inventory(tmp_path, hosts)
    reports = tmp_path / 'work' / 'reports'
    before = _files_under(tmp_path)
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports, '-e', 'xuanwu_run_id=../../escape')
    assert rc == 0, out[-3000:]
    new = _files_under(tmp_path) - before
    history = str(reports / 'history.sqlite')      # the run history next to the run folders (docs/fleet-history.md)
    assert history in new
    new.discard(history)
    record = tmp_path / 'work' / 'runs' / safe_name('../../escape')
    assert new and all(path.startswith((str(reports / safe_name('../../escape')) + os.sep, str(record) + os.sep)) for path in new), sorted(new)
    # both hosts passed, and neither name is a hostfile address: no launch kit, and the record says why
    assert sorted(os.listdir(str(record))) == ['launch-kit.json']
    with open(str(record / 'launch-kit.json')) as handle:
        note = json.load(handle)
    assert note['written'] is False and sorted(note['left_out_hosts']) == sorted(hosts)
    assert all('is not a host name or address of a hostfile line' in r for r in note['left_out_hosts'].values())
    folder, report = the_report(reports)
    assert set(report['hosts']) == set(hosts)
    assert set(s.get('name') for s in ET.parse(os.path.join(folder, 'junit.xml')).getroot().iter('testsuite')) == set(hosts)
    with open(os.path.join(folder, 'report.md')) as handle:
        assert '<b>' not in handle.read()
    with open(os.path.join(folder, 'report.html')) as handle:
        assert '<b>x</b>' not in handle.read()


def test_reports_and_records_go_to_the_working_directory_whatever_pwd_says(tmp_path):
    """A service or a job may run ansible-playbook without PWD, or with its parent's: the default reports/ and runs/
    folders are under the process's working directory, never under $PWD (which was / for a service without it)."""
    inv = write_inventory(tmp_path, {'node': {'xuanwu_replay_dir': BUNDLE}})
    work, elsewhere = tmp_path / 'work', tmp_path / 'parent'
    work.mkdir()
    elsewhere.mkdir()
    for pwd in (None, str(elsewhere)):
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_CACHE_PLUGIN='memory')
        env.pop('PWD', None)
        if pwd:
            env['PWD'] = pwd
        proc = subprocess.run(['ansible-playbook', '-i', inv, os.path.join(ROOT, 'playbooks', 'validate.yml'),
                               '-e', 'xuanwu_run_id=cwd-%s' % ('unset' if pwd is None else 'inherited')],
                              cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:]
    assert sorted(os.listdir(str(work / 'reports'))) == ['cwd-inherited', 'cwd-unset', 'history.sqlite']
    assert sorted(os.listdir(str(work / 'runs'))) == ['cwd-inherited', 'cwd-unset']   # the launch kits
    assert os.listdir(str(elsewhere)) == []
    assert not os.path.exists('/reports/cwd-unset') and not os.path.exists('/runs/cwd-unset')
