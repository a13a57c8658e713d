"""node_probe and workload_run with hostile capture bundles, run as Ansible runs a module (a child process
reading its arguments from a file): a clear failure naming the key or the file, never a traceback, never a
hang, never a file outside the bundle read or one outside capture_dir written. A recorded workload run whose
file is not read is not measured (skipped_reason), which workload_check fails as workload.not_measured."""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
DEMO = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')
HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x4-nvlink')
# A guard, not an assertion: a module that blocks (a FIFO opened for reading) is killed after this long.
GUARD_S = 120


def run_module(tmp_path, name, args):
    args_file = tmp_path / ('%s-args.json' % name)
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'plugins', 'modules', '%s.py' % name), str(args_file)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=GUARD_S, env=env, check=False)
    out = proc.stdout.decode('utf-8', 'replace')
    assert 'Traceback' not in out + proc.stderr.decode('utf-8', 'replace'), out
    return json.loads(out)


@pytest.fixture
def bundle(tmp_path):
    """A demo bundle (real captures) plus one recorded nccl-tests run (a real capture) to spoil."""
    path = tmp_path / 'bundle'
    shutil.copytree(DEMO, str(path))
    shutil.copy(os.path.join(HW, 'nccl-tests_all_reduce_perf_-b8_-e8G_-f2_-g4.txt'), str(path / 'nccl_tests__all_reduce.txt'))
    manifest = json.loads((path / 'manifest.json').read_text())
    manifest['probes'].append({'probe': 'nccl_tests:all_reduce', 'command': 'all_reduce_perf -b 8 -e 8G -f 2 -g 4', 'rc': 0,
                               'seconds': 41.5, 'file': 'nccl_tests__all_reduce.txt'})
    (path / 'manifest.json').write_text(json.dumps(manifest))
    return path


def set_workload_entry(bundle, raw):
    """Rewrite the recorded run's entry; ``raw`` is JSON text (to write NaN, which json.dumps would not)."""
    text = (bundle / 'manifest.json').read_text()
    head, _sep, _tail = text.rpartition('{"probe": "nccl_tests:all_reduce"')
    (bundle / 'manifest.json').write_text(head + raw + ']}')


def replay_workload(tmp_path, bundle):
    return run_module(tmp_path, 'workload_run', {'replay_dir': str(bundle), 'replay_key': 'nccl_tests:all_reduce'})


def test_workload_replay_of_a_good_entry(tmp_path, bundle):
    result = replay_workload(tmp_path, bundle)
    assert not result.get('failed'), result
    assert (result['exit_code'], result['seconds'], result['timed_out']) == (0, 41.5, False)
    assert 'Avg bus bandwidth' in result['stdout']


ENTRY = '{"probe": "nccl_tests:all_reduce", "command": "all_reduce_perf", "file": "nccl_tests__all_reduce.txt", %s}'


@pytest.mark.parametrize('fields, message', [
    ('"rc": "0"', "probes[{index}].rc: must be an integer (exit code), found '0'"),
    ('"rc": true', 'probes[{index}].rc: must be an integer (exit code), found True'),
    ('"rc": 0, "seconds": "1.5"', "probes[{index}].seconds: must be a finite number of seconds, 0 or more, found '1.5'"),
    ('"rc": 0, "seconds": NaN', 'probes[{index}].seconds: must be a finite number of seconds, 0 or more, found nan'),
    ('"rc": 0, "seconds": "soon"', "probes[{index}].seconds: must be a finite number of seconds, 0 or more, found 'soon'"),
    ('"rc": 0, "status": "weird"', "probes[{index}].status: 'weird' is not one of ok, missing, failed"),
])
def test_workload_replay_of_a_bad_entry_fails_naming_the_key(tmp_path, bundle, fields, message):
    index = len(json.loads((bundle / 'manifest.json').read_text())['probes']) - 1   # the recorded run's entry is the last
    set_workload_entry(bundle, ENTRY % fields)
    result = replay_workload(tmp_path, bundle)
    assert result.get('failed') is True, result
    assert result['msg'] == 'capture bundle %s: manifest.json: %s' % (bundle, message.format(index=index))


@pytest.mark.parametrize('plant', ['/etc/passwd', 'fifo'])
def test_workload_replay_reads_no_link_and_no_fifo(tmp_path, bundle, plant):
    os.remove(str(bundle / 'nccl_tests__all_reduce.txt'))
    if plant == 'fifo':
        os.mkfifo(str(bundle / 'nccl_tests__all_reduce.txt'))
        kind = 'a FIFO'
    else:
        os.symlink(plant, str(bundle / 'nccl_tests__all_reduce.txt'))
        kind = 'a symbolic link'
    result = replay_workload(tmp_path, bundle)
    assert not result.get('failed'), result
    # not measured (workload_check reports it), never read through the link
    assert (result['exit_code'], result['stdout']) == (None, '')
    assert result['skipped_reason'] == 'capture bundle %s: nccl_tests__all_reduce.txt: is %s; a bundle holds only regular files' % (
        bundle, kind)
    assert 'root:x:0:0' not in json.dumps(result)


def test_workload_replay_notes_replaced_bytes(tmp_path, bundle):
    with open(str(bundle / 'nccl_tests__all_reduce.txt'), 'ab') as handle:
        handle.write(b'# trailer from a Latin-1 terminal: \xe9\n')
    result = replay_workload(tmp_path, bundle)
    assert not result.get('failed'), result
    assert result['stdout'].endswith(u'\ufffd\n')
    assert result['output_tail'].endswith('[nccl_tests__all_reduce.txt: 1 byte sequence(s) that are not UTF-8 were read as U+FFFD]')


def test_node_probe_replay_of_non_utf8_output_is_no_module_failure(tmp_path, bundle):
    with open(str(bundle / 'lspci.txt'), 'ab') as handle:
        handle.write(b'\tProduct Name: Cl\xe9\n')
    result = run_module(tmp_path, 'node_probe', {'replay_dir': str(bundle), 'gather': ['host']})
    assert not result.get('failed'), result
    record = result['ansible_facts']['xuanwu_facts']['probes']['lspci']
    assert record['status'] == 'ok' and 'lspci.txt: 1 byte sequence(s)' in record['note']


def test_node_probe_replay_with_a_link_out_of_the_bundle_spoils_only_that_probe(tmp_path, bundle):
    os.remove(str(bundle / 'os_release.txt'))
    os.symlink('/etc/passwd', str(bundle / 'os_release.txt'))
    result = run_module(tmp_path, 'node_probe', {'replay_dir': str(bundle), 'gather': ['host']})
    assert not result.get('failed'), result
    probes = result['ansible_facts']['xuanwu_facts']['probes']
    assert probes['os_release']['status'] == 'parse_error' and 'symbolic link' in probes['os_release']['error']
    assert 'root:x:0:0' not in json.dumps(result)


def test_node_probe_replay_with_a_bad_manifest_fails_naming_the_key(tmp_path, bundle):
    manifest = json.loads((bundle / 'manifest.json').read_text())
    manifest['probes'][3]['status'] = 'weird'
    (bundle / 'manifest.json').write_text(json.dumps(manifest))
    result = run_module(tmp_path, 'node_probe', {'replay_dir': str(bundle)})
    assert result.get('failed') is True
    assert result['msg'] == "capture bundle %s: manifest.json: probes[3].status: 'weird' is not one of ok, missing, failed" % bundle


def test_node_probe_capture_dir_with_a_planted_manifest_link_writes_nothing_through_it(tmp_path, bundle):
    target = tmp_path / 'root-owned'
    target.write_text('root-owned content\n')
    if os.geteuid() == 0:
        os.chown(str(target), 0, 0)
    capture = tmp_path / 'capture'
    capture.mkdir()
    os.symlink(str(target), str(capture / 'manifest.json'))
    result = run_module(tmp_path, 'node_probe', {'gather': ['host'], 'capture_dir': str(capture), 'timeout': 20})
    assert result.get('failed') is True
    assert result['msg'] == ('cannot write the capture bundle: capture bundle %s: .: already exists and is not empty '
                             '(manifest.json); choose a new directory' % capture)
    assert target.read_text() == 'root-owned content\n'
    assert os.listdir(str(capture)) == ['manifest.json']
