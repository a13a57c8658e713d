"""Integration: the container smoke stage of validate.yml (xuanwu_container_smoke), driven through ansible-playbook
on replayed capture bundles (the demo bundle of a 4x H200 node plus a recorded container_smoke entry: derived
nvidia-smi -L outputs and real engine errors, tests/fixtures/containers/README.md), and on live hosts: one without
GPUs, and ones whose probe reads a real 4x H200 capture with a REAL podman and stand-in GPUs (tests/podman_standin.py).
Every outcome reaches report.json, junit.xml, report.md and report.html."""
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET

import pytest

import podman_standin
from ansible_collections.xuanwu.cluster.plugins.module_utils import _container
from test_collectives_workloads import inventory, run_validate
from test_validate_playbook import ROOT, playbook

DEMO = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')
FIX = os.path.join(ROOT, 'tests', 'fixtures', 'containers')
IMAGE = 'nvcr.io/nvidia/cuda:12.6.3-base-ubuntu24.04'
COMMAND = 'podman run --rm --device nvidia.com/gpu=all %s nvidia-smi -L' % IMAGE

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def bundle_with_smoke(tmp_path, name, stdout=None, stderr=None, rc=0):
    """The demo bundle, with a recorded container_smoke entry (None: without one)."""
    path = tmp_path / name
    shutil.copytree(DEMO, str(path))
    if stdout is None and stderr is None:
        return str(path)
    manifest = json.loads((path / 'manifest.json').read_text())
    entry = {'probe': 'container_smoke', 'command': COMMAND, 'rc': rc, 'seconds': 1.4}
    if stdout is not None:
        shutil.copy(os.path.join(FIX, stdout), str(path / 'container_smoke.txt'))
        entry['file'] = 'container_smoke.txt'
    if stderr is not None:
        with open(os.path.join(FIX, stderr)) as handle:
            entry['stderr'] = handle.read()
    manifest['probes'].append(entry)
    (path / 'manifest.json').write_text(json.dumps(manifest))
    return str(path)


def validate(tmp_path, hosts, *extra, **group_vars):
    group_vars.setdefault('xuanwu_profile', 'h200x4-nvlink')
    inv = inventory(tmp_path, hosts, **group_vars)
    return run_validate(tmp_path, inv, '-e', 'ansible_python_interpreter=%s' % sys.executable, *extra)


def container_findings(entry):
    return [f for f in entry['findings'] if f['check'].startswith('container.')]


def junit_cases(folder, host):
    suite = [s for s in ET.parse(os.path.join(folder, 'junit.xml')).getroot() if s.get('name') == host][0]
    return dict((c.get('name'), c) for c in suite)


def test_a_replayed_smoke_that_sees_every_gpu_passes_and_is_reported(tmp_path):
    hosts = {'node': {'xuanwu_replay_dir': bundle_with_smoke(tmp_path, 'b', 'nvidia-smi_-L_h200x4-derived.txt')}}
    # as README users type it: a string from the command line
    rc, out, (folder, report) = validate(tmp_path, hosts, '-e', 'xuanwu_container_smoke=true')
    assert rc == 0, out[-3000:]
    entry = report['hosts']['node']
    assert entry['status'] == 'pass' and container_findings(entry) == [], entry['findings']
    [smoke] = entry['workloads']
    assert smoke['kind'] == 'container_smoke' and smoke['command'] == COMMAND and smoke['component'] == 'podman run'
    assert smoke['container'] == {'engine': 'podman', 'image': None, 'gpus_on_host': 4, 'gpus_in_container': 4}
    cases = junit_cases(folder, 'node')
    assert sorted(c for c in cases if c.startswith('container.')) == sorted(_container.CHECKS)
    assert cases['container.gpu_count'].find('failure') is None
    assert '4 GPU(s) in a podman container, 4 on the host' in open(os.path.join(folder, 'report.md')).read()
    assert '4 GPU(s) in a podman container, 4 on the host' in open(os.path.join(folder, 'report.html')).read()


def test_check_mode_replays_and_judges_the_smoke_as_well(tmp_path):
    hosts = {'short': {'xuanwu_replay_dir': bundle_with_smoke(tmp_path, 's', 'nvidia-smi_-L_h200x4-derived-gpu3-missing.txt')}}
    rc, out, (_folder, report) = validate(tmp_path, hosts, '--check', xuanwu_container_smoke=True)
    assert rc == 2, out[-3000:]
    assert [f['check'] for f in container_findings(report['hosts']['short'])] == ['container.gpu_count']


def test_a_smoke_not_requested_is_not_run_and_lists_no_container_check(tmp_path):
    hosts = {'node': {'xuanwu_replay_dir': bundle_with_smoke(tmp_path, 'b', 'nvidia-smi_-L_h200x4-derived-gpu3-missing.txt')}}
    rc, out, (folder, report) = validate(tmp_path, hosts)
    assert rc == 0, out[-3000:]
    assert report['hosts']['node']['workloads'] == []
    # no container check passed: each is a skipped test case, not applicable (the smoke was not requested)
    cases = junit_cases(folder, 'node')
    assert sorted(c for c in cases if c.startswith('container.')) == sorted(_container.CHECKS)
    assert set(cases[c].find('skipped').get('message') for c in _container.CHECKS) == {
        'not applicable: the container smoke did not run on this host'}


def test_a_container_with_fewer_gpus_fails_exactly_its_host(tmp_path):
    hosts = {'good': {'xuanwu_replay_dir': bundle_with_smoke(tmp_path, 'g', 'nvidia-smi_-L_h200x4-derived.txt')},
             'short': {'xuanwu_replay_dir': bundle_with_smoke(tmp_path, 's', 'nvidia-smi_-L_h200x4-derived-gpu3-missing.txt')}}
    rc, out, (folder, report) = validate(tmp_path, hosts, xuanwu_container_smoke=True)
    assert rc == 2, out[-3000:]
    assert report['hosts']['good']['status'] == 'pass'
    [f] = container_findings(report['hosts']['short'])
    assert (f['check'], f['severity'], f['host'], f['measured'], f['expected']) == (
        'container.gpu_count', 'fail', 'short', '3 GPU(s)', "4 GPU(s), the host's")
    assert 'short' in f['message'] and 'GPU-b164b3a7-ff0e-d62a-23b5-59999c70948f' in f['message']
    failure = junit_cases(folder, 'short')['container.gpu_count'].find('failure')
    assert failure is not None and 'nvidia-ctk cdi generate' in failure.text
    assert junit_cases(folder, 'good')['container.gpu_count'].find('failure') is None
    md = open(os.path.join(folder, 'report.md')).read()
    assert 'container.gpu_count' in md and '3 GPU(s) in a podman container' in md
    # the gate fails the host that did not pass, and only it
    assert 'short' in out.split('PLAY RECAP')[-1] and 'failed=1' in [line for line in out.split('PLAY RECAP')[-1].splitlines()
                                                                     if line.startswith('short')][0]


def test_a_run_that_fails_on_an_unresolvable_cdi_device_names_the_fix(tmp_path):
    hosts = {'node': {'xuanwu_replay_dir': bundle_with_smoke(tmp_path, 'b', stderr='podman-4.3.1_run_cdi-unresolvable.stderr', rc=126)}}
    rc, out, (folder, report) = validate(tmp_path, hosts, xuanwu_container_smoke=True)
    assert rc == 2, out[-3000:]
    [f] = container_findings(report['hosts']['node'])
    assert f['check'] == 'container.smoke_failed' and f['measured'] == 'exit code 126: cdi_unresolvable'
    assert 'unresolvable CDI devices nvidia.com/gpu=all' in f['message'] and 'nvidia-ctk cdi generate' in f['remediation']
    assert report['hosts']['node']['workloads'][0]['container']['cause'] == 'cdi_unresolvable'
    assert 'podman run failed: cdi_unresolvable' in open(os.path.join(folder, 'report.md')).read()


def test_a_replayed_host_without_a_recorded_smoke_is_not_measured_never_a_pass(tmp_path):
    hosts = {'node': {'xuanwu_replay_dir': bundle_with_smoke(tmp_path, 'b')}}
    rc, out, (folder, report) = validate(tmp_path, hosts, xuanwu_container_smoke=True)
    assert rc == 2, out[-3000:]
    entry = report['hosts']['node']
    [f] = container_findings(entry)
    assert (f['check'], f['severity']) == ('container.not_measured', 'fail')
    assert 'container_smoke is not in the capture bundle' in f['message']
    assert entry['workloads'][0]['not_measured'] == 'container_smoke is not in the capture bundle'
    assert junit_cases(folder, 'node')['container.not_measured'].find('failure') is not None
    assert 'NOT MEASURED: container_smoke is not in the capture bundle' in open(os.path.join(folder, 'report.md')).read()


def test_a_replayed_host_whose_capture_found_no_engine_is_engine_missing(tmp_path):
    path = bundle_with_smoke(tmp_path, 'b', stderr='podman-4.3.1_run_cdi-unresolvable.stderr', rc=127)
    manifest = json.loads(open(os.path.join(path, 'manifest.json')).read())
    manifest['probes'][-1].update(status='missing', stderr='podman: command not found')
    with open(os.path.join(path, 'manifest.json'), 'w') as handle:
        json.dump(manifest, handle)
    rc, out, (folder, report) = validate(tmp_path, {'node': {'xuanwu_replay_dir': path}}, xuanwu_container_smoke=True)
    assert rc == 2, out[-3000:]
    [f] = container_findings(report['hosts']['node'])
    assert (f['check'], f['component'], f['measured']) == ('container.engine_missing', 'container engine', 'podman not found')
    assert 'no container engine on node' in f['message']
    assert junit_cases(folder, 'node')['container.engine_missing'].find('failure') is not None


def test_a_live_host_without_gpus_is_not_measured_never_a_pass(tmp_path):
    """This test host has no GPU (the probe counts none): the smoke has nothing to compare and runs nothing."""
    rc, out, (folder, report) = validate(tmp_path, {'node': {}}, xuanwu_container_smoke=True, xuanwu_container_image=IMAGE,
                                         xuanwu_profile='h200x4-nvlink', xuanwu_workloads_on_failed_hosts=True)
    assert rc == 2, out[-3000:]
    [f] = container_findings(report['hosts']['node'])
    assert (f['check'], f['severity']) == ('container.not_measured', 'fail') and 'no NVIDIA GPU' in f['message']
    assert report['hosts']['node']['workloads'][0]['kind'] == 'container_smoke'


def amd_bundle(tmp_path):
    """The demo bundle with its NVIDIA GPU probes replaced by the derived 8x MI300X amd-smi outputs (nvidia-smi missing)."""
    path = tmp_path / 'amd'
    shutil.copytree(DEMO, str(path))
    amd = os.path.join(ROOT, 'tests', 'fixtures', 'amd')
    manifest = json.loads((path / 'manifest.json').read_text())
    probes = [p for p in manifest['probes'] if not p['probe'].startswith('nvidia_')]
    probes.append({'probe': 'nvidia_query_gpu', 'command': 'nvidia-smi --query-gpu=index --format=csv', 'rc': 127,
                   'status': 'missing', 'stderr': 'nvidia-smi: command not found'})
    for probe, command, name in (('amd_static', 'amd-smi static --json', 'amd-smi_static_--json_mi300x8-derived.json'),
                                 ('amd_metric', 'amd-smi metric --json', 'amd-smi_metric_--json_mi300x8-derived.json'),
                                 ('amd_version', 'amd-smi version', 'amd-smi_version.txt')):
        shutil.copy(os.path.join(amd, name), str(path / ('%s.txt' % probe)))
        probes.append({'probe': probe, 'command': command, 'rc': 0, 'file': '%s.txt' % probe})
    manifest['probes'] = probes
    (path / 'manifest.json').write_text(json.dumps(manifest))
    return str(path)


def test_an_amd_host_is_not_measured_never_a_pass(tmp_path):
    rc, out, (folder, report) = validate(tmp_path, {'mi300x': {'xuanwu_replay_dir': amd_bundle(tmp_path)}}, xuanwu_container_smoke=True,
                                         xuanwu_profile='mi300x-8', xuanwu_workloads_on_failed_hosts=True)
    assert rc == 2, out[-3000:]
    entry = report['hosts']['mi300x']
    assert entry['facts_summary']['gpu_count'] == 8
    [f] = container_findings(entry)
    assert (f['check'], f['severity']) == ('container.not_measured', 'fail') and "the host's GPUs are AMD" in f['message']


def test_requested_without_an_image_stops_before_anything_runs(tmp_path):
    inv = inventory(tmp_path, {'node': {}}, xuanwu_profile='h200x4-nvlink')
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_container_smoke=yes',
                       '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'reports'))
    assert rc == 2, out[-3000:]
    assert 'host node: invalid inventory or profile, nothing was changed' in out
    assert 'xuanwu_container_smoke is true but xuanwu_container_image is not set' in out
    assert 'Probe and judge the node' not in out and not (tmp_path / 'reports').exists()


H200X4 = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x4-nvlink')


def nvidia_smi_double(tmp_path, monkeypatch):
    """A test double of the host's nvidia-smi answering the probe with the real 4x H200 captures; first on PATH."""
    tools = tmp_path / 'tools'
    tools.mkdir()
    body = ('case "$1" in\n'
            '  --query-gpu=*) cat %s ;;\n'
            '  -q) cat %s ;;\n'
            '  topo) cat %s ;;\n'
            '  nvlink) cat %s ;;\n'
            '  *) echo "nvidia-smi: not answered by the test double" >&2; exit 127 ;;\n'
            'esac\n') % tuple(os.path.join(H200X4, name) for name in (
                'nvidia-smi_--query-gpu.csv', 'nvidia-smi_-q_-x.xml', 'nvidia-smi_topo_-m.txt', 'nvidia-smi_nvlink_--status.txt'))
    path = tools / 'nvidia-smi'
    path.write_text('#!/bin/sh\n# test double: stands in for the real tool in tests\n' + body)
    path.chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (tools, os.environ['PATH']))


def test_a_real_podman_smoke_through_validate_passes_where_every_gpu_is_injected_and_fails_where_one_is(tmp_path, monkeypatch):
    """Live hosts (this machine, twice) whose probe reads the 4 H200 of a real capture, and a REAL podman that runs the
    smoke with stand-in GPUs of those 4 UUIDs (tests/podman_standin.py): all 4 injected on one host, only GPU 0 on the
    other."""
    if podman_standin.missing():
        pytest.skip(podman_standin.missing())
    nvidia_smi_double(tmp_path, monkeypatch)
    uuids = ['GPU-f0ecc684-38e2-f0a2-a5ca-d2c3460b88ae', 'GPU-8f519e31-f80a-acb4-f2a1-39500bb68db0',
             'GPU-210b4768-fdb5-c919-3601-93513e637edd', 'GPU-b164b3a7-ff0e-d62a-23b5-59999c70948f']
    with podman_standin.stand_in_gpus(tmp_path, uuids) as image:
        hosts = {'all4': {'xuanwu_container_smoke_cdi_devices': ['%s=all' % podman_standin.KIND]},
                 'only1': {'xuanwu_container_smoke_cdi_devices': ['%s=0' % podman_standin.KIND]}}
        # the node checks of this machine fail (no InfiniBand...): the smoke runs anyway, only its findings are asserted
        rc, out, (folder, report) = validate(tmp_path, hosts, xuanwu_container_smoke=True, xuanwu_container_image=image,
                                             xuanwu_container_smoke_engine='podman', xuanwu_container_smoke_run_args=podman_standin.RUN_ARGS,
                                             xuanwu_workloads_on_failed_hosts=True)
    assert podman_standin.no_smoke_containers()
    good, short = report['hosts']['all4'], report['hosts']['only1']
    assert good['facts_summary']['gpu_count'] == 4, out[-3000:]
    assert container_findings(good) == [], good['findings']
    assert good['workloads'][0]['container'] == {'engine': 'podman', 'image': image, 'gpus_on_host': 4, 'gpus_in_container': 4}
    [f] = container_findings(short)
    assert (f['check'], f['host'], f['measured'], f['expected']) == ('container.gpu_count', 'only1', '1 GPU(s)', "4 GPU(s), the host's")
    assert uuids[3] in f['message'] and rc == 2
