"""scripts/xuanwu-run-diff and its module xuanwu.rundiff: two run folders built from real report data (two real
nccl-tests runs of one 4x H200 host, real node facts) are compared, and two launch kits; bad input exits 2 with a
message."""
import io
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collectives, _parse_nccl, _probe
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _launch_kit as lk
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _runrecord as rr
from xuanwu import rundiff

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x4-nvlink')
BUNDLE = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')
SCRIPT = os.path.join(ROOT, 'scripts', 'xuanwu-run-diff')
# two real runs of all_reduce_perf on the same host
RUN2 = 'nccl-tests_all_reduce_perf_-b1M_-e8G_-f2_-g4_run2.txt'
RUN3 = 'nccl-tests_all_reduce_perf_-b1M_-e8G_-f2_-g4_run3.txt'
FAIL = {'check': 'gpu.count', 'component': 'gpu', 'severity': 'fail', 'measured': 3, 'expected': 4, 'message': 'm', 'remediation': 'r',
        'host': 'n2'}


def workload(capture):
    with open(os.path.join(HW, capture)) as handle:
        parsed = _parse_nccl.parse_nccl_tests(handle.read())
    return {'kind': 'nccl_tests', 'component': 'all_reduce_perf', 'busbw_gbps': dict(
        (str(size), bw) for size, bw in _collectives.busbw_by_size(parsed).items())}


def make_run(folder, run_id, hosts, capture, versions, findings=None):
    """A run folder as run_record leaves it: state.json, versions.json and reports/report.json."""
    os.makedirs(os.path.join(folder, 'reports'))
    state = rr.new_state(run_id, 't0', hosts)
    state = rr.add_batch(state, 0, hosts, dict((h, 'failed' if (findings or {}).get(h) else 'passed') for h in hosts), 't0', 't1')
    rr.write_atomic(os.path.join(folder, 'state.json'), rr.dump_json(rr.finish(state, 't2')))
    rr.write_atomic(os.path.join(folder, 'versions.json'), rr.dump_json(versions))
    entries = dict((h, _report.host_entry(h, 'fail' if (findings or {}).get(h) else 'pass', (findings or {}).get(h) or [], {},
                                          'p', '/p.yml', workloads=[workload(capture)])) for h in hosts)
    report = _report.build_report(run_id, 't0', 't2', '1', '2.19', 'site', entries, {'p': '/p.yml'})
    rr.write_atomic(os.path.join(folder, 'reports', 'report.json'), _report.render_json(report))
    return folder


@pytest.fixture(name='facts_versions', scope='module')
def fixture_facts_versions():
    return rr.versions(_probe.probe(_probe.ReplayRunner(BUNDLE)))


@pytest.fixture(name='runs')
def fixture_runs(tmp_path, facts_versions):
    newer = dict(facts_versions, gpu_driver='580.178', hca_firmware=dict(facts_versions['hca_firmware'], mlx5_0='28.40.1000'))
    a = make_run(str(tmp_path / 'a'), 'ra', ['n1', 'n2', 'n3'], RUN2, {'n1': facts_versions, 'n2': facts_versions, 'n3': facts_versions},
                 findings={'n2': [FAIL]})
    b = make_run(str(tmp_path / 'b'), 'rb', ['n1', 'n2', 'n4'], RUN3, {'n1': newer, 'n2': facts_versions, 'n4': facts_versions},
                 findings={'n1': [dict(FAIL, host='n1', check='nvlink.inactive', component='GPU 2')]})
    return a, b


def test_differences_of_two_runs(runs):
    a, b = runs
    got = rundiff.diff(rundiff.load_run(a), rundiff.load_run(b))
    assert got['only_in_a'] == ['n3'] and got['only_in_b'] == ['n4']
    assert got['versions'] == {'n1': {'gpu_driver': {'a': '580.159.04', 'b': '580.178'},
                                      'hca_firmware.mlx5_0': {'a': '28.39.2048', 'b': '28.40.1000'}}}
    assert got['checks'] == {'n1': {'new': ['nvlink.inactive (GPU 2)'], 'fixed': []}, 'n2': {'new': [], 'fixed': ['gpu.count (gpu)']}}
    # busbw of both hosts in both runs, per size, with the relative change of the two real runs
    a_bw, b_bw = workload(RUN2)['busbw_gbps'], workload(RUN3)['busbw_gbps']
    rows = dict(((r['host'], r['size_bytes']), r) for r in got['busbw'])
    assert set(rows) == set((h, int(s)) for h in ('n1', 'n2') for s in a_bw)
    size = str(1 << 30)
    row = rows[('n1', 1 << 30)]
    assert (row['a'], row['b']) == (a_bw[size], b_bw[size])
    assert row['change'] == round((b_bw[size] - a_bw[size]) / a_bw[size], 6)
    assert got['differences'] == 2 + 2 + 2 + sum(1 for r in got['busbw'] if r['counted'])


def test_a_tolerance_lists_small_busbw_changes_without_counting_them(runs):
    a, b = runs
    got = rundiff.diff(rundiff.load_run(a), rundiff.load_run(b), tolerance=0.5)
    assert got['busbw'] and not any(r['counted'] for r in got['busbw'])
    text = rundiff.render_text(got)
    assert 'bus bandwidth (GB/s' not in text and 'other size(s) changed within the tolerance' in text


def test_the_same_run_has_no_difference(runs):
    a, _b = runs
    out, err = io.StringIO(), io.StringIO()
    assert rundiff.main([a, a], out, err) == 0
    assert out.getvalue().endswith('no difference\n') and not err.getvalue()


def command(*args):
    proc = subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def test_the_command_prints_text_a_person_reads_and_exits_1(runs):
    a, b = runs
    rc, out, err = command(a, b)
    assert rc == 1, err
    lines = out.splitlines()
    assert 'hosts only in run A: n3' in lines and 'hosts only in run B: n4' in lines
    assert '  n1  gpu_driver: 580.159.04 -> 580.178' in lines
    assert '  n1  new:   nvlink.inactive (GPU 2)' in lines and '  n2  fixed: gpu.count (gpu)' in lines
    assert any(line.startswith('  n1  all_reduce_perf  1 GiB: ') and line.endswith('%)') for line in lines), out
    assert lines[-1].endswith('difference(s)')


def test_the_command_needs_nothing_installed(runs):
    """The script imports xuanwu.rundiff from the checkout's src/: it runs without site-packages (-S, where the
    package may be installed) and without PYTHONPATH (-E)."""
    a, _b = runs
    proc = subprocess.run([sys.executable, '-S', '-E', SCRIPT, a, a], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=60, cwd='/')
    assert (proc.returncode, proc.stderr) == (0, '') and proc.stdout.endswith('no difference\n')


def test_the_command_json(runs):
    a, b = runs
    rc, out, _err = command(a, b, '--json')
    assert rc == 1 and json.loads(out)['versions']['n1']['gpu_driver']['b'] == '580.178'


@pytest.mark.parametrize('make, message', [
    (lambda t: [str(t / 'none'), str(t / 'none')], 'not a folder'),
    (lambda t: [str(t), str(t)], 'no state.json here'),
    (lambda t: [str(t / 'bad'), str(t / 'bad')], 'state.json is not valid JSON'),
    (lambda t: [str(t)], 'two run folders are needed, 1 given'),
    (lambda t: [str(t), str(t), '--tolerance', 'x'], '--tolerance x: not a percentage'),
    (lambda t: [str(t), str(t), '--frob'], 'unknown option --frob'),
])
def test_bad_input_exits_2_with_a_message(tmp_path, make, message):
    (tmp_path / 'bad').mkdir()
    (tmp_path / 'bad' / 'state.json').write_text('{"run_id": ')
    rc, out, err = command(*make(tmp_path))
    assert (rc, out) == (2, '')
    assert message in err and 'Traceback' not in err, err


# ---- launch kits (runs/<run id>/launch-kit/, plugins/plugin_utils/_launch_kit.py) ----

ENV = {'NCCL_SOCKET_IFNAME': 'eth0', 'NCCL_IB_HCA': 'mlx5_0', 'NCCL_DEBUG': 'WARN', 'HF_TOKEN': 'hf_secret'}


def make_validation(folder, run_id, nodes, failed=None, settings=None, hosts=None):
    """A validation's run folder as run_record's kit step leaves it: launch-kit/ (when a host passed) and launch-kit.json."""
    kit = lk.build(run_id, hosts or sorted(set(nodes) | set(failed or {})), failed or {}, nodes, settings or {}, 't-' + run_id)
    os.makedirs(folder)
    if kit['written']:
        os.makedirs(os.path.join(folder, lk.KIT_DIR))
        for name, (text, mode) in kit['files'].items():
            rr.write_atomic(os.path.join(folder, lk.KIT_DIR, name), text, mode)
    rr.write_atomic(os.path.join(folder, lk.NOTE), rr.dump_json(kit['note']))
    return folder


def kit_node(address, versions, env, slots=4):
    return {'address': address, 'slots': slots, 'versions': versions, 'env': env, 'stages': []}


@pytest.fixture(name='kits')
def fixture_kits(tmp_path, facts_versions):
    newer = dict(facts_versions, nccl='2.29.1')
    a = make_validation(str(tmp_path / 'a'), 'ka', {'n1': kit_node('10.0.0.1', facts_versions, ENV),
                                                    'n2': kit_node('10.0.0.2', facts_versions, ENV),
                                                    'n3': kit_node('10.0.0.3', facts_versions, ENV)},
                        settings={'mpirun_args': ['--mca', 'pml', 'ucx']})
    env_b = dict(ENV, NCCL_IB_HCA='mlx5_1', NCCL_DEBUG='INFO', NCCL_ALGO='Ring', SITE_KEY='k')
    del env_b['NCCL_SOCKET_IFNAME']
    b = make_validation(str(tmp_path / 'b'), 'kb', {'n1': kit_node('10.0.0.1', newer, env_b, slots=8),
                                                    'n2': kit_node('10.0.0.2', facts_versions, env_b),
                                                    'n4': kit_node('10.0.0.4', facts_versions, env_b)},
                        failed={'n3': 'n3 FAILED 1 check(s): [host.time_sync]'}, settings={'master_port': 29600})
    return a, b


def test_differences_of_two_launch_kits(kits):
    a, b = kits
    got = rundiff.diff(rundiff.load_run(a), rundiff.load_run(b))
    kit = got['kit']
    assert kit['hosts_added'] == ['n4'] and kit['hosts_removed'] == ['n3']
    assert kit['slots'] == {'n1': {'a': 4, 'b': 8}}
    assert kit['env'] == {'added': {'NCCL_ALGO': {'b': 'Ring', 'counted': True}},
                          'removed': {'NCCL_SOCKET_IFNAME': {'a': 'eth0', 'counted': True}},
                          'changed': {'NCCL_DEBUG': {'a': 'WARN', 'b': 'INFO', 'counted': False},
                                      'NCCL_IB_HCA': {'a': 'mlx5_0', 'b': 'mlx5_1', 'counted': True}}}
    # secrets: left out of both kits, named; one left out in B only is a difference
    assert kit['env_left_out'] == {'only_in_a': {}, 'only_in_b': {'SITE_KEY': 'secret name'}}
    assert kit['launch'] == {'mpirun_args': {'a': ['--mca', 'pml', 'ucx'], 'b': [], 'counted': True},
                             'nproc_per_node': {'a': 4, 'b': None, 'counted': False},
                             'master_port': {'a': 29500, 'b': 29600, 'counted': False},
                             'rdzv_endpoint': {'a': '10.0.0.1:29500', 'b': '10.0.0.1:29600', 'counted': False}}
    assert kit['differences'] == 2 + 1 + 3 + 1 + 1
    # the kit's versions are the run's: n1's NCCL; n3 (left out in B) and n4 are hosts of one run only
    assert got['versions'] == {'n1': {'nccl': {'a': facts_versions_nccl(a), 'b': '2.29.1'}}}
    assert got['only_in_a'] == [] and got['only_in_b'] == ['n4']
    assert got['differences'] == kit['differences'] + 1   # n4: a host of run B only and added to the kit, once
    assert got['a']['outcome'] == 'passed' and got['b']['outcome'] == 'passed, partly' and got['b']['run_id'] == 'kb'


def facts_versions_nccl(folder):
    with open(os.path.join(folder, lk.KIT_DIR, 'versions.json')) as handle:
        return json.load(handle)['hosts']['n1']['nccl']


def test_the_command_on_two_kits_prints_what_changed_and_exits_1(kits):
    a, b = kits
    rc, out, err = command(a, os.path.join(b, lk.KIT_DIR))   # a run folder or the kit folder itself
    assert rc == 1, err
    lines = out.splitlines()
    for line in ('launch kit hosts added: n4', 'launch kit hosts removed: n3', 'launch kit slots (GPUs): n1: 4 -> 8',
                 'launch kit environment:', '  added:   NCCL_ALGO=Ring', '  removed: NCCL_SOCKET_IFNAME=eth0',
                 '  changed: NCCL_IB_HCA: mlx5_0 -> mlx5_1', '  changed: NCCL_DEBUG: WARN -> INFO (diagnostic: not counted)',
                 '  left out in run B only: SITE_KEY (secret name)',
                 'launch kit mpirun_args: ["--mca", "pml", "ucx"] -> []', 'launch kit master_port (not counted): 29500 -> 29600'):
        assert line in lines, (line, out)
    assert 'hf_secret' not in out


def test_the_same_kit_has_no_difference_and_diagnostics_alone_do_not_count(tmp_path, facts_versions):
    nodes = {'n1': kit_node('n1', facts_versions, ENV)}
    a = make_validation(str(tmp_path / 'a'), 'r', nodes)
    b = make_validation(str(tmp_path / 'b'), 'r2', {'n1': kit_node('n1', facts_versions, dict(ENV, NCCL_DEBUG='INFO', TORCH_DISTRIBUTED_DEBUG='DETAIL'))})
    for x, y in ((a, a), (a, os.path.join(a, lk.KIT_DIR)), (a, b)):
        rc, out, err = command(x, y)
        assert (rc, err) == (0, ''), out
        assert out.endswith('no difference\n')
    assert '  added:   TORCH_DISTRIBUTED_DEBUG=DETAIL (diagnostic: not counted)' in command(a, b)[1]


def test_a_run_without_a_kit_says_why(tmp_path, facts_versions):
    passed = make_validation(str(tmp_path / 'a'), 'ra', {'n1': kit_node('n1', facts_versions, ENV)})
    failed = make_validation(str(tmp_path / 'b'), 'rb', {}, failed={'n1': 'n1 FAILED 1 check(s): [gpu.count]'})
    assert not os.path.exists(os.path.join(failed, lk.KIT_DIR))
    got = rundiff.diff(rundiff.load_run(passed), rundiff.load_run(failed))
    assert got['kit']['missing'] == {'b': 'no host passed the validation (1 host(s) left out: see left_out_hosts)'}
    assert got['b']['outcome'] == 'no host passed' and got['differences'] == 1
    rc, out, _err = command(passed, failed)
    assert rc == 1 and 'launch kit: none in run B (no host passed the validation' in out


def test_a_rollout_record_with_a_kit_is_compared_kit_and_all(runs, tmp_path, facts_versions):
    """A rollout's record (state.json) with launch-kit/ beside it: the versions stay the record's, the kit adds its own."""
    a, b = runs
    for folder, env in ((a, ENV), (b, dict(ENV, NCCL_IB_HCA='mlx5_1'))):
        kit = lk.build('r', ['n1'], {}, {'n1': kit_node('n1', facts_versions, env)}, {}, 't')
        os.makedirs(os.path.join(folder, lk.KIT_DIR))
        for name, (text, mode) in kit['files'].items():
            rr.write_atomic(os.path.join(folder, lk.KIT_DIR, name), text, mode)
    got = rundiff.diff(rundiff.load_run(a), rundiff.load_run(b))
    assert got['kit']['env']['changed'] == {'NCCL_IB_HCA': {'a': 'mlx5_0', 'b': 'mlx5_1', 'counted': True}}
    assert got['versions']['n1']['gpu_driver'] == {'a': '580.159.04', 'b': '580.178'}


@pytest.mark.parametrize('text, message', [
    ('{"env": ', 'kit.json is not valid JSON'),
    ('{"env": []}', 'kit.json: env is not an object'),
    ('{"hosts": [1]}', 'kit.json: each of hosts must be an object with host'),
])
def test_a_broken_kit_exits_2_with_a_message(tmp_path, text, message):
    (tmp_path / 'k').mkdir()
    (tmp_path / 'k' / 'kit.json').write_text(text)
    rc, out, err = command(str(tmp_path / 'k'), str(tmp_path / 'k'))
    assert (rc, out) == (2, '') and message in err and 'Traceback' not in err, err


def test_a_partial_kit_and_its_run_folder_are_the_same(kits):
    """The kit folder alone knows the hosts left out of it (kit.json), as its run's launch-kit.json does."""
    _a, b = kits
    rc, out, err = command(b, os.path.join(b, lk.KIT_DIR))
    assert (rc, err) == (0, '') and out.endswith('no difference\n'), out


def test_a_deeply_nested_kit_is_refused_with_a_message(tmp_path):
    for name, text in (('deep', '{"env": {}, "x": ' + '[' * 100000 + ']' * 100000 + '}'),
                       ('forty', '{"env": {}, "x": ' + '[' * 40 + ']' * 40 + '}')):
        (tmp_path / name).mkdir()
        (tmp_path / name / 'kit.json').write_text(text)
        rc, out, err = command(str(tmp_path / name), str(tmp_path / name))
        assert (rc, out) == (2, '') and 'nested' in err and 'Traceback' not in err, err


def test_escape_sequences_a_kit_carries_are_shown_not_sent_to_the_terminal(tmp_path, facts_versions):
    nodes = {'n1': kit_node('n1', facts_versions, ENV)}
    a = make_validation(str(tmp_path / 'a'), 'r', nodes)
    b = make_validation(str(tmp_path / 'b'), 'r2', nodes)
    # the kit builder leaves such values out; a kit.json written by hand (or by someone else) may hold them
    path = os.path.join(b, lk.KIT_DIR, 'kit.json')
    with open(path) as handle:
        kit = json.load(handle)
    kit['env']['NCCL_ALGO'] = '\x1b[2J\x1b]0;owned\x07Ring'
    with open(path, 'w') as handle:
        json.dump(kit, handle)
    rc, out, err = command(a, b)
    assert rc == 1, err
    assert '\x1b' not in out and '\x07' not in out
    assert 'NCCL_ALGO=\\x1b[2J\\x1b]0;owned\\x07Ring' in out
