"""bench/run.py's failing fleet (--failing-share): which hosts replay the fault bundle, the inventory that says so, and
the report check that a run must pass (exactly those hosts failed)."""
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
