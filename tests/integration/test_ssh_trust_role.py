"""The role xuanwu.cluster.ssh_trust on three inventory hosts of this machine (local connection, each with its own
key, authorized_keys, known_hosts and host key in a temporary folder): every node authorizes every node's key and
knows every node's host key, an existing key is kept, other authorized keys stay, a second run and a check-mode run
change nothing, a check-mode run on fresh nodes changes nothing on disk; then mesh_check from node1 with the
known_hosts the role wrote logs in to a real sshd that has node2's host key and authorized_keys, with no finding."""
import base64
import hashlib
import json
import os
import shutil
import stat

import pytest
import yaml

from sshd_server import SSHD, Sshd, free_port, keygen
from test_validate_playbook import playbook

pytestmark = [pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH'),
              pytest.mark.skipif(SSHD is None or shutil.which('ssh-keygen') is None, reason='OpenSSH server not installed')]
NODES = ('node1', 'node2', 'node3')


def changed(out):
    recap = [line for line in out.splitlines() if ' : ok=' in line]
    assert recap, out[-3000:]
    return dict((line.split()[0], int(line.split('changed=')[1].split()[0])) for line in recap)


@pytest.fixture
def cluster(tmp_path):
    port = free_port()
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}',
             'ssh_trust_user': 'root' if os.geteuid() == 0 else os.environ.get('USER', 'root'), 'ssh_trust_port': port}
    hosts = {}
    for i, name in enumerate(NODES, 1):
        folder = tmp_path / name
        folder.mkdir()
        keygen(folder / 'host_key')
        hosts[name] = {'ansible_host': '127.0.0.%d' % i, 'ssh_trust_key_file': str(folder / 'id_ed25519'),
                       'ssh_trust_authorized_keys_file': str(folder / 'authorized_keys'),
                       'ssh_trust_known_hosts_file': str(folder / 'known_hosts'),
                       'ssh_trust_host_key_files': [str(folder / 'host_key.pub'), str(folder / 'absent_key.pub')]}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump({'all': {'children': {'job': {'hosts': hosts, 'vars': local}}}}))
    play = [{'name': 'Trust', 'hosts': 'job', 'gather_facts': False, 'roles': [{'role': 'xuanwu.cluster.ssh_trust'}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    return tmp_path, port


def run(tmp_path, *extra):
    return playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), *extra)


def test_check_mode_on_fresh_nodes_reports_and_writes_nothing(cluster):
    tmp, _port = cluster
    rc, out = run(tmp, '--check')
    assert rc == 0, out[-4000:]
    assert all(count > 0 for count in changed(out).values())
    for name in NODES:
        assert sorted(os.listdir(str(tmp / name))) == ['host_key', 'host_key.pub']


@pytest.mark.both_controllers
def test_every_node_trusts_every_node_idempotently_and_mesh_check_passes(cluster):
    tmp, port = cluster
    kept = keygen(tmp / 'node3' / 'id_ed25519')                 # node3 has a key already: it must be kept
    (tmp / 'node1' / 'authorized_keys').write_text('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtherAdminKeyStaysHere0000000000000 admin\n')
    rc, out = run(tmp)
    assert rc == 0, out[-4000:]
    assert all(count > 0 for count in changed(out).values())
    users = dict((n, ' '.join((tmp / n / 'id_ed25519.pub').read_text().split()[:2])) for n in NODES)
    assert users['node3'] == kept
    hosts = dict((n, ' '.join((tmp / n / 'host_key.pub').read_text().split()[:2])) for n in NODES)
    for name in NODES:
        authorized = (tmp / name / 'authorized_keys').read_text()
        assert all(users[n] in authorized for n in NODES), authorized
        known = (tmp / name / 'known_hosts').read_text()
        for i, other in enumerate(NODES, 1):
            assert '[%s]:%d,[127.0.0.%d]:%d %s' % (other, port, i, port, hosts[other]) in known, known
    assert 'OtherAdminKeyStaysHere' in (tmp / 'node1' / 'authorized_keys').read_text()

    for extra in ((), ('--check',)):                             # a second run, and one in check mode: no change
        rc, out = run(tmp, *extra)
        assert rc == 0, out[-4000:]
        assert set(changed(out).values()) == {0}, out[-4000:]

    # node2 serves SSH with its host key and the authorized_keys the role wrote; node1 checks it
    sshd = Sshd(tmp / 'node2', [tmp / 'node2' / 'host_key'], tmp / 'node2' / 'authorized_keys', address='127.0.0.2', port=port).start()
    try:
        check = [{'name': 'Mesh', 'hosts': 'node1', 'gather_facts': False, 'tasks': [
            {'name': 'Check node2', 'register': 'mesh', 'xuanwu.cluster.mesh_check': {
                'name': '{{ inventory_hostname }}', 'peers': [{'name': 'node2', 'address': '127.0.0.2', 'port': port}],
                'key_file': '{{ ssh_trust_key_file }}', 'known_hosts': '{{ ssh_trust_known_hosts_file }}',
                'user': '{{ ssh_trust_user }}'}},
            {'name': 'Keep it', 'ansible.builtin.copy': {'content': '{{ mesh | to_json }}', 'dest': str(tmp / 'mesh.json'),
                                                         'mode': '0600'}}]}]
        (tmp / 'check.yml').write_text(yaml.safe_dump(check))
        rc, out = playbook('-i', str(tmp / 'inventory.yml'), str(tmp / 'check.yml'))
        assert rc == 0, out[-4000:]
        result = json.loads((tmp / 'mesh.json').read_text())
        assert result['findings'] == [] and result['peers'][0]['ssh_ok'] is True and result['peers'][0]['host_key'] == 'ok'
    finally:
        sshd.stop()


def test_a_node_without_a_host_key_stops_the_role_naming_it(cluster):
    tmp, _port = cluster
    os.remove(str(tmp / 'node2' / 'host_key.pub'))
    rc, out = run(tmp)
    assert rc != 0
    assert 'ssh_trust: cannot trust every node: node2: no host key' in ' '.join(out.split()), out[-3000:]


def test_keys_read_over_an_unverified_channel_are_refused_unless_enrolled_by_name(cluster):
    """node2 is reached over real SSH (a sshd with node2's host key on 127.0.0.2): with StrictHostKeyChecking=no the
    role stops before writing anything, naming node2 and why; named in ssh_trust_first_enrolment it goes on with a
    warning; with the controller knowing node2's key (checking on) it goes on with no warning."""
    tmp, port = cluster
    node2 = tmp / 'node2'
    client = keygen(tmp / 'controller_key')
    (tmp / 'controller_authorized').write_text(client + '\n')
    ctl_port = free_port()
    sshd = Sshd(node2, [node2 / 'host_key'], tmp / 'controller_authorized', address='127.0.0.2', port=ctl_port).start()
    try:
        inventory = yaml.safe_load((tmp / 'inventory.yml').read_text())
        known = tmp / 'controller_known_hosts'
        host_key = ' '.join((node2 / 'host_key.pub').read_text().split()[:2])

        def over_ssh(common_args):
            inventory['all']['children']['job']['hosts']['node2'].update(
                ansible_connection='ssh', ansible_port=ctl_port, ansible_ssh_private_key_file=str(tmp / 'controller_key'),
                ansible_user=os.environ.get('USER', 'root') if os.geteuid() else 'root', ansible_ssh_common_args=common_args,
                ansible_python_interpreter='{{ ansible_playbook_python }}')
            (tmp / 'inventory.yml').write_text(yaml.safe_dump(inventory))

        over_ssh('-o StrictHostKeyChecking=no -o UserKnownHostsFile=%s -o ControlPath=none' % known)
        rc, out = run(tmp)
        text = ' '.join(out.split())
        assert rc != 0 and 'will not make the nodes trust host keys read over a channel that did not verify them: ' \
            'node2: its SSH options say StrictHostKeyChecking=no' in text, out[-3000:]
        for name in NODES:
            assert not (tmp / name / 'known_hosts').exists(), name
        records = tmp / 'records'
        rc, out = run(tmp, '-e', json.dumps({'ssh_trust_first_enrolment': ['node2'], 'ssh_trust_record_dir': str(records)}))
        assert rc == 0, out[-3000:]
        assert 'the host keys of node2 were read over a channel that did not verify them' in ' '.join(out.split())
        assert host_key in (tmp / 'node1' / 'known_hosts').read_text()
        # the enrolment is recorded on the controller: which node, why, and the fingerprint of the key trusted
        written = sorted((records / 'ssh-trust').iterdir())
        assert len(written) == 1 and stat.S_IMODE(os.stat(str(written[0])).st_mode) == 0o600, written
        assert stat.S_IMODE(os.stat(str(records / 'ssh-trust')).st_mode) == 0o700
        record = json.loads(written[0].read_text())
        digest = base64.b64encode(hashlib.sha256(base64.b64decode(host_key.split()[1])).digest()).decode().rstrip('=')
        assert list(record['hosts']) == ['node2'], record
        assert record['hosts']['node2']['host_keys'] == ['%s SHA256:%s' % (host_key.split()[0], digest)], record
        assert 'StrictHostKeyChecking=no' in record['hosts']['node2']['channel'], record
        assert 'first enrolment recorded in %s' % written[0] in out
        known.write_text('[127.0.0.2]:%d %s\n' % (ctl_port, host_key))
        over_ssh('-o StrictHostKeyChecking=yes -o UserKnownHostsFile=%s -o ControlPath=none' % known)
        rc, out = run(tmp, '-e', json.dumps({'ssh_trust_record_dir': str(records)}))
        assert rc == 0 and 'did not verify' not in out, out[-3000:]
        assert len(list((records / 'ssh-trust').iterdir())) == 1      # nothing enrolled: nothing recorded
    finally:
        sshd.stop()
