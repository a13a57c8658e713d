"""xuanwu.cluster.mesh_check against a real sshd on 127.0.0.1 (its own host key, on a free port), run by
ansible-playbook in check mode (it only reads): a known host key and an authorized client key pass; a host key
missing from known_hosts, a changed one, a wrong client key, a closed port, a name that does not resolve, a
missing known_hosts each give their finding naming both ends; mesh_compare reads every host's result once."""
import json
import shutil

import pytest
import yaml

from sshd_server import SSHD, Sshd, free_port, keygen
from test_validate_playbook import playbook

pytestmark = [pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH'),
              pytest.mark.skipif(SSHD is None or shutil.which('ssh-keygen') is None, reason='OpenSSH server not installed')]
ARROW = u'\u2192'


@pytest.fixture(scope='module')
def mesh(tmp_path_factory):
    """Runs every case once (one playbook, --check) and returns ``({case: result}, output, sshd port)``."""
    tmp = tmp_path_factory.mktemp('mesh')
    host_key = keygen(tmp / 'host_key')
    ecdsa_host_key = keygen(tmp / 'host_key_ecdsa', 'ecdsa')
    other_host_key = keygen(tmp / 'other_host_key')
    client = keygen(tmp / 'client_key')
    keygen(tmp / 'stranger_key')
    (tmp / 'authorized_keys').write_text(client + '\n')
    sshd = Sshd(tmp, [tmp / 'host_key', tmp / 'host_key_ecdsa'], tmp / 'authorized_keys').start()
    try:
        port = sshd.port
        (tmp / 'known_hosts').write_text('[127.0.0.1]:%d %s\n' % (port, host_key))
        (tmp / 'known_hosts_other_host').write_text('[127.0.0.2]:%d %s\n' % (port, host_key))
        (tmp / 'known_hosts_changed').write_text('[127.0.0.1]:%d %s\n' % (port, other_host_key))
        (tmp / 'known_hosts_empty').write_text('# nothing yet\n')
        (tmp / 'known_hosts_ecdsa').write_text('[127.0.0.1]:%d %s\n' % (port, ecdsa_host_key))
        closed = free_port()
        here = {'name': 'sshd', 'address': '127.0.0.1', 'port': port}
        base = {'name': '{{ inventory_hostname }}', 'peers': [here], 'key_file': str(tmp / 'client_key'),
                'known_hosts': str(tmp / 'known_hosts'), 'timeout': 10, 'fail_on_findings': False}
        cases = {
            'ok': {'tcp_ports': [port], 'interface': 'lo'},
            'unknown': {'known_hosts': str(tmp / 'known_hosts_other_host')},
            'ecdsa_known': {'known_hosts': str(tmp / 'known_hosts_ecdsa')},
            'changed': {'known_hosts': str(tmp / 'known_hosts_changed')},
            'wrong_key': {'key_file': str(tmp / 'stranger_key')},
            'closed': {'peers': [{'name': 'closed', 'address': '127.0.0.1', 'port': closed}]},
            'closed_extra_port': {'ssh': False, 'tcp_ports': [closed]},
            'dns': {'peers': [{'name': 'ghost', 'address': 'no-such-node.invalid', 'port': port}]},
            'no_known_hosts': {'known_hosts': str(tmp / 'absent')},
            'empty_known_hosts': {'known_hosts': str(tmp / 'known_hosts_empty')},
            'off_route': {'ssh': False, 'interface': 'lo', 'peers': [{'name': 'far', 'address': '203.0.113.9'}]},
            'no_interface': {'ssh': False, 'interface': 'nosuch0'},
        }
        tasks = [{'name': 'Case %s' % name, 'xuanwu.cluster.mesh_check': dict(base, **args), 'register': 'case_' + name}
                 for name, args in sorted(cases.items())]
        tasks += [
            {'name': 'Fails on findings by default',
             'xuanwu.cluster.mesh_check': dict(base, known_hosts=str(tmp / 'absent'), fail_on_findings=True),
             'register': 'case_fails', 'ignore_errors': True},
            {'name': 'The mesh of this node', 'xuanwu.cluster.mesh_check': dict(base, interface='lo'),
             'register': 'xuanwu_mesh', 'when': "inventory_hostname != 'node3'"},
            {'name': 'Compare the nodes',
             'xuanwu.cluster.mesh_compare': {'hosts': '{{ ansible_play_hosts_all }}', 'fail_on_findings': False},
             'run_once': True, 'register': 'case_compare'},
            {'name': 'Keep the results', 'delegate_to': 'localhost', 'run_once': True, 'check_mode': False,
             'ansible.builtin.copy': {'dest': str(tmp / 'results.json'), 'mode': '0600', 'content': '{{ {%s} | to_json }}' % ', '.join(
                 "'%s': case_%s" % (name, name) for name in sorted(cases) + ['fails', 'compare'])}},
        ]
        play = [{'name': 'Mesh', 'hosts': 'nodes', 'gather_facts': False, 'tasks': tasks}]
        (tmp / 'play.yml').write_text(yaml.safe_dump(play, allow_unicode=True))
        local = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
        inv = {'all': {'hosts': {'localhost': local}, 'children': {'nodes': {'hosts': {'node1': {}, 'node2': {}, 'node3': {}},
                                                                             'vars': local}}}}
        (tmp / 'inventory.yml').write_text(yaml.safe_dump(inv))
        rc, out = playbook('-i', str(tmp / 'inventory.yml'), str(tmp / 'play.yml'), '--check', '--limit', 'nodes,localhost')
        assert rc == 0, out[-5000:]
        return json.loads((tmp / 'results.json').read_text()), out, port
    finally:
        sshd.stop()


def only(result, check):
    """The one finding of ``result``, which must be ``check``, naming node1 and the peer."""
    assert [f['check'] for f in result['findings']] == [check], result
    finding = result['findings'][0]
    assert finding['host'] == 'node1' and finding['component'].startswith(u'node1 %s ' % ARROW)
    assert finding['severity'] == 'fail' and finding['remediation']
    return finding


def test_known_host_key_and_authorized_key_pass(mesh):
    result = mesh[0]['ok']
    assert result['findings'] == [] and not result.get('failed'), result
    (peer,) = result['peers']
    assert (peer['tcp_ok'], peer['ssh_ok'], peer['host_key'], peer['route_dev'], peer['error']) == (True, True, 'ok', 'lo', None)
    assert result['interface'] == 'lo' and result['mtu'] == 65536


def test_a_peer_known_by_another_key_type_is_asked_for_that_type(mesh):
    # sshd has an ed25519 and an ecdsa host key; known_hosts holds only the ecdsa one (paramiko prefers ed25519)
    result = mesh[0]['ecdsa_known']
    assert result['findings'] == [] and result['peers'][0]['host_key'] == 'ok' and result['peers'][0]['ssh_ok'] is True


def test_host_key_missing_from_known_hosts_is_unknown(mesh):
    finding = only(mesh[0]['unknown'], 'mesh.host_key_unknown')
    assert finding['component'] == u'node1 %s sshd' % ARROW and '[127.0.0.1]:%d' % mesh[2] in finding['message']
    assert mesh[0]['unknown']['peers'][0]['ssh_ok'] is False


def test_changed_host_key_is_changed(mesh):
    finding = only(mesh[0]['changed'], 'mesh.host_key_changed')
    assert finding['measured'].startswith('ssh-ed25519 SHA256:')


def test_wrong_client_key_is_refused(mesh):
    finding = only(mesh[0]['wrong_key'], 'mesh.ssh_auth')
    assert 'stranger_key' in finding['message']
    assert mesh[0]['wrong_key']['peers'][0]['ssh_ok'] is False


@pytest.mark.parametrize('case', ['closed', 'closed_extra_port'])
def test_closed_port_is_tcp(mesh, case):
    finding = only(mesh[0][case], 'mesh.tcp')
    assert 'refused' in finding['measured'].lower()
    assert mesh[0][case]['peers'][0]['tcp_ok'] is False and mesh[0][case]['peers'][0]['ssh_ok'] is None


def test_unresolvable_name_is_dns(mesh):
    finding = only(mesh[0]['dns'], 'mesh.dns')
    assert finding['component'] == u'node1 %s ghost' % ARROW and 'no-such-node.invalid' in finding['message']
    peer = mesh[0]['dns']['peers'][0]
    assert (peer['resolved'], peer['tcp_ok'], peer['ssh_ok']) == (None, None, None)


@pytest.mark.parametrize('case, state', [('no_known_hosts', 'missing'), ('empty_known_hosts', 'empty')])
def test_missing_or_empty_known_hosts_is_a_finding_and_nothing_is_trusted(mesh, case, state):
    finding = only(mesh[0][case], 'mesh.known_hosts')
    assert finding['measured'].endswith(': %s' % state)
    assert mesh[0][case]['peers'][0]['ssh_ok'] is None and mesh[0][case]['peers'][0]['host_key'] is None


def test_a_peer_routed_elsewhere_than_the_interface_is_route(mesh):
    finding = only(mesh[0]['off_route'], 'mesh.route')
    assert finding['component'] == u'node1 %s far' % ARROW
    # through the default route's device, or no route at all on a machine without one: never lo
    assert finding['measured'] != 'dev lo' and finding['expected'] == 'dev lo'


def test_a_missing_interface_is_a_finding(mesh):
    finding = only(mesh[0]['no_interface'], 'mesh.interface')
    assert 'nosuch0' in finding['message'] and mesh[0]['no_interface']['mtu'] is None


def test_findings_fail_the_task_by_default_and_are_returned(mesh):
    result = mesh[0]['fails']
    assert result['failed'] and 'mesh.known_hosts' in result['msg'] and result['findings']


def test_compare_reads_each_hosts_result_once_and_names_the_one_without(mesh):
    result = mesh[0]['compare']
    assert result['mtu'] == {'node1': 65536, 'node2': 65536}
    assert [(f['host'], f['check']) for f in result['findings']] == [('node3', 'mesh.not_measured')]
    assert result['failing'] == ['node3']
