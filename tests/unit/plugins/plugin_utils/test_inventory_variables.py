"""Inventory variables as users type them: `-e name=value` gives strings, which are converted as
Ansible's argument specs convert them; real mistakes are refused with a message naming the
variable, the value and the type expected, never a Python class."""
import pytest

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection

# The roles declare no float among the xuanwu_* variables yet: one more for the float conversion.
KNOWN = dict(_collection.role_variables(), xuanwu_example_ratio={'type': 'float'})


class _AnsibleTaggedStr(str):
    """Stands in for the string subclasses that ansible-core 2.19 gives extra variables."""


@pytest.mark.parametrize('name, text, want', [
    ('xuanwu_validate_collectives', 'true', True),
    ('xuanwu_validate_collectives', 'false', False),
    ('xuanwu_validate_collectives', 'yes', True),
    ('xuanwu_validate_collectives', 'no', False),
    ('xuanwu_validate_collectives', 'on', True),
    ('xuanwu_validate_collectives', 'off', False),
    ('xuanwu_validate_collectives', '1', True),
    ('xuanwu_validate_collectives', '0', False),
    ('xuanwu_validate_collectives', 'True', True),
    ('xuanwu_max_fail_percentage', '10', 10),
    ('xuanwu_probe_timeout', '30', 30),
    ('xuanwu_example_ratio', '0.05', 0.05),
])
def test_command_line_strings_are_converted(name, text, want):
    value, problem = _collection.convert_variable(name, KNOWN[name], _AnsibleTaggedStr(text))
    assert problem is None
    assert value == want and type(value) is type(want)
    assert _collection.check_inventory_vars({name: _AnsibleTaggedStr(text)}, KNOWN) == []


@pytest.mark.parametrize('name, value, kind, shown', [
    ('xuanwu_probe_timeout', 'abc', 'int', "str ('abc')"),
    ('xuanwu_probe_timeout', '1.5', 'int', "str ('1.5')"),
    ('xuanwu_probe_timeout', True, 'int', 'bool (true)'),
    ('xuanwu_probe_timeout', [30], 'int', 'list'),
    ('xuanwu_validate_collectives', 'maybe', 'bool', "str ('maybe')"),
    ('xuanwu_validate_collectives', '2', 'bool', "str ('2')"),
    ('xuanwu_validate_collectives', 2, 'bool', 'int (2)'),
    ('xuanwu_example_ratio', 'nan', 'float', "str ('nan')"),
    ('xuanwu_example_ratio', 'fast', 'float', "str ('fast')"),
    ('xuanwu_provision', 'chrony', 'list', "str ('chrony')"),
    ('xuanwu_profile_overrides', 'gpu', 'dict', "str ('gpu')"),
])
def test_real_mistakes_are_refused_in_words(name, value, kind, shown):
    if isinstance(value, str):
        value = _AnsibleTaggedStr(value)
    problems = _collection.check_inventory_vars({name: value}, KNOWN)
    assert len(problems) == 1, problems
    message = problems[0]
    assert message.startswith("variable '%s' must be of type %s (" % (name, kind)), message
    assert message.endswith('got %s' % shown), message
    for internal in ('Tagged', 'AnsibleUnicode', '<class', 'NoneType'):
        assert internal not in message


def test_choices_are_checked_on_the_converted_value():
    assert _collection.check_inventory_vars({'xuanwu_provision': ['chrony', 'firewall']}, KNOWN) == []
    problems = _collection.check_inventory_vars({'xuanwu_provision': ['chronyd']}, KNOWN)
    assert problems == ["variable 'xuanwu_provision' has str ('chronyd'), which is not one of: %s" % ', '.join(KNOWN['xuanwu_provision']['choices'])]


def test_a_typed_declaration_wins_over_a_raw_one():
    # validate_inventory declares xuanwu_profile 'raw' for Ansible's own validation, 'str' for the check.
    assert KNOWN['xuanwu_profile']['type'] == 'str'
    problems = _collection.check_inventory_vars({'xuanwu_profile': ['a', 'b']}, KNOWN)
    assert problems == ["variable 'xuanwu_profile' must be of type str (a string), got list"]
