# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Names that come from an inventory or a node (host names, run ids) made safe to use as one path component; where
the controller writes, and the modes of what it writes there."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re

_UNSAFE = re.compile('[^A-Za-z0-9._-]')
MAX_LENGTH = 100


def safe_name(name):
    """``name`` as one file name that stays in its folder.

    A name made only of ``A-Z a-z 0-9 . _ -`` (not empty, ``.`` or ``..``, at most ``MAX_LENGTH``
    characters) is kept as it is. Any other name has each other character replaced by ``_``
    (dots too, when only dots are left), is cut to ``MAX_LENGTH`` - 9 characters and gets ``-`` and
    the first 8 hex digits of the SHA-256 of the original name appended: two hosts whose names
    collapse to the same text (``a/b`` and ``a:b``) still get different folders, and the same host
    always gets the same one.
    """
    if not isinstance(name, str):
        raise TypeError('a name to use as a file name must be a string, not %s' % type(name).__name__)
    safe = _UNSAFE.sub('_', name)
    if safe == name and name not in ('', '.', '..') and len(name) <= MAX_LENGTH:
        return name
    if not safe.strip('.'):
        safe = '_' * len(safe)
    digest = hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]
    return '%s-%s' % (safe[:MAX_LENGTH - 1 - len(digest)] or '_', digest)


def umask_mode(mode):
    """``mode`` less what the process's umask withholds: the modes the collection gives its reports, run records and
    launch kits (0640, 0750, the kit's 0644 and 0755) are the most the owner's group and others get, and a stricter
    umask keeps more from them (the job service runs playbooks with 077: 0600 files, 0700 folders). ``chmod``, unlike
    the mode of a new file, ignores the umask: every chmod of those files goes through here."""
    return mode & ~_umask()


def _umask():
    try:
        with open('/proc/self/status') as handle:
            for line in handle:
                if line.startswith('Umask:'):
                    return int(line.split()[1], 8)
    except (IOError, OSError, ValueError, IndexError):
        pass
    current = os.umask(0o077)   # no /proc: read it by setting it, and put it back at once
    os.umask(current)
    return current


def under_cwd(name):
    """``name`` (a relative folder such as ``reports``) under the controller's working directory, as the process
    has it (``os.getcwd()``), never ``$PWD``: a service or a job may run without that variable, or with a parent's."""
    if not isinstance(name, str) or not name or os.path.isabs(name):
        raise TypeError('under_cwd needs a relative folder name, got %r' % (name,))
    try:
        cwd = os.getcwd()
    except OSError as err:
        raise TypeError('the working directory of the controller cannot be read (%s): set the folder explicitly' % (err.strerror or err))
    return os.path.join(cwd, name)
