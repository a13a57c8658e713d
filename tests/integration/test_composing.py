"""A site composes the collection's validation with its own plays, run as AWX runs a job: ansible-runner with a
private data dir of its own, the site's project read-only, the inventory in another folder (AWX keeps an inventory's
variables, not its folder), the collection from a collections path. The validation's gate is deferred past the site's
play (xuanwu_gate_deferred), which reads the results as data; the run still exits 2; the results are in the run's
stats (set_stats: the artifacts AWX keeps) and the report in a folder that outlives the job (xuanwu_reports_dir)."""
import json
import os
import shutil
import stat

import pytest

from test_validate_playbook import ROOT

ansible_runner = pytest.importorskip('ansible_runner')
pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')

SITE = """---
- name: Validate the fleet; the gate comes after the site's own play
  ansible.builtin.import_playbook: xuanwu.cluster.validate
  vars:
    xuanwu_gate_deferred: true

- name: The site's own play, after failures too
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Hand the failed hosts to the site's ticketing
      ansible.builtin.copy:
        dest: "{{ site_marker }}"
        content: "{{ hostvars['localhost']['xuanwu_validation'] | to_nice_json }}"
        mode: '0600'

- name: Fail the hosts that did not pass
  ansible.builtin.import_playbook: xuanwu.cluster.gate
"""


def _read_only(folder):
    for base, dirs, files in os.walk(str(folder)):
        for name in files:
            os.chmod(os.path.join(base, name), stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.chmod(base, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def test_a_site_play_after_the_validation_runs_after_failures_and_the_run_still_exits_2(tmp_path):
    project = tmp_path / 'project'
    project.mkdir()
    (project / 'site.yml').write_text(SITE)
    # the demo inventory, moved: AWX's inventory_dir is not the checkout's
    inventory = tmp_path / 'awx-inventories' / 'demo'
    shutil.copytree(os.path.join(ROOT, 'inventories', 'demo'), str(inventory))
    persistent = tmp_path / 'persistent'
    marker = tmp_path / 'site-play-ran.json'
    _read_only(project)
    private = tmp_path / 'private-data-dir'
    private.mkdir()
    runner = ansible_runner.run(
        private_data_dir=str(private), project_dir=str(project), playbook='site.yml', inventory=str(inventory),
        extravars={'site_marker': str(marker), 'xuanwu_reports_dir': str(persistent / 'reports'),
                   'xuanwu_runs_dir': str(persistent / 'runs'), 'xuanwu_run_id': 'awx-job-42'},
        envvars={'ANSIBLE_COLLECTIONS_PATH': os.path.join(ROOT, '.collections'), 'ANSIBLE_NOCOLOR': '1'},
        quiet=True, timeout=600)
    out = runner.stdout.read()
    assert runner.rc == 2, out[-4000:]
    # the site's play ran although three hosts failed, with the results as data
    results = json.loads(marker.read_text())
    assert results['failed_hosts'] == ['gpu-node02', 'gpu-node03', 'gpu-node04'], results
    assert results['status']['pass'] == 1 and results['run_id'] == 'awx-job-42'
    assert 'host.time_sync' in results['failed_checks']['gpu-node04'], results['failed_checks']
    # the gate still fails exactly the broken hosts, after the site's play
    assert 'gpu-node04 FAILED 1 check(s): [host.time_sync]' in out
    assert out.index("The site's own play") < out.rindex('PLAY [Fail the hosts that did not pass]')
    # what AWX keeps: the stats' custom data (artifacts), and the report outside the job's private data dir
    stats = [e for e in runner.events if e.get('event') == 'playbook_on_stats']
    assert stats and stats[-1]['event_data']['artifact_data']['xuanwu_validation']['failed_hosts'] == results['failed_hosts']
    assert (persistent / 'reports' / 'awx-job-42' / 'report.json').is_file()
    assert not any(private.rglob('report.json')), 'a report landed in the throwaway private data dir'
