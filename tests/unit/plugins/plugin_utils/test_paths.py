"""Names used as paths (host names, run ids) become one safe file name that stays in its folder."""
import os

import pytest
from hypothesis import given, strategies as st

from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.filter.safe_name import FilterModule
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _paths
from ansible_collections.xuanwu.cluster.plugins.plugin_utils._paths import safe_name


@pytest.mark.parametrize('name', ['gpu-node01', 'node_7.example.com', '20261129T203000Z-004211', 'A-b.c_d'])
def test_a_safe_name_is_kept(name):
    assert safe_name(name) == name


@pytest.mark.parametrize('name', ['../evil', 'a/../../b', '..', '.', '', '/etc/passwd', 'a\\b', 'x' * 300, 'n\x00de', '\ud800'])
def test_an_unsafe_name_stays_in_its_folder(name):
    safe = safe_name(name)
    assert safe not in ('', '.', '..') and len(safe) <= 100
    assert all(c.isascii() and (c.isalnum() or c in '._-') for c in safe), safe
    assert os.path.dirname(os.path.normpath(os.path.join('/dest', safe))) == '/dest'


def test_names_that_collapse_to_the_same_text_stay_apart():
    names = ['a/b', 'a:b', 'a b', 'a_b', 'a\\b', '.', '_', '..', '__']
    assert len(set(safe_name(n) for n in names)) == len(names)
    assert safe_name('a/b') == safe_name('a/b')


@given(st.text(max_size=300) | st.text(alphabet='./a', max_size=120))
def test_any_name_is_one_file_name(name):
    safe = safe_name(name)
    assert safe not in ('', '.', '..') and '/' not in safe and '\x00' not in safe and len(safe) <= 100
    assert safe_name(safe) == safe


def test_the_filter_refuses_a_non_string_clearly():
    flt = FilterModule().filters()['safe_name']
    assert flt('../evil') == safe_name('../evil')
    with pytest.raises(AnsibleFilterError, match='must be a string, not int'):
        flt(3)


def test_under_cwd_is_the_process_working_directory_not_pwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('PWD', '/somewhere/else')
    assert _paths.under_cwd('reports') == os.path.join(str(tmp_path), 'reports')
    monkeypatch.delenv('PWD')
    assert _paths.under_cwd('runs') == os.path.join(str(tmp_path), 'runs')
    for bad in ('', '/abs', None, 3):
        with pytest.raises(TypeError):
            _paths.under_cwd(bad)
