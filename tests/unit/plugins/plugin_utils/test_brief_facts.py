"""Brief facts (docs/facts.md, "Brief facts"): what node_validate keeps of a host that takes part in no later stage
reads the same as the whole facts wherever the whole-run steps read it, and the task's options read from the host's
variables are those the role's task used to template one by one."""
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.action import node_validate
from ansible_collections.xuanwu.cluster.plugins.module_utils import _facts, _judge, _probe
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _report
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _runrecord as rr

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
BUNDLES = [os.path.join(ROOT, 'inventories', 'demo-bundles', name) for name in ('gpu-node01', 'gpu-node03')] + [
    os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x2-nvlink-bundle')]


def _values(value):
    if isinstance(value, dict):
        return 1 + sum(_values(v) + 1 for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_values(v) for v in value)
    return 1


@pytest.mark.parametrize('bundle', BUNDLES, ids=os.path.basename)
def test_brief_facts_read_as_the_whole_ones_and_are_a_tenth_of_them(bundle):
    facts = _probe.probe(_probe.ReplayRunner(bundle))
    brief = _facts.brief(facts)
    assert brief['brief'] is True and 'brief' not in facts
    assert _facts.validate(brief) == []          # every value where the schema puts it, with its type
    # what the report, the run record and the launch kit read of a host
    assert _report._facts_summary(brief) == _report._facts_summary(facts)
    assert rr.versions(brief) == rr.versions(facts)
    for key in ('count', 'vendor', 'driver_version'):
        assert brief['gpu'].get(key) == facts['gpu'].get(key)
    assert [d['uuid'] for d in brief['gpu']['devices']] == [d['uuid'] for d in facts['gpu']['devices']]
    assert _judge.device_bounds(brief) == _judge.device_bounds(facts)      # a dmon judgement's temperature bound
    for name, ca in (facts['infiniband'].get('cas') or {}).items():
        assert brief['infiniband']['cas'][name]['firmware'] == ca['firmware']
        assert dict((p, v['state']) for p, v in brief['infiniband']['cas'][name]['ports'].items()) == \
            dict((p, v['state']) for p, v in ca['ports'].items())
    # what passes through Ansible's main process per host: the whole facts are thousands of values
    assert _values(brief) * 8 < _values(facts), (_values(brief), _values(facts))
    assert len(json.dumps(brief)) * 5 < len(json.dumps(facts))


def test_no_facts_stay_no_facts_and_odd_shapes_do_not_break_it():
    assert _facts.brief({}) == {} and _facts.brief(None) == {}
    odd = {'schema_version': 1, 'source': 'live', 'gpu': {'devices': 'none', 'count': 0},
           'infiniband': {'cas': {'mlx5_0': {'ports': None}}}, 'host': 'x'}
    assert _facts.brief(odd) == {'schema_version': 1, 'source': 'live', 'brief': True, 'gpu': {'count': 0},
                                 'infiniband': {'cas': {'mlx5_0': {}}}}


def test_brief_profile_keeps_its_name_and_gpu_count():
    profile, _path = _collection.resolve_profile('h200x4-nvlink', {}, [])
    assert _facts.brief_profile(profile) == {'brief': True, 'name': 'h200x4-nvlink', 'gpu': {'count': 4}}
    assert _facts.brief_profile(None) is None


def template(value):
    """The templar of the test: '{{ name }}' is replaced by VARS[name]."""
    if isinstance(value, str) and value.startswith('{{'):
        return VARS[value.strip('{} ')]
    return value


VARS = {'site_profile': 'h200x4-nvlink'}


def test_options_are_read_from_the_variables_and_templated():
    variables = {'xuanwu_profile': '{{ site_profile }}', 'xuanwu_profile_overrides': {'gpu': {'count': 8}},
                 'xuanwu_probe_timeout': 30, 'xuanwu_torch_master_port': 29500, 'xuanwu_job_ports': [8080],
                 'xuanwu_nccl_env': {'NCCL_DEBUG': 'INFO', 'TOKEN': 'a'}, 'xuanwu_torch_env': {'TOKEN': 'b'},
                 'xuanwu_validate_collectives': 'yes', 'xuanwu_recheck_counters': False, 'xuanwu_full_facts': True,
                 'nccl_tests_build_archive': '/srv/nccl-tests.tar.gz', 'xuanwu_replay_dir': '',
                 'unrelated': 'left alone'}
    args = node_validate.options_from_variables({'fail_on': 'warn'}, variables, template)
    assert args['profile'] == 'h200x4-nvlink' and args['overrides'] == {'gpu': {'count': 8}}
    assert args['timeout'] == 30 and args['fail_on'] == 'warn' and args['full_facts'] is True
    assert args['job_ports'] == [29500, 8080]
    assert args['job_env'] == {'NCCL_DEBUG': 'INFO', 'TOKEN': 'b'}        # torch's over nccl's, as the role's combine
    assert args['stages'] == {'collectives': 'yes', 'recheck_counters': False, 'build': True}
    assert 'unrelated' not in args


def test_given_options_win_and_a_replay_builds_nothing():
    variables = {'xuanwu_profile': 'h200x4-nvlink', 'xuanwu_job_ports': [1], 'nccl_tests_build_archive': '/a.tgz',
                 'xuanwu_replay_dir': '/bundle', 'xuanwu_validate_workloads': True}
    given = {'profile': 'b200x8', 'job_ports': [], 'stages': {'workloads': False}}
    args = node_validate.options_from_variables(given, variables, template)
    assert args['profile'] == 'b200x8' and args['job_ports'] == [] and args['replay_dir'] == '/bundle'
    assert args['stages'] == {'workloads': False, 'build': False}
    assert node_validate.options_from_variables({}, {}, template) == {'job_ports': [], 'job_env': {}, 'stages': {'build': False}}


def test_a_check_that_reads_a_brief_profile_gets_the_whole_one_from_the_host_variables():
    """workload_check and node_check read xuanwu_profile_resolved; a host in no later stage keeps it in brief (the
    rollout's scheduler check runs on every validated host), so they resolve it again from the host's variables."""
    from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
    whole, _path = _collection.resolve_profile('h200x4-nvlink', {'gpu': {'count': 8}}, [])
    variables = {'xuanwu_profile': '{{ site_profile }}', 'xuanwu_profile_overrides': {'gpu': {'count': 8}}}
    assert _collection.host_profile(_facts.brief_profile(whole), variables, template) == whole
    assert _collection.host_profile(whole, {}, template) is whole           # a whole profile is used as it is
    with pytest.raises(ProfileError):
        _collection.host_profile({'brief': True}, {'xuanwu_profile': 'no-such-profile'})
