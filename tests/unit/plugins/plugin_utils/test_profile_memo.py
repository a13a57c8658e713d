"""A profile is read and validated once per process while its files stay the same (_collection.validated_profile), and
xuanwu.cluster.preload reads the shipped ones in Ansible's main process, so that each host's worker, forked from it,
finds them validated. A file changed, replaced or removed is read again; a profile that does not validate is never
held, so every host that names it reports it."""
import json
import os
import time

import pytest

from ansible_collections.xuanwu.cluster.plugins.filter import preload
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection

BASE = 'schema_version: 1\nname: site-base\ngpu:\n  count: 8\n'
SITE = 'schema_version: 1\nname: site\nextends: [site-base]\ngpu:\n  memory_mib_min: %d\n'


@pytest.fixture(autouse=True)
def empty_memo(monkeypatch):
    monkeypatch.setattr(_collection, '_VALIDATED', {})


def _settle(*paths):
    """Files last modified a minute ago (a file modified within _collection.SETTLED_NS of its read is not held)."""
    then = time.time_ns() - 60 * 10 ** 9
    for path in paths:
        os.utime(str(path), ns=(then, then))


def _site(tmp_path, temp=85000):
    (tmp_path / 'site-base.yml').write_text(BASE)
    (tmp_path / 'site.yml').write_text(SITE % temp)
    _settle(tmp_path / 'site-base.yml', tmp_path / 'site.yml')
    return [str(tmp_path)]


def _reads(monkeypatch):
    reads = []
    real = _collection.load_profile

    def counted(path, extra_dirs=()):
        reads.append(os.path.basename(path))
        return real(path, extra_dirs)

    monkeypatch.setattr(_collection, 'load_profile', counted)
    return reads


def test_a_profile_is_read_once_and_each_caller_gets_its_own_copy(tmp_path, monkeypatch):
    dirs, reads = _site(tmp_path), _reads(monkeypatch)
    first, path = _collection.resolve_profile('site', None, dirs)
    first['gpu']['count'] = 1
    second, _path = _collection.resolve_profile('site', {'gpu': {'count': 4}}, dirs)
    third, _path = _collection.resolve_profile('site', None, dirs)
    assert reads == ['site.yml'] and path.endswith('site.yml')
    assert (second['gpu']['count'], third['gpu']['count'], third['gpu']['memory_mib_min']) == (4, 8, 85000)


@pytest.mark.parametrize('change', ['the profile', 'what it extends', 'replaced'])
def test_a_file_changed_since_is_read_again(tmp_path, monkeypatch, change):
    dirs, reads = _site(tmp_path), _reads(monkeypatch)
    assert _collection.resolve_profile('site', None, dirs)[0]['gpu']['memory_mib_min'] == 85000
    if change == 'the profile':
        (tmp_path / 'site.yml').write_text(SITE % 90000 + '# longer\n')
    elif change == 'what it extends':
        (tmp_path / 'site-base.yml').write_text(BASE.replace('8', '4') + '# longer\n')
    else:
        (tmp_path / 'new.yml').write_text(SITE % 70000)
        os.replace(str(tmp_path / 'new.yml'), str(tmp_path / 'site.yml'))
    profile = _collection.resolve_profile('site', None, dirs)[0]
    assert reads == ['site.yml', 'site.yml']
    expected = {'the profile': (90000, 8), 'what it extends': (85000, 4), 'replaced': (70000, 8)}[change]
    assert (profile['gpu']['memory_mib_min'], profile['gpu']['count']) == expected


def test_a_file_written_as_it_is_read_is_not_held(tmp_path, monkeypatch):
    """A write in the same clock tick as the read would leave the same size and time on other contents: a file modified
    within SETTLED_NS of the read is read again each time, and held once it has settled."""
    dirs, reads = _site(tmp_path), _reads(monkeypatch)
    (tmp_path / 'site.yml').write_text(SITE % 90000)
    for _time in range(2):
        assert _collection.resolve_profile('site', None, dirs)[0]['gpu']['memory_mib_min'] == 90000
    _settle(tmp_path / 'site.yml')
    for _time in range(2):
        _collection.resolve_profile('site', None, dirs)
    assert reads == ['site.yml'] * 3


def test_a_file_removed_is_the_error_it_always_was(tmp_path):
    dirs = _site(tmp_path)
    _collection.resolve_profile('site', None, dirs)
    os.unlink(str(tmp_path / 'site-base.yml'))
    os.utime(str(tmp_path / 'site.yml'), ns=(1, 1))
    with pytest.raises(ProfileError, match="'site-base' is not a profile or a policy file"):
        _collection.resolve_profile('site', None, dirs)


def test_a_profile_that_does_not_validate_is_reported_every_time(tmp_path, monkeypatch):
    (tmp_path / 'bad.yml').write_text('schema_version: 1\nname: bad\ngpu:\n  count: many\n')
    reads = _reads(monkeypatch)
    for _time in range(2):
        with pytest.raises(ProfileError, match='gpu.count'):
            _collection.resolve_profile('bad', None, [str(tmp_path)])
    assert reads == ['bad.yml', 'bad.yml'] and _collection._VALIDATED == {}


def test_preload_reads_every_shipped_profile_once_and_hosts_then_read_none(monkeypatch):
    assert preload.preload('all') == 'all'
    names = _collection.available_profiles()
    assert len(_collection._VALIDATED) == len(names) >= 7
    reads = _reads(monkeypatch)
    for name in names:
        fresh = _collection._profile.validate_profile(_collection.load_profile(_collection.find_profile(name))[0], name)
        assert json.dumps(_collection.resolve_profile(name)[0]) == json.dumps(fresh), name
    assert reads == [name + '.yml' for name in names]     # the fresh reads of this test only
