"""Integration: the collectives stage of validate.yml on AMD nodes (rccl-tests), with the real public 8x MI300X
rccl-tests outputs of tests/fixtures/rccl-tests/ judged against the mi300x-8 profile: live through test doubles of
the rccl-tests binaries (named as such), and replayed from a capture bundle of an 8x MI300X node."""
import json
import os
import shutil
import sys

import pytest
import yaml

from nccl_text import scaled
from test_collectives_workloads import inventory, run_validate, write_test_double

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RCCL = os.path.join(ROOT, 'tests', 'fixtures', 'rccl-tests')
AMD = os.path.join(ROOT, 'tests', 'fixtures', 'amd')
HEALTHY = os.path.join(RCCL, 'rccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g1_np8_mi300x8.txt')
GIB8 = 8 << 30
# ~220 GB/s from 8 GiB up: the healthy run printed 315.69 GB/s out-of-place at 8 GiB
DEGRADED = 220.0 / 315.69

# the amd-smi probes of a healthy 8x MI300X node (tests/fixtures/amd/README.md): probe -> (command, file)
AMD_PROBES = {
    'amd_static': ('amd-smi static --json', 'amd-smi_static_--json_mi300x8-derived.json'),
    'amd_metric': ('amd-smi metric --json', 'amd-smi_metric_--json_mi300x8-derived.json'),
    'amd_bad_pages': ('amd-smi bad-pages --json', 'amd-smi_bad-pages_--json_mi300x8-derived.json'),
    'amd_topology': ('amd-smi topology --json', 'amd-smi_topology_--json_mi300x8-derived.json'),
    'amd_xgmi': ('amd-smi xgmi --json', 'amd-smi_xgmi_--json_mi300x8-derived.json'),
    'amd_version': ('amd-smi version', 'amd-smi_version.txt'),
}

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def read(path):
    with open(path) as handle:
        return handle.read()


def mi300x_curves(tmp_path):
    """The mi300x-8 all_reduce curve on a profile without hardware expectations (the test host has no GPU)."""
    profile = yaml.safe_load(read(os.path.join(ROOT, 'profiles', 'mi300x-8.yml')))
    path = tmp_path / 'mi300x-curves-only.yml'
    path.write_text(yaml.safe_dump({'schema_version': 1, 'name': 'mi300x-curves-only', 'collectives': profile['collectives']}))
    return str(path)


def fake_rccl_tests(bindir, log, text):
    """A test double of rccl-tests' all_reduce_perf: logs its arguments and GPU selection, prints ``text``."""
    bindir.mkdir(exist_ok=True)
    capture = bindir.parent / 'all_reduce_output.txt'
    capture.write_text(text)
    write_test_double(bindir / 'all_reduce_perf',
                      'echo "$* HIP_VISIBLE_DEVICES=${HIP_VISIBLE_DEVICES-unset} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset} '
                      'LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >> %s\ncat %s\n' % (log, capture))


@pytest.mark.parametrize('factor', [1.0, DEGRADED])
def test_rccl_tests_on_an_amd_node_use_hip_visible_devices_and_the_mi300x_floor(tmp_path, factor):
    log = tmp_path / 'calls.log'
    text = read(HEALTHY)
    fake_rccl_tests(tmp_path / 'bin', log, text if factor == 1.0 else scaled(text, factor, min_bytes=GIB8))
    # the fact nccl_tests_build sets after building rccl-tests (flavor rccl) on the node
    built = {'flavor': 'rccl', 'suite': 'rccl-tests', 'bin_dir': str(tmp_path / 'bin'), 'ld_library_path': '/opt/rocm-6.4.2/lib'}
    inv = inventory(tmp_path, {'mi300x-07': {}}, xuanwu_profile=mi300x_curves(tmp_path), xuanwu_validate_collectives=True,
                    xuanwu_collectives=['all_reduce'], xuanwu_collectives_devices=list(range(8)), xuanwu_collectives_debug_rerun=False)
    rc, out, (_folder, report) = run_validate(tmp_path, inv, '-e', json.dumps({'nccl_tests_build_result': built}))
    calls = log.read_text().splitlines()
    assert calls == ['-b 8 -e 8G -f 2 -g 8 -N 3 HIP_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 CUDA_VISIBLE_DEVICES=unset '
                     'LD_LIBRARY_PATH=/opt/rocm-6.4.2/lib'], (calls, out[-3000:])
    entry = report['hosts']['mi300x-07']
    assert [w['component'] for w in entry['workloads']] == ['all_reduce_perf']
    fails = [f for f in entry['findings'] if f['severity'] == 'fail']
    if factor == 1.0:
        assert fails == [] and rc == 0, (fails, out[-3000:])
        assert entry['workloads'][0]['busbw_gbps'][str(GIB8)] == 315.69
        return
    assert rc == 2 and [(f['check'], f['component'], f['host']) for f in fails] == [
        ('collectives.busbw_low', 'all_reduce_perf', 'mi300x-07')], fails
    assert 219.0 < fails[0]['measured'] < 221.0 and fails[0]['expected'] == 282.6 and '8 GiB' in fails[0]['message']


def test_nvidia_nodes_keep_cuda_visible_devices(tmp_path):
    log = tmp_path / 'calls.log'
    fake_rccl_tests(tmp_path / 'bin', log, read(HEALTHY))
    inv = inventory(tmp_path, {'gpu-a': {}}, xuanwu_profile=mi300x_curves(tmp_path), xuanwu_validate_collectives=True,
                    xuanwu_nccl_tests_bin_dir=str(tmp_path / 'bin'), xuanwu_collectives=['all_reduce'],
                    xuanwu_collectives_devices=[0, 1, 2, 3, 4, 5, 6, 7])
    rc, out, (_folder, _report) = run_validate(tmp_path, inv)
    assert log.read_text().splitlines() == ['-b 8 -e 8G -f 2 -g 8 -N 3 HIP_VISIBLE_DEVICES=unset CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 '
                                            'LD_LIBRARY_PATH='], out[-3000:]
    assert rc == 0, out[-3000:]


def amd_bundle(tmp_path, text):
    """A capture bundle of an 8x MI300X node: the amd-smi outputs of tests/fixtures/amd and the rccl-tests output
    recorded as nccl_tests:all_reduce."""
    bundle = tmp_path / 'bundle'
    bundle.mkdir()
    probes = []
    for probe, (command, name) in sorted(AMD_PROBES.items()):
        shutil.copy(os.path.join(AMD, name), str(bundle / (probe + '.txt')))
        probes.append({'probe': probe, 'command': command, 'rc': 0, 'status': 'ok', 'file': probe + '.txt'})
    (bundle / 'nccl_tests__all_reduce.txt').write_text(text)
    probes.append({'probe': 'nccl_tests:all_reduce', 'command': 'all_reduce_perf -b 8 -e 8G -f 2 -g 8 -N 3', 'rc': 0,
                   'status': 'ok', 'file': 'nccl_tests__all_reduce.txt'})
    (bundle / 'manifest.json').write_text(json.dumps({'format_version': 1, 'host': 'mi300x-node07', 'probes': probes}))
    return str(bundle)


@pytest.mark.parametrize('factor', [1.0, DEGRADED])
def test_a_replayed_8x_mi300x_node_passes_the_mi300x_8_profile_and_fails_at_220_gb_s(tmp_path, factor):
    text = read(HEALTHY)
    bundle = amd_bundle(tmp_path, text if factor == 1.0 else scaled(text, factor, min_bytes=GIB8))
    # the bundle holds the GPU probes only: the host section of the profile is not judged here
    inv = inventory(tmp_path, {'mi300x-node07': {'xuanwu_replay_dir': bundle}}, xuanwu_profile='mi300x-8',
                    xuanwu_profile_overrides={'host': None}, xuanwu_validate_collectives=True, xuanwu_collectives=['all_reduce'])
    rc, out, (_folder, report) = run_validate(tmp_path, inv, '-e', 'ansible_python_interpreter=%s' % sys.executable)
    entry = report['hosts']['mi300x-node07']
    fails = [f for f in entry['findings'] if f['severity'] == 'fail']
    # the GPU checks of mi300x-8 ran on the amd-smi outputs: an 8x MI300X node
    assert (entry['facts_summary']['gpu_count'], entry['facts_summary']['gpu_model']) == (8, 'AMD Instinct MI300X'), entry['facts_summary']
    assert entry['profile'] == 'mi300x-8'
    assert [w['component'] for w in entry['workloads']] == ['all_reduce_perf']
    if factor == 1.0:
        assert fails == [] and rc == 0, (fails, out[-3000:])
        return
    assert rc == 2 and [(f['check'], f['component'], f['host']) for f in fails] == [
        ('collectives.busbw_low', 'all_reduce_perf', 'mi300x-node07')], fails
    assert 219.0 < fails[0]['measured'] < 221.0 and fails[0]['expected'] == 282.6 and '8 GiB' in fails[0]['message']
