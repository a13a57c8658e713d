"""Integration: fleet thresholds and the run history through playbooks/validate.yml. Eight replayed 2x H200 hosts
(the capture bundle of tests/fixtures/hardware/h200x2-nvlink-bundle/, each with the all_reduce output of one of the
ten real validate.yml runs of tests/fixtures/hardware/h200x2-nvlink-gate/) are validated twice into one history
database; in the second run one host's busbw is 6 % lower from 1 GiB up (derived on the fly with nccl_text.scaled)."""
import json
import os
import shutil
import sqlite3
import stat

import pytest

from nccl_text import scaled
from test_collectives_workloads import inventory
from test_validate_playbook import ROOT, playbook

HW = os.path.join(ROOT, 'tests', 'fixtures', 'hardware')
HOSTS = ['gpu%02d' % n for n in range(1, 9)]
SLOW = 'gpu03'

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def bundle(tmp_path, host, run, factor):
    """The host's capture bundle with the all_reduce output of gate run ``run`` (busbw times ``factor`` from 1 GiB)."""
    path = tmp_path / 'bundles' / host
    if path.exists():
        shutil.rmtree(str(path))
    shutil.copytree(os.path.join(HW, 'h200x2-nvlink-bundle'), str(path))
    with open(os.path.join(HW, 'h200x2-nvlink-gate', 'run%d' % run, 'all_reduce_perf.txt')) as handle:
        text = handle.read()
    (path / 'nccl_tests__all_reduce.txt').write_text(text if factor == 1.0 else scaled(text, factor, min_bytes=1 << 30))
    manifest = json.loads((path / 'manifest.json').read_text())
    manifest['probes'].append({'probe': 'nccl_tests:all_reduce', 'command': 'all_reduce_perf -b 8 -e 8G -f 2 -g 2 -N 3',
                               'rc': 0, 'status': 'ok', 'file': 'nccl_tests__all_reduce.txt'})
    (path / 'manifest.json').write_text(json.dumps(manifest))
    return str(path)


def validate(tmp_path, run_id, first_run, slow_factor=1.0):
    # the other hosts take another real run each time; SLOW replays gate run 3 both times (slowed the second time), so
    # its drop against its own history is the 6 % of the derivation and not 6 % plus the noise between two real runs
    hosts = dict((host, {'xuanwu_replay_dir': bundle(tmp_path, host, 3 if host == SLOW else (first_run + i) % 10 + 1,
                                                     slow_factor if host == SLOW else 1.0)}) for i, host in enumerate(HOSTS))
    # the profile's curve is lowered to 250 GB/s so that only the fleet and the history can catch a 6 % drop; that host has
    # no chronyd (host.time off, as on the real runs)
    overrides = {'host': {'time': None}, 'collectives': {'all_reduce': {'curve': [{'min_bytes': 1 << 30, 'busbw_gbps_min': 250.0}]}},
                 'fleet': {'k': 3.0, 'min_hosts': 8}, 'history': {'regression_max_share': 0.05, 'runs': 5, 'min_runs': 1}}
    inv = inventory(tmp_path, hosts, xuanwu_profile='h200x2-nvlink', xuanwu_profile_overrides=overrides,
                    xuanwu_validate_collectives=True, xuanwu_collectives=['all_reduce'])
    reports = tmp_path / 'reports'
    # eight hosts at once: a longer bound than one host's, for a shared 2-core machine
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports, '-e', 'xuanwu_run_id=%s' % run_id,
                       timeout=1200)
    with open(str(reports / run_id / 'report.json')) as handle:
        return rc, out, json.load(handle)


def test_a_host_6_percent_slower_than_the_fleet_and_its_history_fails_and_both_runs_are_kept(tmp_path):
    rc, out, first = validate(tmp_path, 'run-a', 0)
    # (a replay has no listening ports and no processes to read: warnings and infos, the same on every host)
    assert rc == 0 and first['summary']['failed_hosts'] == [], (first['summary'], out[-3000:])
    fleet = first['fleet']['profiles']['h200x2-nvlink']
    assert fleet['fleet']['figures']['all_reduce_perf'][str(1 << 30)]['hosts'] == 8 and fleet['fleet']['outliers'] == {}
    assert fleet['history']['not_judged'][SLOW] == ['all_reduce_perf %s: 0 earlier run(s) < min_runs 1' % s
                                                    for s in ('1 GiB', '2 GiB', '4 GiB', '8 GiB')]

    rc, out, second = validate(tmp_path, 'run-b', 4, slow_factor=0.94)
    assert rc == 2 and second['summary']['failed_hosts'] == [SLOW], (second['summary'], out[-3000:])
    fails = [f for f in second['hosts'][SLOW]['findings'] if f['severity'] == 'fail']
    assert {(f['check'], f['component']) for f in fails} == set(
        (check, 'all_reduce_perf %s' % s) for check in ('collectives.fleet_outlier', 'collectives.regressed')
        for s in ('1 GiB', '2 GiB', '4 GiB', '8 GiB')), fails
    assert all('regressed since run run-a' in f['message'] for f in fails if f['check'] == 'collectives.regressed')
    flat = ' '.join(out.split())
    assert '[collectives.fleet_outlier] 4 findings: ' in flat and '[collectives.regressed] 4 findings: ' in flat, out[-3000:]
    assert 'all_reduce_perf 1 GiB: measured' in flat
    section = second['fleet']['profiles']['h200x2-nvlink']
    assert list(section['fleet']['outliers']) == [SLOW] and list(section['history']['regressed']) == [SLOW]
    folder = tmp_path / 'reports' / 'run-b'
    md = (folder / 'report.md').read_text()
    assert '## Fleet and history' in md and 'gpu03 regressed: all_reduce_perf 1 GiB since run run-a' in md
    assert '<h2 id="fleet">Fleet and history</h2>' in (folder / 'report.html').read_text()
    assert 'collectives.fleet_outlier' in (folder / 'junit.xml').read_text()

    db = str(tmp_path / 'reports' / 'history.sqlite')
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    conn = sqlite3.connect(db)
    assert conn.execute('SELECT run_id FROM runs ORDER BY seq').fetchall() == [('run-a',), ('run-b',)]
    assert conn.execute("SELECT host, status FROM hosts WHERE run_id = 'run-b' AND status = 'fail'").fetchall() == [(SLOW, 'fail')]
    assert conn.execute("SELECT count(*) FROM findings WHERE run_id = 'run-b' AND check_id = 'collectives.regressed'").fetchone() == (4,)
    assert conn.execute("SELECT count(*) FROM busbw WHERE size_bytes = ?", (1 << 30,)).fetchone() == (16,)


@pytest.mark.parametrize('history', ['garbage', ''])
def test_an_unusable_history_fails_the_run_naming_it_and_an_empty_path_switches_it_off(tmp_path, history):
    db = tmp_path / 'history.sqlite'
    if history:
        db.write_text('not a database\n' * 100)
    inv = inventory(tmp_path, {'node': {'xuanwu_replay_dir': os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')}},
                    xuanwu_profile='h200x4-nvlink')
    reports = tmp_path / 'reports'
    rc, out = playbook('-i', inv, 'playbooks/validate.yml', '-e', 'xuanwu_reports_dir=%s' % reports, '-e', 'xuanwu_run_id=r1',
                       '-e', 'xuanwu_history_db=%s' % (db if history else ''))
    with open(str(reports / 'r1' / 'report.json')) as handle:
        report = json.load(handle)     # the report is written either way
    if history:
        # (ansible-core 2.16's YAML output folds long messages: compared with the white space collapsed)
        assert rc == 2 and '%s is not a usable history database' % db in ' '.join(out.split()), out[-3000:]
        assert str(db) in report['fleet']['history_error']
    else:
        assert report['fleet'] == {'history_db': None, 'history_error': None, 'profiles': {}}
        assert sorted(os.listdir(str(reports))) == ['r1'] and not db.exists()
