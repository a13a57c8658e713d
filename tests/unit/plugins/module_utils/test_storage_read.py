"""The node probe's bounded read of a dataset path (``_probe.storage_read_text``, probe ``storage_read:<path>``) and how
the profile's ``host.storage`` entries become its ``read_tests`` (``node_validate``)."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.action import node_validate
from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_host import parse_storage_read


def _tree(tmp_path):
    (tmp_path / 'b').mkdir()
    (tmp_path / 'a.bin').write_bytes(b'x' * (3 << 20))
    (tmp_path / 'b' / 'c.bin').write_bytes(b'y' * (5 << 20))
    os.symlink('/etc/passwd', str(tmp_path / 'b' / 'link'))
    return tmp_path


def test_reads_every_file_in_name_order_without_following_links(tmp_path):
    read = parse_storage_read(_probe.storage_read_text(str(_tree(tmp_path))))
    assert (read['bytes'], read['files'], read['complete'], read['error']) == (8 << 20, 2, True, None)
    assert read['cache'] in ('direct', 'dropped') and read['cache_dropped'] is True and read['mb_per_s'] > 0


def test_stops_at_the_byte_bound_exactly(tmp_path):
    read = parse_storage_read(_probe.storage_read_text(str(_tree(tmp_path)), max_bytes=(4 << 20) + 7))
    assert (read['bytes'], read['files'], read['complete']) == ((4 << 20) + 7, 2, False)


def test_stops_at_the_time_bound(tmp_path):
    ticks = iter(range(100))
    read = parse_storage_read(_probe.storage_read_text(str(_tree(tmp_path)), max_seconds=1, clock=lambda: next(ticks)))
    assert read['complete'] is False and read['bytes'] < 8 << 20 and read['seconds'] <= 3


def test_a_missing_path_is_an_error_line_not_an_exception(tmp_path):
    read = parse_storage_read(_probe.storage_read_text(str(tmp_path / 'gone\nname')))
    assert read['bytes'] == 0 and read['complete'] is False and read['error'].endswith('gone name: no such file or directory')


def test_profile_paths_with_a_floor_become_read_tests():
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
    storage = [{'path': '/data', 'kind': 'shared', 'read_mb_s_min': 500, 'read_max_gib': 2, 'read_max_s': 20},
               {'path': '/cache', 'kind': 'local'},
               {'path': '/models', 'kind': 'shared', 'read_mb_s_min': 100}]
    # resolved as node_validate sees it: the schema fills read_max_gib (1) and read_max_s (10) where they are absent
    profile = _collection.resolve_profile('h200x1', {'host': {'storage': storage}})[0]
    args = node_validate._probe_args({'disk_paths': ['/']}, profile)
    assert args['read_tests'] == [{'path': '/data', 'max_bytes': 2 << 30, 'max_seconds': 20.0},
                                  {'path': '/models', 'max_bytes': 1 << 30, 'max_seconds': 10.0}]
    assert 'read_tests' not in node_validate._probe_args({}, {'host': {'storage': [{'path': '/cache', 'kind': 'local'}]}})


def test_the_probe_runs_only_for_the_paths_asked_and_its_facts_are_keyed_by_path(tmp_path):
    path = str(_tree(tmp_path))

    class Runner(_probe.LiveRunner):
        pass

    runner = Runner(lambda argv: (127, '', 'absent'), lambda name: None,
                    internals={'storage_read:' + path: lambda: _probe.storage_read_text(path)})
    facts = _probe.probe(runner, groups=('host',), read_paths=[path])
    assert facts['host']['storage_read'][path]['bytes'] == 8 << 20
    assert facts['probes']['storage_read:' + path]['status'] == 'ok'
    assert 'storage_read' not in _probe.probe(runner, groups=('host',))['host']


def test_the_module_reads_live_and_refuses_a_path_with_a_control_character(tmp_path):
    from ansible_collections.xuanwu.cluster.tests.unit.plugins.modules.test_bundle_modules import run_module
    (tmp_path / 'data').mkdir()
    data = str(_tree(tmp_path / 'data'))
    result = run_module(tmp_path, 'node_probe', {'gather': ['host'], 'read_tests': [{'path': data, 'max_bytes': 6 << 20}]})
    read = result['ansible_facts']['xuanwu_facts']['host']['storage_read'][data]
    assert (read['bytes'], read['complete'], read['error']) == (6 << 20, False, None)
    refused = run_module(tmp_path, 'node_probe', {'gather': ['host'], 'read_tests': [{'path': '/data\nx'}]})
    assert refused['failed'] and 'read_tests[0].path' in refused['msg']


def test_a_read_that_never_answers_is_a_failed_probe_naming_the_path_in_time(monkeypatch, tmp_path):
    """A read blocked in the kernel (a hung NFS mount; /proc/kmsg blocks the same way) cannot be interrupted: the read
    runs in a child process that is given read_max_s + the grace, then left; the probe fails naming the path."""
    import time
    from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect
    monkeypatch.setattr(_collect, 'STORAGE_READ_GRACE_SECONDS', 0.5)
    start = time.monotonic()
    with pytest.raises(_collect.StorageReadTimeout) as err:
        _collect.storage_read_text('/data/hung', max_seconds=0.5, reader=lambda *args: time.sleep(60) or '')
    assert time.monotonic() - start < 3
    assert str(err.value).endswith('/data/hung: the read gave no answer in 1 s (read_max_s 0.5 + 0.5): a hung mount?')
    # through the node's runner: the probe fails and says why

    def hung():
        return _collect.storage_read_text('/data/hung', max_seconds=0.5, reader=lambda *args: time.sleep(60) or '')
    runner = _probe.LiveRunner(lambda argv: (127, '', ''), lambda name: None, internals={'storage_read:/data/hung': hung})
    out = runner.obtain(_collect.storage_probes(['/data/hung'])[0])
    assert out.status == 'failed' and 'a hung mount?' in out.stderr


def test_one_file_cut_by_the_time_bound_is_not_complete(tmp_path):
    (tmp_path / 'big.bin').write_bytes(b'z' * (64 << 20))
    ticks = iter(range(1000))
    read = parse_storage_read(_probe.storage_read_text(str(tmp_path), max_seconds=3, clock=lambda: next(ticks)))
    assert read['files'] == 1 and read['bytes'] < 64 << 20 and read['complete'] is False


def test_the_cache_state_is_what_was_done(tmp_path, monkeypatch):
    (tmp_path / 'f.bin').write_bytes(b'q' * (5 << 20))
    read = parse_storage_read(_probe.storage_read_text(str(tmp_path)))
    assert read['cache'] in ('direct', 'dropped') and read['cache_dropped'] is True and read['complete'] is True
    # a file system that refuses O_DIRECT (EINVAL): the pages are dropped instead, and it says so
    real_open, direct = os.open, getattr(os, 'O_DIRECT', 0)

    def no_direct(name, flags, *args):
        if direct and flags & direct:
            raise OSError(22, 'Invalid argument')
        return real_open(name, flags, *args)
    monkeypatch.setattr(os, 'open', no_direct)
    assert parse_storage_read(_probe.storage_read_text(str(tmp_path)))['cache'] == 'dropped'
    # neither O_DIRECT nor a drop the kernel accepts: "kept", never "dropped"
    monkeypatch.delattr(os, 'O_DIRECT', raising=False)

    def refuse(*args):
        raise OSError(22, 'Invalid argument')
    monkeypatch.setattr(os, 'posix_fadvise', refuse, raising=False)
    read = parse_storage_read(_probe.storage_read_text(str(tmp_path)))
    assert (read['cache'], read['cache_dropped'], read['bytes']) == ('kept', False, 5 << 20)


def test_a_cold_read_is_cold_o_direct_or_each_files_pages_dropped_before_it_is_read(tmp_path, monkeypatch):
    """What the fact says was done was done (read in this process, where the calls can be seen): each file opened with
    O_DIRECT, or, where the file system refuses it, its cached pages dropped (POSIX_FADV_DONTNEED, whole file)
    before its first byte is read."""
    from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect
    for name in ('a.bin', 'b.bin'):
        (tmp_path / name).write_bytes(b'q' * (2 << 20))
    real_open, real_readv, direct = os.open, os.readv, getattr(os, 'O_DIRECT', 0)
    calls = []

    def spy_open(name, flags, *args):
        calls.append(('open', os.path.basename(name), bool(direct and flags & direct)))
        return real_open(name, flags, *args)

    def spy_read(fd, buffers):
        calls.append(('read', fd))
        return real_readv(fd, buffers)
    monkeypatch.setattr(os, 'open', spy_open)
    monkeypatch.setattr(os, 'readv', spy_read)
    text = _collect._storage_read(str(tmp_path))
    opened = [c for c in calls if c[0] == 'open' and c[1].endswith('.bin')]
    if parse_storage_read(text)['cache'] == 'direct':
        assert opened and all(c[2] for c in opened), opened
    # refused O_DIRECT: every file's pages are dropped before it is read
    calls[:] = []
    advised = []

    def no_direct(name, flags, *args):
        if direct and flags & direct:
            raise OSError(22, 'Invalid argument')
        calls.append(('open', os.path.basename(name), False))
        return real_open(name, flags, *args)

    def fadvise(fd, offset, length, advice):
        advised.append((fd, offset, length, advice))
        calls.append(('advise', fd))
    monkeypatch.setattr(os, 'open', no_direct)
    monkeypatch.setattr(os, 'posix_fadvise', fadvise)
    read = parse_storage_read(_collect._storage_read(str(tmp_path)))
    assert read['cache'] == 'dropped' and read['files'] == 2
    assert len(advised) == 2 and all(a[1:] == (0, 0, os.POSIX_FADV_DONTNEED) for a in advised), advised
    reads = [c for c in calls if c[0] == 'read']
    for fd in (a[0] for a in advised):
        first_read = next(i for i, c in enumerate(calls) if c == ('read', fd))
        assert calls.index(('advise', fd)) < first_read, calls
    assert reads
