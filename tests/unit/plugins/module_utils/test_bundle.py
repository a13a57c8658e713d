"""Capture bundles are untrusted input (docs/security.md, "Capture bundles"): the replay reads only regular
files inside the bundle, bounded, decoded with replacement, and a manifest whose every key is checked; the
capture writes into a private directory and never through a planted symbolic link."""
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _bundle, _facts
from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
DEMO = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')
XID_LOG = os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'nvidia', 'kernel-log_xid48-xid79.txt')
SECRET = 'SECRET-OUTSIDE-THE-BUNDLE'
# A guard, not an assertion: a replay that blocks (a FIFO opened for reading) is killed after this long.
GUARD_S = 60


@pytest.fixture
def bundle(tmp_path):
    """A copy of a demo bundle (made from real captures) to spoil."""
    path = tmp_path / 'bundle'
    shutil.copytree(DEMO, str(path))
    return path


def manifest_of(path):
    return json.loads((path / 'manifest.json').read_text())


def save_manifest(path, manifest):
    (path / 'manifest.json').write_text(json.dumps(manifest))


def replay(path, **kwargs):
    """The facts of the bundle at ``path``, which conform to the facts schema however the bundle was spoilt."""
    facts = _probe.probe(_probe.ReplayRunner(str(path), **kwargs))
    assert _facts.validate(facts) == []
    return facts


def replay_in_subprocess(path):
    """Replay ``path`` in a child process with a time guard; returns (exit code, stdout + stderr)."""
    code = textwrap.dedent('''
        import json, sys
        from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe
        try:
            facts = _probe.probe(_probe.ReplayRunner(sys.argv[1]))
        except _probe.BundleError as err:
            print('BundleError: %s' % err)
            sys.exit(3)
        print(json.dumps(facts['probes']))
    ''')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, '-c', code, str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=GUARD_S, env=env, check=False)
    return proc.returncode, proc.stdout.decode('utf-8', 'replace')


# ---------------------------------------------------------------------------------------------
# The manifest: every key's type and allowed values, the error naming the key.

BAD_ENTRIES = [
    ({'status': 'weird'}, "probes[1].status: 'weird' is not one of ok, missing, failed"),
    ({'status': 'skipped'}, "probes[1].status: 'skipped' is not one of ok, missing, failed"),
    ({'status': 'ok', 'rc': 1}, "probes[1].status: 'ok' with rc 1"),
    ({'rc': '0'}, "probes[1].rc: must be an integer (exit code), found '0'"),
    ({'rc': True}, 'probes[1].rc: must be an integer (exit code), found True'),
    ({'rc': None}, 'probes[1].rc: must be an integer (exit code), found None'),
    ({'rc': 0.0}, 'probes[1].rc: must be an integer (exit code), found 0.0'),
    ({'seconds': '1.5'}, "probes[1].seconds: must be a finite number of seconds, 0 or more, found '1.5'"),
    ({'seconds': float('nan')}, 'probes[1].seconds: must be a finite number of seconds, 0 or more, found nan'),
    ({'seconds': float('inf')}, 'probes[1].seconds: must be a finite number of seconds, 0 or more, found inf'),
    ({'seconds': -1}, 'probes[1].seconds: must be a finite number of seconds, 0 or more, found -1'),
    ({'seconds': False}, 'probes[1].seconds: must be a finite number of seconds, 0 or more, found False'),
    ({'file': '../outside.txt'}, "probes[1].file: must be a relative path inside the bundle, found '../outside.txt'"),
    ({'file': '/etc/passwd'}, "probes[1].file: must be a relative path inside the bundle, found '/etc/passwd'"),
    ({'file': 'a/../../b'}, "probes[1].file: must be a relative path inside the bundle, found 'a/../../b'"),
    ({'file': 7}, 'probes[1].file: must be a relative path inside the bundle, found 7'),
    ({'stderr': ['x']}, "probes[1].stderr: must be a string, found ['x']"),
    ({'probe': 5}, 'probes[1].probe: must be a non-empty string, found 5'),
    ({'command': None}, 'probes[1].command: must be a non-empty string, found None'),
    ({'probe': 'os_release'}, "probes[1].probe: 'os_release' appears twice (also probes[0])"),
]


def two_entries(**change):
    second = {'probe': 'uname', 'command': 'uname -a', 'rc': 0, 'status': 'ok', 'file': 'uname.txt'}
    second.update(change)
    return {'format_version': 1, 'probes': [
        {'probe': 'os_release', 'command': 'cat /etc/os-release', 'rc': 0, 'status': 'ok', 'file': 'os_release.txt'}, second]}


@pytest.mark.parametrize('change, message', BAD_ENTRIES, ids=[m.split(':')[1].strip()[:40] for _c, m in BAD_ENTRIES])
def test_manifest_entry_errors_name_the_key(change, message):
    with pytest.raises(_probe.BundleError) as err:
        _probe.validate_manifest(two_entries(**change), '/b')
    assert message in str(err.value)
    assert str(err.value).startswith('capture bundle /b: manifest.json: ')


@pytest.mark.parametrize('manifest, message', [
    ([], 'must be a JSON object, found list'),
    ({'format_version': True, 'probes': []}, 'format_version must be 1, found True'),
    ({'format_version': 2, 'probes': []}, 'format_version must be 1, found 2'),
    ({'format_version': 1, 'probes': {}}, 'probes must be a list, found dict'),
    ({'format_version': 1, 'probes': ['x']}, 'probes[0]: must be an object, found str'),
])
def test_manifest_shape_errors(manifest, message):
    with pytest.raises(_probe.BundleError) as err:
        _probe.validate_manifest(manifest, '/b')
    assert message in str(err.value)


def test_valid_manifests_pass_unchanged():
    """What the writer produces, what make_bundles writes (no status), informational extra keys."""
    ok = two_entries(seconds=1.5, stderr='', note='x', source='hardware/uname.txt')
    assert _probe.validate_manifest(ok, '/b') is ok
    for status, rc in (('missing', 127), ('failed', 1), ('failed', 124)):
        _probe.validate_manifest(two_entries(status=status, rc=rc), '/b')
    _probe.validate_manifest(two_entries(seconds=0, file=None), '/b')
    for path in (DEMO, os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x2-nvlink-bundle')):
        assert _bundle.load_manifest(path)['format_version'] == 1


def test_unknown_status_in_a_bundle_stops_the_replay_instead_of_dropping_the_probe(bundle):
    manifest = manifest_of(bundle)
    index = next(i for i, e in enumerate(manifest['probes']) if e['probe'] == 'nvidia_query_gpu')
    manifest['probes'][index]['status'] = 'weird'
    save_manifest(bundle, manifest)
    with pytest.raises(_probe.BundleError) as err:
        replay(bundle)
    assert "probes[%d].status: 'weird' is not one of ok, missing, failed" % index in str(err.value)


def test_nan_seconds_written_by_json_is_refused(bundle):
    """``NaN`` is not JSON but Python's json reads it: the validation still refuses it."""
    text = (bundle / 'manifest.json').read_text().replace('"rc": 0,', '"rc": 0, "seconds": NaN,', 1)
    (bundle / 'manifest.json').write_text(text)
    with pytest.raises(_probe.BundleError) as err:
        replay(bundle)
    assert 'seconds: must be a finite number of seconds, 0 or more, found nan' in str(err.value)


# ---------------------------------------------------------------------------------------------
# Reading: only regular files inside the bundle, bounded, decoded with replacement.

def point_entry_at(bundle, probe, target):
    """Replace the file of ``probe`` by a symbolic link to ``target``."""
    entry = next(e for e in manifest_of(bundle)['probes'] if e['probe'] == probe)
    os.remove(str(bundle / entry['file']))
    os.symlink(str(target), str(bundle / entry['file']))
    return entry['file']


@pytest.mark.parametrize('target', ['outside', '/etc/passwd'])
def test_a_symlink_out_of_the_bundle_is_not_read_and_spoils_only_its_probe(bundle, tmp_path, target):
    if target == 'outside':
        target = tmp_path / 'secret.txt'
        target.write_text('NAME="%s"\nID=%s\n' % (SECRET, SECRET))
    name = point_entry_at(bundle, 'os_release', target)
    facts = replay(bundle)
    record = facts['probes']['os_release']
    assert record['status'] == 'parse_error'
    assert record['error'] == 'capture bundle %s: %s: is a symbolic link; a bundle holds only regular files' % (bundle, name)
    dumped = json.dumps(facts)
    assert SECRET not in dumped and 'root:x:0:0' not in dumped
    assert 'os' not in facts['host']
    others = dict((k, v['status']) for k, v in facts['probes'].items() if k != 'os_release')
    assert set(others.values()) == {'ok'}, others


def test_a_symlink_inside_the_bundle_is_refused_too(bundle):
    """The writer never makes links: a bundle with one was edited, and is not read through it."""
    name = point_entry_at(bundle, 'uname', bundle / 'os_release.txt')
    record = replay(bundle)['probes']['uname']
    assert record['status'] == 'parse_error' and name in record['error'] and 'symbolic link' in record['error']


def test_a_symlinked_directory_in_an_entry_path_is_not_followed(bundle, tmp_path):
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'uname.txt').write_text('Linux %s 6.8.0 #1 SMP x86_64 GNU/Linux\n' % SECRET)
    os.symlink(str(outside), str(bundle / 'sub'))
    manifest = manifest_of(bundle)
    next(e for e in manifest['probes'] if e['probe'] == 'uname')['file'] = 'sub/uname.txt'
    save_manifest(bundle, manifest)
    facts = replay(bundle)
    assert facts['probes']['uname']['status'] == 'parse_error'
    assert 'sub is a symbolic link' in facts['probes']['uname']['error']
    assert SECRET not in json.dumps(facts)


def test_entries_in_real_subdirectories_are_read(bundle):
    (bundle / 'sub').mkdir()
    shutil.move(str(bundle / 'uname.txt'), str(bundle / 'sub' / 'uname.txt'))
    manifest = manifest_of(bundle)
    next(e for e in manifest['probes'] if e['probe'] == 'uname')['file'] = './sub/uname.txt'
    save_manifest(bundle, manifest)
    facts = replay(bundle)
    assert facts['probes']['uname']['status'] == 'ok' and facts['host']['kernel']


def test_a_bundle_directory_reached_through_a_symlink_is_fine(bundle, tmp_path):
    """The user's own path to the bundle may hold links; only entries must not escape."""
    os.symlink(str(bundle), str(tmp_path / 'link'))
    facts = replay(tmp_path / 'link')
    assert set(r['status'] for r in facts['probes'].values()) == {'ok'}


def test_a_fifo_in_the_bundle_does_not_hang_the_replay(bundle):
    os.remove(str(bundle / 'ibstat.txt'))
    os.mkfifo(str(bundle / 'ibstat.txt'))
    rc, out = replay_in_subprocess(bundle)
    assert rc == 0, out
    record = json.loads(out)['ibstat']
    assert record['status'] == 'parse_error'
    assert record['error'].endswith('ibstat.txt: is a FIFO; a bundle holds only regular files')


def test_a_fifo_or_a_symlink_as_manifest_is_a_clear_error(bundle, tmp_path):
    shutil.move(str(bundle / 'manifest.json'), str(tmp_path / 'real-manifest.json'))
    os.mkfifo(str(bundle / 'manifest.json'))
    rc, out = replay_in_subprocess(bundle)
    assert (rc, out.strip()) == (3, 'BundleError: capture bundle %s: manifest.json: is a FIFO; a bundle holds only regular files'
                                 % bundle)
    os.remove(str(bundle / 'manifest.json'))
    os.symlink(str(tmp_path / 'real-manifest.json'), str(bundle / 'manifest.json'))
    with pytest.raises(_probe.BundleError) as err:
        replay(bundle)
    assert str(err.value) == 'capture bundle %s: manifest.json: is a symbolic link; a bundle holds only regular files' % bundle


def test_a_file_over_the_limit_is_refused_naming_its_size(bundle):
    size = os.path.getsize(str(bundle / 'nvidia_smi_xml.txt'))
    limit = os.path.getsize(str(bundle / 'manifest.json'))
    assert size > limit
    facts = replay(bundle, max_bytes=limit)
    record = facts['probes']['nvidia_smi_xml']
    assert record['status'] == 'parse_error'
    assert record['error'].endswith('nvidia_smi_xml.txt: is %d bytes, more than the limit of %d bytes' % (size, limit))
    with pytest.raises(_probe.BundleError) as err:
        replay(bundle, max_bytes=limit - 1)
    assert 'manifest.json: is %d bytes, more than the limit of %d bytes' % (limit, limit - 1) in str(err.value)


def test_non_utf8_bytes_are_replaced_noted_and_hide_no_fault(bundle):
    """A kernel log with Xid 48 and 79 (derived fixture) and, on a line before them, bytes that are not UTF-8
    (written here: a log of a device name in Latin-1, and a lone continuation byte)."""
    with open(XID_LOG, 'rb') as handle:
        lines = handle.read().split(b'\n')
    lines.insert(3, b'2024-03-12T11:40:00+00:00 gpu-node-17 kernel: usb 1-1: Product: Cl\xe9 USB \x80\xff')
    (bundle / 'kernel_log.txt').write_bytes(b'\n'.join(lines))
    facts = replay(bundle)
    record = facts['probes']['kernel_log']
    assert record['status'] == 'ok'
    assert record['note'] == 'kernel_log.txt: 3 byte sequence(s) that are not UTF-8 were read as U+FFFD'
    assert sorted(set(e['xid'] for e in facts['gpu']['xid_events'])) == [48, 63, 79]
    assert 'note' not in facts['probes']['uname']


def test_non_utf8_manifest_is_a_clear_error(bundle):
    (bundle / 'manifest.json').write_bytes(b'{"format_version": 1, "host": "n\xff", "probes": []}')
    with pytest.raises(_probe.BundleError) as err:
        replay(bundle)
    assert str(err.value) == 'capture bundle %s: manifest.json: is not UTF-8 (1 byte sequences are not)' % bundle


def test_decode_counts_only_replaced_bytes():
    assert _bundle.decode(u'ok \ufffd'.encode('utf-8')) == (u'ok \ufffd', 0)
    assert _bundle.decode(b'a\xffb\xfe') == (u'a\ufffdb\ufffd', 2)


# ---------------------------------------------------------------------------------------------
# Writing: a private directory, files created exclusively, never through a symbolic link.

class FakeProbe(object):
    key = 'uname'


def writer_with_output(directory):
    writer = _probe.BundleWriter(str(directory))
    writer(FakeProbe(), _probe.Output('ok', 'uname -a', rc=0, stdout='Linux n1 6.8.0 #1 SMP x86_64 GNU/Linux\n'))
    return writer


def root_owned_target(tmp_path):
    target = tmp_path / 'shadow-like'
    target.write_text('root-owned content\n')
    os.chmod(str(target), 0o644)
    if os.geteuid() == 0:
        os.chown(str(target), 0, 0)
    return target


def test_a_planted_manifest_symlink_in_capture_dir_does_not_overwrite_its_target(tmp_path):
    target = root_owned_target(tmp_path)
    capture = tmp_path / 'capture'
    capture.mkdir()
    os.symlink(str(target), str(capture / 'manifest.json'))
    with pytest.raises(_probe.BundleError) as err:
        writer_with_output(capture).write({'host': 'n1'})
    assert str(err.value) == ('capture bundle %s: .: already exists and is not empty (manifest.json); choose a new directory'
                              % capture)
    assert target.read_text() == 'root-owned content\n'
    assert os.path.islink(str(capture / 'manifest.json'))


def test_a_symlink_planted_after_the_directory_check_is_not_followed(tmp_path):
    """The race: the link appears between the directory check and the write."""
    target = root_owned_target(tmp_path)
    capture = tmp_path / 'capture'
    dir_fd = _bundle.private_dir(str(capture))
    try:
        os.symlink(str(target), str(capture / 'manifest.json'))
        with pytest.raises(OSError) as err:
            _bundle.write_private(dir_fd, 'manifest.json', '{}')
        assert err.value.errno == 17    # EEXIST
    finally:
        os.close(dir_fd)
    assert target.read_text() == 'root-owned content\n'


@pytest.mark.parametrize('plant, reason', [
    ('symlink-to-dir', 'is a symbolic link; capture_dir must be a new directory or an empty one of the running user'),
    ('dangling-symlink', 'is a symbolic link; capture_dir must be a new directory or an empty one of the running user'),
    ('file', 'is a regular file; capture_dir must be a new directory or an empty one of the running user'),
    ('fifo', 'is a FIFO; capture_dir must be a new directory or an empty one of the running user'),
    ('no-parent', 'cannot make the directory: its parent directory'),
])
def test_capture_dir_that_is_not_a_private_directory_is_refused(tmp_path, plant, reason):
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    capture = tmp_path / 'capture'
    if plant == 'symlink-to-dir':
        os.symlink(str(elsewhere), str(capture))
    elif plant == 'dangling-symlink':
        os.symlink(str(elsewhere / 'made-by-us'), str(capture))
    elif plant == 'file':
        capture.write_text('x')
    elif plant == 'fifo':
        os.mkfifo(str(capture))
    else:
        capture = tmp_path / 'missing' / 'capture'
    with pytest.raises(_probe.BundleError) as err:
        writer_with_output(capture).write()
    assert str(err.value).startswith('capture bundle %s: .: ' % capture) and reason in str(err.value), str(err.value)
    assert os.listdir(str(elsewhere)) == []


@pytest.mark.skipif(os.geteuid() != 0, reason='giving a directory to another user needs root')
def test_capture_dir_of_another_user_is_refused(tmp_path):
    capture = tmp_path / 'capture'
    capture.mkdir()
    os.chown(str(capture), 65534, 65534)
    with pytest.raises(_probe.BundleError) as err:
        writer_with_output(capture).write()
    assert 'is owned by uid 65534, not by the running user (uid 0)' in str(err.value)
    assert os.listdir(str(capture)) == []


@pytest.mark.parametrize('exists', [False, True])
def test_capture_writes_a_private_bundle_that_replays(tmp_path, exists):
    capture = tmp_path / 'capture'
    if exists:
        capture.mkdir(mode=0o755)
    files = writer_with_output(capture).write({'host': 'n1'})
    assert files == ['uname.txt', 'manifest.json']
    assert sorted(os.listdir(str(capture))) == sorted(files)
    if not exists:
        assert stat.S_IMODE(os.stat(str(capture)).st_mode) == 0o700
    for name in files:
        info = os.lstat(str(capture / name))
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    facts = _probe.probe(_probe.ReplayRunner(str(capture)), groups=('host',))
    assert facts['probes']['uname']['status'] == 'ok' and facts['host']['kernel']


def test_capture_keeps_the_bytes_a_tool_printed(tmp_path):
    """run_command decodes undecodable bytes as lone surrogates: the bundle holds the original bytes, and the
    replay reads them as U+FFFD with a note."""
    capture = tmp_path / 'capture'
    writer = _probe.BundleWriter(str(capture))
    writer(FakeProbe(), _probe.Output('ok', 'uname -a', rc=0, stdout=b'Linux n\xe91 6.8.0 #1 SMP x86_64 GNU/Linux\n'.decode(
        'utf-8', 'surrogateescape')))
    writer.write()
    assert (capture / 'uname.txt').read_bytes() == b'Linux n\xe91 6.8.0 #1 SMP x86_64 GNU/Linux\n'
    facts = _probe.probe(_probe.ReplayRunner(str(capture)), groups=('host',))
    assert facts['probes']['uname']['note'] == 'uname.txt: 1 byte sequence(s) that are not UTF-8 were read as U+FFFD'


def test_a_hard_link_is_refused_like_a_symlink(bundle, tmp_path):
    """A hard link names a file that may live outside the bundle (here: one made outside, linked in)."""
    outside = tmp_path / 'outside-uname.txt'
    outside.write_text('Linux %s 6.8.0 #1 SMP x86_64 GNU/Linux\n' % SECRET)
    os.remove(str(bundle / 'uname.txt'))
    os.link(str(outside), str(bundle / 'uname.txt'))
    facts = replay(bundle)
    assert facts['probes']['uname']['error'].endswith('uname.txt: has 2 hard links; a bundle holds only files of their own')
    assert SECRET not in json.dumps(facts)


@pytest.mark.parametrize('text, message', [
    ('[' * 100000 + ']' * 100000, 'is not a manifest: its JSON is nested too deeply'),
    ('{"format_version": 1, "probes": [{"probe": "x", "command": "x", "status": "%s"}]}' % ('w' * 5000),
     "probes[0].status: '%s... (5002 characters) is not one" % ('w' * 79)),  # repr cut to 80 characters
])
def test_hostile_manifests_give_short_clear_errors(bundle, text, message):
    (bundle / 'manifest.json').write_text(text)
    with pytest.raises(_probe.BundleError) as err:
        replay(bundle)
    assert message in str(err.value) and len(str(err.value)) < 400
