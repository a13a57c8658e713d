"""The firewall role's preflight on this machine (no change is made: preflight only reads): an
empty firewall_cluster_subnets with the drop-by-default input policy would cut NCCL/MPI traffic
between the nodes, so it is refused unless the node is stated to be alone."""
import shutil

import pytest
import yaml

from test_validate_playbook import playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def preflight(tmp_path, *extra, **role_vars):
    play = [{'name': 'Firewall preflight', 'hosts': 'all', 'gather_facts': True, 'gather_subset': ['min'],
             'tasks': [{'name': 'Check the firewall inputs',
                        'ansible.builtin.include_role': {'name': 'xuanwu.cluster.firewall', 'tasks_from': 'preflight'}}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    inv = {'all': {'hosts': {'node01': {}}, 'vars': dict({'ansible_connection': 'local',
                                                          'ansible_python_interpreter': '{{ ansible_playbook_python }}'},
                                                         **role_vars)}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inv))
    return playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), '--check', *extra)


@pytest.mark.parametrize('backend', ['nftables', 'ufw', 'firewalld'])
def test_empty_cluster_subnets_are_refused(tmp_path, backend):
    rc, out = preflight(tmp_path, firewall_backend=backend)
    assert rc != 0
    flat = ' '.join(out.split())
    assert 'firewall: firewall_cluster_subnets is empty, and the %s firewall drops incoming traffic' % backend in flat, out[-3000:]
    assert 'set firewall_single_node: true' in flat and 'node01' in flat


@pytest.mark.parametrize('extra, role_vars', [
    (['-e', 'firewall_single_node=true'], {}),
    ([], {'firewall_single_node': True}),
    ([], {'firewall_cluster_subnets': ['10.0.0.0/16']}),
])
def test_a_stated_single_node_or_listed_subnets_pass(tmp_path, extra, role_vars):
    rc, out = preflight(tmp_path, *extra, **role_vars)
    assert rc == 0, out[-3000:]
    assert 'firewall_cluster_subnets is empty' not in out


def test_a_single_node_statement_of_false_is_not_one(tmp_path):
    rc, out = preflight(tmp_path, '-e', 'firewall_single_node=false')
    assert rc != 0
    assert 'firewall_cluster_subnets is empty' in out, out[-3000:]
