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


def _renderers(**special):
    files = dict(('f%d.txt' % i, (lambda i=i: 'text %d\n' % i)) for i in range(5))
    files.update(special)
    return files


def test_the_report_files_are_written_side_by_side_each_private(tmp_path):
    os.umask(0o022)
    parent = os.getpid()
    files = _renderers(**{'pid.txt': lambda: str(os.getpid())})
    assert validation_report._write_files(str(tmp_path), files, side_by_side=True) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)
    assert all((tmp_path / ('f%d.txt' % i)).read_text() == 'text %d\n' % i for i in range(5))
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o640 for p in tmp_path.iterdir())
    # rendered in a child process: the controller's worker waits for them, nothing is left running
    assert (tmp_path / 'pid.txt').read_text() != str(parent)
    with pytest.raises(ChildProcessError):      # reaped: no zombie left
        os.waitpid(int((tmp_path / 'pid.txt').read_text()), os.WNOHANG)


@pytest.mark.parametrize('side_by_side', [True, False])
def test_a_renderer_that_breaks_or_a_file_that_cannot_be_written_is_named_and_the_others_are_written(tmp_path, side_by_side):
    (tmp_path / 'report.html').symlink_to(tmp_path / 'elsewhere')

    def broken():
        raise KeyError('summary')
    files = _renderers(**{'report.md': broken, 'report.html': lambda: 'x'})
    errors = dict(validation_report._write_files(str(tmp_path), files, side_by_side=side_by_side))
    assert errors['report.md'] == "KeyError: 'summary'"
    assert 'Too many levels of symbolic links' in errors['report.html'] or 'symbolic' in errors['report.html'].lower()
    assert sorted(errors) == ['report.html', 'report.md']
    assert all((tmp_path / ('f%d.txt' % i)).read_text() == 'text %d\n' % i for i in range(5))
    assert not (tmp_path / 'elsewhere').exists()


def test_a_writer_that_hangs_is_stopped_and_said_so(tmp_path):
    import time

    def hangs():
        time.sleep(60)
        return 'never'
    started = time.monotonic()
    errors = validation_report._write_files(str(tmp_path), _renderers(**{'report.json': hangs}), timeout=1, side_by_side=True)
    assert time.monotonic() - started < 20
    assert errors == [('report.json', 'not written within 1 s (stopped)')]
    assert (tmp_path / 'f0.txt').read_text() == 'text 0\n'


def test_side_by_side_only_with_cpus_to_spare(monkeypatch, tmp_path):
    pids = []
    files = {'a': lambda: pids.append(os.getpid()) or 'a', 'b': lambda: pids.append(os.getpid()) or 'b'}
    monkeypatch.setattr(validation_report, '_usable_cpus', lambda: 2)
    assert validation_report._write_files(str(tmp_path), files) == []
    assert pids == [os.getpid(), os.getpid()]      # rendered here, one after the other
    monkeypatch.setattr(validation_report, '_usable_cpus', lambda: 16)
    assert validation_report._write_files(str(tmp_path), files) == []
    assert len(pids) == 2 and (tmp_path / 'b').read_text() == 'b'   # rendered in children: nothing appended here
