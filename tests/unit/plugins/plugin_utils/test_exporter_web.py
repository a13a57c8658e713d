"""Where the monitoring roles' services listen (never every interface unless the operator says so) and their web
config files (TLS, basic auth with bcrypt hashes): plugin_utils/_exporter_web.py and the filters of
plugins/filter/exporter.py."""
import bcrypt
import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.filter import exporter as exporter_filter
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _exporter_web

FACTS = {'all_ipv4_addresses': ['10.1.0.7', '172.17.0.1'], 'all_ipv6_addresses': ['fd00::7', 'fe80::1'],
         'default_ipv4': {'address': '10.1.0.7'}, 'default_ipv6': {'address': 'fd00::7'}}


def listen(value='', allow=False, inventory_address='gpu007', facts=None, port=9100):
    return exporter_filter.exporter_listen(value, 'node_exporter_listen_address', port, 'node_exporter_port',
                                           allow_wildcard=allow, allow_variable='node_exporter_allow_wildcard',
                                           host='gpu007', inventory_address=inventory_address,
                                           facts=FACTS if facts is None else facts)


def test_the_default_is_ansible_host_when_it_is_an_ip_address():
    got = listen(inventory_address='10.1.0.7')
    assert got == {'address': '10.1.0.7', 'wildcard': False, 'listen': '10.1.0.7:9100', 'local': '10.1.0.7',
                   'port': 9100, 'chosen_by': 'ansible_host'}
    got = listen(inventory_address='fd00::7', port='9400')
    assert (got['address'], got['listen'], got['local'], got['port']) == ('fd00::7', '[fd00::7]:9400', '[fd00::7]', 9400)


def test_the_default_is_the_address_the_name_resolves_to_when_the_host_has_it():
    got = _exporter_web.listen('', 'v', 9100, 'p', host='gpu007', inventory_address='gpu007.mgmt',
                               resolved=['192.0.2.1', '127.0.1.1', '10.1.0.7'], host_addresses={'10.1.0.7', 'fd00::7'},
                               default_addresses=['fd00::7'])
    assert got['address'] == '10.1.0.7' and got['chosen_by'] == 'gpu007.mgmt resolves to it'


def test_else_the_default_address_of_the_facts():
    # a name that does not resolve (the test's own host name is never looked up: .invalid never resolves)
    got = listen(inventory_address='gpu007.invalid')
    assert got['address'] == '10.1.0.7' and got['chosen_by'] == 'the default address of the host (facts)'
    got = listen(inventory_address='gpu007.invalid', facts={'default_ipv6': {'address': 'fd00::7'}})
    assert got['listen'] == '[fd00::7]:9100'


def test_no_address_at_all_names_the_variable():
    with pytest.raises(AnsibleFilterError, match='node_exporter_listen_address is empty and gpu007 has no address to listen '
                                                 'on.*Set node_exporter_listen_address'):
        listen(inventory_address='gpu007.invalid', facts={})


def test_an_ansible_host_the_host_does_not_have_is_refused():
    # NAT, a forwarded port: binding it would fail on the node; the message says what to set
    with pytest.raises(AnsibleFilterError, match='its inventory address 203.0.113.9 .* not an address of the host '
                                                 r'\(it has 10.1.0.7, 172.17.0.1, fd00::7, fe80::1\).*Set node_exporter_listen_address'):
        listen(inventory_address='203.0.113.9')
    # loopback is always the host's, and facts without addresses cannot say
    assert listen(inventory_address='127.0.0.1')['address'] == '127.0.0.1'
    assert listen(inventory_address='203.0.113.9', facts={})['address'] == '203.0.113.9'


@pytest.mark.parametrize('value', ['0.0.0.0', '::', '[::]', ' 0.0.0.0 '])
def test_every_interface_is_refused_without_the_word(value):
    with pytest.raises(AnsibleFilterError, match='node_exporter_listen_address is (0.0.0.0|::): every interface of gpu007.*'
                                                 'node_exporter_allow_wildcard: true'):
        listen(value)


@pytest.mark.parametrize('value, bind, local', [('0.0.0.0', '0.0.0.0:9100', '127.0.0.1'), ('::', '[::]:9100', '[::1]'),
                                                ('', ':9100', '127.0.0.1')])
def test_every_interface_with_the_word(value, bind, local):
    got = listen(value, allow=True)
    assert (got['wildcard'], got['listen'], got['local']) == (True, bind, local)
    assert 'node_exporter_allow_wildcard' in got['chosen_by']


def test_allowing_the_wildcard_does_not_change_an_address():
    got = listen('10.1.0.7', allow=True)
    assert (got['wildcard'], got['listen'], got['chosen_by']) == (False, '10.1.0.7:9100', 'node_exporter_listen_address')


@pytest.mark.parametrize('value', ['gpu007', 'localhost', '10.1.0.7:9100', '10.1.0.256', 'fe80::1%eth0', '10.1.0.7 -x',
                                   '$(id)', 7, None, ['10.1.0.7']])
def test_only_an_ip_address_reaches_the_command_line(value):
    with pytest.raises(AnsibleFilterError, match='node_exporter_listen_address is an IP address of the host'):
        listen(value)


@pytest.mark.parametrize('port', [0, 65536, -1, '91OO', True, None, 9100.5, '9100; id'])
def test_the_port_is_1_to_65535(port):
    with pytest.raises(AnsibleFilterError, match='node_exporter_port is a TCP port 1-65535'):
        listen('10.1.0.7', port=port)


def test_allow_wildcard_must_be_a_boolean():
    with pytest.raises(AnsibleFilterError, match='allow_wildcard is a boolean'):
        listen('0.0.0.0', allow='false')


# --- the web config ---------------------------------------------------------------------------------------------

HASH = bcrypt.hashpw(b'scrape-secret', bcrypt.gensalt(4)).decode()


def web(users, existing='', cert='', key=''):
    return exporter_filter.exporter_web_config(users, cert_file=cert, key_file=key, variable_prefix='node_exporter',
                                               existing=existing)


def test_no_tls_no_users_no_file():
    assert web([]) == {}


def test_tls_and_a_given_hash():
    got = web([{'name': 'prometheus', 'password_hash': HASH}], cert='/etc/x/tls.crt', key='/etc/x/tls.key')
    assert got == {'tls_server_config': {'cert_file': '/etc/x/tls.crt', 'key_file': '/etc/x/tls.key'},
                   'basic_auth_users': {'prometheus': HASH}}
    # the file is YAML that reads back the same
    assert yaml.safe_load(yaml.safe_dump(got)) == got


def test_a_clear_password_is_hashed_with_bcrypt_and_the_hash_kept_while_it_matches():
    first = web([{'name': 'prometheus', 'password': 'scrape-secret'}])['basic_auth_users']['prometheus']
    assert first.startswith('$2b$10$') and bcrypt.checkpw(b'scrape-secret', first.encode())
    assert 'scrape-secret' not in first
    existing = yaml.safe_dump({'basic_auth_users': {'prometheus': first}})
    # the next run keeps it: the same file, no change
    assert web([{'name': 'prometheus', 'password': 'scrape-secret'}], existing=existing)['basic_auth_users']['prometheus'] == first
    # a new password gets a new hash
    other = web([{'name': 'prometheus', 'password': 'new-secret'}], existing=existing)['basic_auth_users']['prometheus']
    assert other != first and bcrypt.checkpw(b'new-secret', other.encode())
    # an unreadable file is no earlier hash
    assert web([{'name': 'prometheus', 'password': 'scrape-secret'}], existing='{: not yaml')['basic_auth_users']


def test_a_check_hashes_nothing(monkeypatch):
    monkeypatch.setattr(_exporter_web, '_hasher', lambda: (pytest.fail, pytest.fail))
    got = exporter_filter.exporter_web_config([{'name': 'p', 'password': 'scrape-secret'}, {'name': 'q', 'password_hash': HASH}],
                                              variable_prefix='node_exporter', check_only=True)
    assert got == {'basic_auth_users': {'p': None, 'q': HASH}}


def test_without_bcrypt_on_the_controller_the_hash_is_required(monkeypatch):
    monkeypatch.setattr(_exporter_web, '_hasher', lambda: None)
    with pytest.raises(AnsibleFilterError) as err:
        web([{'name': 'prometheus', 'password': 'scrape-secret'}])
    message = str(err.value)
    with pytest.raises(AnsibleFilterError, match='needs bcrypt on the controller'):
        exporter_filter.exporter_web_config([{'name': 'p', 'password': 'x'}], check_only=True)
    assert 'node_exporter_basic_auth_users (user prometheus): a clear-text password needs bcrypt on the controller' in message
    assert 'give its bcrypt hash as password_hash' in message and 'scrape-secret' not in message
    # a given hash needs no bcrypt
    assert web([{'name': 'prometheus', 'password_hash': HASH}])['basic_auth_users'] == {'prometheus': HASH}


def test_passlib_stands_in_for_bcrypt(monkeypatch):
    calls = []
    monkeypatch.setattr(_exporter_web, '_hasher', lambda: (lambda p: calls.append(p) or HASH, lambda p, h: False))
    assert web([{'name': 'p', 'password': 'scrape-secret'}])['basic_auth_users'] == {'p': HASH}
    assert calls == ['scrape-secret']


@pytest.mark.parametrize('users, message', [
    ([{'name': 'p', 'password_hash': 'scrape-secret'}], 'user p\\): password_hash is not a bcrypt hash'),
    ([{'name': 'p', 'password_hash': '$1$abc$def'}], 'password_hash is not a bcrypt hash'),
    ([{'name': 'p', 'password': 'x', 'password_hash': HASH}], 'give password_hash .* or password .*, one of them'),
    ([{'name': 'p'}], 'one of them'),
    ([{'name': 'p', 'password': ''}], 'password is empty'),
    ([{'name': 'p', 'password': 'x' * 73}], 'longer than the 72 bytes'),
    ([{'name': 'p:q', 'password_hash': HASH}], 'node_exporter_basic_auth_users\\[0\\]: name is'),
    ([{'name': 'p', 'password_hash': HASH}, {'name': 'p', 'password_hash': HASH}], 'listed twice'),
    ([{'name': 'p', 'pasword': 'x'}], 'unknown key pasword'),
    (['p'], 'node_exporter_basic_auth_users\\[0\\] is \\{name, password_hash\\}'),
    ({'p': HASH}, 'node_exporter_basic_auth_users is a list'),
])
def test_bad_users(users, message):
    with pytest.raises(AnsibleFilterError, match=message) as err:
        web(users)
    assert 'scrape-secret' not in str(err.value)


@pytest.mark.parametrize('cert, key, message', [
    ('/etc/x/tls.crt', '', 'node_exporter_tls_cert and node_exporter_tls_key go together'),
    ('', '/etc/x/tls.key', 'go together'),
    ('relative.crt', '/etc/x/tls.key', 'node_exporter_tls_cert is an absolute path'),
    ('/etc/x/tls.crt', '/etc/x/my key', 'node_exporter_tls_key is an absolute path'),
    ('/etc/x:/y', '/etc/x/tls.key', 'node_exporter_tls_cert is an absolute path'),
])
def test_bad_tls_files(cert, key, message):
    with pytest.raises(AnsibleFilterError, match=message):
        web([], cert=cert, key=key)
