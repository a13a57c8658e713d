# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pack the collection's module_utils for role health_watch, on the controller.

    python pack_module_utils.py MODULE_UTILS_DIR

Writes a gzip'd tar to a new temporary file and prints its path. The tar holds
``ansible_collections/xuanwu/cluster/plugins/module_utils/*.py`` (the ``*.py`` files of MODULE_UTILS_DIR only: never
its ``__pycache__``) and an empty ``__init__.py`` at every package level, folders 0755 and files 0644 owned by root
(0:0). Each file keeps its own modification time: ``unarchive`` compares it (so an unchanged file is not copied
again), and Python's bytecode cache on the node checks its ``.pyc`` against it. The gzip header has no time, so the
same files make the same bytes.
"""

from __future__ import absolute_import, division, print_function

import gzip
import io
import os
import sys
import tarfile
import tempfile

PACKAGE = ('ansible_collections', 'xuanwu', 'cluster', 'plugins', 'module_utils')


def _entry(name, kind, mode, size=0, mtime=0):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.mtime = mtime
    info.uid = info.gid = 0
    info.uname = info.gname = 'root'
    return info


def pack(source, handle):
    names = sorted(n for n in os.listdir(source) if n.endswith('.py') and os.path.isfile(os.path.join(source, n)))
    if '_health.py' not in names:
        raise SystemExit('%s has no _health.py: not the collection\'s module_utils' % source)
    with gzip.GzipFile(filename='', mode='wb', fileobj=handle, mtime=0) as packed:
        with tarfile.open(fileobj=packed, mode='w', format=tarfile.GNU_FORMAT) as tar:
            for depth in range(1, len(PACKAGE) + 1):
                folder = '/'.join(PACKAGE[:depth])
                tar.addfile(_entry(folder + '/', tarfile.DIRTYPE, 0o755))
                if depth < len(PACKAGE) or '__init__.py' not in names:
                    tar.addfile(_entry(folder + '/__init__.py', tarfile.REGTYPE, 0o644), io.BytesIO(b''))
            for name in names:
                path = os.path.join(source, name)
                with open(path, 'rb') as src:
                    data = src.read()
                mtime = int(os.stat(path).st_mtime)
                tar.addfile(_entry('/'.join(PACKAGE + (name,)), tarfile.REGTYPE, 0o644, len(data), mtime), io.BytesIO(data))


def main(argv):
    if len(argv) != 1:
        sys.stderr.write('usage: pack_module_utils.py MODULE_UTILS_DIR\n')
        return 2
    fd, path = tempfile.mkstemp(prefix='xuanwu-health-', suffix='.tar.gz')
    try:
        with os.fdopen(fd, 'wb') as handle:
            pack(argv[0], handle)
    except BaseException:
        os.unlink(path)
        raise
    print(path)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
