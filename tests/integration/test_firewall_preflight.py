"""The firewall role's preflight on this machine (no change is made: preflight only reads): an
empty firewall_cluster_subnets with the drop-by-default input policy would cut NCCL/MPI traffic
between the nodes, so it is refused unless the node is stated to be alone."""
import shutil

import pytest
import yaml

from hostcases import by_host, case_hosts, recap
from test_validate_playbook import playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def preflight(tmp_path, hosts, *extra):
    """preflight.yml of the firewall role in check mode on these hosts ({name: role variables}), one run."""
    play = [{'name': 'Firewall preflight', 'hosts': 'all', 'gather_facts': True, 'gather_subset': ['min'],
             'tasks': [{'name': 'Check the firewall inputs',
                        'ansible.builtin.include_role': {'name': 'xuanwu.cluster.firewall', 'tasks_from': 'preflight'}}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    inv = {'all': {'hosts': hosts, 'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inv))
    rc, out = playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), '--check', *extra)
    return rc, out, by_host(out), recap(out)


def test_empty_cluster_subnets_are_refused_and_a_single_node_statement_of_false_is_not_one(tmp_path):
    # one host per backend; `-e firewall_single_node=false` as an operator types it (a string) is no statement
    backends = ['nftables', 'ufw', 'firewalld']
    rc, out, texts, counts = preflight(tmp_path, dict((b, {'firewall_backend': b}) for b in backends), '-e', 'firewall_single_node=false')
    assert rc != 0
    for backend in backends:
        assert counts[backend]['failed'] == 1, out[-3000:]
        flat = texts[backend]
        assert 'firewall: firewall_cluster_subnets is empty, and the %s firewall drops incoming traffic' % backend in flat, flat
        assert 'set firewall_single_node: true' in flat and backend in flat


def test_a_stated_single_node_on_the_command_line_passes(tmp_path):
    rc, out, _texts, counts = preflight(tmp_path, {'node01': {}}, '-e', 'firewall_single_node=true')
    assert rc == 0 and counts['node01']['failed'] == 0, out[-3000:]
    assert 'firewall_cluster_subnets is empty' not in out


# Values that would reach a command line (firewall-cmd, systemd-run, ufw) or the nft file: each is
# refused before anything changes, with the variable, the value and the grammar named.
HOSTILE = [
    ({'firewall_backend': 'firewalld', 'firewall_firewalld_zone': 'public --panic-on'},
     'firewall_firewalld_zone: "public --panic-on" is not a firewalld zone name'),
    ({'firewall_backend': 'firewalld', 'firewall_firewalld_zone': '--set-default-zone=drop'},
     'firewall_firewalld_zone: "--set-default-zone=drop" is not a firewalld zone name'),
    ({'firewall_firewalld_zone': 'a_zone_name_of_18c'},
     'firewall_firewalld_zone: "a_zone_name_of_18c" is not a firewalld zone name'),
    ({'firewall_trusted_interfaces': ['ib0', 'eth0 accept']},
     'firewall_trusted_interfaces: "eth0 accept" is not an interface name'),
    ({'firewall_trusted_interfaces': ['-eth0']},
     'firewall_trusted_interfaces: "-eth0" is not an interface name'),
    ({'firewall_trusted_interfaces': ['abcdefghijklmnop']},
     'firewall_trusted_interfaces: "abcdefghijklmnop" is not an interface name'),
    ({'firewall_allowed_ports': ['29500/tcp', '22;rm']},
     'firewall_allowed_ports: "22;rm" is not PORT/PROTO'),
    ({'firewall_allowed_ports': ['70000/tcp']},
     'firewall_allowed_ports: "70000/tcp" is not PORT/PROTO'),
    ({'firewall_allowed_ports': ['600-500/udp']},
     'firewall_allowed_ports: "600-500/udp" is a range whose first port is above its last'),
    ({'firewall_cluster_subnets': ['10.0.0.0/16', '10.0.0.300/16']},
     'firewall_cluster_subnets: "10.0.0.300/16" is not an IPv4 or IPv6 address or subnet'),
    ({'firewall_ssh_sources': ['-10.0.0.0/8']},
     'firewall_ssh_sources: "-10.0.0.0/8" is not an IPv4 or IPv6 address or subnet'),
    ({'firewall_controller_address': '10.0.0.1 tcp dport 1-65535 accept'},
     'firewall_controller_address: "10.0.0.1 tcp dport 1-65535 accept" is not an IPv4 or IPv6 address or subnet'),
    ({'firewall_nftables_extra_input_rules': ['tcp dport 8443 accept\n}\n}\nflush ruleset']},
     'firewall_nftables_extra_input_rules: "tcp dport 8443 accept\\n}\\n}\\nflush ruleset" is not one nft rule'),
    ({'firewall_nftables_extra_input_rules': ['accept; flush ruleset']},
     'firewall_nftables_extra_input_rules: "accept; flush ruleset" is not one nft rule'),
    ({'firewall_rollback_timeout': '90 --property=ExecStart=/bin/true'},
     'firewall_rollback_timeout: "90 --property=ExecStart=/bin/true" is not a whole number of seconds'),
    ({'firewall_ssh_port': '22 x'},
     'firewall_ssh_port: "22 x" is not a whole number'),
]


# Values that pass, each next to a valid firewall_cluster_subnets (or a stated single node).
VALID = [
    {'firewall_single_node': True, 'firewall_cluster_subnets': []},
    {},
    {'firewall_backend': 'firewalld', 'firewall_firewalld_zone': 'trusted'},
    {'firewall_firewalld_zone': 'cluster-net_2'},
    {'firewall_trusted_interfaces': ['ib0', 'enp1s0f0np0', 'bond0.100', 'eth0@if12']},
    {'firewall_allowed_ports': ['29500/tcp', '60000-60010/udp', '1-65535/tcp']},
    {'firewall_ssh_sources': ['192.0.2.0/24', '2001:db8::/32', '203.0.113.7']},
    {'firewall_nftables_extra_input_rules': ['tcp dport { 80, 443 } accept # web']},
    {'firewall_rollback_timeout': '120', 'firewall_ssh_port': 2222},
]


def test_hostile_values_are_refused_naming_the_variable_and_valid_values_pass(tmp_path):
    """One run: a host per hostile value (each refused with its own message, nothing changed) and a host per valid
    set of values (each passes)."""
    hostile = dict(zip(case_hosts('bad', HOSTILE), HOSTILE))
    valid = dict(zip(case_hosts('good', VALID), VALID))
    hosts = dict((name, dict({'firewall_cluster_subnets': ['10.0.0.0/16']}, **role_vars)) for name, (role_vars, _m) in hostile.items())
    hosts.update((name, dict({'firewall_cluster_subnets': ['10.0.0.0/16']}, **role_vars)) for name, role_vars in valid.items())
    rc, out, texts, counts = preflight(tmp_path, hosts)
    assert rc != 0
    for name, (role_vars, message) in hostile.items():
        assert counts[name]['failed'] == 1, (name, role_vars, texts.get(name))
        assert message in texts[name], (name, texts[name])
        assert 'Nothing was changed' in texts[name]
    for name, role_vars in valid.items():
        assert counts[name]['failed'] == 0, (name, role_vars, texts.get(name))
        assert 'firewall_cluster_subnets is empty' not in texts[name]
