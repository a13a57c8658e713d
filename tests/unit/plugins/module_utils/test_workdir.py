"""Private work directories (_workdir.py): fresh directories are private, planted fixed directories are refused."""
import os
import stat

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils._workdir import WorkDirError, ensure_fixed, make_private

NOBODY = 65534


def planted_symlink(path, tmp):
    target = os.path.join(tmp, 'elsewhere')
    os.mkdir(target, 0o700)
    os.symlink(target, path)


def foreign_owner(path, _tmp):
    os.mkdir(path, 0o700)
    os.chown(path, NOBODY, NOBODY)


def group_writable(path, _tmp):
    os.mkdir(path)
    os.chmod(path, 0o770)


def world_writable(path, _tmp):
    os.mkdir(path)
    os.chmod(path, 0o1777)


def plain_file(path, _tmp):
    with open(path, 'w') as handle:
        handle.write('x')


REFUSED = [
    (planted_symlink, 'is a symlink (to '),
    (foreign_owner, 'is not owned by the running user'),
    (group_writable, 'is writable by its group or by others'),
    (world_writable, 'is writable by its group or by others'),
    (plain_file, 'is not a directory'),
]


@pytest.mark.parametrize('plant,reason', REFUSED, ids=[p.__name__ for p, _r in REFUSED])
@pytest.mark.parametrize('create', [True, False], ids=['run', 'check_mode'])
def test_a_planted_fixed_directory_is_refused_with_path_owner_and_mode(tmp_path, plant, reason, create):
    if plant is foreign_owner and os.geteuid() != 0:
        pytest.skip('chown to another user needs root')
    path = str(tmp_path / 'xuanwu-workloads')
    plant(path, str(tmp_path))
    before = os.lstat(path)
    with pytest.raises(WorkDirError) as caught:
        ensure_fixed(path, create=create)
    message = str(caught.value)
    assert message.startswith(path + ' (owner ') and reason in message
    assert 'mode %04o' % stat.S_IMODE(before.st_mode) in message
    after = os.lstat(path)
    assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid)


def test_a_missing_fixed_directory_is_made_private_and_an_own_one_is_kept(tmp_path):
    path = str(tmp_path / 'work')
    assert ensure_fixed(path, create=False) is True and not os.path.lexists(path)
    assert ensure_fixed(path) is True
    st = os.lstat(path)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    assert ensure_fixed(path) is False


def test_a_fresh_directory_is_0700_unpredictable_and_inside_the_parent(tmp_path):
    parent = str(tmp_path)
    os.chmod(parent, 0o1777)
    first, second = make_private(parent, 'xuanwu-ofed.'), make_private(parent, 'xuanwu-ofed.')
    assert first != second
    for path in (first, second):
        st = os.lstat(path)
        assert os.path.dirname(path) == parent and os.path.basename(path).startswith('xuanwu-ofed.')
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    assert make_private(parent, 'x.', create=False) == os.path.join(parent, 'x.XXXXXXXX')


@pytest.mark.parametrize('mode,reason', [(0o777, 'writable by its group or by others and not sticky'),
                                         (0o775, 'writable by its group or by others and not sticky')])
def test_a_parent_others_can_rename_in_is_refused(tmp_path, mode, reason):
    parent = str(tmp_path / 'shared')
    os.mkdir(parent)
    os.chmod(parent, mode)
    with pytest.raises(WorkDirError) as caught:
        make_private(parent, 'xuanwu-')
    assert reason in str(caught.value) and parent in str(caught.value)
    assert os.listdir(parent) == []
    with pytest.raises(WorkDirError):
        ensure_fixed(os.path.join(parent, 'work'))
    assert os.listdir(parent) == []


@pytest.mark.parametrize('call', [lambda: make_private('relative/dir', 'x'), lambda: ensure_fixed('relative'),
                                  lambda: make_private('/nonexistent-parent-xuanwu', 'x'), lambda: make_private('/tmp', '../x')])
def test_bad_input_is_a_clear_error(call):
    with pytest.raises(WorkDirError):
        call()
