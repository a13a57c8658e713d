"""scripts/xuanwu-run-diff and its module xuanwu.rundiff: two run folders built from real report data (two real
nccl-tests runs of one 4x H200 host, real node facts) are compared; bad input exits 2 with a message."""
import io
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collectives, _parse_nccl, _probe
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
