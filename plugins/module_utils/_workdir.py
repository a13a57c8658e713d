# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private work directories on the node (no Ansible imports; Python 3.8 compatible).

A role that copies scripts or archives to a node and runs or unpacks them as root must not work in a
directory another local user can write to, replace or point elsewhere. Two ways to get one:

- ``make_private(parent, prefix)``: a fresh directory made by ``tempfile.mkdtemp`` (0700, an
  unpredictable name, owned by the running user) in a parent that others cannot rename it out of.
- ``ensure_fixed(path)``: a fixed directory a user still names. It is made 0700 when missing
  (``mkdir`` fails rather than follows what another user planted meanwhile) and refused when it is a
  symlink, not a directory, not owned by the running user, or writable by group or others.

Problems raise ``WorkDirError`` with a message that names the path, its owner and its mode.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat
import tempfile


class WorkDirError(Exception):
    pass


def _owner(uid):
    try:
        import pwd
        return '%s (uid %d)' % (pwd.getpwuid(uid).pw_name, uid)
    except (ImportError, KeyError):
        return 'uid %d' % uid


def describe(path, st):
    """``path`` (owner NAME (uid N), mode 0NNN)."""
    return '%s (owner %s, mode %04o)' % (path, _owner(st.st_uid), stat.S_IMODE(st.st_mode))


def fixed_dir_problem(path, st, uid):
    """Why the existing directory ``path`` (its lstat ``st``) is no private work directory of ``uid``; '' when it is one."""
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        return '%s is a symlink (to %s): refusing to follow it' % (describe(path, st), target)
    if not stat.S_ISDIR(st.st_mode):
        return '%s is not a directory' % describe(path, st)
    if st.st_uid != uid:
        return '%s is not owned by the running user %s' % (describe(path, st), _owner(uid))
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return '%s is writable by its group or by others' % describe(path, st)
    return ''


def parent_problem(parent, st, uid):
    """Why ``parent`` (its stat ``st``) cannot hold a private directory; '' when it can.

    Others may write to it only when it is sticky (like /tmp and /var/tmp): otherwise they could rename
    the private directory away and put their own in its place."""
    if not stat.S_ISDIR(st.st_mode):
        return 'the work directory parent %s is not a directory' % describe(parent, st)
    if st.st_uid not in (0, uid):
        return 'the work directory parent %s is owned by neither root nor the running user %s' % (describe(parent, st), _owner(uid))
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return 'the work directory parent %s is writable by its group or by others and not sticky' % describe(parent, st)
    return ''


def _require_absolute(path, what):
    if not isinstance(path, str) or not os.path.isabs(path):
        raise WorkDirError('%s must be an absolute path, got %r' % (what, path))


def check_parent(parent):
    """Raise WorkDirError unless ``parent`` may hold a private directory; return its stat."""
    _require_absolute(parent, 'the work directory parent')
    try:
        st = os.stat(parent)
    except OSError as err:
        raise WorkDirError('the work directory parent %s cannot be used: %s' % (parent, err.strerror))
    problem = parent_problem(parent, st, os.geteuid())
    if problem:
        raise WorkDirError(problem)
    return st


def make_private(parent, prefix, create=True):
    """A fresh private directory in ``parent``: its path. With ``create`` false (check mode), nothing is made and the
    path is ``parent/prefixXXXXXXXX``."""
    if '/' in prefix or prefix in ('', '.', '..'):
        raise WorkDirError('the work directory name prefix must be a plain name, got %r' % (prefix,))
    check_parent(parent)
    if not create:
        return os.path.join(parent, prefix + 'XXXXXXXX')
    try:
        return tempfile.mkdtemp(prefix=prefix, dir=parent)
    except OSError as err:
        raise WorkDirError('cannot make a private directory in %s: %s' % (parent, err.strerror))


def ensure_fixed(path, create=True):
    """Check (and with ``create``, make 0700 when missing) the fixed work directory ``path``.

    Returns True when the directory is missing (it was made, or would be with ``create`` false)."""
    _require_absolute(path, 'the work directory')
    path = os.path.normpath(path)
    uid = os.geteuid()
    missing = False
    try:
        st = os.lstat(path)
    except OSError as err:
        if err.errno != errno.ENOENT:
            raise WorkDirError('the work directory %s cannot be used: %s' % (path, err.strerror))
        missing = True
        check_parent(os.path.dirname(path))
        if not create:
            return True
        try:
            os.mkdir(path, 0o700)
        except OSError as err:
            if err.errno != errno.EEXIST:
                raise WorkDirError('cannot make the work directory %s: %s' % (path, err.strerror))
            # Someone made it between the lstat and the mkdir: it is judged like any existing path below.
            missing = False
        st = os.lstat(path)
    problem = fixed_dir_problem(path, st, uid)
    if problem:
        raise WorkDirError(problem)
    return missing
