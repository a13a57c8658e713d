"""Values that become names, paths and command-line arguments on the nodes are checked against their
grammar in the preflight; a value outside it is named with the grammar it must follow."""
import glob
import os

import pytest
import yaml

from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection

KNOWN = _collection.role_variables()


@pytest.mark.parametrize('name, value', [
    ('xuanwu_nccl_env', {'NCCL_IB_HCA': 'mlx5_0,mlx5_1', 'NCCL_SOCKET_IFNAME': '^docker,lo', '_X1': 3, 'https_proxy': 'http://u:p@h:1'}),
    ('xuanwu_nccl_env', {'NCCL_SOCKET_IFNAME': '=eth0', 'GLOO_SOCKET_IFNAME': 'ens1f0np0', 'TP_SOCKET_IFNAME': ''}),
    ('xuanwu_torch_env', {'OMP_NUM_THREADS': 8, 'TORCH_NCCL_ASYNC_ERROR_HANDLING': True}),
    ('xuanwu_redact_env_keys', ['WANDB_KEY', 'hf_hub']),
    ('xuanwu_probe_interfaces', ['eth0', 'ib*', 'enp65s0f1np1', 'bond0.100']),
    ('xuanwu_nccl_tests_bin_dir', '/opt/xuanwu/nccl-tests/current/bin'),
    ('xuanwu_nccl_tests_ld_library_path', '/opt/a/lib:/usr/lib64'),
    ('xuanwu_disk_paths', ['/', '/scratch']),
])
def test_values_in_their_grammar_pass(name, value):
    assert _collection.check_inventory_vars({name: value}, KNOWN) == []


@pytest.mark.parametrize('name, value, shown, grammar', [
    ('xuanwu_nccl_env', {'NCCL_X --mca foo': 'bar'}, "the key 'NCCL_X --mca foo'", 'environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)'),
    ('xuanwu_nccl_env', {'1NCCL': 'x'}, "the key '1NCCL'", 'environment variable name'),
    ('xuanwu_nccl_env', {'NCCL-X': 'x'}, "the key 'NCCL-X'", 'environment variable name'),
    ('xuanwu_nccl_env', {'': 'x'}, "the key ''", 'environment variable name'),
    ('xuanwu_torch_env', {'A=B': 'x'}, "the key 'A=B'", 'environment variable name'),
    ('xuanwu_nccl_env', {'NCCL_IB_HCA': 'mlx5_0\n--mca x'}, 'the value of NCCL_IB_HCA', 'must not hold a NUL or a line break'),
    ('xuanwu_nccl_env', {'NCCL_IB_HCA': 'a\x00b'}, 'the value of NCCL_IB_HCA', 'must not hold a NUL or a line break'),
    ('xuanwu_nccl_env', {'NCCL_IB_HCA': ['mlx5_0']}, 'the value of NCCL_IB_HCA', 'must be a string or a number'),
    ('xuanwu_nccl_env', {'NCCL_SOCKET_IFNAME': 'eth0 --mca foo'}, "the value of NCCL_SOCKET_IFNAME has 'eth0 --mca foo'", 'interface name'),
    ('xuanwu_nccl_env', {'NCCL_SOCKET_IFNAME': 'eth0,,eth1'}, "has ''", 'interface name'),
    ('xuanwu_redact_env_keys', ['MY KEY'], "has 'MY KEY'", 'environment variable name'),
    ('xuanwu_probe_interfaces', ['eth0/1'], "has 'eth0/1'", 'interface name'),
    ('xuanwu_probe_interfaces', ['eth0:1'], "has 'eth0:1'", 'interface name'),
    ('xuanwu_probe_interfaces', ['an-interface-name-too-long'], "has 'an-interface-name-too-long'", '1-15 characters'),
    ('xuanwu_probe_interfaces', ['..'], "has '..'", 'interface name'),
    ('xuanwu_probe_interfaces', ['eth 0'], "has 'eth 0'", 'interface name'),
    ('xuanwu_nccl_tests_bin_dir', 'bin', "has 'bin'", 'an absolute path'),
    ('xuanwu_nccl_tests_bin_dir', '/opt/bin\n', "has '/opt/bin\\n'", 'an absolute path'),
    ('xuanwu_disk_paths', ['/', 'scratch'], "has 'scratch'", 'an absolute path'),
    ('xuanwu_nccl_tests_ld_library_path', '/opt/a/lib:lib', "has '/opt/a/lib:lib'", 'absolute paths separated by :'),
])
def test_values_outside_their_grammar_are_named(name, value, shown, grammar):
    problems = _collection.check_inventory_vars({name: value}, KNOWN)
    assert len(problems) == 1, problems
    assert problems[0].startswith("variable '%s'" % name) and shown in problems[0] and grammar in problems[0], problems[0]


@pytest.mark.parametrize('address, ok', [
    ('10.0.0.1', True), ('gpu-node01.cluster.local', True), ('fe80::1%eth0', True), ('[2001:db8::1]', True),
    ('10.0.0.1 slots=99', False), ('node\nother slots=8', False), ('', False), ('a#b', False), ('h\tx', False),
])
def test_hostfile_addresses(address, ok):
    problems = _collection.check_host_address('ansible_host', address)
    assert (problems == []) is ok, problems
    if not ok:
        assert 'host name or address' in problems[0] and 'ansible_host' in problems[0]


def test_role_variables_read_with_libyaml_are_the_same():
    """The fast loader of the argument specs gives what the pure-Python loader gives."""
    fast = _collection.role_variables()
    slow = {}
    for path in sorted(glob.glob(os.path.join(_collection.ROOT, 'roles', '*', 'meta', 'argument_specs.yml'))):
        with open(path) as handle:
            for entry in (yaml.safe_load(handle) or {}).get('argument_specs', {}).values():
                for name in (entry.get('options') or {}):
                    slow.setdefault(name, True)
    assert sorted(fast) == sorted(slow) and len(fast) > 50


@pytest.mark.parametrize('value', [1, '1', 10, '10%', '100%', [1, '20%'], [1, 5, '25%'], 1000000])
def test_batch_sizes_ansible_takes_pass(value):
    assert _collection.check_inventory_vars({'xuanwu_serial': value}, KNOWN) == []


@pytest.mark.parametrize('value, shown', [
    ('banana', "'banana'"), (0, '0'), ('0', "'0'"), ('150%', "'150%'"), ('2.5%', "'2.5%'"), (' 20%', "' 20%'"),
    (True, 'True'), (2.5, '2.5'), ([1, 'x'], "'x'"), (None, 'None'), ('', "''"), ({'a': 1}, "{'a': 1}"),
])
def test_batch_sizes_that_would_crash_ansible_are_refused_naming_the_variable(value, shown):
    """Ansible's serial takes a count, a whole percentage or a list of them; anything else ends the run with rc 250
    ("Unexpected Exception") when the batch play starts, after the run record is open."""
    problems = _collection.check_inventory_vars({'xuanwu_serial': value}, KNOWN)
    assert len(problems) == 1, problems
    assert problems[0].startswith("variable 'xuanwu_serial' ") and 'whole percentage' in problems[0], problems
    assert shown in problems[0] or 'empty' in problems[0], problems


def test_the_variables_the_xuanwu_command_sets_are_known():
    """A batch task with an input_dir gets xuanwu_input_dir (docs/jobs.md): the preflight must not refuse it."""
    assert _collection.check_inventory_vars({'xuanwu_input_dir': '/srv/batches/inputs'}, KNOWN) == []
    assert _collection.check_inventory_vars({'xuanwu_gate_deferred': True}, KNOWN) == []
