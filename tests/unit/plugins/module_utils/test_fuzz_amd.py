"""Fuzz the amd-smi / rocm-smi parsers beyond their lines of the fuzz table (fuzzing.FUZZ, run by
test_fuzz_parsers.py, JSON rewritten included): JSON nested deeper than the tools print is a ParseError."""
import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_amd as amd
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import FUZZ

JSON_PARSERS = [entry.parser for entry in FUZZ if entry.parser.__module__ == amd.__name__ and entry.parser is not amd.parse_amd_version]


def test_every_amd_parser_is_fuzzed():
    assert len(JSON_PARSERS) == 7 and amd.parse_rocm_smi_topo in JSON_PARSERS


@pytest.mark.parametrize('parser', JSON_PARSERS, ids=lambda p: p.__name__)
def test_deeply_nested_json_is_a_parse_error(parser):
    with pytest.raises(ParseError):
        parser('[' * 5000 + ']' * 5000)
