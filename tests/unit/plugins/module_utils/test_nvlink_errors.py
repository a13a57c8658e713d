"""NVLink error counters: `nvidia-smi nvlink -e` probed (_parse_nvidia.parse_nvlink_errors) and judged against
gpu.nvlink.errors_max (gpu.nvlink_errors). The shape is constructed after a public H100 output
(tests/fixtures/derived/nvidia/README.md); the judged node is the real 2x H200 capture with that output added."""
import json
import os
import shutil

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _judge, _probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nvidia import parse_nvlink_errors
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import merge_profile
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
DERIVED = os.path.join(ROOT, 'tests', 'fixtures', 'derived', 'nvidia')
BUNDLE = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x2-nvlink-bundle')


def _read(name):
    with open(os.path.join(DERIVED, name)) as handle:
        return handle.read()


def test_parse_the_hopper_counter_set():
    parsed = parse_nvlink_errors(_read('nvlink-errors_h200x2-clean.txt'))
    assert sorted(parsed) == ['0', '1'] and len(parsed['1']['links']) == 18
    assert parsed['0']['links']['17'] == {'replay_errors': 0, 'recovery_errors': 0, 'crc_errors': 0}
    bad = parse_nvlink_errors(_read('nvlink-errors_h200x2-gpu1-link5-replay-crc.txt'))
    assert bad['1']['links']['5'] == {'replay_errors': 3, 'recovery_errors': 0, 'crc_errors': 17}


def test_parse_the_newer_counter_set_bus_id_headers_and_what_is_not_reported():
    text = ('GPU 00000008:06:00.0\n    Link 0: Rx Errors: 0\n    Link 0: Symbol Errors: 2\n    Link 0: FEC Errors - 3: 17\n'
            'GPU 00000009:06:00.0\n    Link 1: Link recovery successful events: N/A\n')
    assert parse_nvlink_errors(text) == {'0': {'links': {'0': {'rx_errors': 0, 'symbol_errors': 2, 'fec_errors_3': 17}}},
                                         '1': {'links': {'1': {'link_recovery_successful_events': None}}}}
    assert parse_nvlink_errors('') == {}


def test_a_bad_line_spoils_its_gpu_only_and_text_before_any_gpu_is_an_error():
    parsed = parse_nvlink_errors('GPU 0: x\n\t Link 0: CRC Errors: lots\nGPU 1: y\n\t Link 0: CRC Errors: 1\n')
    assert parsed['0']['parse_error']['section'] == 'gpu0' and parsed['1']['links'] == {'0': {'crc_errors': 1}}
    with pytest.raises(ParseError) as err:
        parse_nvlink_errors('NVLink is not supported\n')
    assert 'nvidia-smi nvlink -e' in str(err.value) and 'before any GPU line' in str(err.value)


def _bundle_with(tmp_path, name):
    folder = str(tmp_path / 'bundle')
    shutil.copytree(BUNDLE, folder)
    shutil.copy(os.path.join(DERIVED, name), os.path.join(folder, 'nvidia_nvlink_errors.txt'))
    with open(os.path.join(folder, 'manifest.json')) as handle:
        manifest = json.load(handle)
    manifest['probes'].append({'probe': 'nvidia_nvlink_errors', 'command': 'nvidia-smi nvlink -e', 'file': 'nvidia_nvlink_errors.txt',
                               'rc': 0, 'status': 'ok'})
    with open(os.path.join(folder, 'manifest.json'), 'w') as handle:
        json.dump(manifest, handle)
    return folder


def _nvlink_findings(bundle):
    facts = _probe.probe(_probe.ReplayRunner(bundle))
    profile = merge_profile(_collection.resolve_profile('h200x2-nvlink')[0], {'host': {'time': None}})
    return [(f['check'], f['severity'], f['component'], f['measured']) for f in _judge.evaluate(facts, profile, 'n1')
            if 'nvlink_errors' in f['check'] or 'nvlink errors' in str(f['component'])]


def test_clean_counters_pass_and_replays_and_crc_errors_warn_on_their_link(tmp_path):
    assert _nvlink_findings(_bundle_with(tmp_path / 'a', 'nvlink-errors_h200x2-clean.txt')) == []
    assert _nvlink_findings(_bundle_with(tmp_path / 'b', 'nvlink-errors_h200x2-gpu1-link5-replay-crc.txt')) == [
        ('gpu.nvlink_errors', 'warn', 'gpu1/nvlink5', 'crc_errors=17 (max 0), replay_errors=3 (max 0)')]


def test_a_capture_made_before_the_probe_says_so_and_never_passes():
    # the real 2x H200 bundle has no nvlink -e output: not collected (info), never a silent pass
    assert _nvlink_findings(BUNDLE) == [('facts.not_collected', 'info', 'gpu nvlink errors', 'not collected')]


def test_a_real_gpu_without_nvlink_prints_nothing_and_is_not_judged_on_nvlink():
    """The 1x H200 VM of the captures exposes no NVLink: `nvidia-smi nvlink -e` and `--status` print nothing and exit 0
    (tests/fixtures/hardware/h200x1-vm). No counters, so no gpu.nvlink_errors finding, and no 'not measured' either:
    the probe ran and read every link there is."""
    vm = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x1-vm')
    with open(os.path.join(vm, 'nvidia-smi_nvlink_-e.txt')) as handle:
        errors = handle.read()
    with open(os.path.join(vm, 'nvidia-smi_nvlink_-s.txt')) as handle:
        status = handle.read()
    assert errors == '' and status == ''
    assert parse_nvlink_errors(errors) == {}
    profile = _collection.resolve_profile('h200x1')[0]
    facts = {'gpu': {'nvlink_errors': parse_nvlink_errors(errors), 'devices': [{'index': 0}]}}
    assert profile['gpu'].get('nvlink') is None   # the sourced 1x H200 profile: no NVLink to judge
    found = [f for f in _judge.evaluate(facts, profile, 'gpu-host') if f['check'].startswith('gpu.nvlink')]
    assert found == []
