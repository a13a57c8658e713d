"""Filter xuanwu.cluster.parse: the probe's parsers, as the roles use them."""
import os

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
    for probe in _probe.base_probes() + _probe.end_probes() + _probe.interface_probes('eth0'):
        used.update(alt.parser for alt in probe.alternatives)
    assert used <= set(parse_filter.PARSERS.values())


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
