"""Fuzz the InfiniBand, network and host parsers with truncated, mutated and random text derived
from the real captures and the derived fixtures: whatever they are fed, only ``ParseError`` may
escape, and what they return has the documented shape.
"""
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_host as host
from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_ib as ib
from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_net as net
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import assert_finite, numbers_injected

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures'))
VM = os.path.join(FIXTURES, 'hardware', 'debian12-vm-noaccel')
H200 = os.path.join(FIXTURES, 'hardware', 'h200x4-nvlink')
DERIVED = os.path.join(FIXTURES, 'derived')

# Examples per test: the loaded profile (tests/conftest.py: 150 for make unit, 10,000 for make fuzz).
SETTINGS = settings()


def _read(path):
    with open(path) as handle:
        return handle.read()


def _derived(family, prefix):
    folder = os.path.join(DERIVED, family)
    return sorted(os.path.join(folder, name) for name in os.listdir(folder) if name.startswith(prefix))


# parser -> (files, inline samples, type of a successful result)
CORPUS = {
    ib.parse_ibstat: ([os.path.join(VM, 'ibstat.txt')] + _derived('ib', 'ibstat_'),
                      ["CA 'mlx4_0'\n\tCA type: MT4099\n\tPort 1:\n\t\tState: Active\n\t\tRate: 2.5\n"
                       "ibpanic: [1] main: stat of IB device 'mlx5_8' failed\n"], dict),
    ib.parse_ib_counters: (_derived('ib', 'ib_counters_'), [], dict),
    ib.parse_ib_write_bw: (_derived('ib_write_bw', 'client_') + _derived('ib_write_bw', 'server_'), [], dict),
    net.parse_ip_link: ([os.path.join(VM, 'ip_-j_link_show.json')] + _derived('net', 'ip_-j_'), [], dict),
    net.parse_ethtool: ([os.path.join(VM, 'ethtool_eth0.txt')] + _derived('net', 'ethtool_ens'), [], dict),
    net.parse_ethtool_driver: ([os.path.join(VM, 'ethtool_-i_eth0.txt')] + _derived('net', 'ethtool_-i_'), [], dict),
    net.parse_roce_ecn: (_derived('net', 'roce_ecn_'), [], dict),
    net.parse_dcb_pfc: (_derived('net', 'dcb_'), ['{"prio_pfc":{"0":"off","3":"on"}}'], dict),
    net.parse_mlnx_qos: (_derived('net', 'mlnx_qos_'), [], dict),
    net.parse_route_get: (sorted(os.path.join(VM, n) for n in os.listdir(VM) if 'route_get' in n and 'missing' not in n)
                          + _derived('net', 'ip_route_get_'), ['10.0.0.3 via 10.0.0.1 dev ib0 src 10.0.0.2 uid 0\n'], dict),
    net.parse_ip_addr: ([os.path.join(VM, 'ip_-j_addr_show_scope_global.json')], ['[]'], list),
    net.parse_mtu: ([os.path.join(VM, 'sys_class_net_eth0_mtu.txt')], ['9000\n', '65536'], int),
    net.parse_dcb_app: ([], ['{"dscp_prio":[[26,3],[24,3],[24,5],[48,6]]}', '[{"dscp_prio":[{"dscp":24,"prio":3}]}]'], dict),
    host.parse_os_release: ([os.path.join(VM, 'os-release.txt'), os.path.join(H200, 'os-release.txt')], [], dict),
    host.parse_uname: ([os.path.join(VM, 'uname_-a.txt'), os.path.join(H200, 'uname_-a.txt')],
                       ['Linux n1 5.15.0-119-generic #129-Ubuntu SMP Fri Aug 2 19:25:20 UTC 2024 x86_64 x86_64 x86_64 GNU/Linux\n'],
                       dict),
    host.parse_proc_modules: (_derived('host', 'proc_modules_'), ['Module Size Used by\nnvidia 1 0\n'], list),
    host.parse_chronyc_tracking: ([os.path.join(VM, 'chronyc_tracking.txt'), os.path.join(VM, 'chronyc_-c_tracking.txt')]
                                  + _derived('host', 'chronyc_'), [], dict),
    host.parse_ss_listening: (_derived('host', 'ss_'), [], list),
    host.parse_df: (_derived('host', 'df_'), [], list),
    host.parse_ulimit_memlock: ([os.path.join(VM, 'ulimit_-l.txt')], ['unlimited\n'], dict),
    host.parse_lspci_acs: ([os.path.join(VM, 'lspci_-vvv.txt')] + _derived('host', 'lspci_'), [], dict),
    host.parse_nccl_version: ([os.path.join(H200, 'torch_version.txt')],
                              ['22809\n', '2708', '2.28.9', 'NCCL version 2.28.9+cuda13.0'], (str, type(None))),
    host.parse_modprobe_config: (_derived('host', 'modprobe_d_'), ['/etc/modprobe.d/a.conf:install amdgpu /bin/false\n'], dict),
    host.parse_kernel_cmdline: ([], ['BOOT_IMAGE=/vmlinuz ro modprobe.blacklist=amdgpu,nouveau dyndbg="a b" nomodeset\n'], dict),
    host.parse_modinfo: (_derived('host', 'modinfo_'), [], dict),
}
TEXTS = dict((parser, [_read(path) for path in files] + list(inline)) for parser, (files, inline, dummy) in CORPUS.items())
PARSERS = sorted(CORPUS, key=lambda parser: parser.__name__)

NOISE = st.text(alphabet=st.characters(blacklist_categories=('Cs',)), max_size=40)
TOKENS = st.sampled_from(['\t', '\t\t', ' : ', ': ', ':', ',', '\n', '\r\n', '=', '"', "'", '[', ']', '{', '}', '(', ')',
                          'CA ', "CA 'mlx5_0'", 'Port 1:', 'Rate: ', 'State: ', '0x', '400', '2.5', '-1', '65535',
                          '/sys/class/infiniband/mlx5_0/ports/1/counters/', '/sys/class/net/e/ecn/roce_np/enable/',
                          'Settings for e:', 'Speed: ', 'Mb/s', 'Unknown!', 'driver: ', 'firmware-version: ',
                          '"prio_pfc"', 'true', 'null', '"on"', 'enabled', 'priority', 'tc: 3 ratelimit: x, tsa: ets',
                          'ID=', 'ID_LIKE=', 'Linux', 'x86_64', 'GNU/Linux', 'Live', 'Reference ID', 'seconds fast',
                          'ppm slow', 'Not synchronised', 'Normal', '506 Cannot talk to daemon', 'LISTEN', 'UNCONN',
                          'tcp', '[::]:22', '*:*', '%lo', 'users:(("a",pid=1,fd=3))', '1-blocks', '99%', '/',
                          'unlimited', '00:01.0 ', 'Capabilities: [148 v1] Access Control Services', 'ACSCtl:\t',
                          'SrcValid+', 'ReqRedir-', '<access denied>', 'NCCL version ', 'exit=0', '\x1b[1m', '\x00',
                          '\xff', '\u00b2', '\u0663', '1e999', 'nan'])


@st.composite
def mutated(draw, parser):
    """One capture, fixture or sample for ``parser``, then truncated, line-edited, byte-edited,
    token-spliced or replaced by random text."""
    text = draw(st.sampled_from(TEXTS[parser]))
    how = draw(st.sampled_from(['truncate', 'lines', 'bytes', 'tokens', 'random', 'splice']))
    if how == 'truncate':
        return text[:draw(st.integers(0, len(text)))]
    if how == 'lines':
        lines = text.split('\n')
        for dummy in range(draw(st.integers(1, 4))):
            if not lines:
                break
            at = draw(st.integers(0, len(lines) - 1))
            op = draw(st.sampled_from(['drop', 'dup', 'swap', 'replace', 'cut', 'token']))
            if op == 'drop':
                del lines[at]
            elif op == 'dup':
                lines.insert(at, lines[at])
            elif op == 'swap':
                other = draw(st.integers(0, len(lines) - 1))
                lines[at], lines[other] = lines[other], lines[at]
            elif op == 'replace':
                lines[at] = draw(NOISE)
            elif op == 'cut':
                lines[at] = lines[at][:draw(st.integers(0, len(lines[at])))]
            else:
                cut = draw(st.integers(0, len(lines[at])))
                lines[at] = lines[at][:cut] + draw(TOKENS) + lines[at][cut:]
        return '\n'.join(lines)
    if how == 'bytes':
        chars = list(text)
        for dummy in range(draw(st.integers(1, 8))):
            if not chars:
                break
            at = draw(st.integers(0, len(chars) - 1))
            op = draw(st.sampled_from(['delete', 'insert', 'replace']))
            if op == 'delete':
                del chars[at]
            elif op == 'insert':
                chars.insert(at, draw(st.characters(blacklist_categories=('Cs',))))
            else:
                chars[at] = draw(st.characters(blacklist_categories=('Cs',)))
        return ''.join(chars)
    if how == 'tokens':
        return ''.join(draw(st.lists(TOKENS, max_size=30)))
    if how == 'splice':
        other = draw(st.sampled_from(TEXTS[draw(st.sampled_from(PARSERS))]))
        cut = draw(st.integers(0, len(text)))
        return text[:cut] + other[:draw(st.integers(0, len(other)))]
    return draw(NOISE)


def _check(parser, text):
    try:
        result = parser(text)
    except ParseError:
        return
    assert isinstance(result, CORPUS[parser][2]), '%s returned %r' % (parser.__name__, type(result))
    assert_finite(result, parser.__name__)


@pytest.mark.parametrize('parser', PARSERS, ids=lambda parser: parser.__name__)
def test_corpus_parses(parser):
    """Every capture and fixture of the corpus parses without error."""
    for text in TEXTS[parser]:
        assert isinstance(parser(text), CORPUS[parser][2])


@pytest.mark.parametrize('parser', PARSERS, ids=lambda parser: parser.__name__)
@SETTINGS
@given(data=st.data())
def test_only_parse_error_escapes(parser, data):
    # @given on the test itself (not an inner function) so that --hypothesis-show-statistics
    # reports the examples run for each parser.
    _check(parser, data.draw(mutated(parser)))


@pytest.mark.parametrize('parser', PARSERS, ids=lambda parser: parser.__name__)
@SETTINGS
@given(data=st.data())
def test_huge_and_non_finite_numbers(parser, data):
    """Issue 8 item 7: numbers of a real capture replaced by 4,300+ digit runs, values past 2**64 or
    65535, nan and inf: only ParseError escapes, every number in the result is finite and bounded."""
    _check(parser, data.draw(numbers_injected(TEXTS[parser])))


@pytest.mark.parametrize('parser', PARSERS, ids=lambda parser: parser.__name__)
@pytest.mark.parametrize('value', [None, b'CA', 42, ['x'], {'a': 1}])
def test_non_text_raises_parse_error(parser, value):
    with pytest.raises(ParseError):
        parser(value)
