"""Which NCCL the probe judges: the one the workloads load, found in a stated order, and the finding says which and how.

Real shared libraries are built here (``ncclGetVersion`` returning a chosen code, soname ``libnccl.so.2``), and the
search runs in a fresh Python each time: the dynamic loader's answer depends on LD_LIBRARY_PATH at process start, and
a library loaded once stays loaded.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _checks, _collect
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_host import parse_nccl_library, parse_nccl_version

pytestmark = pytest.mark.skipif(not shutil.which('cc') or not sys.platform.startswith('linux'),
                                reason='needs a C compiler and Linux to build the stand-in libraries')


def _lib(folder, code, name='libnccl.so.2'):
    os.makedirs(folder, exist_ok=True)
    source = os.path.join(folder, 'nccl.c')
    with open(source, 'w') as handle:
        handle.write('int ncclGetVersion(int *v) { *v = %d; return 0; }\n' % code)
    path = os.path.join(folder, name)
    subprocess.run(['cc', '-shared', '-fPIC', '-Wl,-soname,libnccl.so.2', '-o', path, source], check=True)
    os.unlink(source)
    return path


@pytest.fixture(scope='module')
def host(tmp_path_factory):
    """A wheel (2.28.9) in a site-packages that a Python wrapper puts on its sys.path, the system's (2.28.3) where
    only the loader looks, and an nccl-tests NCCL home (2.27.7)."""
    root = tmp_path_factory.mktemp('nccl')
    site = root / 'venv' / 'site-packages'
    wheel = _lib(str(site / 'nvidia' / 'nccl' / 'lib'), 22809)
    system = _lib(str(root / 'system'), 22803)
    home = root / 'home'
    built = _lib(str(home / 'lib'), 22707)
    python = root / 'venv' / 'python'
    python.write_text('#!/bin/sh\nPYTHONPATH=%s exec %s "$@"\n' % (site, sys.executable))
    python.chmod(0o755)
    hung = root / 'hung-python'
    # a wrapper whose child keeps the output pipe open after the wrapper itself is stopped
    hung.write_text('#!/bin/sh\nsleep 60 &\nexec sleep 60\n')
    hung.chmod(0o755)
    return dict(root=root, wheel=wheel, system=system, home=str(home), built=built, python=str(python), hung=str(hung))


def _search(ld_path='', timeout=None, **kwargs):
    """nccl_version_text(**kwargs) in a fresh Python with LD_LIBRARY_PATH=ld_path and no usual places of this machine."""
    code = textwrap.dedent('''
        import json, sys
        sys.path[:0] = %r
        from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect
        _collect.NCCL_GLOBS = ()
        if %r is not None:
            _collect.NCCL_PYTHON_TIMEOUT = %r
        print(json.dumps(_collect.nccl_version_text(**%r)))
    ''' % (list(sys.path), timeout, timeout, kwargs))
    env = dict(os.environ, LD_LIBRARY_PATH=ld_path)
    proc = subprocess.run([sys.executable, '-c', code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                          check=False, universal_newlines=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_torch_wheel_is_judged_before_the_loaders_system_library_and_both_are_named(host):
    text = _search(ld_path=os.path.dirname(host['system']), python=host['python'])
    library = parse_nccl_library(text)
    assert parse_nccl_version(text) == '2.28.9'
    assert library['path'] == host['wheel'] and library['version'] == '2.28.9'
    assert library['found_by'] == _collect.NCCL_FOUND_BY['python'] % host['python']
    assert library['others'] == [{'path': host['system'], 'version': '2.28.3', 'found_by': _collect.NCCL_FOUND_BY['loader']}]


def test_without_a_wheel_the_loaders_library_is_judged_with_its_real_path(host):
    text = _search(ld_path=os.path.dirname(host['system']), python=sys.executable)
    library = parse_nccl_library(text)
    assert (library['path'], library['version'], library['others']) == (host['system'], '2.28.3', [])
    assert 'dynamic loader' in library['found_by']


def test_the_order_is_globs_then_the_nccl_tests_home_then_the_wheel_then_the_loader(host):
    text = _search(ld_path=os.path.dirname(host['system']), python=host['python'], nccl_home=host['home'],
                   extra_globs=[os.path.dirname(host['system']) + '/libnccl.so*'])
    library = parse_nccl_library(text)
    # the glob names the loader's file: it is judged first, said as named by the glob, and listed once
    assert library['path'] == host['system'] and 'xuanwu_nccl_library_globs' in library['found_by']
    assert [(o['path'], o['version']) for o in library['others']] == [(host['built'], '2.27.7'), (host['wheel'], '2.28.9')]
    assert 'nccl_tests_build_nccl_home %s' % host['home'] in library['others'][0]['found_by']
    text = _search(ld_path=os.path.dirname(host['system']), python=host['python'], nccl_home=host['home'])
    assert parse_nccl_library(text)['path'] == host['built']


def test_a_relative_nccl_home_or_a_python_with_a_newline_is_not_used(host):
    text = _search(python=host['python'] + '\n', nccl_home='lib')
    assert text is None


def test_a_torch_python_that_never_answers_is_stopped_with_its_children_and_the_loader_still_answers(host):
    started = time.monotonic()
    text = _search(ld_path=os.path.dirname(host['system']), python=host['hung'], timeout=1)
    assert time.monotonic() - started < 30
    assert parse_nccl_library(text)['path'] == host['system']


def test_nothing_found_is_none_and_the_version_is_unknown():
    assert _search(python=sys.executable) is None
    assert parse_nccl_version('') is None


def _judge(software, want):
    facts = {'software': software, 'probes': {'nccl_version': {'status': 'ok', 'command': 'internal:nccl_version'}}}
    return _checks.check_node(facts, {'software': want}, 'node1')


def _nccl_findings(findings):
    return [f for f in findings if f['check'] == 'software.nccl_version']


def test_a_mismatch_names_the_library_how_it_was_found_and_the_one_that_would_pass():
    software = {'nccl_version': '2.28.3', 'nccl_library': {
        'path': '/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3', 'version': '2.28.3',
        'found_by': _collect.NCCL_FOUND_BY['loader'],
        'others': [{'path': '/opt/t/nvidia/nccl/lib/libnccl.so.2', 'version': '2.28.9', 'found_by': 'the NCCL wheel'}]}}
    found = _nccl_findings(_judge(software, {'nccl_version': '2.28.9'}))
    assert len(found) == 1
    message = found[0]['message']
    assert 'NCCL 2.28.3 does not match 2.28.9' in message
    assert '/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3: the dynamic loader' in message
    assert '/opt/t/nvidia/nccl/lib/libnccl.so.2 (the NCCL wheel) is 2.28.9, as the profile wants' in message
    # none of the others would pass: only the library judged is named
    software['nccl_library']['others'][0]['version'] = '2.27.7'
    message = _nccl_findings(_judge(software, {'nccl_version': '2.28.9'}))[0]['message']
    assert 'libnccl.so.2.28.3: the dynamic loader' in message and '2.27.7' not in message
    # the one judged passes: no finding
    assert _nccl_findings(_judge(dict(software, nccl_version='2.28.9'), {'nccl_version': '2.28.9'})) == []


def test_not_found_says_where_it_looked():
    found = _nccl_findings(_judge({'nccl_version': None, 'nccl_library': None}, {'nccl_version_min': '2.20.0'}))
    assert len(found) == 1 and 'NCCL not found on the node' in found[0]['message']
    assert 'xuanwu_torch_python' in found[0]['message'] and 'dynamic loader' in found[0]['message']
