"""Data-driven parser tests: every parser case of ``cases/*.yaml`` (the format: case_files.py) names a captured tool
output and the facts it must produce (community.general's ``test_xfconf_info.{py,yaml}`` pattern)."""
import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError, section_errors
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import case_files

_resolve = case_files.resolve
_read = case_files.read


def _load_cases():
    return [pytest.param(case, id='%s:%s' % (area, case['id'])) for area, case in case_files.parser_cases()]


def assert_subset(actual, expected, where='result'):
    if isinstance(expected, dict):
        assert isinstance(actual, dict), '%s: expected a dict, got %r' % (where, actual)
        for key, value in expected.items():
            assert key in actual, '%s: missing key %r (have %s)' % (where, key, sorted(actual))
            assert_subset(actual[key], value, '%s.%s' % (where, key))
    elif isinstance(expected, list) and expected and isinstance(expected[0], (dict, list)):
        assert isinstance(actual, list), '%s: expected a list, got %r' % (where, actual)
        assert len(actual) >= len(expected), '%s: %d items, expected at least %d' % (where, len(actual), len(expected))
        for i, value in enumerate(expected):
            assert_subset(actual[i], value, '%s[%d]' % (where, i))
    else:
        assert actual == expected, '%s: %r != %r' % (where, actual, expected)


@pytest.mark.parametrize('case', _load_cases())
def test_parser_case(case):
    parser = _resolve(case['parser'])
    text = _read(case)
    args = case.get('args', {})
    if 'error' in case:
        with pytest.raises(ParseError) as err:
            parser(text, **args)
        assert case['error'] in str(err.value)
        return
    result = parser(text, **args)
    if 'expected' in case:
        assert result == case['expected']
    if 'subset' in case:
        assert_subset(result, case['subset'])
    assert 'expected' in case or 'subset' in case, 'case %s asserts nothing' % case['id']


# Issue 8 item 7: the numbers that escaped as ValueError (Python's 4,300-digit int limit), came back
# unbounded, or came back as nan/inf. Built here: a 4,301-digit line does not belong in cases/*.yaml.
D4301 = '9' * 4301
D5000 = '7' * 5000
CHRONY_CSV = ('0A0A0005,ntp1.cluster.internal,3,1773130467.481223005,-0.000004213,0.000002871,0.000011532,-12.408,'
              '0.001,0.042,0.000492318,0.000183911,64.3,Normal\n')
ECN = '/sys/class/net/ens1np0/ecn/roce_np/enable/3:1\n'
QOS = 'PFC configuration:\n\tpriority    0   1   2   3\n\tenabled     0   0   0   1\n'
IBSTAT = "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n\t\tRate: 400\n\t\tBase lid: 12\n"
DF = 'Filesystem 1-blocks Used Available Capacity Mounted on\n/dev/nvme0n1p2 1888556142592 1812018466816 76537675776 96% /\n'
SS = 'tcp   LISTEN 0      4096         0.0.0.0:29500      0.0.0.0:* users:(("torchrun",pid=4242,fd=3))\n'
DCB = '{"pfc_cap":8,"macsec_bypass":false,"delay":0,"prio_pfc":[false,false,false,true,false,false,false,false]}'
COUNTERS = '/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:0\n'
NUMBER_EXAMPLES = [
    ('_parse_host.parse_ulimit_memlock', D4301 + '\n', 'locked-memory limit is not a number'),
    ('_parse_host.parse_ulimit_memlock', '18446744073709551617\n', 'outside 0..18446744073709551616'),
    ('_parse_host.parse_ss_listening', SS.replace(':29500', ':99999'), 'port 99999 is outside 0..65535'),
    ('_parse_host.parse_ss_listening', SS.replace(':29500', ':' + D4301), 'port is not a number'),
    ('_parse_host.parse_ss_listening', SS.replace('pid=4242', 'pid=' + D5000), 'pid is not a number'),
    ('_parse_host.parse_ss_listening', SS.replace('LISTEN 0 ', 'LISTEN ' + D5000 + ' '), 'Recv-Q is not a number'),
    ('_parse_host.parse_ss_listening', SS.replace('LISTEN 0 ', 'LISTEN nan '), 'queue sizes are not numbers'),
    ('_parse_host.parse_df', DF.replace('1812018466816', D4301), 'block count is not a number'),
    ('_parse_host.parse_df', DF.replace('1812018466816', '18446744073709551617'), 'block count 18446744073709551617 is outside'),
    ('_parse_host.parse_df', DF.replace('1812018466816', 'nan'), 'unexpected line'),
    ('_parse_host.parse_df', DF.replace('96%', D4301 + '%'), 'use% is not a number'),
    ('_parse_host.parse_chronyc_tracking', CHRONY_CSV.replace(',3,', ',' + D4301 + ','), 'stratum is not a number'),
    ('_parse_host.parse_chronyc_tracking', CHRONY_CSV.replace('-12.408', 'nan'), 'field 7 is not a number'),
    ('_parse_host.parse_chronyc_tracking', CHRONY_CSV.replace('-12.408', 'inf'), 'field 7 is not a number'),
    ('_parse_host.parse_chronyc_tracking', CHRONY_CSV.replace('-12.408', '1e999'), "field 7 is not a number: '1e999' (not finite)"),
    ('_parse_host.parse_nccl_version', 'NCCL version 2.%s.9+cuda13.0\n' % D4301, 'version component is not a number'),
    ('_parse_host.parse_nccl_version', D5000 + '\n', 'no NCCL version found'),
    ('_parse_net.parse_roce_ecn', ECN.replace('enable/3', 'enable/' + D4301), 'priority is not a number'),
    ('_parse_net.parse_roce_ecn', ECN.replace('enable/3', 'enable/99999'), 'priority 99999 is outside 0..7'),
    ('_parse_net.parse_roce_ecn', ECN.replace(':1', ':nan'), 'enable value is not 0/1'),
    ('_parse_net.parse_dcb_pfc', DCB.replace('"pfc_cap":8', '"pfc_cap":NaN'), 'NaN is not a number JSON allows'),
    ('_parse_net.parse_dcb_pfc', DCB.replace('"delay":0', '"delay":Infinity'), 'Infinity is not a number JSON allows'),
    ('_parse_net.parse_dcb_pfc', DCB.replace('"pfc_cap":8', '"pfc_cap":' + D4301), 'invalid JSON'),
    ('_parse_net.parse_dcb_pfc', DCB.replace('"pfc_cap":8', '"pfc_cap":' + '9' * 4000), 'pfc_cap is not an integer in 0..2**64'),
    ('_parse_net.parse_dcb_pfc', '{"prio_pfc":{"99999":"on"}}', 'priority 99999 is outside 0..7'),
    ('_parse_net.parse_mlnx_qos', QOS.replace('0   0   0   1', '0   0   0   ' + D4301), 'enabled is not a number'),
    ('_parse_net.parse_mlnx_qos', QOS + 'tc: ' + D5000 + ' ratelimit: unlimited, tsa: ets, bw: 50%\n', 'tc is not a number'),
    ('_parse_net.parse_mlnx_qos', QOS + 'tc: 0 ratelimit: unlimited, tsa: ets, bw: 99999%\n', 'bw 99999 is outside 0..100'),
    ('_parse_net.parse_mlnx_qos', QOS.replace('0   0   0   1', '0   0   0   nan'), 'no PFC configuration table'),
    ('_parse_net.parse_ethtool', 'Settings for e:\n\tSpeed: %sMb/s\n' % D4301, 'Speed is not a number'),
    ('_parse_ib.parse_ibstat', IBSTAT.replace('Rate: 400', 'Rate: ' + D5000), 'rate is not a number'),
    ('_parse_ib.parse_ibstat', IBSTAT.replace('Rate: 400', 'Rate: nan'), 'rate is not a number'),
    ('_parse_ib.parse_ibstat', IBSTAT.replace('Rate: 400', 'Rate: inf'), 'rate is not a number'),
    ('_parse_ib.parse_ibstat', IBSTAT.replace('Base lid: 12', 'Base lid: ' + D4301), 'is not a number'),
    ('_parse_ib.parse_ibstat', IBSTAT.replace('Port 1:', 'Port %s:' % D4301), 'port number is not a number'),
    ('_parse_ib.parse_ib_counters', COUNTERS.replace(':0', ':' + D5000), 'counter symbol_error is not a number'),
    ('_parse_ib.parse_ib_counters', COUNTERS.replace(':0', ':18446744073709551617'), 'is outside 0..18446744073709551616'),
    ('_parse_nccl.parse_nccl_tests', '# nThread 1 nGpus %s minBytes 8 maxBytes 8 step: 2(factor)\n' % D4301, 'ngpus is not a number'),
    ('_parse_nccl.parse_nccl_tests', '  %s 2 float sum -1 1.0 0.0 0.0 0 1.0 0.0 0.0 0\n' % D5000, 'size is not a number'),
    ('_parse_nccl.parse_nccl_tests', '  18446744073709551617 2 float sum -1 1.0 0.0 0.0 0 1.0 0.0 0.0 0\n', 'size 18446744073709551617'),
    ('_parse_nvidia.parse_nvlink_status', 'GPU 0: NVIDIA H200 (UUID: GPU-1)\n\t Link 0: %s GB/s\n' % D5000,
     'link speed is not a number'),
    ('_parse_nvidia.parse_nvlink_status', 'GPU 0: NVIDIA H200 (UUID: GPU-1)\n\t Link %s: 26.562 GB/s\n' % D5000,
     'link number is not a number'),
]


@pytest.mark.parametrize('dotted,text,message', NUMBER_EXAMPLES, ids=['%s-%d' % (d.split('.')[-1], i) for i, (d, _t, _m) in enumerate(NUMBER_EXAMPLES)])
def test_huge_and_non_finite_numbers_are_parse_errors(dotted, text, message):
    """Only ParseError leaves a parser, and no unbounded or non-finite number is returned: an odd value
    is a ParseError of the whole text or (parsers that read independent sections) its section's parse_error."""
    parser = _resolve(dotted)
    try:
        result = parser(text)
    except ParseError as err:
        assert message in str(err), str(err)
        assert len(str(err)) < 400
        return
    errors = section_errors(result)
    assert errors and any(message in e['error'] for e in errors), (result if len(repr(result)) < 2000 else errors)
