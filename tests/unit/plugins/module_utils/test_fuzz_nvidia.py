"""Fuzz the NVIDIA parsers beyond their lines of the fuzz table (fuzzing.FUZZ, run by test_fuzz_parsers.py):
``--query-gpu`` read with the field list (``--format=csv,noheader``), the helpers ``nvml_init_error`` (never raises)
and ``normalise_bus_id``; and the plain tests of ``merge_gpu_details``.
"""
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_nvidia as nv
from ansible_collections.xuanwu.cluster.plugins.module_utils._commands import QUERY_GPU_FIELDS
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import BY_PARSER, FIXTURES, accept, mutated

REAL = os.path.join(FIXTURES, 'hardware', 'h200x4-nvlink')
DERIVED = os.path.join(FIXTURES, 'derived', 'nvidia')

# Examples per test: the loaded profile (tests/conftest.py: 150 for make unit, 10,000 for make fuzz).
SETTINGS = settings()
QUERY_GPU = BY_PARSER[nv.parse_query_gpu]
PROC_VERSION = BY_PARSER[nv.parse_proc_driver_version]


def _read(path):
    with open(path) as handle:
        return handle.read()


@SETTINGS
@given(text=mutated(QUERY_GPU))
def test_fuzz_query_gpu_with_the_field_list(text):
    accept(QUERY_GPU, text, fields=list(QUERY_GPU_FIELDS))


@SETTINGS
@given(text=st.one_of(mutated(PROC_VERSION), mutated(QUERY_GPU), st.binary(max_size=100), st.none(), st.integers(),
                      st.sampled_from([_read(os.path.join(DERIVED, name)) for name in sorted(os.listdir(DERIVED))
                                       if name.startswith('nvidia-smi_nvml-')])))
def test_fuzz_nvml_init_error_never_raises(text):
    result = nv.nvml_init_error(text)
    assert result is None or set(result) == set(['message', 'nvml_library_version'])


def _only_parse_errors(func, text):
    try:
        return func(text)
    except ParseError:
        return None


@SETTINGS
@given(text=st.one_of(st.text(max_size=30), st.sampled_from(['00000000:00:06.0', '0000:18:00', 'PCI:0000:3b:00', '1b:00.0'])))
def test_fuzz_normalise_bus_id(text):
    result = _only_parse_errors(nv.normalise_bus_id, text)
    if result is not None:
        assert nv.normalise_bus_id(result) == result


@pytest.mark.parametrize('value', [42, ['a'], {'a': 1}])
def test_non_text_bus_id_is_a_parse_error(value):
    with pytest.raises(ParseError):
        nv.normalise_bus_id(value)


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
    assert tuple(names) == QUERY_GPU_FIELDS
