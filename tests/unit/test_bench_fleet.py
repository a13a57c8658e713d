"""bench/run.py's failing fleet (--failing-share): which hosts replay the fault bundle, the inventory that says so, and
the report check that a run must pass (exactly those hosts failed); its fact cache (--fact-cache)."""
import importlib
import json
import os
import sys

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'bench'))
run = importlib.import_module('run')


def test_every_tenth_host_fails_and_none_without_a_share():
    assert run.failing_hosts(20, 0.1) == ['bench0009', 'bench0019']
    assert len(run.failing_hosts(1000, 0.1)) == 100 and len(run.failing_hosts(200, 0.1)) == 20
    assert run.failing_hosts(50, 0) == []


def test_the_inventory_replays_the_fault_bundle_on_the_failing_hosts_only(tmp_path):
    path = str(tmp_path / 'hosts.yml')
    run.inventory(path, 12, {'ansible_connection': 'local'}, str(tmp_path / 'c'), run.failing_hosts(12, 0.25))
    hosts = yaml.safe_load(open(path))['all']['hosts']
    faulty = sorted(h for h, v in hosts.items() if v.get('xuanwu_replay_dir') == run.FAULT_BUNDLE)
    assert faulty == ['bench0003', 'bench0007', 'bench0011'] and len(hosts) == 12
    assert all(v['ansible_control_path_dir'].startswith(str(tmp_path)) for v in hosts.values())


def test_the_report_must_fail_exactly_the_failing_hosts(tmp_path):
    folder = tmp_path / 'r1'
    folder.mkdir()
    (folder / 'report.json').write_text(json.dumps({'summary': {'failed_hosts': ['bench0009']}}))
    run.check_report(str(tmp_path), ['bench0009'])
    with pytest.raises(SystemExit, match='expected'):
        run.check_report(str(tmp_path), ['bench0009', 'bench0019'])
    with pytest.raises(SystemExit, match='no report'):
        run.check_report(str(tmp_path / 'none'), [])


def test_the_jsonfile_fact_cache_starts_empty_for_every_command(tmp_path):
    """--fact-cache jsonfile (the repository's ansible.cfg) points the commands at a folder of the bench's own, which
    each command starts without: a validate.yml run never reads the facts of the one before."""
    args = run.parse_args(['--hosts', '3', '--rounds', '2', '--fact-cache', 'jsonfile'])
    assert run.parse_args(['--hosts', '3']).fact_cache == 'memory'
    cache = tmp_path / 'facts'
    seen = []

    class Runner(object):
        work = str(tmp_path)
        env = {'ANSIBLE_CACHE_PLUGIN': 'jsonfile', 'ANSIBLE_CACHE_PLUGIN_CONNECTION': str(cache)}

        def measure(self, cmd, expect=(0,)):
            seen.append((cmd[0], cache.exists()))
            cache.mkdir(exist_ok=True)
            (cache / 'bench0000').write_text('{}')
            return {'wall_s': 1.0, 'cpu_s': 1.0, 'tree_rss_peak_mib': 1.0, 'max_process_rss_mib': 1.0, 'detached_reaped': 0}

    _runs, result = run.run_host_count(3, 2, args, Runner(), {'ping': ['ping'], 'validate': ['validate']}, 'ansible')
    assert seen == [('ping', False), ('validate', False), ('validate', False), ('ping', False)]
    assert result['fact_cache'] == 'jsonfile'
