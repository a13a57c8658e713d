"""Profile schema: shipped profiles validate, error messages say what is wrong and where, overrides
merge, and docs/profiles.md is the rendered schema."""
import ast
import copy
import glob
import os
import re

import pytest
import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils import _profile, _profile_schema
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import (
    DEFAULT_XID_FATAL, SCHEMA, check_override, merge_profile, validate_profile,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile_docs import schema_markdown
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
from ansible_collections.xuanwu.cluster.tests.unit.generated_docs import assert_current

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
PROFILES = sorted(glob.glob(os.path.join(ROOT, 'profiles', '*.yml')))
# the shared policy files the profiles extend (profiles/policy/)
POLICIES = sorted(glob.glob(os.path.join(ROOT, 'profiles', 'policy', '*.yml')))


def minimal(**sections):
    data = {'schema_version': 1, 'name': 'test'}
    data.update(sections)
    return data


def error_of(data, path='p.yml'):
    with pytest.raises(ProfileError) as err:
        validate_profile(data, path)
    return err.value


def test_the_shipped_profiles_are_there():
    names = sorted(os.path.basename(p)[:-4] for p in PROFILES)
    assert names == ['a100-sxm4-8', 'h100-sxm-8', 'h100x1', 'h200-sxm-8', 'h200x1', 'h200x2-nvlink', 'h200x4-nvlink', 'mi300x-8']


@pytest.mark.parametrize('path', PROFILES, ids=[os.path.basename(p) for p in PROFILES])
def test_shipped_profile_validates(path):
    profile = _collection.resolve_profile(path)[0]
    assert profile['name'] == os.path.basename(path)[:-4]
    assert profile['gpu']['count'] > 0
    assert validate_profile(profile, path) == profile, 'validation must be idempotent'


NUMBER_LINE = re.compile(r'^(\s*)(?:-\s*)?\{?\s*([a-z_]+):\s*"?([0-9][0-9.]*)"?\s*(?:[,}#]|$)')


@pytest.mark.parametrize('path', PROFILES + POLICIES, ids=[os.path.relpath(p, os.path.join(ROOT, 'profiles')) for p in PROFILES + POLICIES])
def test_shipped_profile_numbers_have_sources(path):
    """Every line that sets a number carries a comment (its source, or "assumed"), or its parent key does."""
    with open(path) as handle:
        lines = handle.read().splitlines()
    parents = []            # (indent, line has a comment)
    for line in lines:
        if not line.strip() or line.strip().startswith('#'):
            continue
        indent = len(line) - len(line.lstrip())
        while parents and parents[-1][0] >= indent:
            parents.pop()
        match = NUMBER_LINE.match(line)
        if match and match.group(2) not in ('schema_version', 'xid'):
            assert '#' in line or (parents and parents[-1][1]), '%s: %r has no source comment' % (os.path.basename(path), line)
        parents.append((indent, '#' in line))


def test_h200x4_collective_curves():
    profile = _collection.resolve_profile('h200x4-nvlink')[0]
    curve = profile['collectives']['all_reduce']['curve']
    assert [p['min_bytes'] for p in curve] == [16 * 2 ** 20, 128 * 2 ** 20, 2 ** 30]
    # 90% of the median of the lowest measured busbw at >= 1 GiB (tests/fixtures/hardware/h200x4-nvlink
    # nccl-tests captures: 354.22, 354.2x, 353.5x in the three all_reduce runs).
    assert curve[-1]['busbw_gbps_min'] == pytest.approx(0.9 * 354.2, abs=0.1)


def test_defaults_are_filled_and_absent_sections_are_none():
    profile = validate_profile(minimal(gpu={'count': 2}))
    assert profile['gpu']['persistence_mode_required'] is True
    assert profile['gpu']['ecc_errors']['volatile_uncorrectable_max'] == 0
    assert profile['gpu']['xid']['fatal'] == [dict(e, remediation=e.get('remediation')) for e in DEFAULT_XID_FATAL]
    assert profile['gpu']['model'] is None
    assert profile['infiniband'] is None and profile['network'] is None
    assert profile['checks'] == {'disable': [], 'severity': {}}


def test_unknown_key_suggests():
    err = error_of(minimal(gpu={'count': 4, 'memory_mib': 1000}))
    assert err.key == 'gpu.memory_mib'
    assert "unknown key 'memory_mib'; did you mean 'memory_mib_min'?" in str(err)
    assert str(err).startswith('p.yml: gpu.memory_mib: ')


def test_unknown_key_without_close_match_lists_valid_keys():
    err = error_of(minimal(infiniband={'ports_min': 1, 'zzz': 1}))
    assert 'valid keys:' in str(err) and 'rate_gbps_min' in str(err)


def test_unknown_top_level_key():
    err = error_of(minimal(infiniband_ports=8))
    assert err.key == 'infiniband_ports' and "did you mean 'infiniband'" in str(err)


def test_wrong_type_says_expected_and_got():
    err = error_of(minimal(gpu={'count': 'four'}))
    assert err.key == 'gpu.count'
    assert "expected an integer, got str ('four')" in str(err)


def test_bool_is_not_an_integer():
    err = error_of(minimal(gpu={'count': True}))
    assert 'expected an integer, got bool (true)' in str(err)


def test_wrong_type_for_a_section():
    err = error_of(minimal(host={'disks': {'path': '/'}}))
    assert err.key == 'host.disks' and 'expected a list, got mapping' in str(err)


def test_bad_choice_suggests():
    err = error_of(minimal(infiniband={'ports_min': 8, 'link_layer': 'Infiniband'}))
    assert err.key == 'infiniband.link_layer'
    assert "'Infiniband' is not one of 'InfiniBand', 'Ethernet'; did you mean 'InfiniBand'?" in str(err)


def test_missing_required_key():
    err = error_of(minimal(gpu={'model': 'H100'}))
    assert err.key == 'gpu.count' and "missing required key 'count'" in str(err)
    err = error_of({'schema_version': 1})
    assert err.key == 'name'


def test_schema_version():
    err = error_of({'schema_version': 2, 'name': 'x'})
    assert err.key == 'schema_version' and 'is not one of 1' in str(err)


def test_not_a_mapping():
    with pytest.raises(ProfileError) as err:
        validate_profile(['gpu'], 'p.yml')
    assert 'must be a mapping' in str(err.value)


def test_unquoted_version_is_explained():
    err = error_of(minimal(software={'cuda_driver_version_min': 12.10}))
    assert err.key == 'software.cuda_driver_version_min'
    assert 'quoted version string' in str(err) and '12.1' in str(err)


def test_list_element_paths():
    err = error_of(minimal(host={'disks': [{'path': '/', 'min_free_gb': 1}, {'path': 'var', 'min_free_gb': 1}]}))
    assert err.key == 'host.disks[1].path'
    err = error_of(minimal(gpu={'count': 1, 'clock_event_reasons': {'fail': ['hw_slowdwn']}}))
    assert err.key == 'gpu.clock_event_reasons.fail[0]' and "did you mean 'hw_slowdown'" in str(err)


def test_range():
    err = error_of(minimal(network={'roce': {'interfaces': ['ib*'], 'pfc_priority': 8}}))
    assert err.key == 'network.roce.pfc_priority' and 'at most 7' in str(err)
    err = error_of(minimal(gpu={'count': -1}))
    assert 'at least 0' in str(err)


def test_topology_links():
    profile = validate_profile(minimal(gpu={'count': 2, 'topology': {'gpu_pair_link': 'nv18', 'pairs': {'0-1': 'NV12'}}}))
    assert profile['gpu']['topology']['gpu_pair_link'] == 'NV18'
    err = error_of(minimal(gpu={'count': 2, 'topology': {'gpu_pair_link': 'NVL18'}}))
    assert 'not a topology link' in str(err)
    err = error_of(minimal(gpu={'count': 2, 'topology': {'pairs': {'0:1': 'NV12'}}}))
    assert err.key == 'gpu.topology.pairs.0:1'


def test_ports_are_normalised():
    profile = validate_profile(minimal(host={'ports_must_be_free': [29500, '5353/UDP', ' 8080 / tcp ']}))
    assert profile['host']['ports_must_be_free'] == ['29500/tcp', '5353/udp', '8080/tcp']
    err = error_of(minimal(host={'ports_must_be_free': [70000]}))
    assert 'outside 1-65535' in str(err)
    err = error_of(minimal(host={'ports_must_be_free': ['ssh']}))
    assert err.key == 'host.ports_must_be_free[0]'


def test_xid_lists():
    err = error_of(minimal(gpu={'count': 1, 'xid': {'fatal': [{'xid': 79, 'reason': 'a'}], 'warn': [{'xid': 79, 'reason': 'b'}]}}))
    assert err.key == 'gpu.xid.warn[0].xid' and 'already listed under fatal' in str(err)
    err = error_of(minimal(gpu={'count': 1, 'xid': {'fatal': [{'xid': 79}]}}))
    assert err.key == 'gpu.xid.fatal[0].reason'


def test_collectives():
    good = {'all_reduce': {'curve': [{'min_bytes': 1024, 'busbw_gbps_min': 1}, {'min_bytes': 2048, 'busbw_gbps_min': 2.5}]}}
    profile = validate_profile(minimal(collectives=good))
    assert profile['collectives']['all_reduce']['curve'][0]['busbw_gbps_min'] == 1.0
    err = error_of(minimal(collectives={'allreduce': good['all_reduce']}))
    assert err.key == 'collectives.allreduce' and "did you mean 'all_reduce'" in str(err)
    bad = {'all_reduce': {'curve': [{'min_bytes': 2048, 'busbw_gbps_min': 1}, {'min_bytes': 1024, 'busbw_gbps_min': 2}]}}
    err = error_of(minimal(collectives=bad))
    assert err.key == 'collectives.all_reduce.curve' and 'sorted' in str(err)
    err = error_of(minimal(collectives={'all_reduce': {'curve': []}}))
    assert 'at least 1 item' in str(err)


def test_check_ids_in_overrides():
    profile = validate_profile(minimal(checks={'disable': ['ib.*', 'gpu.xid'], 'severity': {'host.time_offset': 'fail'}}))
    assert profile['checks']['disable'] == ['ib.*', 'gpu.xid']
    err = error_of(minimal(checks={'disable': ['gpu.nvlink_dwn']}))
    assert err.key == 'checks.disable[0]' and "did you mean 'gpu.nvlink_down'" in str(err)
    err = error_of(minimal(checks={'severity': {'gpu.count': 'critical'}}))
    assert err.key == 'checks.severity.gpu.count' and "'critical' is not one of" in str(err)
    err = error_of(minimal(checks={'severity': {'nope.*': 'warn'}}))
    assert 'no check id matches' in str(err)
    # The benchmark checks own the collectives.* ids.
    assert validate_profile(minimal(checks={'disable': ['collectives.coverage']}))['checks']['disable'] == ['collectives.coverage']


def test_merge_profile():
    base = _collection.resolve_profile('h100-sxm-8')[0]
    override = {
        'gpu': {'count': 4, 'topology': {'pairs': {'0-1': 'NV12'}}},
        'infiniband': {'ca_names': ['mlx5_0', 'mlx5_1']},
        'host': {'disks': [{'path': '/scratch', 'min_free_gb': 500}], 'time': None},
        'checks': {'disable': ['host.pcie_acs']},
    }
    merged = merge_profile(base, override, 'group_vars/rack7.yml')
    assert merged['gpu']['count'] == 4
    assert merged['gpu']['model'] == base['gpu']['model']                     # dicts merge
    assert merged['gpu']['topology']['gpu_pair_link'] == 'NV18'
    assert merged['gpu']['topology']['pairs'] == {'0-1': 'NV12'}
    assert merged['infiniband']['ca_names'] == ['mlx5_0', 'mlx5_1']           # lists replace
    assert merged['infiniband']['rate_gbps_min'] == 400
    assert merged['host']['disks'] == [{'path': '/scratch', 'min_free_gb': 500.0}]
    assert merged['host']['time'] is None                                     # null drops the section
    assert merged['checks']['disable'] == ['host.pcie_acs']
    assert base['gpu']['count'] == 8, 'the base must not change'


def test_merge_resets_to_default_and_drops_sections():
    base = validate_profile(minimal(gpu={'count': 2, 'persistence_mode_required': False}, infiniband={'ports_min': 2}))
    merged = merge_profile(base, {'gpu': {'persistence_mode_required': None}, 'infiniband': None})
    assert merged['gpu']['persistence_mode_required'] is True
    assert merged['infiniband'] is None


def test_merge_errors_name_the_override():
    base = validate_profile(minimal(gpu={'count': 2}))
    with pytest.raises(ProfileError) as err:
        merge_profile(base, {'gpu': {'cout': 3}}, 'host_vars/node7')
    assert err.value.path == 'host_vars/node7' and err.value.key == 'gpu.cout' and "did you mean 'count'" in str(err.value)
    with pytest.raises(ProfileError) as err:
        merge_profile(base, {'infiniband': {'rate_gbps_min': 400}}, 'host_vars/node7')
    assert err.value.key == 'infiniband.ports_min'      # the merged result is validated as a whole
    with pytest.raises(ProfileError):
        merge_profile(base, ['gpu'], 'host_vars/node7')


def test_merge_with_empty_override_is_validation():
    base = minimal(gpu={'count': 2})
    assert merge_profile(base, None) == validate_profile(base)
    assert merge_profile(base, {}) == validate_profile(base)


def test_check_override_is_partial():
    assert check_override({'gpu': {'model': 'H100'}}) == {'gpu': {'model': 'H100'}}
    with pytest.raises(ProfileError):
        check_override({'gpu': {'model': 100}})


def test_validation_does_not_modify_input():
    data = minimal(gpu={'count': 2}, host={'ports_must_be_free': [29500]})
    before = copy.deepcopy(data)
    validate_profile(data)
    assert data == before


def test_schema_descriptions():
    def walk(spec, where):
        if spec['type'] == 'dict':
            for name, sub in spec['keys'].items():
                assert sub.get('description'), 'no description for %s.%s' % (where, name)
                walk(sub, '%s.%s' % (where, name))
        elif spec['type'] == 'map':
            walk(spec['values'], where + '.<key>')
        elif spec['type'] == 'list':
            walk(spec['elements'], where + '[]')
    walk(SCHEMA, 'profile')


def test_every_name_of_the_schema_module_is_read_from_profile_as_before():
    """The schema's data moved to _profile_schema: each name it defines is re-exported by _profile (the same object), so
    an importer of ``from _profile import SCHEMA`` needs no change."""
    with open(_profile_schema.__file__) as handle:
        tree = ast.parse(handle.read())
    names = [target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
             if isinstance(target, ast.Name) and not target.id.startswith('_')]
    assert 'SCHEMA' in names and 'DEFAULT_XID_FATAL' in names
    assert [name for name in names if getattr(_profile, name, None) is not getattr(_profile_schema, name)] == []


def test_docs_profiles_md_is_generated():
    assert_current('docs/profiles.md')


def test_docs_profiles_md_shows_each_shipped_profile_resolved():
    shipped = _collection.shipped_profiles()
    text = schema_markdown(shipped)
    assert [entry['name'] for entry in shipped] == [os.path.basename(p)[:-4] for p in PROFILES]
    for entry in shipped:
        assert '### `%s`' % entry['name'] in text
    assert 'Files merged: `policy/nvidia-xid.yml`, `policy/nvidia-sxm.yml` (extends `policy/nvidia-xid`), ' \
           '`policy/h200-gpu-single.yml`, `h200x4-nvlink.yml` (extends `policy/nvidia-sxm`, `policy/h200-gpu-single`), ' \
           '`h200x2-nvlink.yml` (extends `h200x4-nvlink`).' in text
    assert '| `gpu.count` | `2` | h200x2-nvlink.yml |' in text
    assert '| `gpu.xid.fatal[0]` | `{xid: 48, reason: double-bit (uncorrectable) ECC error}` | policy/nvidia-xid.yml |' in text


def _float_thresholds(spec, path=()):
    """(path, spec) of every float in the schema; a path step is a key, '[]' (list item) or '*' (map value)."""
    kind = spec['type']
    if kind == 'float':
        yield path, spec
    elif kind == 'dict':
        for name, child in spec['keys'].items():
            yield from _float_thresholds(child, path + (name,))
    elif kind == 'map':
        yield from _float_thresholds(spec['values'], path + ('*',))
    elif kind == 'list':
        yield from _float_thresholds(spec['elements'], path + ('[]',))


def _override_at(path, value, spec=None):
    """An override document that sets the float at ``path`` to ``value``, and the dotted key an error names."""
    spec = SCHEMA if spec is None else spec
    if not path:
        return value, ''
    step, rest = path[0], path[1:]
    if step == '[]':
        inner, key = _override_at(rest, value, spec['elements'])
        return [inner], '[0]' + ('.' + key if key else '')
    if step == '*':
        name = (spec.get('key') or {}).get('choices', ['ib0'])[0]
        inner, key = _override_at(rest, value, spec['values'])
        return {name: inner}, name + ('.' + key if key else '')
    inner, key = _override_at(rest, value, spec['keys'][step])
    return {step: inner}, step + (key if key.startswith('[') else '.' + key if key else '')


FLOATS = list(_float_thresholds(SCHEMA))


def test_every_float_threshold_is_found():
    assert len(FLOATS) >= 10
    assert ('collectives', '*', 'curve', '[]', 'busbw_gbps_min') in [path for path, _spec in FLOATS]


@pytest.mark.parametrize('path', [path for path, _spec in FLOATS], ids=['.'.join(path) for path, _spec in FLOATS])
@pytest.mark.parametrize('value', ['.nan', '.NaN', '.inf', '-.Inf', '1.0e+999', '1' + '0' * 400])
def test_non_finite_thresholds_are_profile_errors(path, value):
    """Issue 8 item 6: a threshold of .nan compared false with every measurement and switched the check off."""
    number = yaml.safe_load('v: %s' % value)['v']
    document, key = _override_at(path, number)
    with pytest.raises(ProfileError) as err:
        check_override(document, 'host_vars/node7.yml')
    assert err.value.path == 'host_vars/node7.yml' and err.value.key == key, str(err.value)
    assert 'must be a finite number' in str(err.value) and '\n' not in str(err.value)


@pytest.mark.parametrize('text,key', [
    ('collectives:\n  all_reduce:\n    curve:\n      - {min_bytes: 1024, busbw_gbps_min: .nan}\n',
     'collectives.all_reduce.curve[0].busbw_gbps_min'),
    ('infiniband: {ports_min: 1, rate_gbps_min: .inf}\n', 'infiniband.rate_gbps_min'),
    ('host:\n  time: {max_offset_ms: .NaN}\n', 'host.time.max_offset_ms'),
])
def test_non_finite_thresholds_in_profiles_and_overrides(text, key):
    data = minimal(**yaml.safe_load(text))
    err = error_of(data, 'profiles/site.yml')
    assert str(err).startswith('profiles/site.yml: %s: must be a finite number' % key)
    base = validate_profile(minimal(gpu={'count': 2}))
    with pytest.raises(ProfileError) as merged:
        merge_profile(base, yaml.safe_load(text), 'group_vars/rack7.yml')
    assert merged.value.path == 'group_vars/rack7.yml' and merged.value.key == key
