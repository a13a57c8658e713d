# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe's entry on the node: its options checked, its tools found and run, and its raw answer.

One code path for both ways the probe reaches a node: the ``node_probe`` module (AnsiballZ, Ansible's module
framework) and the direct answer that ``node_validate`` asks for (plugin_utils/_direct: this file, _collect, _bundle
and _commands sent to the node's Python on standard input, without Ansible's module framework, whose import alone
cost each node more CPU than the whole probe; docs/architecture.md, "Cost per host"). Nothing here imports Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import os
import re
import signal
import subprocess

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect

# Where a probe's tools are looked for first, then PATH, then the sbin folders (as Ansible's get_bin_path does).
SEARCH_DIRS = ['/usr/sbin', '/sbin', '/usr/local/sbin', '/usr/local/cuda/bin', '/usr/local/nvidia/bin', '/opt/mellanox/bin']
SBIN_DIRS = ['/sbin', '/usr/sbin', '/usr/local/sbin']
# A tool that outlives its own bound (``timeout -k 5 T``, or no ``timeout`` on the node) is stopped this much later.
RUN_GRACE_SECONDS = 15
# The answer's options and their defaults (node_probe's argument spec is the same, with Ansible's types).
OPTIONS = {'gather': ['all'], 'interfaces': None, 'disk_paths': ['/'], 'replay_dir': None, 'timeout': 60,
           'nccl_library_globs': [], 'nccl_python': 'python3', 'nccl_home': None, 'process_patterns': None,
           'stage': 'start', 'read_tests': []}


class ProbeOptionError(ValueError):
    """An option the probe cannot run with; the message names it."""


def find_tool(name, opt_dirs=None):
    """The executable ``name`` in ``opt_dirs`` (default SEARCH_DIRS), then PATH, then the sbin folders; or None."""
    dirs = [d for d in (SEARCH_DIRS if opt_dirs is None else opt_dirs) if d and os.path.exists(d)]
    dirs += os.environ.get('PATH', '').split(os.pathsep)
    dirs += [d for d in SBIN_DIRS if d not in dirs and os.path.exists(d)]
    for folder in dirs:
        path = os.path.join(folder, name)
        if os.path.exists(path) and not os.path.isdir(path) and os.access(path, os.X_OK):
            return path
    return None


def run_tool(argv, bound=None):
    """``(rc, stdout, stderr)`` of ``argv`` in the C locale, its standard input empty, in a session of its own; a
    command still running ``bound`` seconds later (None: no bound) is stopped with its whole group, rc 124."""
    env = dict(os.environ, LC_ALL='C', TERM='dumb')
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                close_fds=True, start_new_session=True)
    except (OSError, ValueError) as err:
        return 127, '', '%s: %s' % (argv[0], err)
    try:
        out, err = proc.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            out, err = b'', b''
        return 124, out.decode('utf-8', 'replace'), 'stopped after %ss; %s' % (bound, err.decode('utf-8', 'replace'))
    return proc.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def _path(value):
    """A path as Ansible's ``path`` type reads it on the node: ``~`` and variables expanded."""
    return os.path.expanduser(os.path.expandvars(value))


def check_options(params, expand=True):
    """``params`` with defaults, paths expanded on the node (``expand``: not done yet, as Ansible's module framework
    has) and every value checked; ProbeOptionError names the first wrong one."""
    p = dict(OPTIONS)
    p.update(dict((key, value) for key, value in (params or {}).items() if key in OPTIONS and value is not None))
    unknown = sorted(set(params or {}) - set(OPTIONS))
    if unknown:
        raise ProbeOptionError('unknown option(s): %s' % ', '.join(unknown))
    for name in ('gather', 'disk_paths', 'nccl_library_globs'):
        if not isinstance(p[name], list) or not all(isinstance(item, str) for item in p[name]):
            raise ProbeOptionError('%s must be a list of strings' % name)
    for name in ('interfaces', 'process_patterns'):
        if p[name] is not None and (not isinstance(p[name], list) or not all(isinstance(item, str) for item in p[name])):
            raise ProbeOptionError('%s must be a list of strings' % name)
    bad = [group for group in p['gather'] if group != 'all' and group not in _collect.GROUPS]
    if bad:
        raise ProbeOptionError('gather: %s is not one of all, %s' % (', '.join(bad), ', '.join(_collect.GROUPS)))
    if isinstance(p['timeout'], bool) or not isinstance(p['timeout'], int) or p['timeout'] < 0:
        raise ProbeOptionError('timeout must be 0 or more, got %r' % (p['timeout'],))
    if p['stage'] not in ('start', 'end'):
        raise ProbeOptionError('stage must be start or end, got %r' % (p['stage'],))
    for name in ('replay_dir', 'nccl_python', 'nccl_home'):
        if p[name] is not None and not isinstance(p[name], str):
            raise ProbeOptionError('%s must be a string' % name)
    for pattern in p['process_patterns'] or []:
        try:
            re.compile(pattern)
        except re.error as err:
            raise ProbeOptionError('process_patterns: %r is not a regular expression: %s' % (pattern, err))
    if not isinstance(p['read_tests'], list):
        raise ProbeOptionError('read_tests must be a list')
    tests = []
    for index, test in enumerate(p['read_tests']):
        if not isinstance(test, dict) or not isinstance(test.get('path'), str):
            raise ProbeOptionError('read_tests[%d] must be a mapping with a path' % index)
        test = dict({'max_bytes': 1 << 30, 'max_seconds': 10.0}, **test)
        test['path'] = _path(test['path']) if expand else test['path']
        if not test['path'].startswith('/') or re.search(r'[\x00-\x1f\x7f]', test['path']):
            raise ProbeOptionError('read_tests[%d].path: %r is not an absolute path without control characters' % (index, test['path']))
        if isinstance(test['max_bytes'], bool) or not isinstance(test['max_bytes'], int) or test['max_bytes'] < 1 or \
                isinstance(test['max_seconds'], bool) or not isinstance(test['max_seconds'], (int, float)) or \
                not 0 < test['max_seconds'] <= 3600:
            raise ProbeOptionError('read_tests[%d]: max_bytes must be 1 or more and max_seconds in (0, 3600]' % index)
        tests.append(test)
    p['read_tests'] = tests
    if expand:
        p['disk_paths'] = [_path(path) for path in p['disk_paths']]
        p['replay_dir'] = _path(p['replay_dir']) if p['replay_dir'] else p['replay_dir']
    return p


def runner(p, run=run_tool, which=find_tool):
    """The runner of checked options ``p``: the capture bundle of ``replay_dir``, else the node's own tools
    (``run(argv, bound)`` and ``which(name)``, run_tool and find_tool unless a test passes others)."""
    if p['replay_dir']:
        return _collect.ReplayRunner(p['replay_dir'])

    def nccl_python():
        name = p['nccl_python']
        if not name:
            return None
        if os.path.isabs(name):
            return name if os.access(name, os.X_OK) else None
        return which(name)

    # each tool has its own bound (timeout -k 5 T where the node has timeout); this one holds where it has not
    bound = p['timeout'] + RUN_GRACE_SECONDS if p['timeout'] else None
    internals = {'nccl_version': lambda: _collect.nccl_version_text(p['nccl_library_globs'], python=nccl_python(),
                                                                    nccl_home=p['nccl_home']),
                 'proc_net_listening': _collect.proc_net_listening_text}
    for test in p['read_tests']:
        internals['storage_read:' + test['path']] = functools.partial(_collect.storage_read_text, test['path'],
                                                                      test['max_bytes'], test['max_seconds'])
    return _collect.LiveRunner(lambda argv: run(argv, bound), which, internals=internals, timeout=p['timeout'])


def groups(p):
    return _collect.GROUPS if 'all' in p['gather'] else tuple(p['gather'])


def raw_answer(p, probe_runner=None, capture=None):
    """The raw answer of checked options ``p`` (node_probe ``parse: false``): ``{outputs, source, disk_paths,
    read_paths}``. Raises _collect.BundleError for a capture bundle that cannot be read."""
    probe_runner = probe_runner or runner(p)
    read_paths = [test['path'] for test in p['read_tests']]
    disk_paths = list(p['disk_paths']) or ['/']
    done = _collect.collect(probe_runner, groups=groups(p), interfaces=p['interfaces'], disk_paths=tuple(disk_paths),
                            capture=capture, stage=p['stage'], read_paths=read_paths)
    return {'outputs': _collect.answer(done, p['process_patterns']), 'source': 'replay' if probe_runner.replay else 'live',
            'disk_paths': disk_paths, 'read_paths': read_paths}


def direct(params):
    """The direct answer (plugin_utils/_direct runs this on the node): the raw answer, or ``{failed, msg}``."""
    try:
        return dict(raw_answer(check_options(params)), changed=False)
    except ProbeOptionError as err:
        return {'failed': True, 'msg': 'node_probe: %s' % err}
    except _collect.BundleError as err:
        return {'failed': True, 'msg': str(err)}
