"""xuanwu-health, the node's own check between runs (plugins/module_utils/_health.py, docs/node-health.md).

Replays of the fault corpus and the real captures through the watch's probes; stand-in tools that hang (a tool
that sleeps, one whose child keeps its output open as a process stuck in a hung mount does); a stand-in scontrol
that keeps a node's state in a file, for the drain and resume rules; the configuration, state and textfile.
"""
import json
import os
import stat
import subprocess
import sys
import time

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _health, _scheduler
from ansible_collections.xuanwu.cluster.tests.unit import test_fault_corpus as corpus

ROOT = corpus.ROOT
H100 = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h100x1-bundle')
H200X4 = os.path.join(ROOT, 'inventories', 'demo-bundles')
COLLECTIONS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(_health.__file__).rsplit('/plugins/', 1)[0])))

# faults of the corpus the watch does not judge, and why (validate.yml does): nothing else may be missed
NOT_WATCHED = {
    'nvlink-replay-crc-errors': 'NVLink error counters are cumulative since the driver loaded (nvidia-smi nvlink -e)',
    'ib-counter-errors': 'InfiniBand error counters are cumulative; validate.yml judges their growth under load',
    'mtu-mismatch': 'the network interfaces (ip, ethtool) are a validate.yml probe',
    'link-not-detected': 'the network interfaces (ip, ethtool) are a validate.yml probe',
    'memlock-limited': 'the memlock limit is the login shell\'s, not a state that changes between runs',
    'nccl-version-mismatch': 'software versions change with a rollout, which validates them',
}


def config(tmp_path, profile, replay=None, **extra):
    doc = {'format': 1, 'host': 'node', 'profile': profile, 'state_dir': str(tmp_path / 'state'),
           'probe': {'replay_dir': replay}}
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = dict(doc[key], **value)
        else:
            doc[key] = value
    return _health.validate_config(doc, 'health.json')


def bundle(tmp_path, fault=None, base='h200x4-healthy', name='bundle'):
    path = str(tmp_path / name)
    probes = corpus.make_bundles.resolve(corpus.CORPUS, fault=fault) if fault else \
        corpus.make_bundles.resolve(corpus.CORPUS, base=base)
    corpus.make_bundles.write_bundle(probes, path, {'host': 'node'})
    return path


def failing(doc):
    return sorted(set((f['check'], f['component'], f['severity']) for f in doc['findings'] if f['severity'] in ('fail', 'warn')))


# ------------------------------------------------------------------------------------------- the judge, replayed

@pytest.mark.parametrize('fault', corpus.CORPUS['faults'], ids=[f['id'] for f in corpus.CORPUS['faults']])
def test_every_fault_of_the_corpus_is_found_by_the_watch_or_named_not_watched(tmp_path, fault):
    cfg = config(tmp_path, corpus.profile_for(fault), bundle(tmp_path, fault['id']), hygiene='always')
    code, line, doc = _health.run(cfg, 'check', fork=False)
    expected = sorted(set((e['check'], e['component'], e['severity']) for e in fault['expect']))
    if fault['id'] in NOT_WATCHED:
        assert set(failing(doc)) < set(expected) or failing(doc) == [], doc['findings']
        return
    assert failing(doc) == expected, doc['findings']
    failed = any(e['severity'] == 'fail' for e in fault['expect'])
    assert code == (1 if failed else 0)
    assert line.startswith('UNHEALTHY node: ' if failed else 'HEALTHY node')
    if failed:
        first = doc['failing'][0]
        assert '%s %s' % (first['check'], first['component']) in line


def test_the_healthy_bases_pass_with_every_probe_read(tmp_path):
    for base, profile in (('h200x4-healthy', corpus.demo_profile()), ('mi300x8-healthy', corpus.load_profile('mi300x-8', None))):
        cfg = config(tmp_path, profile, bundle(tmp_path, base=base, name=base), hygiene='always', state_dir=str(tmp_path / base))
        code, line, doc = _health.run(cfg, 'check', fork=False)
        assert (code, failing(doc), doc['unknown']) == (0, [], []), (base, doc['findings'])
        assert line.startswith('HEALTHY node: no finding (check, ')


def test_the_real_h100_capture_passes_with_its_profile_but_chrony_which_that_host_lacks(tmp_path):
    cfg = config(tmp_path, corpus.load_profile('h100x1', None), H100)
    code, line, doc = _health.run(cfg, 'check')
    assert code == 1
    assert line == 'UNHEALTHY node: host.chrony_missing chrony: not installed (expected chrony synchronised)'
    assert [f['check'] for f in doc['failing']] == ['host.chrony_missing']
    # what the watch does not probe is said, never passed silently
    assert {'nccl', 'host'} <= set(n['component'] for n in doc['not_applicable'])
    assert all('validate.yml judges it' in n['why'] for n in doc['not_applicable'])


# ------------------------------------------------------------------------------------------- events since the last check

def test_kernel_lines_since_the_last_check():
    text = 'a\nb\nc\n'
    new, mark = _health.new_kernel_lines(text, None)
    assert new == text and mark['index'] == 3
    new, mark2 = _health.new_kernel_lines(text + 'd\n', mark)
    assert new == 'd\n' and mark2['index'] == 4
    # the log lost its head (a ring buffer that wrapped): found by its digest
    new, _m = _health.new_kernel_lines('c\nd\ne\n', mark2)
    assert new == 'e\n'
    # nothing new
    assert _health.new_kernel_lines('a\nb\nc\nd\n', mark2)[0] == ''


def test_a_fatal_xid_holds_until_reboot_and_another_xid_is_told_once(tmp_path):
    profile = corpus.demo_profile()
    path = bundle(tmp_path, 'xid-79-and-48')
    cfg = config(tmp_path, profile, path)
    first = _health.run(cfg, 'check', fork=False)[2]
    assert ('gpu.xid', 'gpu0', 'warn') in failing(first)
    second = _health.run(cfg, 'check', fork=False)[2]
    # Xid 63 (not fatal) was told once; Xid 79 and 48 (fatal) hold
    assert failing(second) == [('gpu.xid_fatal', 'gpu0', 'fail'), ('gpu.xid_fatal', 'gpu2', 'fail')]
    # another boot: the mark of the old one does not apply
    state = json.load(open(os.path.join(cfg['state_dir'], 'check.json')))
    state['boot_id'] = 'another-boot'
    _health.write_json_atomic(os.path.join(cfg['state_dir'], 'check.json'), state)
    assert ('gpu.xid', 'gpu0', 'warn') in failing(_health.run(cfg, 'check', fork=False)[2])


def test_link_flaps_are_counted_since_the_last_check(tmp_path):
    cfg = config(tmp_path, corpus.demo_profile(), bundle(tmp_path, 'link-flaps'))
    assert 'network.link_flaps' in [f['check'] for f in _health.run(cfg, 'check', fork=False)[2]['findings']]
    again = _health.run(cfg, 'check', fork=False)[2]
    assert 'network.link_flaps' not in [f['check'] for f in again['findings']], again['findings']


# ------------------------------------------------------------------------------------------- jobs: what they hold

def test_a_gpu_process_is_not_applicable_while_a_job_may_run_and_named_in_the_epilog(tmp_path):
    path = bundle(tmp_path, 'leftover-job')
    profile = corpus.demo_profile()
    doc = _health.run(config(tmp_path, profile, path), 'check', fork=False)[2]
    assert doc['status'] == 'pass', doc['findings']
    assert {'gpu.process', 'host.leftover_process'} <= set(n['check'] for n in doc['not_applicable'])
    assert any('no scheduler says whether a job runs' in n['why'] for n in doc['not_applicable'])
    code, line, doc = _health.run(config(tmp_path, profile, path, epilog_grace_seconds=0), 'epilog', fork=False)
    assert code == 1
    assert line.startswith('UNHEALTHY node: gpu.process gpu0: pid 48263 /opt/torch/.venv/bin/python -u train.py ')
    assert set(f['check'] for f in doc['findings']) == {'host.leftover_process', 'gpu.process', 'host.port_in_use'}
    assert any('pid 48211' in str(f['measured']) or f['component'] == 'pid 48211' for f in doc['failing'])


# ------------------------------------------------------------------------------------------- tools that hang

def tool(folder, name, body):
    path = os.path.join(str(folder), name)
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\n' + body + '\n')
    os.chmod(path, 0o755)
    return path


def test_run_bounded_returns_when_the_tool_hangs_even_if_a_child_keeps_its_output_open(tmp_path):
    script = tool(tmp_path, 'hung', 'setsid sleep 30 &\nsleep 30')
    start = time.monotonic()
    rc, _out, _err, timed_out = _health.run_bounded([script], 1.0)
    assert (rc, timed_out) == (124, True)
    assert time.monotonic() - start < 1.0 + _health.KILL_GRACE_SECONDS + 1.0


def test_a_hung_nvidia_smi_is_unknown_named_never_a_pass_and_the_other_probes_are_judged(tmp_path):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    tool(bin_dir, 'nvidia-smi', 'sleep 60')
    tool(bin_dir, 'chronyc', 'echo "not a chrony line"; exit 0')
    profile = corpus.demo_profile()
    cfg = config(tmp_path, profile, None, watchdog_seconds=8, probe={'timeout': 2, 'search_dirs': [str(bin_dir)]})
    start = time.monotonic()
    code, line, doc = _health.run(cfg, 'check')
    assert time.monotonic() - start < 8
    # the chrony output is judged (not understood: a failure of its own); nvidia-smi is unknown, once
    assert code == 1, line
    assert 'nvidia_query_gpu' in line.split('(unknown: ')[1]
    unknown = dict((u['probe'], u['error']) for u in doc['unknown'])
    assert unknown['nvidia_query_gpu'].startswith('did not answer in 2')
    assert 'not started: nvidia-smi did not answer earlier' in unknown['nvidia_smi_xml']
    assert not any(f['check'].startswith('gpu.') for f in doc['findings']), doc['findings']


def test_only_a_hung_tool_gives_unknown_exit_2(tmp_path):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    tool(bin_dir, 'df', 'sleep 60')
    profile = {'schema_version': 1, 'name': 'disk-only', 'host': {'disks': [{'path': '/', 'min_free_gb': 0}]}}
    cfg = config(tmp_path, profile, None, watchdog_seconds=6, probe={'timeout': 1, 'search_dirs': [str(bin_dir)]})
    code, line, doc = _health.run(cfg, 'check')
    assert code == 2, line
    assert line.startswith('UNKNOWN node: probe disks did not answer in 1')
    assert doc['status'] == 'unknown'


def test_the_watchdog_ends_the_command_in_time(tmp_path):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    tool(bin_dir, 'nvidia-smi', 'sleep 60')
    tool(bin_dir, 'df', 'sleep 60')
    tool(bin_dir, 'chronyc', 'sleep 60')
    path = write_config(tmp_path, {'format': 1, 'host': 'node', 'profile': corpus.demo_profile(),
                                   'state_dir': str(tmp_path / 'state'), 'watchdog_seconds': 5,
                                   'probe': {'timeout': 5, 'search_dirs': [str(bin_dir)]}})
    start = time.monotonic()
    proc = subprocess.run([sys.executable, '-c', LAUNCH, '--config', path], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=30, env={'PYTHONPATH': COLLECTIONS}, check=False)
    assert time.monotonic() - start < 5 + 3
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout.startswith('UNKNOWN node: probe ')
    assert len(proc.stdout.splitlines()) == 1


LAUNCH = ('import sys\nfrom ansible_collections.xuanwu.cluster.plugins.module_utils import _health\n'
          'sys.exit(_health.main(sys.argv))')


def write_config(tmp_path, doc, mode=0o600):
    path = str(tmp_path / 'health.json')
    with open(path, 'w') as handle:
        json.dump(doc, handle, default=str)
    os.chmod(path, mode)
    return path


# ------------------------------------------------------------------------------------------- Slurm: drain and resume of its own

SCONTROL = r'''
state_file="%(state)s"
echo "$@" >> "%(log)s"
if [ "$1" = "--oneliner" ]; then
  . "$state_file"
  echo "NodeName=node1 Arch=x86_64 CPUAlloc=$ALLOC CPUTot=8 State=$STATE Partitions=gpu Reason=$REASON"
  exit 0
fi
case "$3" in
  state=drain) reason="${4#reason=}"
     if [ "$STATEBASE" = "" ]; then STATEBASE=IDLE; fi
     printf 'STATE=IDLE+DRAIN\nALLOC=0\nREASON="%%s"\n' "$reason" > "$state_file";;
  state=resume) printf 'STATE=IDLE\nALLOC=0\nREASON=\n' > "$state_file";;
esac
'''


class FakeSlurm(object):
    def __init__(self, tmp_path):
        self.dir = tmp_path / 'slurm'
        self.dir.mkdir()
        self.state = str(self.dir / 'node.env')
        self.log = str(self.dir / 'calls.log')
        tool(self.dir, 'scontrol', SCONTROL % {'state': self.state, 'log': self.log})
        self.set('IDLE')

    def set(self, state, reason='', alloc=0):
        with open(self.state, 'w') as handle:
            handle.write('STATE=%s\nALLOC=%d\nREASON="%s"\n' % (state, alloc, reason.replace('"', '')))

    def node(self):
        env = dict(line.split('=', 1) for line in open(self.state).read().splitlines())
        return env['STATE'], env['REASON'].strip('"')

    def calls(self):
        return open(self.log).read().splitlines() if os.path.exists(self.log) else []


def slurm_config(tmp_path, fake, replay, **extra):
    return config(tmp_path, corpus.demo_profile(), replay, hygiene='scheduler',
                  scheduler={'backend': 'slurm', 'node': 'node1', 'resume_after': 2},
                  probe={'replay_dir': replay, 'search_dirs': [str(fake.dir)]}, **extra)


def test_slurm_drains_with_its_reason_resumes_after_two_passes_and_logs_both(tmp_path):
    fake = FakeSlurm(tmp_path)
    broken, healthy = bundle(tmp_path, 'ib-port-down', name='broken'), bundle(tmp_path, base='h200x4-healthy', name='ok')
    code, line, doc = _health.run(slurm_config(tmp_path, fake, broken), 'check')
    assert code == 1
    state, reason = fake.node()
    assert state == 'IDLE+DRAIN'
    assert reason.startswith('xuanwu-health: ib.port_count infiniband: 7 (expected 8) [+1 more]')
    assert len(reason.encode()) <= 255
    assert doc['slurm']['action'] == 'drain'
    # failing again with the same reason changes nothing
    _health.run(slurm_config(tmp_path, fake, broken), 'check')
    assert sum('state=drain' in c for c in fake.calls()) == 1
    # cleared: one pass is not enough (flapping), the second resumes
    doc = _health.run(slurm_config(tmp_path, fake, healthy), 'check')[2]
    assert fake.node()[0] == 'IDLE+DRAIN' and doc['passes_in_row'] == 1
    assert 'passed 1 of 2 checks in a row' in doc['slurm']['why']
    doc = _health.run(slurm_config(tmp_path, fake, healthy), 'check')[2]
    assert fake.node() == ('IDLE', '') and doc['slurm']['action'] == 'resume'
    log = [json.loads(l) for l in open(os.path.join(str(tmp_path / 'state'), 'actions.log'))]
    assert [e['action'] for e in log] == ['drain', 'resume']
    assert [f['check'] for f in log[0]['findings']] == ['ib.port_count', 'ib.port_state']
    assert stat.S_IMODE(os.stat(os.path.join(str(tmp_path / 'state'), 'actions.log')).st_mode) == 0o600


@pytest.mark.parametrize('reason', ['admin: disk swap', 'xuanwu CHG-4711: rollout', 'Prolog error', ''])
def test_a_drain_of_someone_else_is_never_resumed_nor_relabelled(tmp_path, reason):
    fake = FakeSlurm(tmp_path)
    fake.set('IDLE+DRAIN', reason)
    healthy, broken = bundle(tmp_path, name='ok'), bundle(tmp_path, 'ib-port-down', name='broken')
    for path in (healthy, healthy, healthy, broken):
        doc = _health.run(slurm_config(tmp_path, fake, path), 'check')[2]
        assert doc['slurm']['action'] == 'none'
    assert fake.node() == ('IDLE+DRAIN', reason)
    assert not [c for c in fake.calls() if c.startswith('update')]


def test_a_rollout_reads_the_health_checks_drain_as_the_health_checks():
    reason = _health.drain_reason({'status': 'fail', 'failing': [{'check': 'gpu.count', 'component': 'gpu', 'measured': 7,
                                                                  'expected': 8}], 'unknown': []}, 'check')
    assert reason == 'xuanwu-health: gpu.count gpu: 7 (expected 8)'
    assert _scheduler.reason_owner(reason, 'CHG-1') == 'health'
    assert _scheduler.decide('drain', 'drained', reason, 'CHG-1')[:2] == ('relabel', True)   # it revalidates the node
    assert not _health.is_ours('xuanwu CHG-1: xuanwu-health')
    assert _health.is_ours('xuanwu-health epilog: gpu.process gpu0: pid 1 x')


def test_the_reason_is_cut_to_slurms_255_bytes():
    long = {'check': 'gpu.process', 'component': 'gpu0', 'measured': 'pid 1 ' + '\u00e9' * 400, 'expected': 'none'}
    reason = _health.drain_reason({'status': 'fail', 'failing': [long, long], 'unknown': []}, 'epilog')
    assert reason.startswith('xuanwu-health epilog: gpu.process gpu0: pid 1 ')
    assert len(reason.encode('utf-8')) <= 255 and reason.endswith('...')


def test_a_busy_node_is_not_judged_on_what_its_job_holds_an_idle_one_is(tmp_path):
    fake = FakeSlurm(tmp_path)
    path = bundle(tmp_path, 'leftover-job')
    fake.set('MIXED', alloc=4)
    doc = _health.run(slurm_config(tmp_path, fake, path), 'check')[2]
    assert doc['status'] == 'pass' and any('a job runs on the node' in n['why'] for n in doc['not_applicable'])
    fake.set('IDLE')
    code, line, doc = _health.run(slurm_config(tmp_path, fake, path), 'check')
    assert code == 1 and fake.node()[1].startswith('xuanwu-health: gpu.process gpu0: pid 48263 ')


@pytest.mark.parametrize('jobs, drained', [('4242', True), ('4242 4243', False)])
def test_the_epilog_of_a_shared_node_leaves_the_other_jobs_processes_alone(tmp_path, monkeypatch, jobs, drained):
    fake = FakeSlurm(tmp_path)
    tool(fake.dir, 'squeue', 'echo "%s" | tr " " "\\n"' % jobs)
    monkeypatch.setenv('SLURM_JOB_ID', '4242')
    cfg = slurm_config(tmp_path, fake, bundle(tmp_path, 'leftover-job'), epilog_grace_seconds=0)
    code, line, doc = _health.run(cfg, 'epilog', env={'SLURM_JOB_ID': '4242'})
    assert (code == 1) is drained, line
    assert fake.node()[1].startswith('xuanwu-health epilog: gpu.process gpu0: pid 48263') is drained
    if not drained:
        assert all(n['why'].startswith('another job runs on the node') for n in doc['not_applicable'] if n['check'] != 'facts.not_collected')


def test_unknown_is_not_a_pass_and_drains_only_after_its_streak(tmp_path):
    fake = FakeSlurm(tmp_path)
    tool(fake.dir, 'df', 'sleep 60')
    profile = {'schema_version': 1, 'name': 'disk-only', 'host': {'disks': [{'path': '/', 'min_free_gb': 0}]}}
    cfg = config(tmp_path, profile, None, watchdog_seconds=8,
                 scheduler={'backend': 'slurm', 'node': 'node1', 'unknown_drain_after': 3, 'timeout': 2},
                 probe={'timeout': 1, 'search_dirs': [str(fake.dir)]})
    fake.set('IDLE+DRAIN', 'xuanwu-health: old')
    doc = _health.run(cfg, 'check')[2]
    assert doc['status'] == 'unknown' and doc['passes_in_row'] == 0 and fake.node()[0] == 'IDLE+DRAIN'
    fake.set('IDLE')
    assert _health.run(cfg, 'check')[2]['slurm']['action'] == 'none'   # two unknowns in a row: not yet
    doc = _health.run(cfg, 'check')[2]
    assert doc['slurm']['action'] == 'drain', doc['slurm']
    assert fake.node()[1].startswith('xuanwu-health: unknown: probe disks did not answer in 1 s (3 checks in a row)')


def test_a_scontrol_that_hangs_does_not_hang_the_check(tmp_path):
    fake = FakeSlurm(tmp_path)
    tool(fake.dir, 'scontrol', 'sleep 60')
    cfg = slurm_config(tmp_path, fake, bundle(tmp_path), watchdog_seconds=10)
    cfg['scheduler']['timeout'] = 2
    start = time.monotonic()
    code, line, doc = _health.run(cfg, 'check')
    assert time.monotonic() - start < 10
    assert code == 0 and '(slurm: scontrol --oneliner did not answer in 2' in line


def test_no_act_changes_nothing(tmp_path):
    fake = FakeSlurm(tmp_path)
    doc = _health.run(slurm_config(tmp_path, fake, bundle(tmp_path, 'ib-port-down')), 'check', act=False)[2]
    assert fake.node() == ('IDLE', '') and 'not done: --no-act' in doc['slurm']['why']


# ------------------------------------------------------------------------------------------- configuration, files, command

@pytest.mark.parametrize('change, message', [
    ({'format': 2}, 'format 2 is not 1'),
    ({'host': ''}, 'health.json.host: must be a host name'),
    ({'profile': []}, 'health.json.profile: expected dict'),
    ({'watchdog_seconds': 1}, 'health.json.watchdog_seconds: must be in [5, 600]'),
    ({'watchdog_seconds': True}, 'health.json.watchdog_seconds: expected int/float'),
    ({'probe': {'timeout': 60}}, 'health.json: probe.timeout: must be in [1, 30]'),
    ({'probe': {'disk_paths': ['relative']}}, "probe.disk_paths: 'relative' must be an absolute path"),
    ({'probe': {'process_patterns': ['(']}}, "probe.process_patterns: '(' is not a regular expression"),
    ({'probe': {'job_ports': [70000]}}, 'probe.job_ports: 70000 is not a port'),
    ({'scheduler': {'backend': 'slurm'}}, 'scheduler: node is required'),
    ({'scheduler': {'backend': 'slurm', 'node': 'a b'}}, "scheduler.node: is not a node name"),
    ({'scheduler': {'backend': 'pbs'}}, 'scheduler.backend: must be slurm or none'),
    ({'scheduler': {'scontrol': 'scontrol; reboot'}}, 'scheduler.scontrol: must be a command name'),
    ({'fail_on': 'info'}, 'health.json.fail_on: must be one of fail, warn'),
])
def test_a_bad_configuration_names_its_field(change, message):
    doc = {'format': 1, 'host': 'node', 'profile': {}}
    doc.update(change)
    with pytest.raises(_health.ConfigError) as err:
        _health.validate_config(doc, 'health.json')
    assert message in str(err.value)


def test_the_command_refuses_a_configuration_others_can_write_and_checks_one(tmp_path, capsys):
    doc = {'format': 1, 'host': 'node', 'profile': corpus.demo_profile(), 'state_dir': str(tmp_path / 's')}
    path = write_config(tmp_path, doc, mode=0o666)
    assert _health.main(['xuanwu-health', '--config', path]) == 3
    assert 'not trusted' in capsys.readouterr().out
    assert _health.main(['xuanwu-health', '--check-config', path]) == 0
    assert capsys.readouterr().out.startswith('VALID ')
    bad = write_config(tmp_path, dict(doc, profile=dict(doc['profile'], gpu={'count': 'eight'})))
    assert _health.main(['xuanwu-health', '--check-config', bad]) == 3
    assert 'gpu.count' in capsys.readouterr().out
    with open(bad, 'w') as handle:
        handle.write('{not json')
    assert _health.main(['xuanwu-health', '--check-config', bad]) == 3
    assert 'not JSON' in capsys.readouterr().out
    assert _health.main(['xuanwu-health', '--bogus']) == 3


def test_the_mode_comes_from_the_argument_the_name_or_slurms_context(monkeypatch):
    monkeypatch.delenv('SLURM_SCRIPT_CONTEXT', raising=False)
    assert _health.parse_args(['/usr/local/sbin/xuanwu-health'])[0]['mode'] == 'check'
    assert _health.parse_args(['/usr/local/sbin/xuanwu-health-epilog'])[0]['mode'] == 'epilog'
    assert _health.parse_args(['xuanwu-health', 'npd'])[0]['mode'] == 'npd'
    monkeypatch.setenv('SLURM_SCRIPT_CONTEXT', 'prolog_slurmd')
    assert _health.parse_args(['xuanwu-health'])[0]['mode'] == 'prolog'


def test_state_and_textfile(tmp_path):
    cfg = config(tmp_path, corpus.demo_profile(), bundle(tmp_path, 'ecc-uncorrectable'), textfile_dir=str(tmp_path))
    _health.run(cfg, 'npd', fork=False)
    state_dir = cfg['state_dir']
    assert stat.S_IMODE(os.stat(state_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(state_dir, 'npd.json')).st_mode) == 0o600
    text = open(str(tmp_path / 'xuanwu-health-npd.prom')).read()
    assert 'xuanwu_health_status{mode="npd"} 2' in text
    assert 'xuanwu_health_findings{check="gpu.ecc_uncorrectable",mode="npd",severity="fail"} 1' in text
    assert 'xuanwu_health_last_check_timestamp_seconds{mode="npd"} ' in text
    # a state file that is not ours (a link planted in the folder) is not read
    os.unlink(os.path.join(state_dir, 'npd.json'))
    os.symlink('/etc/passwd', os.path.join(state_dir, 'npd.json'))
    doc = _health.run(cfg, 'npd', fork=False)[2]
    assert 'started afresh' in doc['state_error']
    assert not os.path.islink(os.path.join(state_dir, 'npd.json'))
    with open(os.path.join(state_dir, 'npd.json'), 'w') as handle:
        handle.write('{broken')
    assert 'started afresh' in _health.run(cfg, 'npd', fork=False)[2]['state_error']


def test_a_second_run_of_a_mode_while_one_holds_it_is_unknown(tmp_path):
    import fcntl
    cfg = config(tmp_path, corpus.demo_profile(), bundle(tmp_path))
    _health.ensure_dir(cfg['state_dir'])
    fd = os.open(os.path.join(cfg['state_dir'], 'check.lock'), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        code, line, _doc = _health.run(cfg, 'check', fork=False)
    finally:
        os.close(fd)
    assert code == 2 and 'another xuanwu-health check is still running' in line


def test_npd_protocol_exit_codes_and_message(tmp_path, capsys):
    for fault, code in ((None, 0), ('gpu-missing', 1)):
        path = write_config(tmp_path, {'format': 1, 'host': 'node', 'profile': corpus.demo_profile(),
                                       'state_dir': str(tmp_path / 'state'),
                                       'probe': {'replay_dir': bundle(tmp_path, fault, name=str(fault))}})
        assert _health.main(['xuanwu-health', 'npd', '--config', path]) == code
        out = capsys.readouterr().out
        assert len(out.splitlines()) == 1 and len(out.encode()) <= 257


def test_the_textfile_is_what_prometheus_reads(tmp_path):
    import shutil
    promtool = shutil.which('promtool')
    if promtool is None:
        pytest.skip('promtool is not on PATH (Debian: apt-get install prometheus; .ci/run installs it)')
    cfg = config(tmp_path, corpus.demo_profile(), bundle(tmp_path, 'ib-port-down'), textfile_dir=str(tmp_path))
    _health.run(cfg, 'check', fork=False)
    with open(str(tmp_path / 'xuanwu-health-check.prom')) as handle:
        proc = subprocess.run([promtool, 'check', 'metrics'], stdin=handle, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout


def test_a_full_disk_keeps_the_verdict_and_never_resumes_on_an_old_streak(tmp_path, monkeypatch):
    import errno
    fake = FakeSlurm(tmp_path)
    healthy, broken = bundle(tmp_path, name='ok'), bundle(tmp_path, 'ib-port-down', name='broken')
    _health.run(slurm_config(tmp_path, fake, healthy), 'check')
    _health.run(slurm_config(tmp_path, fake, healthy), 'check')
    real = _health.write_json_atomic

    def full(path, doc, mode=0o600):
        raise OSError(errno.ENOSPC, 'No space left on device')
    monkeypatch.setattr(_health, 'write_json_atomic', full)
    code, line, doc = _health.run(slurm_config(tmp_path, fake, broken), 'check')
    assert code == 1 and line.endswith('(state not written: [Errno 28] No space left on device)')
    assert fake.node()[0] == 'IDLE+DRAIN'                    # drained all the same
    assert not os.path.exists(os.path.join(str(tmp_path / 'state'), 'check.json'))
    monkeypatch.setattr(_health, 'write_json_atomic', real)
    # space is back: the old two passes do not count, one pass does not resume
    doc = _health.run(slurm_config(tmp_path, fake, healthy), 'check')[2]
    assert doc['passes_in_row'] == 1 and fake.node()[0] == 'IDLE+DRAIN'
    assert _health.run(slurm_config(tmp_path, fake, healthy), 'check')[2]['slurm']['action'] == 'resume'


def test_a_killed_check_leaves_the_state_whole_and_the_next_one_runs(tmp_path):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    tool(bin_dir, 'nvidia-smi', 'sleep 60')
    path = write_config(tmp_path, {'format': 1, 'host': 'node', 'profile': corpus.demo_profile(),
                                   'state_dir': str(tmp_path / 'state'), 'watchdog_seconds': 20,
                                   'probe': {'timeout': 15, 'search_dirs': [str(bin_dir)]}})
    env = {'PYTHONPATH': COLLECTIONS}
    proc = subprocess.Popen([sys.executable, '-c', LAUNCH, '--config', path], stdout=subprocess.PIPE, env=env)
    time.sleep(2)
    proc.kill()                                              # kill -9 in the middle of a probe
    proc.wait()
    time.sleep(0.5)
    # the collector and the tool it ran died with it (PR_SET_PDEATHSIG)
    assert not [pid for pid in os.listdir('/proc') if pid.isdigit() and str(bin_dir) in _cmdline(pid)]
    tool(bin_dir, 'nvidia-smi', 'exit 127')
    done = subprocess.run([sys.executable, '-c', LAUNCH, '--config', path], stdout=subprocess.PIPE, env=env,
                          universal_newlines=True, timeout=60, check=False)
    assert done.returncode in (0, 1), done.stdout           # the lock went with the killed process
    assert json.load(open(os.path.join(str(tmp_path / 'state'), 'check.json')))['mode'] == 'check'


def _cmdline(pid):
    try:
        with open('/proc/%s/cmdline' % pid, 'rb') as handle:
            return handle.read().replace(b'\0', b' ').decode('utf-8', 'replace')
    except (IOError, OSError):
        return ''


def test_a_drain_of_the_epilog_is_resumed_only_after_passes_counted_from_it(tmp_path, monkeypatch):
    fake = FakeSlurm(tmp_path)
    healthy, leftover = bundle(tmp_path, name='ok'), bundle(tmp_path, 'leftover-job', name='leftover')
    for _run in range(3):
        assert _health.run(slurm_config(tmp_path, fake, healthy), 'check')[2]['passes_in_row'] >= 1
    monkeypatch.setattr(_health.Slurm, 'other_jobs', lambda self, job_id: (False, None))
    code, line, _doc = _health.run(slurm_config(tmp_path, fake, leftover, epilog_grace_seconds=0), 'epilog',
                                   env={'SLURM_JOB_ID': '7'})
    assert code == 1 and fake.node()[1].startswith('xuanwu-health epilog: ')
    # the periodic check's three passes before the drain do not count: one pass since is not enough
    doc = _health.run(slurm_config(tmp_path, fake, healthy), 'check')[2]
    assert (doc['passes_in_row'], doc['slurm']['action'], fake.node()[0]) == (1, 'none', 'IDLE+DRAIN')
    doc = _health.run(slurm_config(tmp_path, fake, healthy), 'check')[2]
    assert doc['slurm']['action'] == 'resume' and fake.node() == ('IDLE', '')
