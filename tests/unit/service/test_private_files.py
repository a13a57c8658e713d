"""What an attempt leaves in its folder with an explicit mode despite its umask 077 loses the group's and others'
access once the attempt ends (``secure.private_tree``); a link is never followed, a FIFO never opened."""
import os
import stat

from xuanwu.secure import private_tree


def _mode(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def test_private_tree_takes_group_and_others_access_and_follows_no_link(tmp_path):
    outside = tmp_path / 'outside'
    outside.mkdir(mode=0o755)
    (outside / 'shared.txt').write_text('not the job\'s')
    (outside / 'shared.txt').chmod(0o644)
    top = tmp_path / 'attempt-1'
    (top / 'artifacts' / 'fact_cache').mkdir(parents=True)
    (top / 'artifacts').chmod(0o755)
    (top / 'artifacts' / 'fact_cache' / 'node-1').write_text('{}')
    (top / 'artifacts' / 'fact_cache' / 'node-1').chmod(0o644)
    (top / 'run.sh').write_text('#!/bin/sh\n')
    (top / 'run.sh').chmod(0o755)
    (top / 'private.txt').write_text('')
    (top / 'private.txt').chmod(0o600)
    (top / 'link-to-file').symlink_to(outside / 'shared.txt')
    (top / 'link-to-folder').symlink_to(outside)
    os.mkfifo(str(top / 'pipe'), 0o644)
    top.chmod(0o750)
    private_tree(top)
    assert [_mode(p) for p in (top, top / 'artifacts', top / 'artifacts' / 'fact_cache')] == [0o700, 0o700, 0o700]
    assert _mode(top / 'artifacts' / 'fact_cache' / 'node-1') == 0o600
    assert (_mode(top / 'run.sh'), _mode(top / 'private.txt')) == (0o700, 0o600)
    assert (_mode(outside), _mode(outside / 'shared.txt')) == (0o755, 0o644)
    assert _mode(top / 'pipe') == 0o644     # not opened (it would block), not a file of the job's output
    private_tree(tmp_path / 'missing')      # an attempt that made no folder: nothing to do
