"""The report files are private (0640 in a 0750 folder) and hold no secret of the hosts' environments."""
import os
import stat

import pytest

from ansible_collections.xuanwu.cluster.plugins.action import validation_report
from ansible_collections.xuanwu.cluster.plugins.module_utils import _redact
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report


def test_a_report_file_is_0640_also_where_it_existed(tmp_path):
    old = tmp_path / 'report.json'
    old.write_text('old')
    old.chmod(0o666)
    os.umask(0o022)
    for path in (old, tmp_path / 'report.md'):
        validation_report._write_private(str(path), 'new')
        assert path.read_text() == 'new'
        assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_report_file_is_never_written_through_a_symlink(tmp_path):
    target = tmp_path / 'elsewhere'
    target.write_text('keep')
    (tmp_path / 'report.html').symlink_to(target)
    with pytest.raises(OSError):
        validation_report._write_private(str(tmp_path / 'report.html'), 'new')
    assert target.read_text() == 'keep'


def test_the_secrets_of_every_environment_of_a_host_are_masked_in_the_report():
    host_vars = {'xuanwu_nccl_env': {'https_proxy': 'http://u:s3cr3t@p:3128', 'NCCL_SOCKET_IFNAME': 'eth0'},
                 'xuanwu_torch_env': {'WANDB_KEY': 'w4ndb-k3y', 'MY_PASSWORD': 'hunter2'},
                 'xuanwu_redact_env_keys': ['wandb_key']}
    secrets = validation_report._secrets_of(host_vars)
    assert sorted(secrets) == ['hunter2', 's3cr3t', 'w4ndb-k3y']
    finding = {'check': 'workload.task_error', 'component': 'soak', 'severity': 'fail', 'host': 'n1',
               'message': 'login hunter2 failed, key w4ndb-k3y, proxy http://u:s3cr3t@p:3128', 'remediation': 'eth0'}
    entry = _report.host_entry('n1', 'fail', [finding], {}, 'p', '/p.yml')
    report = _redact.redact(_report.build_report('r', 's', 'f', '0', '2', 'validate', {'n1': entry}, {}), secrets)
    assert 'login *** failed, key ***, proxy http://u:***@p:3128' in _report.render_json(report)
    for text in (_report.render_json(report), _report.render_markdown(report), _report.render_html(report),
                 _report.render_junit(report, {})):
        assert not any(s in text for s in ('hunter2', 's3cr3t', 'w4ndb-k3y'))
        assert 'eth0' in text  # what is not secret is kept


@pytest.mark.parametrize('umask, report, kit_script', [(0o022, 0o640, 0o755), (0o027, 0o640, 0o750),
                                                       (0o077, 0o600, 0o700)], ids=['022', '027', '077'])
def test_the_modes_of_reports_and_launch_kits_take_the_umask(tmp_path, umask, report, kit_script):
    """A stricter umask (the job service's 077) keeps the group out of what the collection writes with its modes."""
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _launch_kit, _paths, _runrecord
    before = os.umask(umask)
    try:
        validation_report._write_private(str(tmp_path / 'report.json'), '{}')
        _runrecord.write_atomic(str(tmp_path / 'launch-mpirun.sh'), '#!/bin/sh\n', _launch_kit.SCRIPT_MODE)
        assert stat.S_IMODE((tmp_path / 'report.json').stat().st_mode) == report
        assert stat.S_IMODE((tmp_path / 'launch-mpirun.sh').stat().st_mode) == kit_script
        assert _paths.umask_mode(0o750) == 0o750 & ~umask
    finally:
        os.umask(before)
