# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each module of plugins/modules/ carries to a node: the module_utils files of its AnsiballZ payload, found
by Ansible's own finder (``ansible.executor.module_common.recursive_finder``, as Ansible builds the payload), and
the payload's size (docs/architecture.md, "What a node module carries").

    python3 scripts/payload.py              # one row per module: its collection module_utils, their bytes, the zip
    python3 scripts/payload.py --markdown   # the same as a Markdown table
    python3 scripts/payload.py --json       # {module: {"module_utils": {name: bytes}, "zip": bytes}}

Run it with the controller's Python (the one that has ansible-core). The bytes are those of the collection's
module_utils files as they travel (source), and of the whole payload zip (Ansible's default compression,
ZIP_DEFLATED: ansible-core's own module_utils included, without the module's arguments).
"""
from __future__ import print_function

import argparse
import datetime
import io
import json
import os
import shutil
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = 'ansible_collections.xuanwu.cluster'
UTILS = 'ansible_collections/xuanwu/cluster/plugins/module_utils/'
_LOADED = []


def _collections_path():
    """A collections path whose ansible_collections/xuanwu/cluster is this checkout (a checkout is not laid out as
    one): the checkout's own when it lies in such a tree, else a temporary folder with a link to it."""
    parts = ROOT.split(os.sep)
    if parts[-3:] == ['ansible_collections', 'xuanwu', 'cluster']:
        return os.sep.join(parts[:-3])
    base = tempfile.mkdtemp(prefix='xuanwu-payload-')
    os.makedirs(os.path.join(base, 'ansible_collections', 'xuanwu'))
    os.symlink(ROOT, os.path.join(base, 'ansible_collections', 'xuanwu', 'cluster'))
    _LOADED.append(base)
    return base


def _init():
    if not _LOADED:
        from ansible.plugins.loader import init_plugin_loader  # pylint: disable=import-outside-toplevel
        init_plugin_loader([_collections_path()])
        _LOADED.append(None)


def _finder_args():
    """The trailing arguments of recursive_finder: ansible-core 2.19 takes the payload's extension manager."""
    try:
        from ansible._internal._ansiballz import _builder  # pylint: disable=import-outside-toplevel
    except ImportError:
        return ()
    return (_builder.ExtensionManager.create(task_vars={}),)


def modules():
    """The names of the collection's modules (plugins/modules/*.py)."""
    folder = os.path.join(ROOT, 'plugins', 'modules')
    return sorted(name[:-3] for name in os.listdir(folder) if name.endswith('.py') and not name.startswith('_'))


def payload(name):
    """(the collection's module_utils of module ``name``'s payload, by name, {name: bytes}; the payload zip's bytes)."""
    _init()
    from ansible.executor import module_common  # pylint: disable=import-outside-toplevel
    path = os.path.join(ROOT, 'plugins', 'modules', name + '.py')
    with open(path, 'rb') as handle:
        data = handle.read()
    fqn = '%s.plugins.modules.%s' % (PACKAGE, name)
    buf = io.BytesIO()
    date_time = datetime.datetime(2026, 1, 1)
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as zf:
        module_common.recursive_finder(name, fqn, data, zf, date_time, *_finder_args())
        zf.writestr(fqn.replace('.', '/') + '.py', data)
        utils = dict((info.filename[len(UTILS):-3], info.file_size) for info in zf.infolist()
                     if info.filename.startswith(UTILS) and info.filename.endswith('.py')
                     and not info.filename.endswith('__init__.py'))
    return utils, len(buf.getvalue())


def table(names=None):
    """[(module, {module_utils: bytes}, zip bytes)] of every module (or of ``names``)."""
    return [(name,) + payload(name) for name in (names or modules())]


def markdown(rows):
    out = ['| module | module_utils it carries | their bytes | payload zip, bytes |', '|---|---|---:|---:|']
    for name, utils, size in rows:
        out.append('| `%s` | %s | %d | %d |' % (
            name, ', '.join('`%s`' % u for u in sorted(utils)) or '-', sum(utils.values()), size))
    return '\n'.join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--markdown', action='store_true', help='a Markdown table')
    parser.add_argument('--json', action='store_true', help='JSON: {module: {"module_utils": {name: bytes}, "zip": bytes}}')
    parser.add_argument('module', nargs='*', help='these modules only (default: every module)')
    args = parser.parse_args(argv)
    try:
        rows = table(args.module)
    finally:
        for base in _LOADED:
            if base:
                shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(dict((name, {'module_utils': utils, 'zip': size}) for name, utils, size in rows), indent=1, sort_keys=True))
    elif args.markdown:
        print(markdown(rows))
    else:
        for name, utils, size in rows:
            print('%-20s %7d %7d  %s' % (name, sum(utils.values()), size, ' '.join(sorted(utils))))
    return 0


if __name__ == '__main__':
    sys.exit(main())
