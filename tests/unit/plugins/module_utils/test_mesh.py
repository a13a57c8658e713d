"""The SSH mesh preflight (plugins/module_utils/_mesh.py): known_hosts read as OpenSSH reads it, the findings of
a peer's record (both ends named), the MTU of the job interface compared between nodes, bad arguments."""
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue, _findings, _mesh

HERE = os.path.dirname(os.path.abspath(__file__))
SSH = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures', 'ssh'))
ARROW = u'\u2192'


def read(name):
    with open(os.path.join(SSH, name)) as handle:
        return handle.read()


def key(name):
    keytype, blob = read(name + '.pub').split()[:2]
    return keytype, blob


def peer(name, address=None, port=22):
    return {'name': name, 'address': address or name, 'port': port}


# (known_hosts file, peer, resolved IP, the key the peer presents, verdict)
HOST_KEYS = [
    ('known_hosts_plain', peer('node2'), '10.0.0.2', 'node2', 'ok'),
    ('known_hosts_plain', peer('node2', '10.0.0.2'), '10.0.0.2', 'node2', 'ok'),
    ('known_hosts_plain', peer('NODE2'), None, 'node2', 'ok'),                      # names are not case-sensitive
    ('known_hosts_plain', peer('node2'), '10.0.0.2', 'node1', 'changed'),
    ('known_hosts_plain', peer('node9'), '10.0.0.9', 'node2', 'unknown'),
    ('known_hosts_plain', peer('node3', port=2222), '10.0.0.3', 'node3', 'ok'),     # [node3]:2222
    ('known_hosts_plain', peer('node3', port=2222), None, 'node3_ecdsa', 'changed'),  # the port-22 key is not it
    ('known_hosts_plain', peer('node3'), '10.0.0.3', 'node3_ecdsa', 'ok'),
    ('known_hosts_plain', peer('node3'), '10.0.0.3', 'node3', 'changed'),
    ('known_hosts_plain', peer('gpu4.rack7.example'), None, 'node2', 'ok'),         # wildcard
    ('known_hosts_plain', peer('bad.rack7.example'), None, 'node2', 'unknown'),     # negated
    ('known_hosts_plain', peer('x.example'), None, 'node1', 'unknown'),             # @cert-authority is no host key
    ('known_hosts_plain', peer('node3'), '10.0.0.3', 'node3_new', 'revoked'),
    ('known_hosts_hashed', peer('node1'), '10.0.0.1', 'node1', 'ok'),
    ('known_hosts_hashed', peer('10.0.0.2'), None, 'node2', 'ok'),
    ('known_hosts_hashed', peer('node2'), '10.0.0.2', 'node3', 'changed'),
    ('known_hosts_hashed', peer('node3', port=2222), None, 'node3', 'ok'),
    ('known_hosts_hashed', peer('node4'), '10.0.0.4', 'node1', 'unknown'),
]


@pytest.mark.parametrize('known,target,resolved,presented,verdict', HOST_KEYS,
                         ids=['%s-%s:%d-%s' % (c[0][11:], c[1]['address'], c[1]['port'], c[3]) for c in HOST_KEYS])
def test_host_key_verdicts(known, target, resolved, presented, verdict):
    entries = _mesh.parse_known_hosts(read(known))['entries']
    keytype, blob = key(presented)
    assert _mesh.judge_host_key(entries, _mesh.lookup_names(target, resolved), keytype, blob) == verdict


def test_known_hosts_lines_that_are_not_entries_are_listed():
    parsed = _mesh.parse_known_hosts(read('known_hosts_plain'))
    assert parsed['bad_lines'] == [9]
    assert [e['marker'] for e in parsed['entries']].count('revoked') == 1
    assert _mesh.parse_known_hosts('') == {'entries': [], 'bad_lines': []}
    assert _mesh.parse_known_hosts('node1 ssh-ed25519 not*base64\n')['bad_lines'] == [1]


def test_the_key_types_known_for_a_peer_are_offered_first():
    entries = _mesh.parse_known_hosts(read('known_hosts_plain'))['entries']
    assert _mesh.known_keytypes(entries, _mesh.lookup_names(peer('node3'), '10.0.0.3')) == ['ecdsa-sha2-nistp256']
    assert _mesh.known_keytypes(entries, ['node9']) == []
    assert _mesh.base_keytype('rsa-sha2-512') == 'ssh-rsa'


def test_a_peer_without_a_key_of_the_known_types_has_changed():
    entries = _mesh.parse_known_hosts(read('known_hosts_plain'))['entries']
    assert _mesh.judge_host_key(entries, ['node2'], None, None) == 'changed'


def test_lookup_names_off_port_22_use_brackets():
    assert _mesh.lookup_names(peer('Node3', '10.0.0.3', 2222), '10.0.0.3') == ['[10.0.0.3]:2222', '[node3]:2222']
    assert _mesh.lookup_names(peer('node3', 'node3.fabric'), '10.0.0.3') == ['node3.fabric', 'node3', '10.0.0.3']


def test_fingerprint_is_as_ssh_keygen_prints_it():
    # ssh-keygen -l -f node1.pub
    assert _mesh.fingerprint(key('node1')[1]) == 'SHA256:/sAGgqwWJveHMDWJPBoEo+9aAIAPABmy5pL3EvazLV0'


SETTINGS = {'ssh': True, 'timeout': 5.0, 'user': 'root', 'key_file': '/root/.ssh/id_ed25519',
            'known_hosts': '/root/.ssh/known_hosts', 'interface': 'ib0', 'known_hosts_state': 'ok'}


def record(name='node3', address='10.0.0.3', **fields):
    out = {'name': name, 'address': address, 'port': 22, 'resolved': address, 'resolve_error': None,
           'route': {'dst': address, 'type': 'unicast', 'dev': 'ib0', 'via': None, 'src': '10.0.0.1'},
           'route_error': None, 'tcp': {22: None},
           'ssh': {'names': [address, name], 'host_key': 'ok', 'keytype': 'ssh-ed25519', 'fingerprint': 'SHA256:x',
                   'auth': True, 'error': None}}
    out.update(fields)
    return out


def ssh(**fields):
    return dict(record()['ssh'], **fields)


# (the record's fields, the check, words the finding must say)
PEER_FAULTS = [
    ({'resolved': None, 'resolve_error': '[Errno -2] Name or service not known', 'tcp': {}, 'ssh': None, 'route': None},
     'mesh.dns', ['Name or service not known']),
    ({'route': {'dst': '10.0.0.3', 'type': 'unicast', 'dev': 'eth0', 'via': '192.0.2.1', 'src': None}},
     'mesh.route', ['eth0', 'via 192.0.2.1', 'ib0']),
    ({'route': None, 'route_error': '`-j route get 10.0.0.3`: not a route: Cannot find device'},
     'mesh.route', ['could not be read', 'Cannot find device']),
    ({'tcp': {22: None, 29500: '[Errno 111] Connection refused'}}, 'mesh.tcp', ['29500', 'Connection refused']),
    ({'ssh': ssh(host_key=None, keytype=None, auth=None, error='SSHException: Error reading SSH protocol banner')},
     'mesh.ssh', ['banner']),
    ({'ssh': ssh(host_key='unknown', auth=None)}, 'mesh.host_key_unknown', ['does not know', 'not accepted']),
    ({'ssh': ssh(host_key='changed', auth=None)}, 'mesh.host_key_changed', ['differs', 'SHA256:x']),
    ({'ssh': ssh(host_key='revoked', auth=None)}, 'mesh.host_key_changed', ['@revoked']),
    ({'ssh': ssh(auth=False, error='AuthenticationException: Authentication failed.')}, 'mesh.ssh_auth',
     ['cannot log in', 'root', '/root/.ssh/id_ed25519']),
]


@pytest.mark.parametrize('fields,check,words', PEER_FAULTS, ids=['%s-%d' % (c[1], i) for i, c in enumerate(PEER_FAULTS)])
def test_each_fault_of_a_peer_is_one_finding_naming_both_ends(fields, check, words):
    (finding,) = _mesh.peer_findings('node1', record(**fields), SETTINGS)
    assert finding['check'] == check and finding['host'] == 'node1' and finding['severity'] == 'fail'
    assert finding['component'] == u'node1 %s node3' % ARROW
    assert set(finding) == set(_findings.FIELDS)
    text = ' '.join(str(finding[k]) for k in ('measured', 'expected', 'message'))
    for word in words:
        assert word in text
    assert 'node1' in finding['message'] and 'node3' in finding['message']
    assert 'node1' in finding['remediation'] and '<' not in finding['remediation']
    summary = _mesh.peer_summary(record(**fields))
    assert summary['error'] or summary['route_dev'] != 'ib0' or summary['tcp_ok'] is not True or summary['ssh_ok'] is not True


def test_the_controller_judges_the_modules_answer_as_the_node_judged_it():
    """mesh_check's answer passes through JSON (its TCP ports become text) to the action plugin: the same findings, in
    the same order, the same peers and the same failure as when the node judged them."""
    records = [record(**fields) for fields, _check, _words in PEER_FAULTS] + [record(name='node4', address='10.0.0.4')]
    settings = dict(SETTINGS, known_hosts_state='empty', key_error='unreadable', mtu_error=None)
    findings = _mesh.node_findings('node1', settings)
    for one in records:
        findings.extend(_mesh.peer_findings('node1', one, settings))
    findings.sort(key=_findings.sort_key)
    answer = {'host': 'node1', 'interface': 'ib0', 'mtu': 4092, 'records': records, 'fail_on_findings': True,
              'settings': dict((k, settings.get(k)) for k in _mesh.JUDGED_SETTINGS)}
    result = _mesh.judged(json.loads(json.dumps(answer)))
    assert result['findings'] == json.loads(json.dumps(findings)) and len(findings) == len(PEER_FAULTS) + 2
    assert result['peers'] == json.loads(json.dumps([_mesh.peer_summary(one) for one in records]))
    assert (result['host'], result['interface'], result['mtu'], result['changed']) == ('node1', 'ib0', 4092, False)
    assert result['failed'] is True and result['msg'].startswith('%d mesh finding(s) on node1: ' % len(findings))
    quiet = _mesh.judged(dict(json.loads(json.dumps(answer)), fail_on_findings=False))
    assert 'failed' not in quiet and quiet['findings'] == result['findings']


def test_a_healthy_peer_has_no_finding_and_is_ok():
    assert _mesh.peer_findings('node1', record(), SETTINGS) == []
    assert _mesh.peer_summary(record()) == {'name': 'node3', 'address': '10.0.0.3', 'resolved': '10.0.0.3',
                                            'tcp_ok': True, 'ssh_ok': True, 'host_key': 'ok', 'route_dev': 'ib0',
                                            'error': None}


def test_the_node_itself_is_routed_locally_without_a_finding():
    local = record(name='node1', address='10.0.0.1', route={'dst': '10.0.0.1', 'type': 'local', 'dev': 'lo',
                                                            'via': None, 'src': '10.0.0.1'})
    assert _mesh.peer_findings('node1', local, SETTINGS) == []


def test_nothing_tried_is_never_ok():
    untried = record(ssh=None, tcp={})
    summary = _mesh.peer_summary(untried)
    assert summary['tcp_ok'] is None and summary['ssh_ok'] is None and summary['host_key'] is None
    assert _mesh.peer_summary(record(ssh=ssh(host_key='unknown', auth=None)))['ssh_ok'] is False


# (settings of the node, the checks it gets)
NODE_FAULTS = [
    ({'known_hosts_state': 'missing'}, ['mesh.known_hosts']),
    ({'known_hosts_state': 'empty'}, ['mesh.known_hosts']),
    ({'key_error': 'the key is protected by a passphrase'}, ['mesh.ssh_key']),
    ({'mtu_error': "[Errno 2] No such file or directory: '/sys/class/net/ib0/mtu'"}, ['mesh.interface']),
    ({'ssh': False, 'known_hosts_state': None, 'key_error': 'x'}, []),
    ({}, []),
]


@pytest.mark.parametrize('fields,checks', NODE_FAULTS)
def test_findings_of_the_node_itself(fields, checks):
    found = _mesh.node_findings('node1', dict(SETTINGS, **fields))
    assert [f['check'] for f in found] == checks
    for finding in found:
        assert finding['component'] == u'node1 %s *' % ARROW and finding['severity'] == 'fail'


def result(mtu, interface='ib0'):
    return {'host': 'x', 'interface': interface, 'mtu': mtu, 'peers': [], 'findings': []}


def test_the_host_whose_mtu_differs_is_named_with_a_host_that_has_the_reference():
    results = dict(('n%04d' % i, result(9000)) for i in range(1000))
    results['n0500'] = result(1500)
    found = _mesh.mtu_findings(results)
    assert list(found) == ['n0500']
    (finding,) = found['n0500']
    assert finding['check'] == 'mesh.mtu' and finding['component'] == u'n0500 %s n0000' % ARROW
    assert finding['measured'] == 'ib0 mtu 1500' and finding['expected'].startswith('mtu 9000')
    assert 'ip link set ib0 mtu 9000' in finding['remediation']


def test_an_mtu_tie_goes_to_the_larger_mtu():
    found = _mesh.mtu_findings({'a': result(1500), 'b': result(9000)})
    assert list(found) == ['a'] and found['a'][0]['component'] == u'a %s b' % ARROW


def test_hosts_not_measured_are_findings_and_equal_mtus_are_not():
    found = _mesh.mtu_findings({'a': result(9000), 'b': result(9000), 'c': None, 'd': result(None, interface=None),
                                'e': {'msg': 'paramiko missing', 'failed': True}, 'f': result(None)})
    assert sorted(found) == ['c', 'd', 'e']
    assert all(f['check'] == 'mesh.not_measured' for fs in found.values() for f in fs)
    assert _mesh.mtu_findings({'a': result(9000), 'b': result(9000)}) == {}


def test_a_failed_mesh_check_with_findings_is_still_compared():
    failed = dict(result(1500), failed=True)
    found = _mesh.mtu_findings({'a': result(9000), 'b': result(9000), 'c': failed})
    assert [f['check'] for f in found['c']] == ['mesh.mtu']


@pytest.mark.parametrize('peers,error', [
    ([{'name': 'n1', 'adress': 'x'}], 'unknown keys adress'),
    ([{'name': 'n1', 'port': 'ssh'}], 'peers[0].port must be a TCP port'),
    ([{'name': 'n1', 'port': 0}], 'between 1 and 65535'),
    ([42], 'must be a dict'),
    ([{'port': 22}], 'needs a name or an address'),
])
def test_bad_peers_are_clear_errors(peers, error):
    with pytest.raises(ValueError) as err:
        _mesh.normalise_peers(peers)
    assert error in str(err.value)


def test_peers_by_name_or_dict():
    assert _mesh.normalise_peers(['n1', {'name': 'n2', 'address': '10.0.0.2', 'port': '2222'}]) == [
        {'name': 'n1', 'address': 'n1', 'port': 22}, {'name': 'n2', 'address': '10.0.0.2', 'port': 2222}]
    assert _mesh.ports(['29500', 29500, 22]) == [29500, 22]
    with pytest.raises(ValueError):
        _mesh.ports([70000])
    assert _mesh.workers(500, 3) == 3 and _mesh.workers(0, 10) == 1 and _mesh.workers(500, 1000) == _mesh.MAX_WORKERS


def test_mesh_checks_are_in_the_catalogue():
    assert set(_mesh.CHECKS) <= set(_catalogue.CATALOGUE)


# --- ssh_trust: every node's keys put together once ------------------------------------------------

def trust_read(user='node1', hosts=('node1',), addresses=None, ansible_host='10.0.0.1', extra=''):
    lines = ['== user-key']
    if user:
        lines.append(read(user + '.pub').strip() + ' root@' + user)
    lines.append('== host-keys')
    lines += [read(h + '.pub').strip() for h in hosts]
    lines.append('== addresses')
    if addresses is not None:
        lines.append(read_vm_addresses() if addresses == 'vm' else addresses)
    lines += ['== ansible-host', ansible_host]
    return '\n'.join(lines) + '\n' + extra


def read_vm_addresses():
    path = os.path.join(SSH, '..', 'hardware', 'debian12-vm-noaccel', 'ip_-j_addr_show_scope_global.json')
    with open(path) as handle:
        return handle.read()


def test_the_read_of_a_node_gives_its_keys_addresses_and_name():
    parsed = _mesh.parse_trust_read(trust_read(hosts=('node1', 'node3_ecdsa'), addresses='vm'))
    assert parsed['user_key'] == ' '.join(key('node1'))
    assert parsed['host_keys'] == [' '.join(key('node1')), ' '.join(key('node3_ecdsa'))]
    assert parsed['addresses'] == ['192.0.2.2', 'fd00::2', '10.89.1.1', '10.89.2.1', '10.88.0.1']
    assert parsed['ansible_host'] == '10.0.0.1' and parsed['problems'] == []


def test_what_cannot_be_read_is_a_problem_not_an_error():
    parsed = _mesh.parse_trust_read(trust_read(user=None, addresses='[{"ifname": 3}]').replace(
        '== host-keys\n', '== host-keys\ncat: /etc/ssh/ssh_host_ed25519_key.pub: Permission denied\n'))
    assert parsed['user_key'] is None
    assert any('not a public key' in p for p in parsed['problems']) and any('addresses' in p for p in parsed['problems'])
    assert _mesh.parse_trust_read('')['problems'] == []


def test_every_node_is_known_by_name_ansible_host_and_own_addresses_once():
    ib0 = '{"ifname":"ib0","addr_info":[{"local":"10.1.0.1","prefixlen":16,"family":"inet","scope":"global"}]}'
    docker0 = '{"ifname":"docker0","addr_info":[{"local":"172.17.0.1","prefixlen":16,"family":"inet","scope":"global"}]}'
    reads = {'node1': _mesh.parse_trust_read(trust_read('node1', ('node1',), '[%s,%s]' % (ib0, docker0), '10.0.0.1')),
             'node2': _mesh.parse_trust_read(trust_read('node2', ('node2',), '[%s]' % docker0, 'node2'))}
    files = _mesh.trust_files(reads)
    assert files['shared_addresses'] == ['172.17.0.1']
    assert files['known_hosts'] == ['node1,10.0.0.1,10.1.0.1 %s' % ' '.join(key('node1')),
                                    'node2 %s' % ' '.join(key('node2'))]
    assert files['authorized_keys'] == [' '.join(key('node1')), ' '.join(key('node2'))]
    assert files['missing'] == {}
    assert _mesh.trust_files(reads, port=2222, addresses=False)['known_hosts'][0].startswith('[node1]:2222,[10.0.0.1]:2222 ')


def test_nodes_without_keys_are_named():
    reads = {'node1': _mesh.parse_trust_read(trust_read(user=None)), 'node2': _mesh.parse_trust_read(trust_read('node2', ()))}
    assert _mesh.trust_files(reads)['missing'] == {'node1': 'no user key', 'node2': 'no host key'}


def test_known_hosts_written_for_the_nodes_verify_them():
    """What trust_files writes is what judge_host_key accepts (name, ansible_host and [host]:port)."""
    reads = dict((n, _mesh.parse_trust_read(trust_read(n, (n,), None, '10.0.0.%d' % i))) for i, n in enumerate(('node1', 'node2'), 1))
    for port in (22, 2222):
        entries = _mesh.parse_known_hosts('\n'.join(_mesh.trust_files(reads, port=port)['known_hosts']))['entries']
        for target in (peer('node2', port=port), peer('node2', '10.0.0.2', port)):
            assert _mesh.judge_host_key(entries, _mesh.lookup_names(target), *key('node2')) == 'ok'
            assert _mesh.judge_host_key(entries, _mesh.lookup_names(target), *key('node1')) == 'changed'


# A node under someone else's control prints what it likes; nothing it prints may become a wildcard, another host's
# name, a marker line or a second entry in every node's known_hosts.
HOSTILE_ADDRESSES = [
    '*', '*.example.com', '10.0.0.1,github.com', '10.0.0.1\n@cert-authority * ssh-ed25519 AAAA', '!10.0.0.1',
    '[10.0.0.1]:22', 'fe80::1%*', '10.0.0.1/24', ' 10.0.0.1', '10.0.0.300', '',
]


@pytest.mark.parametrize('local', HOSTILE_ADDRESSES)
def test_a_hostile_address_is_named_and_never_written(local):
    hostile = json.dumps([{'ifname': 'eth0', 'addr_info': [{'local': local, 'prefixlen': 24, 'family': 'inet', 'scope': 'global'}]}])
    good = '[{"ifname":"ib0","addr_info":[{"local":"10.1.0.2","prefixlen":16,"family":"inet","scope":"global"}]}]'
    reads = {'node1': _mesh.parse_trust_read(trust_read('node1', ('node1',), hostile, '10.0.0.1')),
             'node2': _mesh.parse_trust_read(trust_read('node2', ('node2',), good, '10.0.0.2'))}
    files = _mesh.trust_files(reads)
    assert list(files['missing']) == ['node1'] and 'is not an IP address' in files['missing']['node1'], files['missing']
    # the other node is known as before; the hostile one only by names that were checked
    assert files['known_hosts'] == ['node1,10.0.0.1 %s' % ' '.join(key('node1')), 'node2,10.0.0.2,10.1.0.2 %s' % ' '.join(key('node2'))]
    text = '\n'.join(files['known_hosts'])
    assert '*' not in text and '@' not in text and len(text.splitlines()) == 2
    entries = _mesh.parse_known_hosts(text)['entries']
    assert _mesh.judge_host_key(entries, ['github.com'], *key('node1')) != 'ok'


@pytest.mark.parametrize('ansible_host', ['*', 'node1,*', 'a b', 'x\n@revoked * ssh-ed25519 AAAA', '-oProxyCommand=x'])
def test_a_hostile_ansible_host_or_inventory_name_is_named_and_never_written(ansible_host):
    reads = {'node1': _mesh.parse_trust_read(trust_read('node1', ('node1',), None, 'placeholder')), 'node 2': _mesh.parse_trust_read(
        trust_read('node2', ('node2',), None, '10.0.0.2'))}
    reads['node1']['ansible_host'] = ansible_host
    files = _mesh.trust_files(reads)
    assert sorted(files['missing']) == ['node 2', 'node1'] and 'is not an address or host name' in files['missing']['node1']
    # written in inventory order ('node 2' sorts first), each under its checked names only
    assert files['known_hosts'] == ['10.0.0.2 %s' % ' '.join(key('node2')), 'node1 %s' % ' '.join(key('node1'))]


@pytest.mark.parametrize('name, ok', [('10.0.0.1', True), ('fd00::2', True), ('gpu-node01', True), ('gpu_node01.dc1.example', True),
                                      ('g' * 64, False), ('a..b', False), ('-x', False), ('x*', False), ('', False), (None, False)])
def test_known_host_names_by_grammar(name, ok):
    assert (_mesh.known_host_name(name) is not None) is ok
