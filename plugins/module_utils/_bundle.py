# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capture bundles as untrusted input, and the private directory a bundle is written to
(docs/capture-format.md, docs/security.md).

Reading: only regular files reached without following a symbolic link from the bundle directory,
at most MAX_FILE_BYTES each, decoded as UTF-8 with undecodable bytes replaced, and a manifest whose
every key is checked. Writing: a directory made fresh (or an empty one of the running user), files
created exclusively, never through a symbolic link. Both replays (node_probe, workload_run) and the
capture (node_probe) use this module; nothing here imports Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import math
import os
import stat

BUNDLE_FORMAT_VERSION = 1
MANIFEST = 'manifest.json'

# The largest file of a bundle that is read (the manifest included). The largest real output, the
# kernel log of a long-running node or nvidia-smi -q -x of 8 GPUs, is a few MiB.
MAX_FILE_BYTES = 64 * 1024 * 1024

# The statuses the capture writes (a probe that did not run is not written).
STATUSES = ('ok', 'missing', 'failed')

DIR_MODE = 0o700
FILE_MODE = 0o600

_O_NOFOLLOW = getattr(os, 'O_NOFOLLOW', 0)
_O_NONBLOCK = getattr(os, 'O_NONBLOCK', 0)
_O_DIRECTORY = getattr(os, 'O_DIRECTORY', 0)
_O_CLOEXEC = getattr(os, 'O_CLOEXEC', 0)

_KINDS = ((stat.S_ISREG, 'a regular file'), (stat.S_ISLNK, 'a symbolic link'), (stat.S_ISDIR, 'a directory'), (stat.S_ISFIFO, 'a FIFO'),
          (stat.S_ISSOCK, 'a socket'), (stat.S_ISCHR, 'a character device'), (stat.S_ISBLK, 'a block device'))


class BundleError(Exception):
    """A capture bundle that cannot be used: ``bundle`` (the directory), ``entry`` (the file or the
    manifest key) and ``reason``."""

    def __init__(self, bundle, entry, reason):
        self.bundle = bundle
        self.entry = entry
        self.reason = reason
        super(BundleError, self).__init__('capture bundle %s: %s: %s' % (bundle, entry, reason))


def _kind(mode):
    for test, name in _KINDS:
        if test(mode):
            return name
    return 'not a regular file'


def _parts(name):
    """The components of the relative path ``name``; None when it is not one inside the bundle."""
    if not isinstance(name, str) or not name or '\x00' in name or name.startswith('/'):
        return None
    parts = [p for p in name.split('/') if p not in ('', '.')]
    if not parts or '..' in parts:
        return None
    return parts


def _open_dir(path, dir_fd=None, follow=True):
    flags = os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC | (0 if follow else _O_NOFOLLOW)
    if dir_fd is None:
        return os.open(path, flags)
    return os.open(path, flags, dir_fd=dir_fd)


# ---------------------------------------------------------------------------------------------
# Reading.

def read_file(directory, name, max_bytes=MAX_FILE_BYTES):
    """Read the bundle file ``name`` (relative to ``directory``) as text.

    Returns ``(text, replaced)``: ``replaced`` is the number of byte sequences that were not UTF-8
    (each replaced by U+FFFD). The directory itself may be reached through symbolic links (it is the
    user's choice); inside it no symbolic link is followed, so nothing outside it is read. A file
    that is not a regular file is refused before it is opened for reading (a FIFO would block), and
    one larger than ``max_bytes`` is refused. Every refusal is a BundleError naming the file.
    """
    parts = _parts(name)
    if parts is None:
        raise BundleError(directory, repr(name), 'not a relative path inside the bundle')
    fds = []
    try:
        try:
            fds.append(_open_dir(directory))
        except (IOError, OSError) as err:
            raise BundleError(directory, name, 'cannot open the bundle directory: %s' % (err.strerror or err))
        for i, part in enumerate(parts[:-1]):
            try:
                fds.append(_open_dir(part, dir_fd=fds[-1], follow=False))
            except (IOError, OSError) as err:
                raise BundleError(directory, name, _refusal('/'.join(parts[:i + 1]), fds[-1], part, err))
        try:
            before = os.stat(parts[-1], dir_fd=fds[-1], follow_symlinks=False)
        except (IOError, OSError) as err:
            raise BundleError(directory, name, 'cannot read it: %s' % (err.strerror or err))
        if not stat.S_ISREG(before.st_mode):
            raise BundleError(directory, name, 'is %s; a bundle holds only regular files' % _kind(before.st_mode))
        if before.st_nlink > 1:
            # a hard link may name a file outside the bundle just as a symbolic link does
            raise BundleError(directory, name, 'has %d hard links; a bundle holds only files of their own' % before.st_nlink)
        try:
            fd = os.open(parts[-1], os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=fds[-1])
        except (IOError, OSError) as err:
            raise BundleError(directory, name, 'cannot read it: %s' % (err.strerror or err))
        fds.append(fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
            raise BundleError(directory, name, 'was replaced while it was read')
        if info.st_size > max_bytes:
            raise BundleError(directory, name, 'is %d bytes, more than the limit of %d bytes' % (info.st_size, max_bytes))
        data = _read_bounded(fd, max_bytes)
        if data is None:
            raise BundleError(directory, name, 'grew beyond the limit of %d bytes while it was read' % max_bytes)
    finally:
        for fd in reversed(fds):
            os.close(fd)
    return decode(data)


def _refusal(shown, dir_fd, part, err):
    try:
        mode = os.stat(part, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except (IOError, OSError):
        return 'cannot read %s: %s' % (shown, err.strerror or err)
    if not stat.S_ISDIR(mode):
        return '%s is %s; a bundle holds only regular files and directories' % (shown, _kind(mode))
    return 'cannot read %s: %s' % (shown, err.strerror or err)


def _read_bounded(fd, max_bytes):
    chunks = []
    total = 0
    while True:
        chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
        if not chunk:
            return b''.join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            return None


def decode(data):
    """``(text, replaced)``: ``data`` decoded as UTF-8; ``replaced`` byte sequences were not UTF-8 and became U+FFFD."""
    try:
        return data.decode('utf-8'), 0
    except UnicodeDecodeError:
        pass
    text = data.decode('utf-8', 'replace')
    # each U+FFFD in the text that was not in the bytes stands for at least one replaced byte
    return text, text.count(u'\ufffd') - data.count(u'\ufffd'.encode('utf-8'))


def load_manifest(directory, max_bytes=MAX_FILE_BYTES):
    """The bundle's ``manifest.json``, read as any bundle file, parsed and validated (validate_manifest)."""
    text, replaced = read_file(directory, MANIFEST, max_bytes)
    if replaced:
        raise BundleError(directory, MANIFEST, 'is not UTF-8 (%d byte sequences are not)' % replaced)
    try:
        manifest = json.loads(text)
    except ValueError as err:
        raise BundleError(directory, MANIFEST, 'is not valid JSON: %s' % err)
    except RecursionError:
        raise BundleError(directory, MANIFEST, 'is not a manifest: its JSON is nested too deeply')
    return validate_manifest(manifest, directory)


def _shown(value, limit=80):
    """``repr`` of a manifest value for an error message, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else '%s... (%d characters)' % (text[:limit], len(text))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


def _check_entry(entry, where):
    """The problem of one ``probes[]`` entry as ``(key, reason)``, or None."""
    if not isinstance(entry, dict):
        return where, 'must be an object, found %s' % type(entry).__name__
    for key in ('probe', 'command'):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            return '%s.%s' % (where, key), 'must be a non-empty string, found %s' % _shown(entry.get(key))
    if 'rc' in entry and not _is_int(entry['rc']):
        return '%s.rc' % where, 'must be an integer (exit code), found %s' % _shown(entry['rc'])
    if 'status' in entry:
        if entry['status'] not in STATUSES:
            return '%s.status' % where, '%s is not one of %s' % (_shown(entry['status']), ', '.join(STATUSES))
        if entry['status'] == 'ok' and entry.get('rc', 0) != 0:
            return '%s.status' % where, "'ok' with rc %r: a probe that exits non-zero is not ok" % (entry['rc'],)
    if entry.get('file') is not None and _parts(entry['file']) is None:
        return '%s.file' % where, 'must be a relative path inside the bundle, found %s' % _shown(entry['file'])
    if 'stderr' in entry and not isinstance(entry['stderr'], str):
        return '%s.stderr' % where, 'must be a string, found %s' % _shown(entry['stderr'])
    if 'seconds' in entry and entry['seconds'] is not None and not (_is_number(entry['seconds']) and entry['seconds'] >= 0):
        return '%s.seconds' % where, 'must be a finite number of seconds, 0 or more, found %s' % _shown(entry['seconds'])
    return None


def validate_manifest(manifest, directory):
    """Check every key the readers use; return ``manifest``. A BundleError names the key that is wrong."""
    if not isinstance(manifest, dict):
        raise BundleError(directory, MANIFEST, 'must be a JSON object, found %s' % type(manifest).__name__)
    version = manifest.get('format_version')
    if not _is_int(version) or version != BUNDLE_FORMAT_VERSION:
        raise BundleError(directory, MANIFEST, 'format_version must be %d, found %s' % (BUNDLE_FORMAT_VERSION, _shown(version)))
    probes = manifest.get('probes')
    if not isinstance(probes, list):
        raise BundleError(directory, MANIFEST, 'probes must be a list, found %s' % type(probes).__name__)
    seen = {}
    for i, entry in enumerate(probes):
        where = 'probes[%d]' % i
        problem = _check_entry(entry, where)
        if problem is None and entry['probe'] in seen:
            problem = '%s.probe' % where, '%s appears twice (also probes[%d])' % (_shown(entry['probe']), seen[entry['probe']])
        if problem is not None:
            raise BundleError(directory, MANIFEST, '%s: %s' % problem)
        seen[entry['probe']] = i
    return manifest


def read_entry(directory, entry, max_bytes=MAX_FILE_BYTES):
    """The standard output recorded for a validated manifest entry: ``(text, replaced)`` ('' without a file)."""
    if entry.get('file') is None:
        return '', 0
    return read_file(directory, entry['file'], max_bytes)


def recorded_run(directory, key):
    """The run recorded as entry ``key`` of the bundle, as ``workload_run`` returns one; None when the manifest has
    no such entry. An invalid manifest raises BundleError (the task fails); a file of the entry that is not read
    (docs/capture-format.md) gives ``{command, skipped_reason}``: a run not measured, with the reason. ``status`` is the
    entry's, when it has one (``missing``: the tool was not installed)."""
    manifest = load_manifest(directory)
    entry = dict((e['probe'], e) for e in manifest['probes']).get(key)
    if entry is None:
        return None
    try:
        text, replaced = read_entry(directory, entry)
    except BundleError as err:
        return dict(command=entry['command'], skipped_reason=str(err))
    rc = entry.get('rc', 0)
    tail = text + entry.get('stderr', '')
    if replaced:
        tail += '\n[%s: %d byte sequence(s) that are not UTF-8 were read as U+FFFD]' % (entry['file'], replaced)
    return dict(exit_code=rc, stdout=text, stderr=entry.get('stderr', ''), output_tail=tail[-4000:],
                seconds=float(entry.get('seconds') or 0.0), timed_out=rc == 124, command=entry['command'],
                status=entry.get('status'))


# ---------------------------------------------------------------------------------------------
# Writing.

def private_dir(path):
    """Open the directory a bundle is written to and return its descriptor.

    ``path`` is made with mode 0700 when it does not exist (its parent must exist). An existing
    ``path`` is used only when it is an empty directory owned by the running user, reached without
    following a symbolic link at its last component; anything else (a symbolic link, a file, a
    directory of another user or with files in it) is refused with a BundleError.
    """
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    try:
        os.mkdir(path, DIR_MODE)
        made = True
    except (IOError, OSError) as err:
        if err.errno != errno.EEXIST:
            reason = 'its parent directory %s does not exist' % parent if err.errno == errno.ENOENT else err.strerror or err
            raise BundleError(path, '.', 'cannot make the directory: %s' % reason)
        made = False
    try:
        fd = _open_dir(path, follow=False)
    except (IOError, OSError) as err:
        try:
            mode = os.lstat(path).st_mode
        except (IOError, OSError):
            mode = None
        what = 'is %s' % _kind(mode) if mode is not None and not stat.S_ISDIR(mode) else 'cannot be opened: %s' % (err.strerror or err)
        raise BundleError(path, '.', '%s; capture_dir must be a new directory or an empty one of the running user' % what)
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            raise BundleError(path, '.', 'is owned by uid %d, not by the running user (uid %d); refusing to write into it'
                              % (info.st_uid, os.geteuid()))
        if not made:
            present = sorted(os.listdir(fd))
            if present:
                raise BundleError(path, '.', 'already exists and is not empty (%s%s); choose a new directory'
                                  % (', '.join(present[:5]), ', ...' if len(present) > 5 else ''))
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(dir_fd, name, text):
    """Create ``name`` (mode 0600) in the directory ``dir_fd`` and write ``text``; an existing name,
    a symbolic link included, is an OSError (EEXIST), never overwritten."""
    try:
        data = text.encode('utf-8', 'surrogateescape')    # the bytes the tool printed (run_command's decoding)
    except UnicodeEncodeError:
        data = text.encode('utf-8', 'replace')
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, FILE_MODE, dir_fd=dir_fd)
    with os.fdopen(fd, 'wb') as handle:
        handle.write(data)
