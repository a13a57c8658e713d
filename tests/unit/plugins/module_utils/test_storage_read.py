"""The node probe's bounded read of a dataset path (``_probe.storage_read_text``, probe ``storage_read:<path>``) and how
the profile's ``host.storage`` entries become its ``read_tests`` (``node_validate``)."""
import os

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
    assert read['cache_dropped'] is hasattr(os, 'posix_fadvise') and read['mb_per_s'] > 0


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
