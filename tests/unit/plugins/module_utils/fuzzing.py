"""The fuzz table (``FUZZ``), which every fuzz test (test_fuzz_*.py) reads, and the strategies and checks they share.

Every parser is in the table: each ``parse_<name>`` of plugins/module_utils/_parse_*.py (what the filter
xuanwu.cluster.parse finds) and each parser a case file names. Its corpus is the text of each of its parser cases
that parses (cases/<area>.yaml, case_files.fuzz_seeds), so a new parser with a case of its real output needs nothing
here. A line of ``LINES`` (at the end) adds what a parser needs beyond that: more fixture files (globs under
tests/fixtures/) or samples, the type it returns where its corpus does not say it, a check of what else must hold of a
result, or another handling of values that are not text. test_fuzz_parsers.py runs every entry: the corpus parses;
truncated, line- and byte-edited, token-spliced, shuffled, JSON-rewritten and random texts, and texts whose numbers are
replaced by huge or non-finite ones, give a result of that type (finite numbers, the check holds) or ParseError,
nothing else; a value that is not text is a ParseError. It fails while a parser has no corpus.
"""
import copy
import glob
import json
import math
import os
import re

from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import (
    _collectives, _dmon_checks, _parse_amd as amd, _parse_clock_events as clock, _parse_dmon as dmon, _parse_host as host,
    _parse_ib as ib, _parse_nccl as nccl, _parse_net as net, _parse_nvidia as nv, _parse_scheduler as sched,
)
from ansible_collections.xuanwu.cluster.plugins.filter import parse as parse_filter
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import case_files

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures'))

# Integers in a parser's result must fit in this (counters, sizes, ids); see _errors.MAX_INT.
INT_BOUND = 2 ** 64

# What replaces a number of a real capture: digit runs past Python's 4,300-digit int limit (3.11+)
# and past 2**64, values outside a port's range, and the float spellings that are not finite.
HUGE_DIGITS = st.integers(min_value=4290, max_value=5000).map(lambda n: '9' * n)
LONG_DIGITS = st.integers(min_value=20, max_value=60).map(lambda n: '1' + '0' * (n - 1))
NUMBER_TOKENS = st.one_of(
    HUGE_DIGITS, LONG_DIGITS,
    st.sampled_from(['nan', 'NaN', '-nan', 'inf', '-inf', 'Infinity', '1e999', '-1e999', '1.0e+309', '99999', '65536',
                     '-1', '18446744073709551616', '0x' + 'f' * 40, '1' + '0' * 4400 + '.5']))
_NUMBER = re.compile(r'\d+(?:\.\d+)?')

NOISE = st.text(alphabet=st.characters(blacklist_categories=('Cs',)), max_size=40)
# Pieces of the tools' own syntax, spliced into texts and strung together: headers, separators, keys, values.
TOKENS = st.sampled_from([
    '\t', '\t\t', ' : ', ': ', ':', ',', '\n', '\r\n', '=', '"', "'", '[', ']', '{', '}', '(', ')', '#', '-', '0x', '400',
    '2.5', '-1', '65535', 'nan', 'inf', '1e+99', '1e999', 'N/A', '[N/A]', '[Not Supported]', 'null', 'true', '{}', '[]',
    '99999999999999999999999', '\x1b[4m', '\x1b[1m', '\x00', '\xff', '\u00b2', '\u0663',
    # InfiniBand, network, host
    'CA ', "CA 'mlx5_0'", 'Port 1:', 'Rate: ', 'State: ', '/sys/class/infiniband/mlx5_0/ports/1/counters/',
    '/sys/class/net/e/ecn/roce_np/enable/', 'Settings for e:', 'Speed: ', 'Mb/s', 'Unknown!', 'driver: ',
    'firmware-version: ', '"prio_pfc"', '"on"', 'enabled', 'priority', 'tc: 3 ratelimit: x, tsa: ets', 'ID=', 'ID_LIKE=',
    'Linux', 'x86_64', 'GNU/Linux', 'Reference ID', 'seconds fast', 'ppm slow', 'Not synchronised', 'Normal',
    '506 Cannot talk to daemon', 'LISTEN', 'UNCONN', 'tcp', '[::]:22', '*:*', '%lo', 'users:(("a",pid=1,fd=3))',
    '1-blocks', '99%', '/', 'unlimited', '00:01.0 ', 'Capabilities: [148 v1] Access Control Services', 'ACSCtl:\t',
    'SrcValid+', 'ReqRedir-', '<access denied>', 'NCCL version ', 'exit=0', '== /proc/net/tcp', 'NIC Link is Down',
    ': Link up', 'carrier lost',
    # NVIDIA
    ' X ', 'NV18', 'SYS', 'GPU0', 'NIC0', 'Link 0:', '<inactive>', 'GB/s', '<gpu id="00000000:00:06.0">', '</gpu>',
    '<total>', 'Enabled', 'Xid', 'NVRM: Xid (PCI:', '0000:18:00): ', '79, ', 'pid=', 'name=', 'release ', '13.0',
    'NVRM version: ', 'Kernel Module ', '580.159.04', 'Failed to initialize NVML: ', 'Replay Errors: ',
    'NVML: Unable to retrieve NVLink information as all links are inActive',
    # AMD
    '"Gen 99"', '"32 GT/s"', '{"value": -5, "unit": "MB"}', '{"value": 1, "unit": "PB"}', '"x"', '0',
    # dmon, clock events, nccl-tests
    '# gpu', '# Idx', '1.2.3', '20240104', '13:54:35', '0xZZ', '0xffffffffffffffff', '0x00000000000000080', 'index',
    'x', '#  Rank', '# Avg bus bandwidth', 'sum', 'float', 'N/A ',
])

JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-2 ** 70, max_value=2 ** 70), st.text(max_size=20),
              st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(['N/A', 'Gen 5', '32 GT/s', 'ENABLED', 'gpu_1'])),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)),
    max_leaves=12)


def assert_finite(value, where='result'):
    """Every float in a parser's result (dicts and lists, any depth) is finite (no inf, no nan) and
    every integer is within +-2**64."""
    if isinstance(value, float):
        assert math.isfinite(value), '%s is %r' % (where, value)
    elif isinstance(value, int) and not isinstance(value, bool):
        assert -INT_BOUND <= value <= INT_BOUND, '%s is an integer of %d bits' % (where, value.bit_length())
    elif isinstance(value, dict):
        for key, item in value.items():
            assert_finite(item, '%s.%s' % (where, key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            assert_finite(item, '%s[%d]' % (where, index))


# ------------------------------------------------------------------------------------------------- the table

class Fuzzed(object):
    """What the fuzz tests know of one parser: ``parser``, its corpus (``files``: globs under tests/fixtures/,
    README.md left out; ``samples``: texts written here; and the texts of its parser cases, ``add_seeds``),
    ``returns`` (the type of a result; None: the one type its corpus gives), ``check(result, text)`` (what else must
    hold) and ``non_text``: ``raises`` (anything but text is a ParseError), ``decodes`` (bytes are read as their UTF-8,
    the rest raises), ``lenient`` (free-form log text: any text reads, never a ParseError; None and bytes too)."""

    def __init__(self, parser, files=(), samples=(), returns=None, check=None, non_text='raises'):
        self.parser = parser
        self.name = parser.__name__
        found = dict((pattern, sorted(path for path in glob.glob(os.path.join(FIXTURES, pattern)) if not path.endswith('README.md')))
                     for pattern in files)
        self.files = sorted(set(path for paths in found.values() for path in paths))
        self.unmatched = [pattern for pattern in files if not found[pattern]]
        self.texts = [_read(path) for path in self.files] + list(samples)
        self.declared = returns
        self.check = check
        self.non_text = non_text
        self.returns = returns or dict
        self.inferred = None
        self.lines = []

    def add_seeds(self, texts):
        """The texts of the parser's cases join its corpus; what it returns is settled (``returns``)."""
        self.texts.extend(text for text in texts if text not in self.texts)
        self.lines = [line for sample in self.texts for line in sample.split('\n')[:80]]
        kinds = set()
        for text in self.texts:
            try:
                kinds.add(type(self.parser(text)))
            except ParseError:
                continue
        self.inferred = kinds.pop() if len(kinds) == 1 else None
        self.returns = self.declared or self.inferred or dict
        return self

    def __repr__(self):
        return self.name


def _read(path):
    with open(path) as handle:
        return handle.read()


def accept(entry, text, **kwargs):
    """``entry``'s parser on ``text``: ParseError (None), or a result that ``judge`` accepts; a parser of free-form
    log text (``lenient``) reads any text."""
    if entry.non_text == 'lenient':
        return judge(entry, entry.parser(text, **kwargs), text)
    try:
        result = entry.parser(text, **kwargs)
    except ParseError:
        return None
    return judge(entry, result, text)


def judge(entry, result, text):
    """``result`` (of ``text``) is of ``entry``'s type, its numbers are finite and bounded, its check holds."""
    assert isinstance(result, entry.returns), '%s returned %r' % (entry.name, type(result))
    assert_finite(result, entry.name)
    if entry.check is not None:
        entry.check(result, text)
    return result


# ------------------------------------------------------------------------------------------------- strategies

@st.composite
def numbers_injected(draw, texts):
    """A text of ``texts`` with 1 to 4 of its numbers replaced by huge digit runs or nan/inf tokens."""
    text = draw(st.sampled_from(texts))
    spans = [m.span() for m in _NUMBER.finditer(text)]
    if not spans:
        return text + draw(NUMBER_TOKENS)
    chosen = sorted(set(draw(st.lists(st.integers(0, len(spans) - 1), min_size=1, max_size=4))), reverse=True)
    for index in chosen:
        start, end = spans[index]
        text = text[:start] + draw(NUMBER_TOKENS) + text[end:]
    return text


def _edit_lines(draw, text):
    """1 to 4 line edits: a line dropped, duplicated, swapped, replaced by noise, cut, or a token put into it."""
    lines = text.split('\n')
    for dummy in range(draw(st.integers(1, 4))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(['drop', 'dup', 'swap', 'noise', 'cut', 'token', 'word']))
        if op == 'drop':
            del lines[at]
        elif op == 'dup':
            lines.insert(at, lines[at])
        elif op == 'swap':
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        elif op == 'noise':
            lines[at] = draw(NOISE)
        elif op == 'cut':
            lines[at] = lines[at][:draw(st.integers(0, len(lines[at])))]
        elif op == 'token':
            cut = draw(st.integers(0, len(lines[at])))
            lines[at] = lines[at][:cut] + draw(TOKENS) + lines[at][cut:]
        else:
            words = lines[at].split()
            if words:
                words[draw(st.integers(0, len(words) - 1))] = draw(TOKENS)
                lines[at] = '  '.join(words)
    return '\n'.join(lines)


def _edit_chars(draw, text):
    """1 to 8 characters deleted, inserted or replaced."""
    chars = list(text)
    for dummy in range(draw(st.integers(1, 8))):
        if not chars:
            break
        at = draw(st.integers(0, len(chars) - 1))
        op = draw(st.sampled_from(['delete', 'insert', 'replace']))
        char = draw(st.one_of(st.characters(blacklist_categories=('Cs',)),
                              st.sampled_from([' ', '\n', '\r', '\x1b', '#', '-', '.', '9', 'a', '\x00', '\u00e9'])))
        if op == 'delete':
            del chars[at]
        elif op == 'insert':
            chars.insert(at, char)
        else:
            chars[at] = char
    return ''.join(chars)


def _edit_json(draw, text):
    """The JSON document ``text`` with the whole of it, or 1 to 4 of its values, replaced by arbitrary JSON."""
    try:
        doc = copy.deepcopy(json.loads(text))
    except ValueError:
        return text
    if not isinstance(doc, (dict, list)) or not doc or draw(st.integers(0, 9)) == 0:
        return json.dumps(draw(JSON_VALUES))
    for dummy in range(draw(st.integers(1, 4))):
        node = doc
        for _depth in range(6):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, (dict, list)) and child and draw(st.booleans()):
                node = child
                continue
            node[key] = draw(JSON_VALUES)
            break
    return json.dumps(doc)


@st.composite
def mutated(draw, entry):
    """A text of ``entry``'s corpus truncated, line-edited, character-edited, spliced with another parser's text or
    tokens, its lines shuffled, its JSON rewritten, or random text or JSON instead."""
    text = draw(st.sampled_from(entry.texts))
    how = draw(st.sampled_from(['truncate', 'lines', 'chars', 'tokens', 'splice', 'shuffle', 'json', 'random']))
    if how == 'truncate':
        return text[:draw(st.integers(0, len(text)))]
    if how == 'lines':
        return _edit_lines(draw, text)
    if how == 'chars':
        return _edit_chars(draw, text)
    if how == 'tokens':
        head = text[:draw(st.integers(0, len(text)))] if draw(st.booleans()) else ''
        return head + ''.join(draw(st.lists(TOKENS, max_size=40))) + draw(NOISE)
    if how == 'splice':
        other = draw(st.sampled_from(draw(st.sampled_from(FUZZ)).texts))
        return text[:draw(st.integers(0, len(text)))] + other[:draw(st.integers(0, len(other)))]
    if how == 'shuffle':
        return '\n'.join(draw(st.lists(st.sampled_from(entry.lines), max_size=30)))
    if how == 'json':
        return _edit_json(draw, text)
    return draw(st.one_of(st.text(max_size=400), JSON_VALUES.map(json.dumps)))


# ------------------------------------------------------------------------------------------------- checks

_QUERY_GPU_KEYS = {'index', 'name', 'uuid', 'bus_id', 'driver_version', 'memory_total_mib', 'pcie_gen_current', 'pcie_gen_max',
                   'pcie_width_current', 'pcie_width_max', 'persistence_mode', 'ecc_mode', 'clocks_max_sm_mhz'}


def query_gpu_devices(result, _text):
    for device in result:
        assert set(device) - {'parse_error'} == _QUERY_GPU_KEYS
        assert device['ecc_mode'] in (True, False, None)


def smi_xml_gpus(result, _text):
    assert set(result) == {'driver_version', 'cuda_driver_version', 'gpus'}
    for bus_id, gpu in result['gpus'].items():
        if bus_id.startswith('<gpu '):
            assert set(gpu) == {'parse_error'}
            continue
        assert bus_id == nv.normalise_bus_id(bus_id)
        assert isinstance(gpu['clocks_event_reasons_active'], list) or 'parse_error' in gpu
    assert len(nv.merge_gpu_details([{'index': 0, 'bus_id': '00000000:00:06.0'}], result)) == 1


def topo_symmetric(result, _text):
    for row, cells in result['matrix'].items():
        assert row not in cells
        assert row in result['devices']


def nvlink_links(result, _text):
    for gpu in result.values():
        for link in gpu['links']:
            assert link['active'] is (link['speed_gbps'] is not None)


def xid_numbers(result, _text):
    assert all(isinstance(event['xid'], int) for event in result)


def proc_driver_version(result, _text):
    assert set(result) == {'version', 'flavour', 'arch', 'gcc_version'}
    assert result['version'][0].isdigit() and result['flavour'] in ('open', 'proprietary')


def amd_devices(result, _text):
    for device in amd.merge_devices(result, {}, {}):
        assert isinstance(device['index'], int)


_BUSY = _read(os.path.join(FIXTURES, 'dmon', 'h200x2_dmon_busy.txt'))


def clock_events_judged(result, text):
    for gpu in result['gpus']:
        assert isinstance(gpu['index'], int)
        for sample in gpu['samples']:
            assert sample['reasons'] is None or all(isinstance(r, str) for r in sample['reasons'])
    run = {'command': 'nvidia-smi dmon', 'stdout': _BUSY, 'clock_events': {'command': 'q', 'stdout': text}}
    assert isinstance(_dmon_checks.judge_run(run, {'sustained_sm_clock_min_mhz': 1200}, host='h')[0], list)


def dmon_summarised(result, _text):
    names = [column['name'] for column in result['columns']]
    for gpu in result['gpus']:
        assert isinstance(gpu['index'], int)
        for sample in gpu['samples']:
            assert set(sample) == set(names) - {'gpu'}
    summary = _dmon_checks.summarise(result)
    assert_finite(summary)
    bounds = {'gtemp_max_c': 85, 'mtemp_max_c': 95, 'fb_growth_max_mb': 1024, 'sm_clock_mhz': 1980}
    assert isinstance(_dmon_checks.findings(summary, bounds, host='h'), list)


def nccl_curve(result, _text):
    for row in result['rows']:
        assert isinstance(row['size_bytes'], int)
        assert isinstance(row['out_of_place'], dict)
    curve = [{'min_bytes': 16 << 20, 'busbw_gbps_min': 200.0}, {'min_bytes': 1 << 30, 'busbw_gbps_min': 300.0}]
    assert isinstance(_collectives.evaluate_curve(result, curve, 'h', 'all_reduce'), list)


_CONDITIONS = (sched.AVAILABLE, sched.DRAINING, sched.DRAINED, sched.DOWN)


def scheduler_nodes(result, _text):
    for node in result if isinstance(result, list) else [result]:
        assert node['condition'] in _CONDITIONS and isinstance(node['reason'], str)


def slurmd_config(result, _text):
    assert result['cpus'] >= 0 and result['real_memory'] >= 0 and (result['gpus'] is None or result['gpus'] >= 0)


def unit_state(result, _text):
    assert result['state'] in sched.UNIT_STATES and result['active'] is (result['state'] in sched.UNIT_UP)


def sinfo_rows(result, _text):
    assert all(isinstance(row['unavailable'], bool) for row in result)


def pod_count(result, _text):
    assert result >= 0


# ------------------------------------------------------------------------------------------------- FUZZ

_VM = 'hardware/debian12-vm-noaccel/'
_H200 = 'hardware/h200x4-nvlink/'
_IBSTAT_PANIC = ("CA 'mlx4_0'\n\tCA type: MT4099\n\tPort 1:\n\t\tState: Active\n\t\tRate: 2.5\n"
                 "ibpanic: [1] main: stat of IB device 'mlx5_8' failed\n")
_NVCC = ('nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\nBuilt on Wed_Aug_20_01:58:59_PM_PDT_2025\n'
         'Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n')

# What a parser needs beyond the texts of its cases (the module docstring); a parser without a line is fuzzed all the same.
LINES = [
    # InfiniBand
    Fuzzed(ib.parse_ibstat, [_VM + 'ibstat.txt', 'derived/ib/ibstat_*'], [_IBSTAT_PANIC]),
    Fuzzed(ib.parse_ib_counters, ['derived/ib/ib_counters_*']),
    # network
    Fuzzed(net.parse_dcb_pfc, ['derived/net/dcb_*'], ['{"prio_pfc":{"0":"off","3":"on"}}']),
    Fuzzed(net.parse_route_get, [_VM + '*route_get_[!o]*', 'derived/net/ip_route_get_*'],   # not oif_ib0_missing: no route
           ['10.0.0.3 via 10.0.0.1 dev ib0 src 10.0.0.2 uid 0\n']),
    Fuzzed(net.parse_ip_addr, [_VM + 'ip_-j_addr_show_scope_global.json'], ['[]'], returns=list),
    Fuzzed(net.parse_mtu, [_VM + 'sys_class_net_eth0_mtu.txt'], ['9000\n', '65536'], returns=int),
    Fuzzed(net.parse_link_events, ['derived/net/kernel-log_*', 'derived/nvidia/kernel-log_*'], non_text='lenient'),
    # host
    Fuzzed(host.parse_uname, [_VM + 'uname_-a.txt', _H200 + 'uname_-a.txt'],
           ['Linux n1 5.15.0-119-generic #129-Ubuntu SMP Fri Aug 2 19:25:20 UTC 2024 x86_64 x86_64 x86_64 GNU/Linux\n']),
    Fuzzed(host.parse_nccl_version, [], returns=(str, type(None))),
    Fuzzed(host.parse_nccl_library, [], returns=(dict, type(None))),
    Fuzzed(host.parse_proc_modules, ['derived/host/proc_modules_*'], ['Module Size Used by\nnvidia 1 0\n'], returns=list),
    Fuzzed(host.parse_proc_net_listening, ['derived/host/proc_net_listening_*'], returns=list),
    Fuzzed(host.parse_ps, ['derived/host/ps_*'], returns=list),
    Fuzzed(host.parse_modprobe_config, ['derived/host/modprobe_d_*'], ['/etc/modprobe.d/a.conf:install amdgpu /bin/false\n']),
    Fuzzed(host.parse_kernel_cmdline, [], ['BOOT_IMAGE=/vmlinuz ro modprobe.blacklist=amdgpu,nouveau dyndbg="a b" nomodeset\n']),
    # NVIDIA
    Fuzzed(nv.parse_query_gpu, [_H200 + 'nvidia-smi_--query-gpu.csv', 'derived/nvidia/query-gpu_*'], returns=list,
           check=query_gpu_devices, non_text='decodes'),
    Fuzzed(nv.parse_smi_xml, [_H200 + 'nvidia-smi_-q_-x.xml', 'derived/nvidia/q-x_*'], check=smi_xml_gpus, non_text='decodes'),
    Fuzzed(nv.parse_topo_matrix, [_H200 + 'nvidia-smi_topo_-m*.txt', 'derived/nvidia/topo-m_*'], check=topo_symmetric,
           non_text='decodes'),
    Fuzzed(nv.parse_nvlink_status, [_H200 + 'nvidia-smi_nvlink_--status.txt', 'derived/nvidia/nvlink-status_*'],
           check=nvlink_links, non_text='decodes'),
    Fuzzed(nv.parse_nvlink_errors, ['derived/nvidia/nvlink-errors_*'], non_text='decodes'),
    Fuzzed(nv.parse_xid_events, ['derived/nvidia/kernel-log_*'], returns=list, check=xid_numbers, non_text='lenient'),
    Fuzzed(nv.parse_proc_driver_version, [_H200 + 'proc_driver_nvidia_version.txt', 'derived/nvidia/proc-driver-version_*'],
           check=proc_driver_version, non_text='decodes'),
    Fuzzed(nv.parse_nvcc_version, [], [_NVCC], returns=str, non_text='decodes'),
    # AMD
    Fuzzed(amd.parse_amd_static, ['amd/amd-smi_static_*'], check=amd_devices, non_text='decodes'),
    Fuzzed(amd.parse_amd_metric, ['amd/amd-smi_metric_*'], non_text='decodes'),
    Fuzzed(amd.parse_amd_bad_pages, ['amd/amd-smi_bad-pages_*'], non_text='decodes'),
    Fuzzed(amd.parse_amd_topology, ['amd/amd-smi_topology_*'], non_text='decodes'),
    Fuzzed(amd.parse_amd_xgmi, ['amd/amd-smi_xgmi_*'], non_text='decodes'),
    Fuzzed(amd.parse_rocm_smi_allinfo, ['amd/rocm-smi_--showallinfo_*'], check=amd_devices, non_text='decodes'),
    Fuzzed(amd.parse_rocm_smi_topo, ['amd/rocm-smi_--showtopo_*'], non_text='decodes'),
    # workloads: dmon samples, clock event reasons, nccl-tests
    Fuzzed(dmon.parse_dmon, ['dmon/*.txt'], check=dmon_summarised),
    Fuzzed(clock.parse_clock_events, ['dmon/*clock-events*.csv'], check=clock_events_judged),
    Fuzzed(nccl.parse_nccl_tests, ['hardware/*/nccl-tests_*.txt', 'derived/nccl/*.txt'], check=nccl_curve),
    # schedulers
    Fuzzed(sched.parse_scontrol_node, ['scheduler/scontrol-*', 'scheduler/derived-scontrol-*'], check=scheduler_nodes),
    Fuzzed(sched.parse_sinfo_nodes, ['scheduler/derived-sinfo-*'], returns=list, check=sinfo_rows),
    Fuzzed(sched.parse_kube_node, ['scheduler/derived-kubectl-node-*'], check=scheduler_nodes),
    Fuzzed(sched.parse_kube_nodes, ['scheduler/derived-kubectl-nodes.json'], returns=list, check=scheduler_nodes),
    Fuzzed(sched.parse_kube_pods, ['scheduler/derived-kubectl-pods-*'], returns=int, check=pod_count),
    Fuzzed(sched.parse_slurmd_config, ['scheduler/slurmd-C-*', 'scheduler/derived-slurmd-C-*'], check=slurmd_config),
    Fuzzed(sched.parse_systemctl_is_active, [], ['active\n', 'inactive\n', 'failed\n', 'activating\n'], check=unit_state),
]


def table(lines):
    """Every parser of ``lines``, of the filter and of the case files (a ``parse_<name>``; the cases of a helper such as
    ``nvml_init_error`` are not a corpus), each once, its case texts added to its line."""
    seeds = case_files.fuzz_seeds()
    entries = dict((line.parser, line) for line in lines)
    assert len(entries) == len(lines), 'a parser has two lines: %s' % sorted(line.name for line in lines)
    order = [line.parser for line in lines]
    for parser in list(parse_filter.PARSERS.values()) + [parser for parser in seeds if parser.__name__.startswith('parse_')]:
        if parser not in entries:
            entries[parser] = Fuzzed(parser)
            order.append(parser)
    return [entries[parser].add_seeds(seeds.get(parser, ())) for parser in order]


FUZZ = table(LINES)
BY_PARSER = dict((entry.parser, entry) for entry in FUZZ)


def corpus(parser):
    """The texts of ``parser``'s line."""
    return BY_PARSER[parser].texts
