"""Replay every fault of tests/fixtures/corpus/corpus.yml through the probe engine and the checks.

Each fault must produce exactly its expected ``fail`` findings (check id and component), on top of
what the healthy base produces (nothing failing), from facts that conform to the facts schema
(plugins/module_utils/_facts.py); the demo bundles committed under
inventories/demo-bundles must be what scripts/make_bundles.py generates from the corpus.
"""
import filecmp
import importlib.util
import os

import pytest
import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils import _facts, _judge, _probe, _profile
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
from ansible_collections.xuanwu.cluster.tests.unit.generated_docs import assert_current
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import node_answer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location('make_bundles', os.path.join(ROOT, 'scripts', 'make_bundles.py'))
make_bundles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_bundles)

CORPUS = make_bundles.load_corpus()
DEMO_VARS = os.path.join(ROOT, 'inventories', 'demo', 'group_vars', 'all', 'profile.yml')


def load_profile(name, overrides):
    profile = _collection.resolve_profile(name)[0]
    if overrides:
        profile = _profile.merge_profile(profile, overrides, 'overrides')
    return profile


def demo_profile():
    with open(DEMO_VARS) as handle:
        data = yaml.safe_load(handle)
    return load_profile(data['xuanwu_profile'], data.get('xuanwu_profile_overrides'))


def run(tmp_path, probes, profile, host='node'):
    bundle = str(tmp_path / 'bundle')
    make_bundles.write_bundle(probes, bundle, {'host': host})
    facts = _probe.probe(_probe.ReplayRunner(bundle))
    assert _facts.validate(facts) == [], 'facts the schema does not declare (plugins/module_utils/_facts.py)'
    # node_validate's way: the node answers with its raw outputs and the controller parses them, to the same facts
    assert node_answer.facts(_probe.ReplayRunner(bundle)) == facts
    return facts, _judge.evaluate(facts, profile, host)


def failing(findings):
    """The (check, component, severity) of every fail or warn finding."""
    return sorted(set((f['check'], f['component'], f['severity']) for f in findings if f['severity'] in ('fail', 'warn')))


def profile_for(entry):
    if entry.get('profile'):
        return load_profile(entry['profile'], entry.get('overrides'))
    profile = demo_profile()
    if entry.get('overrides'):
        profile = _profile.merge_profile(profile, entry['overrides'], 'overrides')
    return profile


def test_healthy_base_has_no_failure(tmp_path):
    facts, findings = run(tmp_path, make_bundles.resolve(CORPUS, base='h200x4-healthy'), demo_profile())
    assert facts['gpu']['count'] == 4
    assert all(p['status'] == 'ok' for p in facts['probes'].values()), facts['probes']
    assert failing(findings) == []


def test_healthy_amd_base_has_no_failure(tmp_path):
    facts, findings = run(tmp_path, make_bundles.resolve(CORPUS, base='mi300x8-healthy'), load_profile('mi300x-8', None))
    assert (facts['gpu']['vendor'], facts['gpu']['count']) == ('amd', 8)
    assert all(p['status'] == 'ok' for k, p in facts['probes'].items() if k.startswith('amd_')), facts['probes']
    assert failing(findings) == []


def test_corpus_has_twenty_distinct_faults():
    ids = [f['id'] for f in CORPUS['faults']]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 20
    assert all(f['expect'] for f in CORPUS['faults']), 'every fault must expect at least one failing finding'


@pytest.mark.parametrize('fault', CORPUS['faults'], ids=[f['id'] for f in CORPUS['faults']])
def test_fault_is_detected_on_the_right_component(tmp_path, fault):
    _facts, findings = run(tmp_path, make_bundles.resolve(CORPUS, fault=fault['id']), profile_for(fault))
    expected = sorted(set((e['check'], e['component'], e['severity']) for e in fault['expect']))
    assert failing(findings) == expected, [f for f in findings if f['severity'] != 'info']
    for f in findings:
        assert f['remediation'], f
        assert f['host'] == 'node'


def test_demo_bundles_are_generated_from_the_corpus(tmp_path):
    out = str(tmp_path / 'demo')
    hosts = make_bundles.build_demo(CORPUS, out=out)
    committed = os.path.join(ROOT, 'inventories', 'demo-bundles')
    for host in hosts:
        cmp = filecmp.dircmp(os.path.join(out, host), os.path.join(committed, host))
        assert not (cmp.left_only or cmp.right_only or cmp.diff_files), \
            '%s differs: run scripts/make_bundles.py demo (%s)' % (host, cmp.diff_files or cmp.left_only or cmp.right_only)


def test_fault_table_is_current():
    assert_current('docs/fault-corpus.md')


def _replay_fault(tmp_path, fault_id):
    fault = [f for f in CORPUS['faults'] if f['id'] == fault_id][0]
    return run(tmp_path, make_bundles.resolve(CORPUS, fault=fault_id), profile_for(fault))


def test_pcie_downgraded_shows_current_and_max_as_measured(tmp_path):
    # GPU1 of the derived capture trained at Gen4 x8 on a Gen5 x16 link (max values unchanged).
    _facts, findings = _replay_fault(tmp_path, 'pcie-downgraded')
    link = [f for f in findings if f['check'] == 'gpu.pcie_link']
    assert [(f['component'], f['measured'], f['expected']) for f in link] == [('gpu1', 'Gen4 x8 (max Gen5 x16)', 'Gen5 x16')]


def test_bundle_made_before_the_kernel_module_probe_still_replays():
    # The real 2x H200 bundle predates nvidia_proc_version: the module version is not collected
    # (info), never passed, and nothing else changes.
    bundle = os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x2-nvlink-bundle')
    facts = _probe.probe(_probe.ReplayRunner(bundle))
    assert facts['probes']['nvidia_proc_version']['status'] == 'skipped'
    assert 'kernel_module' not in facts['gpu'] and facts['gpu']['count'] == 2
    findings = _judge.evaluate(facts, load_profile('h200x2-nvlink', {'host': {'time': None}}), 'h200x2')
    driver = [(f['check'], f['severity']) for f in findings if f['component'] == 'nvidia driver']
    assert driver == [('facts.not_collected', 'info')]
    assert not [f for f in findings if f['severity'] == 'fail']
