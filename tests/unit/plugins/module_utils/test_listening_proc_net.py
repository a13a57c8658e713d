"""Listening ports without ss: the `listening` probe falls back to /proc/net/{tcp,tcp6,udp,udp6}
(_parse_host.parse_proc_net_listening), so a host whose image has no iproute2 (the real 1x H200 host of
tests/fixtures/hardware/h200x1-bundle/) still has host.ports_must_be_free judged instead of a facts.not_measured
warning. The inputs are constructed (tests/fixtures/derived/host/README.md)."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _judge, _probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_host import parse_proc_net_listening

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
HOST = os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'host')
PROFILE = {'schema_version': 1, 'name': 'p', 'host': {'ports_must_be_free': [29500, '53/udp']}}


def _read(name):
    with open(os.path.join(HOST, name)) as handle:
        return handle.read()


def test_parse_the_sockets_ss_would_list():
    rows = parse_proc_net_listening(_read('proc_net_listening_gpu_node.txt'))
    assert [(r['proto'], r['state'], r['address'], r['port']) for r in rows] == [
        ('tcp', 'LISTEN', '0.0.0.0', 22), ('tcp', 'LISTEN', '127.0.0.1', 5555), ('tcp', 'LISTEN', '::', 22),
        ('udp', 'UNCONN', '127.0.0.53', 53), ('udp', 'UNCONN', '127.0.0.1', 323)]     # not the established connection
    assert rows[0]['process'] is None and rows[0]['pid'] is None
    assert parse_proc_net_listening('') == []


@pytest.mark.parametrize('text, message', [
    ('   0: 00000000:0016 00000000:0000 0A 00000000:00000000\n', 'before any "== /proc/net/<name>" line'),
    ('== /proc/net/tcp\n   0: 0000:0016 00000000:0000 0A 00000000:00000000\n', 'not 8 or 32 hex digits'),
    ('== /proc/net/tcp\n   0: 00000000:XYZW 00000000:0000 0A 00000000:00000000\n', 'not hexadecimal'),
    ('== /proc/net/tcp\nsomething else\n', 'unexpected line'),
    ('== /proc/net/tcp\n   0: 00000000:0016 00000000:0000 0A %s:00000000\n' % ('F' * 17), 'queue size out of range'),
])
def test_what_is_not_proc_net_is_a_parse_error_naming_it(text, message):
    with pytest.raises(ParseError) as err:
        parse_proc_net_listening(text)
    assert message in str(err.value) and '/proc/net' in str(err.value)


def _live(proc_net_text):
    def run(argv):
        raise AssertionError('no tool is run: %s' % argv)

    runner = _probe.LiveRunner(run, lambda name: None, internals={'proc_net_listening': lambda: proc_net_text})
    [probe] = [p for p in _probe.base_probes() if p.key == 'listening']
    return runner.obtain(probe)


def _ports(name):
    out = _live(_read(name))
    assert (out.status, out.command) == ('ok', 'internal:proc_net_listening')
    facts = {'host': {'listening': _probe.parser(out.alternative.parser)(out.stdout)}, 'probes': {}}
    return [(f['check'], f['severity'], f['component']) for f in _judge.evaluate(facts, PROFILE, 'n1')
            if f['check'].startswith('host.port') or (f['check'].startswith('facts.') and f['component'] == 'ports')]


def test_without_ss_the_ports_are_judged_from_proc_net():
    assert _ports('proc_net_listening_gpu_node.txt') == [('host.port_in_use', 'fail', 'port 53/udp')]
    assert _ports('proc_net_listening_port_29500_in_use.txt') == [
        ('host.port_in_use', 'fail', 'port 29500/tcp'), ('host.port_in_use', 'fail', 'port 53/udp')]


def test_without_ss_and_without_proc_net_the_tool_is_named_missing():
    out = _live(None)
    assert out.status == 'missing'


def test_the_reader_of_proc_net(tmp_path):
    (tmp_path / 'tcp').write_text(_read('proc_net_listening_gpu_node.txt').split('== /proc/net/tcp6\n')[0].split('\n', 1)[1])
    text = _probe.proc_net_listening_text(str(tmp_path))
    assert text.startswith('== /proc/net/tcp\n') and '== /proc/net/udp' not in text
    assert [r['port'] for r in parse_proc_net_listening(text)] == [22, 5555]
    assert _probe.proc_net_listening_text(str(tmp_path / 'absent')) is None
