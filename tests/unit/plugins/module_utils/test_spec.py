"""The spec language (plugins/module_utils/_spec.py) of the profile schema and of the facts schema: one validator that
lists every problem (a profile with several mistakes is one error, one line per mistake naming the file and the key;
facts with several are one list), fills defaults where a document stands alone, and never raises for what the data
holds; one renderer of the tables of docs/profiles.md and docs/facts.md."""
import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import _facts, _profile, _spec
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError

SMALL = {
    'type': 'dict', 'description': 'A document.', 'refused': {'extends': 'only a file may extend others'},
    'keys': {
        'name': {'type': 'str', 'required': True, 'pattern': r'^[a-z]+$', 'description': 'Its name.'},
        'count': {'type': 'int', 'min': 0, 'max': 8, 'default': 1, 'description': 'How many.'},
        'ratio': {'type': 'float', 'null': True, 'description': 'A share.'},
        'mode': {'type': 'str', 'choices': ['fast', 'slow'], 'description': 'How.'},
        'ports': {'type': 'list', 'default': [], 'elements': {'type': 'port'}, 'description': 'Ports.'},
        'limits': {'type': 'map', 'default': {}, 'description': 'Limits by counter.',
                   'key': {'type': 'str', 'pattern': r'^[a-z_]+$', 'description': 'counter'},
                   'values': {'type': 'int', 'min': 0}},
        'points': {'type': 'list', 'min_items': 1, 'check': 'sorted', 'description': 'Points.',
                   'elements': {'type': 'dict', 'description': 'One point.', 'shared': True,
                                'keys': {'at': {'type': 'int', 'required': True, 'description': 'Where.'}}}},
    },
}


def _sorted(ctx, key, value):
    ats = [point['at'] for point in value]
    if ats != sorted(ats):
        ctx.add(key, 'not sorted: %s' % ats)


CHECKS = {'sorted': _sorted}


def check(value, mode=_spec.WHOLE):
    return _spec.validate(SMALL, value, 'doc.yml', mode, CHECKS)


def test_a_whole_document_gets_its_defaults_and_every_key():
    out, problems = check({'name': 'a', 'ratio': 2, 'ports': [80, '53/UDP']})
    assert problems == []
    assert out == {'name': 'a', 'count': 1, 'ratio': 2.0, 'mode': None, 'ports': ['80/tcp', '53/udp'], 'limits': {},
                   'points': None}
    assert isinstance(out['ratio'], float)


def test_every_problem_is_listed_with_the_file_and_the_key_in_document_order():
    out, problems = check({'extends': 'x', 'nmae': 'a', 'count': 9, 'mode': 'fsat', 'ports': ['ssh', 70000],
                           'limits': {'Bad': 1, 'ok': -1}, 'points': [{'at': 2}, {}]})
    assert [str(problem) for problem in problems] == [
        'doc.yml: extends: only a file may extend others',
        "doc.yml: nmae: unknown key 'nmae'; did you mean 'name'?",
        "doc.yml: name: missing required key 'name'",
        'doc.yml: count: must be at most 8, got 9',
        "doc.yml: mode: 'fsat' is not one of 'fast', 'slow'; did you mean 'fast'?",
        'doc.yml: ports[0]: expected a port number or "PORT/tcp|udp", got str (\'ssh\')',
        'doc.yml: ports[1]: port 70000 is outside 1-65535',
        "doc.yml: limits.Bad: key 'Bad' does not match ^[a-z_]+$",
        'doc.yml: limits.ok: must be at least 0, got -1',
        "doc.yml: points[1].at: missing required key 'at'",
    ]
    assert all(isinstance(problem, _spec.Problem) for problem in problems)
    assert out['count'] == 9        # a value with a problem is left as it was


def test_a_further_check_runs_only_on_a_valid_value():
    assert [str(p) for p in check({'name': 'a', 'points': [{'at': 2}, {'at': 1}]})[1]] == ['doc.yml: points: not sorted: [2, 1]']
    assert [p.key for p in check({'name': 'a', 'points': [{'at': 2}, {'at': 'one'}]})[1]] == ['points[1].at']
    assert [p.key for p in check({'name': 'a', 'points': []})[1]] == ['points']


def test_a_part_sets_only_what_it_says_and_keeps_its_nulls():
    out, problems = check({'count': None, 'limits': {'x': None}, 'mode': 'fast'}, _spec.PART)
    assert problems == [] and out == {'limits': {'x': None}, 'mode': 'fast'}


def test_strict_data_gets_nothing_filled_and_null_only_where_allowed():
    out, problems = check({'name': 'a', 'ratio': None}, _spec.STRICT)
    assert problems == [] and out == {'name': 'a', 'ratio': None}
    assert [str(p) for p in check({'name': None, 'count': None}, _spec.STRICT)[1]] == [
        'doc.yml: name: expected a string, got null', 'doc.yml: count: expected an integer, got null']


def test_a_problem_without_a_file_or_a_key():
    assert str(_spec.Problem(None, 'a.b', 'wrong')) == 'a.b: wrong'
    assert str(_spec.Problem(None, '', 'wrong')) == 'wrong'
    assert [str(p) for p in _spec.validate(SMALL, [1], None, _spec.STRICT)[1]] == ['expected a mapping, got list']


def test_the_tables_of_both_schemas_come_from_one_renderer():
    columns = ('key', 'type', 'required', 'default', 'null', 'description')
    rows = _spec.table_rows(columns, [('doc', SMALL), ('again', SMALL['keys']['points'])])
    assert _spec.table_header(columns) == ['| key | type | required | default | null | description |', '|---|---|---|---|---|---|']
    assert rows[:4] == ['| `doc` | mapping |  |  |  | A document. |',
                        '| `doc.name` | str | yes |  |  | Its name. |',
                        '| `doc.count` | int (0..8) |  | `1` |  | How many. |',
                        '| `doc.ratio` | float |  |  | yes | A share. |']
    assert '| `doc.points` | list of mappings |  |  |  | Points. |' in rows
    assert '| `doc.points[].at` | int | yes |  |  | Where. |' in rows
    # a shared spec's keys are listed where it first comes
    assert rows[-2:] == ['| `again` | list of mappings |  |  |  | Points. |',
                         '| `again[]` | mapping |  |  |  | One point. Its keys: as `doc.points[]`. |']


# ------------------------------------------------------------------------------------------------------ profiles

def minimal(**sections):
    data = {'schema_version': 1, 'name': 'test'}
    data.update(sections)
    return data


def test_a_profile_with_several_mistakes_names_every_one_in_one_error():
    data = minimal(gpu={'count': 'four', 'memory_mib': 1000, 'pcie': {'gen_min': 9}},
                   infiniband={'rate_gbps_min': float('nan')}, checks={'disable': ['gpu.nvlink_dwn']})
    with pytest.raises(ProfileError) as err:
        _profile.validate_profile(data, 'profiles/site.yml')
    assert str(err.value).splitlines() == [
        "profiles/site.yml: gpu.memory_mib: unknown key 'memory_mib'; did you mean 'memory_mib_min'?",
        "profiles/site.yml: gpu.count: expected an integer, got str ('four')",
        'profiles/site.yml: gpu.pcie.gen_min: must be at most 7, got 9',
        "profiles/site.yml: infiniband.ports_min: missing required key 'ports_min'",
        'profiles/site.yml: infiniband.rate_gbps_min: must be a finite number, got float (nan)',
        "profiles/site.yml: checks.disable[0]: no check id matches 'gpu.nvlink_dwn'; did you mean 'gpu.nvlink_down'? "
        '(see docs/checks.md)',
    ]
    # the first one is the error's path, key and reason, as when only one was reported
    assert (err.value.path, err.value.key) == ('profiles/site.yml', 'gpu.memory_mib')
    assert len(err.value.problems) == 6


def test_an_override_with_several_mistakes_names_every_one():
    with pytest.raises(ProfileError) as err:
        _profile.merge_profile(_profile.validate_profile(minimal(gpu={'count': 2})),
                               {'gpu': {'cout': 3, 'ecc_required': 'yes'}, 'extends': 'x'}, 'host_vars/node7')
    assert str(err.value).splitlines() == [
        'host_vars/node7: extends: only a profile file can extend others (xuanwu_profile and xuanwu_profile_dirs name the '
        'files): an override, or a profile given as data, cannot',
        "host_vars/node7: gpu.cout: unknown key 'cout'; did you mean 'count'?",
        "host_vars/node7: gpu.ecc_required: expected a boolean (true/false), got str ('yes')",
    ]


def test_each_check_id_of_the_checks_section_is_judged_on_its_own():
    with pytest.raises(ProfileError) as err:
        _profile.validate_profile(minimal(checks={'disable': ['ib.*', 'gpu.nvlink_dwn'],
                                                  'severity': {'nope.*': 'warn', 'gpu.count': 'critical'}}), 'p.yml')
    assert [key for _path, key, _reason in err.value.problems] == [
        'checks.disable[1]', 'checks.severity.nope.*', 'checks.severity.gpu.count']
    assert "'critical' is not one of 'fail', 'warn', 'info'" in str(err.value).splitlines()[2]


def test_every_xid_listed_twice_and_every_curve_of_one_gpu_is_named():
    data = minimal(gpu={'count': 1, 'xid': {'fatal': [{'xid': 79, 'reason': 'a'}, {'xid': 48, 'reason': 'b'}],
                                            'warn': [{'xid': 48, 'reason': 'c'}, {'xid': 79, 'reason': 'd'}]}},
                   collectives={'all_reduce': {'curve': [{'min_bytes': 1, 'busbw_gbps_min': 1}]},
                                'all_gather': {'curve': [{'min_bytes': 1, 'busbw_gbps_min': 1}]}})
    with pytest.raises(ProfileError) as err:
        _profile.validate_profile(data, 'p.yml')
    assert [key for _path, key, _reason in err.value.problems] == [
        'gpu.xid.warn[0].xid', 'gpu.xid.warn[1].xid', 'collectives.all_gather.curve', 'collectives.all_reduce.curve']


# ------------------------------------------------------------------------------------------------------ facts

def test_facts_with_several_problems_list_each():
    facts = {'schema_version': 2, 'source': 'live', 'probes': {}, 'uptime': 1,
             'gpu': {'count': '4', 'vendor': None, 'devices': [{'index': 0, 'serail': 'x'}]},
             'host': {'memlock_kib': None, 'kernel_modules': ['a', 3]}}
    assert _facts.validate(facts) == [
        "uptime: unknown key 'uptime' (valid keys: brief, gpu, host, infiniband, network, probes, schema_version, "
        'software, source)',
        'schema_version: 2 is not one of 1',
        'gpu.vendor: expected a string, got null',
        "gpu.count: expected an integer, got str ('4')",
        "gpu.devices[0].serail: unknown key 'serail'; did you mean 'serial'?",
        'host.kernel_modules[1]: expected a string, got int (3)',
    ]


# ------------------------------------------------------------------------------------------------ never a traceback

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4),
    max_leaves=20)
SECTIONS = sorted(_profile.SCHEMA['keys'])


@st.composite
def profiles(draw):
    """A valid profile with some of its values, at any depth, replaced by anything."""
    data = minimal(gpu={'count': 2, 'topology': {'gpu_pair_link': 'NV18'}}, infiniband={'ports_min': 1},
                   host={'disks': [{'path': '/', 'min_free_gb': 1}], 'leftover_process_patterns': ['torchrun']},
                   collectives={'all_reduce': {'curve': [{'min_bytes': 1, 'busbw_gbps_min': 1}]}},
                   checks={'disable': ['ib.*'], 'severity': {'gpu.*': 'warn'}})
    for _step in range(draw(st.integers(1, 4))):
        target = data
        while isinstance(target, dict) and target and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(target, key=str)))
            if not isinstance(target[key], dict):
                break
            target = target[key]
        target[draw(st.sampled_from(SECTIONS + ['count', 'curve', 'disable', 'x']))] = draw(JSON)
    return data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profiles())
def test_any_profile_is_validated_or_a_profile_error(data):
    before = copy.deepcopy(data)
    for function in (_profile.validate_profile, _profile.check_override):
        try:
            function(data, 'p.yml')
        except ProfileError as err:
            assert err.problems and all(line.startswith('p.yml') for line in str(err).splitlines())
    assert data == before


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_facts_give_a_list_of_problems(facts):
    problems = _facts.validate({'gpu': facts, 'probes': facts, 'host': {'disks': facts}})
    assert all(isinstance(problem, str) for problem in problems)
