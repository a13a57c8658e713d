"""Fuzz the NVIDIA parsers with truncated, mutated and random text derived from the real captures
and the derived fixtures: whatever they are fed, only ``ParseError`` may escape (and the kernel-log
parser, which reads free text, never raises). Also the plain tests of ``merge_gpu_details``.
"""
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_nvidia as nv
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import assert_finite, numbers_injected

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures'))
REAL = os.path.join(FIXTURES, 'hardware', 'h200x4-nvlink')
DERIVED = os.path.join(FIXTURES, 'derived', 'nvidia')

# Examples per test: the loaded profile (tests/conftest.py: 150 for make unit, 10,000 for make fuzz).
SETTINGS = settings()


def _read(path):
    with open(path) as handle:
        return handle.read()


def _derived(prefix):
    return sorted(os.path.join(DERIVED, name) for name in os.listdir(DERIVED) if name.startswith(prefix))


CORPUS = {
    'query_gpu': [os.path.join(REAL, 'nvidia-smi_--query-gpu.csv')] + _derived('query-gpu_'),
    'smi_xml': [os.path.join(REAL, 'nvidia-smi_-q_-x.xml')] + _derived('q-x_'),
    'topo': [os.path.join(REAL, 'nvidia-smi_topo_-m.txt'), os.path.join(REAL, 'nvidia-smi_topo_-mp.txt')] + _derived('topo-m_'),
    'nvlink': [os.path.join(REAL, 'nvidia-smi_nvlink_--status.txt')] + _derived('nvlink-status_'),
    'kernel_log': _derived('kernel-log_'),
    'proc_version': [os.path.join(REAL, 'proc_driver_nvidia_version.txt')] + _derived('proc-driver-version_')
    + _derived('nvidia-smi_nvml-'),
    'nvcc': [],
}
TEXTS = dict((key, [_read(path) for path in paths]) for key, paths in CORPUS.items())
TEXTS['nvcc'] = ['nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n'
                 'Built on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\n'
                 'Build cuda_13.0.r13.0/compiler.36424714_0\n']
NOISE = st.text(alphabet=st.characters(blacklist_categories=('Cs',)), max_size=40)
TOKENS = st.sampled_from(['\t', ' X ', 'NV18', 'SYS', 'GPU0', 'NIC0', 'N/A', '[N/A]', ',', '\n', 'Link 0:', '<inactive>',
                          'GB/s', '<gpu id="00000000:00:06.0">', '</gpu>', '<total>', 'Enabled', 'Xid', 'NVRM: Xid (PCI:',
                          '0000:18:00): ', '79, ', 'pid=', 'name=', 'release ', '13.0', '\x1b[4m', '\r\n', '\x00', '\xff',
                          'NVRM version: ', 'Kernel Module ', '580.159.04', 'Failed to initialize NVML: ',
                          'NVML: Unable to retrieve NVLink information as all links are inActive'])


@st.composite
def mutated(draw, key):
    """One capture or fixture of ``key``, then truncated, line-edited, byte-edited, or replaced."""
    text = draw(st.sampled_from(TEXTS[key]))
    how = draw(st.sampled_from(['truncate', 'lines', 'bytes', 'tokens', 'random', 'splice']))
    if how == 'truncate':
        return text[:draw(st.integers(0, len(text)))]
    if how == 'lines':
        lines = text.split('\n')
        for dummy in range(draw(st.integers(1, 4))):
            if not lines:
                break
            at = draw(st.integers(0, len(lines) - 1))
            op = draw(st.sampled_from(['drop', 'dup', 'swap', 'replace', 'cut']))
            if op == 'drop':
                del lines[at]
            elif op == 'dup':
                lines.insert(at, lines[at])
            elif op == 'swap':
                other = draw(st.integers(0, len(lines) - 1))
                lines[at], lines[other] = lines[other], lines[at]
            elif op == 'replace':
                lines[at] = draw(NOISE)
            else:
                lines[at] = lines[at][:draw(st.integers(0, len(lines[at])))]
        return '\n'.join(lines)
    if how == 'bytes':
        chars = list(text)
        for dummy in range(draw(st.integers(1, 8))):
            if not chars:
                break
            at = draw(st.integers(0, len(chars) - 1))
            chars[at] = draw(st.characters(blacklist_categories=('Cs',)))
        return ''.join(chars)
    if how == 'tokens':
        return ''.join(draw(st.lists(TOKENS, max_size=60)))
    if how == 'splice':
        at = draw(st.integers(0, len(text)))
        return text[:at] + ''.join(draw(st.lists(TOKENS, max_size=8))) + draw(NOISE) + text[at:]
    return draw(st.text(max_size=300))


def _only_parse_errors(func, text, **kwargs):
    try:
        result = func(text, **kwargs)
    except ParseError:
        return None
    assert_finite(result)
    return result


@SETTINGS
@given(text=mutated('query_gpu'), with_fields=st.booleans())
def test_fuzz_query_gpu(text, with_fields):
    kwargs = {'fields': list(nv.QUERY_GPU_FIELDS)} if with_fields else {}
    result = _only_parse_errors(nv.parse_query_gpu, text, **kwargs)
    if result is not None:
        assert isinstance(result, list)
        for device in result:
            assert set(device) - set(['parse_error']) == set([
                'index', 'name', 'uuid', 'bus_id', 'driver_version', 'memory_total_mib', 'pcie_gen_current', 'pcie_gen_max',
                'pcie_width_current', 'pcie_width_max', 'persistence_mode', 'ecc_mode', 'clocks_max_sm_mhz'])
            assert device['ecc_mode'] in (True, False, None)


@SETTINGS
@given(text=mutated('smi_xml'))
def test_fuzz_smi_xml(text):
    result = _only_parse_errors(nv.parse_smi_xml, text)
    if result is not None:
        assert set(result) == set(['driver_version', 'cuda_driver_version', 'gpus'])
        for bus_id, gpu in result['gpus'].items():
            if bus_id.startswith('<gpu '):
                assert set(gpu) == set(['parse_error'])
                continue
            assert bus_id == nv.normalise_bus_id(bus_id)
            assert isinstance(gpu['clocks_event_reasons_active'], list) or 'parse_error' in gpu
        merged = nv.merge_gpu_details([{'index': 0, 'bus_id': '00000000:00:06.0'}], result)
        assert len(merged) == 1


@SETTINGS
@given(text=mutated('topo'))
def test_fuzz_topo(text):
    result = _only_parse_errors(nv.parse_topo_matrix, text)
    if result is not None:
        for row, cells in result['matrix'].items():
            assert row not in cells
            assert row in result['devices']


@SETTINGS
@given(text=mutated('nvlink'))
def test_fuzz_nvlink(text):
    result = _only_parse_errors(nv.parse_nvlink_status, text)
    if result is not None:
        for gpu in result.values():
            for link in gpu['links']:
                assert link['active'] is (link['speed_gbps'] is not None)


@SETTINGS
@given(text=st.one_of(mutated('kernel_log'), mutated('nvlink'), st.binary(max_size=200)))
def test_fuzz_xid_never_raises(text):
    result = nv.parse_xid_events(text)
    assert isinstance(result, list)
    for event in result:
        assert isinstance(event['xid'], int)


@SETTINGS
@given(text=mutated('proc_version'))
def test_fuzz_proc_driver_version(text):
    result = _only_parse_errors(nv.parse_proc_driver_version, text)
    if result is not None:
        assert set(result) == set(['version', 'flavour', 'arch', 'gcc_version'])
        assert result['version'][0].isdigit() and result['flavour'] in ('open', 'proprietary')


@SETTINGS
@given(text=st.one_of(mutated('proc_version'), mutated('query_gpu'), st.binary(max_size=100), st.none(), st.integers()))
def test_fuzz_nvml_init_error_never_raises(text):
    result = nv.nvml_init_error(text)
    assert result is None or set(result) == set(['message', 'nvml_library_version'])


@SETTINGS
@given(text=mutated('nvcc'))
def test_fuzz_nvcc(text):
    result = _only_parse_errors(nv.parse_nvcc_version, text)
    assert result is None or isinstance(result, str)


@SETTINGS
@given(text=st.one_of(st.text(max_size=30), st.sampled_from(['00000000:00:06.0', '0000:18:00', 'PCI:0000:3b:00', '1b:00.0'])))
def test_fuzz_normalise_bus_id(text):
    result = _only_parse_errors(nv.normalise_bus_id, text)
    if result is not None:
        assert nv.normalise_bus_id(result) == result


NUMERIC_PARSERS = [('query_gpu', nv.parse_query_gpu), ('smi_xml', nv.parse_smi_xml), ('topo', nv.parse_topo_matrix),
                   ('nvlink', nv.parse_nvlink_status), ('kernel_log', nv.parse_xid_events),
                   ('proc_version', nv.parse_proc_driver_version), ('nvcc', nv.parse_nvcc_version)]


@pytest.mark.parametrize('key,func', NUMERIC_PARSERS, ids=[key for key, _func in NUMERIC_PARSERS])
@SETTINGS
@given(data=st.data())
def test_huge_and_non_finite_numbers(key, func, data):
    """Issue 8 item 7: 4,300+ digit runs, values past 2**64, nan and inf in place of the captures' numbers."""
    _only_parse_errors(func, data.draw(numbers_injected(TEXTS[key])))


@pytest.mark.parametrize('func', [nv.parse_query_gpu, nv.parse_smi_xml, nv.parse_topo_matrix, nv.parse_nvlink_status,
                                  nv.parse_nvcc_version, nv.normalise_bus_id, nv.parse_proc_driver_version])
@pytest.mark.parametrize('value', [42, ['a'], {'a': 1}])
def test_non_text_is_a_parse_error(func, value):
    with pytest.raises(ParseError):
        func(value)


# ------------------------------------------------------------------------- merge_gpu_details

def test_merge_gpu_details_real_capture():
    devices = nv.parse_query_gpu(_read(os.path.join(REAL, 'nvidia-smi_--query-gpu.csv')))
    details = nv.parse_smi_xml(_read(os.path.join(DERIVED, 'q-x_remapped-row-pending-gpu2.xml')))
    merged = nv.merge_gpu_details(devices, details)
    assert [d['index'] for d in merged] == [0, 1, 2, 3]
    assert merged[2]['bus_id'] == '00000000:00:08.0'
    assert merged[2]['remapped_rows'] == {'correctable': 0, 'uncorrectable': 1, 'pending': True, 'failure': False}
    assert merged[0]['remapped_rows']['pending'] is False
    assert merged[0]['ecc_errors']['volatile'] == {'sram_correctable': 0, 'sram_uncorrectable': 0,
                                                   'dram_correctable': 0, 'dram_uncorrectable': 0}
    assert merged[3]['clocks_event_reasons_active'] == []
    assert merged[1]['persistence_mode'] is True
    assert 'ecc_errors' not in devices[0], 'the input list must not be changed'


def test_merge_gpu_details_missing_gpu_and_other_format():
    devices = [{'index': 0, 'name': None, 'uuid': None, 'bus_id': '00000000:1C:00.0'},
               {'index': 1, 'name': 'X', 'uuid': 'GPU-x', 'bus_id': '00000000:AA:00.0'},
               {'index': 2, 'bus_id': None}]
    details = nv.parse_smi_xml(_read(os.path.join(DERIVED, 'q-x_legacy-v100-r470.xml')))
    merged = nv.merge_gpu_details(devices, details)
    assert merged[0]['name'] == 'Tesla V100-SXM2-32GB'
    assert merged[0]['uuid'] == 'GPU-8a1d2f44-0c6e-4f9a-b3c2-7e5d9a0b4f12'
    assert merged[0]['retired_pages'] == {'single_bit': 2, 'double_bit': 1, 'pending': True}
    assert merged[0]['clocks_event_reasons_active'] == ['sw_power_cap']
    for device in merged[1:]:
        for key in ('ecc_errors', 'retired_pages', 'remapped_rows', 'clocks_event_reasons_active'):
            assert device[key] is None
    assert merged[1]['name'] == 'X'


def test_merge_gpu_details_empty():
    assert nv.merge_gpu_details([], {'gpus': {}}) == []
    assert nv.merge_gpu_details([{'index': 0, 'bus_id': '00000000:00:06.0'}], None)[0]['ecc_errors'] is None


def test_query_gpu_fields_match_the_real_capture_header():
    header = _read(os.path.join(REAL, 'nvidia-smi_--query-gpu.csv')).split('\n')[0]
    names = [name.split(' [')[0].strip() for name in header.split(',')]
    assert tuple(names) == nv.QUERY_GPU_FIELDS
