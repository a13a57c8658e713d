"""Profiles that extend other profiles and shared policy files (``extends:``): every shipped profile resolves to exactly
the values it had before the shared parts moved out (tests/fixtures/profiles/resolved.json, the resolved profiles as
they were when each profile was still one whole file); how files merge, and each error names the file and its
``extends``.

After a change that is meant to change a resolved profile (a new shipped profile, a value, a key with a default):
``.venv/bin/python scripts/write_profile_snapshot.py``, then read the diff of the snapshot."""
import importlib.util
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _preflight

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
SNAPSHOT = os.path.join(ROOT, 'tests', 'fixtures', 'profiles', 'resolved.json')
SHIPPED = _collection.available_profiles()
_spec = importlib.util.spec_from_file_location('write_profile_snapshot', os.path.join(ROOT, 'scripts', 'write_profile_snapshot.py'))
writer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(writer)
# what a failing snapshot test says to do when the change is meant
REWRITE = ('if the change is meant, run .venv/bin/python scripts/write_profile_snapshot.py and read the diff of '
           'tests/fixtures/profiles/resolved.json')


def _canonical(profile):
    """A resolved profile as text: the comparison sees every key in its order, every value and its type (1 is not 1.0)."""
    return json.dumps(profile, indent=1)


def test_the_snapshot_holds_every_shipped_profile():
    with open(SNAPSHOT) as handle:
        held = sorted(json.load(handle))
    assert held == SHIPPED, 'tests/fixtures/profiles/resolved.json holds the profiles %s, profiles/ ships %s: %s' % (
        ', '.join(held), ', '.join(SHIPPED), REWRITE)


@pytest.mark.parametrize('name', SHIPPED)
def test_shipped_profile_resolves_exactly_as_the_snapshot(name):
    with open(SNAPSHOT) as handle:
        before = json.load(handle)[name]
    after = _collection.resolve_profile(name)[0]
    assert _canonical(after) == _canonical(before), '%s resolves to other values than tests/fixtures/profiles/resolved.json: %s' % (
        name, REWRITE)


def test_the_writer_writes_the_snapshot_as_it_is_committed(tmp_path):
    """The command that the failures name rewrites the file these tests read, in the same form: run on an unchanged
    checkout, it changes nothing."""
    path = tmp_path / 'resolved.json'
    assert writer.main(str(path)) == 0
    with open(SNAPSHOT) as handle:
        assert path.read_text() == handle.read(), 'the snapshot is not what the writer writes: %s' % REWRITE
    assert writer.changes({'a': {'x': 1}, 'b': {}}, {'a': {'x': 1.0}, 'c': {}}) == ['a changed', 'b removed', 'c added']


# --- extends: how files merge, and what is an error ------------------------------------------------------------------


def _write(folder, relative, text):
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def _error(ref, dirs, overrides=None):
    with pytest.raises(ProfileError) as err:
        _collection.resolve_profile(ref, overrides, [str(d) for d in dirs])
    return err.value


def _error_of(folder, files, ref='a'):
    """The error of resolving profile ``ref`` of ``folder`` once ``files`` ({relative path: text}) are written there."""
    for relative, text in files.items():
        _write(folder, relative, text)
    return _error(ref, [folder])


BASE = """schema_version: 1
name: base
gpu:
  count: 8
  model: H100
  pcie: {gen_min: 5, width_min: 16}
host:
  ports_must_be_free: [29500, 8080]
  time: {max_offset_ms: 100}
"""


def test_mappings_merge_the_child_wins_lists_and_scalars_replace_null_resets(tmp_path):
    _write(tmp_path, 'base.yml', BASE)
    _write(tmp_path, 'child.yml', """schema_version: 1
name: child
extends: base
gpu:
  count: 4
  pcie: {width_min: 8}
host:
  ports_must_be_free: [29400]
  time: null
""")
    profile, path = _collection.resolve_profile('child', None, [str(tmp_path)])
    assert path == str(tmp_path / 'child.yml') and profile['name'] == 'child'
    assert profile['gpu']['count'] == 4 and profile['gpu']['model'] == 'H100'
    assert profile['gpu']['pcie']['gen_min'] == 5 and profile['gpu']['pcie']['width_min'] == 8
    assert profile['host']['ports_must_be_free'] == ['29400/tcp']          # a list replaces
    assert profile['host']['time'] is None                                 # null drops the section
    assert 'extends' not in profile


def test_a_list_of_parents_merges_in_order_and_overrides_come_last(tmp_path):
    _write(tmp_path, 'base.yml', BASE)
    _write(tmp_path, 'policy/pcie4.yml', 'gpu:\n  pcie: {gen_min: 4}\n')
    _write(tmp_path, 'policy/ib.yml', 'infiniband: {ports_min: 8}\n')
    _write(tmp_path, 'child.yml', 'schema_version: 1\nname: child\nextends: [base, policy/pcie4.yml, policy/ib]\n')
    profile, _path = _collection.resolve_profile('child', {'infiniband': {'ports_min': 4}}, [str(tmp_path)])
    assert profile['gpu']['pcie']['gen_min'] == 4 and profile['gpu']['pcie']['width_min'] == 16
    assert profile['infiniband']['ports_min'] == 4
    data, files = _collection.load_profile(str(tmp_path / 'child.yml'), [str(tmp_path)])
    assert [os.path.basename(f['path']) for f in files] == ['base.yml', 'pcie4.yml', 'ib.yml', 'child.yml']
    assert files[-1]['extends'] == ['base', 'policy/pcie4.yml', 'policy/ib'] and 'extends' not in data


def test_a_site_profile_extends_a_shipped_one_and_the_shipped_policy(tmp_path):
    _write(tmp_path, 'rack7.yml', 'schema_version: 1\nname: rack7\nextends: h100-sxm-8\ngpu: {count: 4}\n')
    _write(tmp_path, 'ib-only.yml', 'schema_version: 1\nname: ib-only\nextends: policy/nvidia-sxm\ngpu: null\ninfiniband: {ports_min: 2}\n')
    rack7 = _collection.resolve_profile('rack7', None, [str(tmp_path)])[0]
    h100 = _collection.resolve_profile('h100-sxm-8')[0]
    assert rack7 == dict(h100, name='rack7', gpu=dict(h100['gpu'], count=4))
    assert _collection.resolve_profile('ib-only', None, [str(tmp_path)])[0]['infiniband']['ca_names'] == ['*']


def test_a_site_file_that_extends_its_own_name_gets_the_shipped_profile(tmp_path):
    _write(tmp_path, 'h100-sxm-8.yml', 'schema_version: 1\nname: h100-sxm-8\nextends: h100-sxm-8\nhost: {memlock_unlimited: false}\n')
    profile, path = _collection.resolve_profile('h100-sxm-8', None, [str(tmp_path)])
    assert path == str(tmp_path / 'h100-sxm-8.yml')
    assert profile['host']['memlock_unlimited'] is False and profile['gpu']['model'] == 'H100 80GB HBM3'


def test_a_cycle_is_an_error_naming_the_file_and_its_extends(tmp_path):
    err = _error_of(tmp_path, {'a.yml': 'schema_version: 1\nname: a\nextends: b\n', 'b.yml': 'extends: policy/c\n',
                               'policy/c.yml': 'extends: a.yml\n'})
    assert err.path == str(tmp_path / 'policy' / 'c.yml') and err.key == 'extends'
    assert "'a.yml' makes a cycle: a.yml extends itself (a.yml -> b.yml -> policy/c.yml -> a.yml)" in str(err)
    _write(tmp_path, 'self.yml', 'schema_version: 1\nname: self\nextends: self\n')
    assert "'self' makes a cycle: self.yml extends itself (self.yml -> self.yml)" in str(_error('self', [tmp_path]))


def test_a_missing_parent_is_an_error_with_a_suggestion(tmp_path):
    _write(tmp_path, 'a.yml', 'schema_version: 1\nname: a\nextends: [h100-sxm-9]\n')
    err = _error('a', [tmp_path])
    assert err.path == str(tmp_path / 'a.yml') and err.key == 'extends'
    assert "'h100-sxm-9' is not a profile or a policy file of %s" % tmp_path in str(err) and "did you mean 'h100-sxm-8'?" in str(err)
    _write(tmp_path, 'b.yml', 'schema_version: 1\nname: b\nextends: policy/nvidia-xdi\n')
    assert "did you mean 'policy/nvidia-xid'?" in str(_error('b', [tmp_path]))
    _write(tmp_path, 'c.yml', 'schema_version: 1\nname: c\nextends: %s\n' % (tmp_path / 'a.yml'))
    assert 'must be a profile name or a path of a policy file relative to a profile directory' in str(_error('c', [tmp_path]))


@pytest.mark.parametrize('parent, got', [('- 1\n- 2\n', 'list'), ('', 'null'), ('just text\n', "str ('just text')")])
def test_a_parent_that_is_not_a_mapping_is_an_error(tmp_path, parent, got):
    err = _error_of(tmp_path, {'policy/bad.yml': parent, 'a.yml': 'schema_version: 1\nname: a\nextends: policy/bad\n'})
    assert err.path == str(tmp_path / 'a.yml') and err.key == 'extends'
    assert "'policy/bad' (%s) must be a mapping of profile keys, got %s" % (tmp_path / 'policy' / 'bad.yml', got) in str(err)


def test_a_parent_that_is_not_yaml_is_an_error_naming_it(tmp_path):
    err = _error_of(tmp_path, {'policy/bad.yml': 'gpu: [\n', 'a.yml': 'schema_version: 1\nname: a\nextends: policy/bad\n'})
    assert err.path == str(tmp_path / 'policy' / 'bad.yml')
    assert "'policy/bad' (extended by a.yml) is not valid YAML at line" in str(err)


@pytest.mark.parametrize('value, key, got', [('3', 'extends', 'int (3)'), ('[]', 'extends', 'an empty list'),
                                             ('[base, 3]', 'extends[1]', 'int (3)'), ('""', 'extends', "str ('')")])
def test_extends_must_name_profiles(tmp_path, value, key, got):
    err = _error_of(tmp_path, {'base.yml': BASE, 'a.yml': 'schema_version: 1\nname: a\nextends: %s\n' % value})
    assert err.key == key and str(err).endswith(got)


def test_an_unknown_key_in_a_parent_names_the_parent_with_a_suggestion(tmp_path):
    err = _error_of(tmp_path, {'policy/site.yml': 'host:\n  time: {max_ofset_ms: 50}\n',
                               'a.yml': 'schema_version: 1\nname: a\nextends: policy/site\ngpu: {count: 1}\n'})
    assert err.path == str(tmp_path / 'policy' / 'site.yml') and err.key == 'host.time.max_ofset_ms'
    assert "did you mean 'max_offset_ms'?" in str(err)
    _write(tmp_path, 'b.yml', 'schema_version: 1\nname: b\nextend: policy/site\n')
    assert "unknown key 'extend'; did you mean 'extends'?" in str(_error('b', [tmp_path]))
    err = _error_of(tmp_path, {'policy/types.yml': 'gpu: {count: eight}\n', 'c.yml': 'schema_version: 1\nname: c\nextends: policy/types\n'}, 'c')
    assert err.path == str(tmp_path / 'policy' / 'types.yml') and err.key == 'gpu.count'


def test_the_merged_profile_is_validated_whole_in_the_file_that_extends(tmp_path):
    err = _error_of(tmp_path, {'policy/ib.yml': 'infiniband: {rate_gbps_min: 400}\n', 'a.yml': 'schema_version: 1\nname: a\nextends: policy/ib\n'})
    assert err.path == str(tmp_path / 'a.yml') and err.key == 'infiniband.ports_min' and 'missing required key' in str(err)


def test_a_profile_names_itself(tmp_path):
    err = _error_of(tmp_path, {'base.yml': BASE, 'a.yml': 'schema_version: 1\nextends: base\n'})
    assert err.key == 'name' and 'the name of what it extends is not inherited' in str(err)


def test_only_a_profile_file_can_extend(tmp_path):
    err = _error('h100-sxm-8', [], overrides={'extends': 'h200-sxm-8'})
    assert err.path == 'xuanwu_profile_overrides' and err.key == 'extends' and 'only a profile file can extend others' in str(err)


def test_the_preflight_resolves_a_profile_that_extends_and_reports_a_bad_one_in_words(tmp_path):
    _write(tmp_path, 'rack7.yml', 'schema_version: 1\nname: rack7\nextends: h200x2-nvlink\n')
    _write(tmp_path, 'broken.yml', 'schema_version: 1\nname: broken\nextends: h200x9\n')
    known = _preflight.known_variables()
    cache = _preflight.ProfileCache()
    variables = {'xuanwu_profile': 'rack7', 'xuanwu_profile_dirs': [str(tmp_path)]}
    problems, profile, _path = _preflight.check_host(variables, ('inventory_hostname', 'n1'), known, cache)
    assert problems == [] and profile['collectives']['all_reduce']['curve'][-1]['min_bytes'] == 8 << 30
    variables['xuanwu_profile'] = 'broken'
    problems, profile, _path = _preflight.check_host(variables, ('inventory_hostname', 'n1'), known, cache)
    assert profile is None and len(problems) == 1 and "extends: 'h200x9' is not a profile or a policy file" in problems[0]


def test_a_site_policy_file_replaces_the_shipped_one_for_the_shipped_profiles(tmp_path):
    shipped = open(os.path.join(ROOT, 'profiles', 'policy', 'nvidia-sxm.yml')).read()
    _write(tmp_path, 'policy/nvidia-sxm.yml', shipped.replace('max_offset_ms: 100 ', 'max_offset_ms: 20  '))
    assert _collection.resolve_profile('h100-sxm-8', None, [str(tmp_path)])[0]['host']['time']['max_offset_ms'] == 20
    assert _collection.resolve_profile('h100-sxm-8')[0]['host']['time']['max_offset_ms'] == 100


def test_a_relative_profile_path_is_looked_up_from_the_current_directory_then_the_profile_dirs(tmp_path, monkeypatch):
    site = tmp_path / 'site-profiles'
    (site / 'racks').mkdir(parents=True)
    (site / 'racks' / 'row1.yml').write_text('extends: h100-sxm-8\nname: row1\n')
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = _collection.find_profile('racks/row1.yml', [str(site)])
    assert path == str(site / 'racks' / 'row1.yml')
    monkeypatch.chdir(site)     # from the current directory first: the path as given
    assert _collection.find_profile('racks/row1.yml', [str(tmp_path)]) == 'racks/row1.yml'


def test_a_relative_profile_path_not_found_names_every_directory_searched(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProfileError) as err:
        _collection.find_profile('profiles/site.yml', [str(tmp_path / 'a'), str(tmp_path / 'b')])
    text = str(err.value)
    assert 'profile file not found' in text and 'current directory (%s)' % tmp_path in text, text
    assert 'xuanwu_profile_dirs (%s, %s)' % (tmp_path / 'a', tmp_path / 'b') in text, text
    with pytest.raises(ProfileError) as err:
        _collection.find_profile('profiles/site.yml')
    assert 'xuanwu_profile_dirs is empty' in str(err.value)
    with pytest.raises(ProfileError, match='profile file not found'):
        _collection.find_profile(str(tmp_path / 'absent.yml'))
