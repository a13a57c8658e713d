"""Filter xuanwu.cluster.parse: the probe's parsers, as the roles use them."""
import glob
import os
import sys
import types

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.filter import parse as parse_filter
from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_host, _parse_net, _parse_nvidia, _probe

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
parse = parse_filter.parse


def test_documented_choices_are_the_parsers():
    with open(os.path.join(ROOT, 'plugins', 'filter', 'parse.yml')) as handle:
        doc = yaml.safe_load(handle)['DOCUMENTATION']
    assert sorted(doc['options']['parser']['choices']) == sorted(parse_filter.PARSERS)


def test_every_probe_parser_is_reachable():
    used = set()
    for probe in _probe.all_probes():
        used.update(_probe.parser(alt.parser) for alt in probe.alternatives)
    assert used <= set(parse_filter.PARSERS.values())


def test_every_parser_module_is_discovered():
    """No list to keep up to date: each plugins/module_utils/_parse_*.py is read, each of its parse_<name> reachable."""
    files = glob.glob(os.path.join(ROOT, 'plugins', 'module_utils', '_parse_*.py'))
    names = sorted(os.path.basename(path)[:-3] for path in files)
    assert [module.__name__.rsplit('.', 1)[1] for module in parse_filter.parser_modules()] == names
    for name in ('amd_static', 'rocm_smi_topo', 'clock_events', 'dmon', 'nccl_tests'):
        assert name in parse_filter.PARSERS, name
    # a parser imported by another parser module is listed once, as its own module's
    assert parse_filter.PARSERS['ip_link'].__module__.endswith('._parse_net')


def _module(name, **functions):
    module = types.ModuleType(name)
    for attr, func in functions.items():
        func.__module__ = name
        setattr(module, attr, func)
    return module


def test_a_parser_name_defined_twice_is_an_error(tmp_path, monkeypatch):
    with pytest.raises(AnsibleFilterError, match=r"parser 'thing' is defined twice, in pkg\._parse_a and pkg\._parse_b"):
        parse_filter.parsers([_module('pkg._parse_a', parse_thing=lambda text: 1),
                              _module('pkg._parse_b', parse_thing=lambda text: 2)])
    # the same through discovery: a package with two _parse_ modules that clash fails when its parsers are listed
    package = tmp_path / 'clashpkg'
    package.mkdir()
    (package / '__init__.py').write_text('')
    for name in ('_parse_a', '_parse_b'):
        (package / (name + '.py')).write_text('def parse_thing(text):\n    return text\n')
    (package / '_other.py').write_text('def parse_other(text):\n    return text\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [m.__name__ for m in parse_filter.parser_modules('clashpkg')] == ['clashpkg._parse_a', 'clashpkg._parse_b']
    with pytest.raises(AnsibleFilterError, match='defined twice'):
        parse_filter.parsers(parse_filter.parser_modules('clashpkg'))
    for name in [n for n in sys.modules if n == 'clashpkg' or n.startswith('clashpkg.')]:
        del sys.modules[name]


def test_same_result_as_the_probe():
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'net', 'mlnx_qos_-i_ens1np0_pfc3_dscp.txt')) as handle:
        text = handle.read()
    assert parse(text, 'mlnx_qos') == _parse_net.parse_mlnx_qos(text)
    line = '7F7F0101,,10,1700000000.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,Normal'
    assert parse(line, 'chronyc_tracking') == _parse_host.parse_chronyc_tracking(line)
    assert parse(line, 'chronyc_tracking')['synchronised'] is False
    proc = 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu Jan 1\n'
    assert parse(proc.encode(), 'proc_driver_version')['version'] == '580.159.04'
    assert parse(proc, 'proc_driver_version') == _parse_nvidia.parse_proc_driver_version(proc)


def test_output_not_understood():
    with pytest.raises(AnsibleFilterError) as err:
        parse('506 Cannot talk to daemon\n', 'chronyc_tracking')
    assert 'chronyc_tracking' in str(err.value) and 'Cannot talk to daemon' in str(err.value)
    assert parse('506 Cannot talk to daemon\n', 'chronyc_tracking', errors='none') is None
    assert parse(None, 'proc_driver_version', errors='none') is None


@pytest.mark.parametrize('args, message', [
    (('x', 'nope'), "unknown parser 'nope'"),
    (('x', 'uname', 'ignore'), 'errors must be one of strict, none'),
    (({'a': 1}, 'uname'), 'the input must be text'),
])
def test_bad_arguments(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        parse(*args)
