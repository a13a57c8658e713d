"""The whole-run steps of validate.yml: hosts compared with each other once (linear in the hosts), the host
lists of the later plays, the preflight of every host, and reading a host's results without building all
its variables."""
import pytest

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _node, _preflight

PROFILE = {'name': 'x', 'checks': {}}


def node(driver='580.95.05', nccl='2.28.9', flags=(), checks=None, path='/p/x.yml', compare=True):
    facts = {'software': {'driver_version': driver, 'nccl_version': nccl, 'cuda_toolkit_version': '12.8'},
             'host': {'kernel': {'release': '6.8.0-60-generic'}}}
    return _node.summary(facts, dict(PROFILE, checks=checks or {}), path, 'fail', flags, compare=compare)


def fleet(n, **odd):
    hosts = dict(('n%04d' % i, node()) for i in range(n))
    hosts.update(odd)
    return hosts


def test_the_host_whose_driver_differs_is_named_and_only_it():
    plan = _node.plan(fleet(999, n0500=node(driver='570.86.10')))
    assert plan['failing'] == ['n0500']
    (finding,) = plan['findings']['n0500']
    assert finding['check'] == 'consistency.software.driver_version'
    assert finding['measured'] == '570.86.10' and finding['expected'] == '580.95.05'
    assert set(plan['findings']) == {'n0500'}


def test_hosts_of_different_profile_files_are_not_compared():
    plan = _node.plan({'a': node(path='/p/a.yml'), 'b': node(path='/p/a.yml'),
                       'c': node(driver='1', path='/p/c.yml'), 'd': node(driver='1', path='/p/c.yml')})
    assert plan['findings'] == {} and plan['failing'] == []


def test_a_hosts_own_overrides_apply_to_its_findings():
    hosts = fleet(5, n0001=node(nccl='2.18.1', checks={'severity': {'consistency.software.nccl_version': 'warn'}}),
                  n0002=node(driver='1.0', checks={'disable': ['consistency.*']}))
    plan = _node.plan(hosts)
    assert [f['severity'] for f in plan['findings']['n0001']] == ['warn']
    assert 'n0002' not in plan['findings']
    assert plan['failing'] == []


def test_a_host_left_out_of_the_comparison_is_not_judged_by_it():
    plan = _node.plan(fleet(3, n0001=node(driver='1.0', compare=False)))
    assert plan['findings'] == {}


@pytest.mark.parametrize('flags, failing, stage, multinode, recheck', [
    ((), False, False, False, False),
    (('stages',), False, True, False, False),
    (('stages',), True, False, False, False),
    (('stages', 'on_failed'), True, True, False, False),
    (('multinode',), False, False, True, False),
    (('multinode',), True, False, False, False),
    (('stages', 'recheck'), False, True, False, True),
])
def test_stage_host_lists(flags, failing, stage, multinode, recheck):
    hosts = fleet(4, n0001=node(driver='1.0' if failing else '580.95.05', flags=flags))
    plan = _node.plan(hosts)
    assert ('n0001' in plan['stage_hosts']) is stage
    assert ('n0001' in plan['multinode_hosts']) is multinode
    assert ('n0001' in plan['recheck_hosts']) is recheck
    assert ('n0001' in plan['failing']) is failing


def test_plan_is_linear_in_the_hosts():
    """Each host's values are read a fixed number of times: counted, not timed."""
    reads = {'n': 0}

    class Counting(dict):
        def get(self, key, default=None):
            reads['n'] += 1
            return dict.get(self, key, default)

    for n in (100, 400):
        reads['n'] = 0
        hosts = dict(('h%d' % i, Counting(node())) for i in range(n))
        _node.plan(hosts)
        per_host = reads['n'] / float(n)
        assert per_host <= 4, per_host


class _Manager(object):
    def __init__(self, facts, set_facts):
        self._fact_cache = facts
        self._nonpersistent_fact_cache = set_facts


class _HostVars(object):
    """Stands in for Ansible's HostVars: reading a host through it (raw_get, []) would build all its variables."""

    def __init__(self, facts, set_facts):
        self._variable_manager = _Manager(facts, set_facts)

    def raw_get(self, host):
        raise AssertionError('all the variables of %s were built' % host)

    __getitem__ = raw_get


def test_host_values_read_the_fact_caches_not_all_variables():
    hv = _HostVars({'a': {'xuanwu_status': 'pass', 'xuanwu_node': {'fail_on': 'fail'}}},
                   {'a': {'xuanwu_status': 'warn'}})
    assert _node.host_values(hv, 'a', ('xuanwu_status', 'xuanwu_node', 'absent')) == {
        'xuanwu_status': 'warn', 'xuanwu_node': {'fail_on': 'fail'}, 'absent': None}
    assert _node.host_values(hv, 'unknown', ('xuanwu_status',)) == {'xuanwu_status': None}


def test_host_values_fall_back_to_raw_get():
    class Plain(object):
        def raw_get(self, host):
            return {'xuanwu_status': 'fail'}
    assert _node.host_values(Plain(), 'a', ('xuanwu_status',)) == {'xuanwu_status': 'fail'}


KNOWN = _preflight.known_variables()


def test_preflight_resolves_a_shared_profile_once(monkeypatch):
    calls = []
    real = _preflight._collection.resolve_profile

    def counting(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(_preflight._collection, 'resolve_profile', counting)
    cache = _preflight.ProfileCache()
    for i in range(50):
        problems, profile, path = _preflight.check_host({'xuanwu_profile': 'h200x4-nvlink'}, ('inventory_hostname', 'n%d' % i), KNOWN, cache)
        assert problems == [] and profile['name'] == 'h200x4-nvlink'
    assert len(calls) == 1


@pytest.mark.parametrize('variables, message', [
    ({}, "variable 'xuanwu_profile' is not set"),
    ({'xuanwu_profile': 'h200x4-nvlnk'}, "unknown profile 'h200x4-nvlnk' (did you mean 'h200x4-nvlink'?)"),
    ({'xuanwu_profile': 'h200x4-nvlink', 'xuanwu_proflie': 'x'}, "unknown variable 'xuanwu_proflie' (did you mean 'xuanwu_profile'?)"),
    ({'xuanwu_profile': 'h200x4-nvlink', 'xuanwu_validate_multinode': 'yes'}, "must be a host name or address"),
])
def test_preflight_names_each_problem(variables, message):
    problems, profile, _path = _preflight.check_host(variables, ('ansible_host', 'a b; rm -rf /'), KNOWN, _preflight.ProfileCache())
    assert profile is None
    assert any(message in p for p in problems), problems


def test_preflight_names_each_mistake_of_the_overrides_as_a_problem_of_its_own():
    variables = {'xuanwu_profile': 'h200x4-nvlink', 'xuanwu_profile_overrides': {'gpu': {'cuont': 4, 'ecc_required': 'no'}}}
    problems, profile, _path = _preflight.check_host(variables, ('inventory_hostname', 'n1'), KNOWN, _preflight.ProfileCache())
    assert profile is None
    assert problems == ["xuanwu_profile_overrides: gpu.cuont: unknown key 'cuont'; did you mean 'count'?",
                        "xuanwu_profile_overrides: gpu.ecc_required: expected a boolean (true/false), got str ('no')"]
    assert _preflight.message({'n1': problems}).splitlines()[1:] == ['- ' + problem for problem in problems]


def test_preflight_message_names_every_host():
    text = _preflight.message({'b': ['two'], 'a': ['one']})
    assert text.index('host a:') < text.index('host b:') and 'nothing was changed' in text


@pytest.mark.parametrize('content, message', [
    (b'schema_version: 1\nname: caf\xe9\n', 'the profile is not UTF-8 text: byte 0xe9 at line 2 (offset 27); save it as UTF-8'),
    (b'\xff\xfes\x00c\x00', 'the profile is not UTF-8 text: byte 0xff at line 1 (offset 0)'),
    (b'schema_version: 1\n\x00\x00', 'the profile is not text: it holds a NUL byte at line 2'),
    (b'schema_version: [1\n', 'the profile is not valid YAML'),
])
def test_a_profile_file_that_is_not_text_is_named_and_the_other_hosts_are_still_checked(tmp_path, content, message):
    bad = tmp_path / 'site.yml'
    bad.write_bytes(content)
    cache = _preflight.ProfileCache()
    problems, profile, _path = _preflight.check_host({'xuanwu_profile': str(bad)}, ('inventory_hostname', 'n1'), KNOWN, cache)
    assert profile is None and any(p.startswith('%s: %s' % (bad, message)) for p in problems), problems
    # the next host, with a good profile, is checked as usual, and the message names both
    good, profile, _path = _preflight.check_host({'xuanwu_profile': 'h200x4-nvlink'}, ('inventory_hostname', 'n2'), KNOWN, cache)
    assert good == [] and profile['name'] == 'h200x4-nvlink'
    text = _preflight.message({'n1': problems, 'n2': ['xuanwu_profile_overrides: must be a mapping']})
    assert 'host n1:' in text and 'host n2:' in text and str(bad) in text
