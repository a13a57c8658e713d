"""The monitoring roles' decisions through ansible-playbook on the controller, without installing anything:
dcgm_exporter on a host without NVIDIA GPUs (skipped with a message, or failed with dcgm_exporter_require_gpu) and
on a host with one (it goes on to install), the inputs the roles refuse with a clear message (prometheus's
retention under 30 days, a bad duration, a node_exporter archive install without its checksum), and where each
service would listen and with which web config: never every interface unless the operator says so (the preflights
of the three roles, a host per case, one run per role)."""
import json
import re
import shutil

import bcrypt
import pytest
import yaml

from hostcases import by_host, case_hosts, recap
from test_validate_playbook import playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')


def run_role(tmp_path, role, *extra, **role_vars):
    """Include ``role`` on localhost; returns (rc, output, the role's dcgm_exporter_state or None)."""
    state = tmp_path / 'state.json'
    play = [{'name': 'Role', 'hosts': 'node1', 'gather_facts': False,
             'tasks': [{'name': 'The role', 'ansible.builtin.include_role': {'name': 'xuanwu.cluster.' + role}},
                       {'name': 'Keep the state', 'ansible.builtin.copy': {
                           'content': '{{ dcgm_exporter_state | default(None) | to_json }}', 'dest': str(state), 'mode': '0600'},
                        'check_mode': False}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    variables = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
    variables.update(role_vars)
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump({'all': {'hosts': {'node1': variables}}}))
    rc, out = playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), *extra)
    assert 'Traceback' not in out, out[-3000:]
    return rc, out, (json.loads(state.read_text()) if state.exists() else None)


def flat(out):
    """The output with its line breaks and YAML quoting undone (the callbacks of ansible-core 2.16 and 2.19 fold
    and quote a long message differently)."""
    return ' '.join(out.replace("''", "'").split())


def gpu_dir(tmp_path, count):
    """A stand-in for /proc/driver/nvidia/gpus with ``count`` GPUs (one folder per PCI address)."""
    folder = tmp_path / 'gpus'
    folder.mkdir()
    for index in range(count):
        (folder / ('0000:%02x:00.0' % (0x18 + index))).mkdir()
    return ['-e', '__dcgm_exporter_gpu_dir=%s' % folder]


@pytest.mark.both_controllers
@pytest.mark.parametrize('mode', [[], ['--check']])
def test_dcgm_exporter_skips_a_host_without_gpus_and_says_so(tmp_path, mode):
    rc, out, state = run_role(tmp_path, 'dcgm_exporter', *(gpu_dir(tmp_path, 0) + mode))
    assert rc == 0, out[-3000:]
    assert state['gpus'] == 0 and state['installed'] is False
    assert 'no NVIDIA GPU' in state['reason'] and 'node1' in state['reason']
    assert 'dcgm-exporter not installed on node1: no NVIDIA GPU' in flat(out)
    assert 'skipped (dcgm_exporter_require_gpu: true makes this an error)' in flat(out)
    assert 'Write dcgm-exporter' not in out


def test_dcgm_exporter_fails_a_host_without_gpus_when_required(tmp_path):
    rc, out, state = run_role(tmp_path, 'dcgm_exporter', *gpu_dir(tmp_path, 0), dcgm_exporter_require_gpu=True)
    assert rc != 0
    assert state is None
    assert 'dcgm-exporter not installed on node1: no NVIDIA GPU' in flat(out)
    assert 'dcgm_exporter_require_gpu is true' in flat(out)


def test_dcgm_exporter_goes_on_to_install_on_a_host_with_gpus(tmp_path):
    # the program is missing (nothing is installed by this test): the role says what to install
    rc, out, state = run_role(tmp_path, 'dcgm_exporter', *gpu_dir(tmp_path, 2), dcgm_exporter_install_method='binary',
                              dcgm_exporter_binary=str(tmp_path / 'no-such-dcgm-exporter'), dcgm_exporter_require_gpu=True)
    assert rc != 0
    assert '%s is not on node1' % (tmp_path / 'no-such-dcgm-exporter') in flat(out)
    assert 'set dcgm_exporter_packages' in flat(out)
    assert 'no NVIDIA GPU' not in out


@pytest.mark.parametrize('role_vars, message', [
    ({'prometheus_retention_time': '7d'}, 'prometheus_retention_time is 7d (7.0 days): the validation\'s results must stay '
                                          'at least 30 days'),
    ({'prometheus_retention_time': '30 days'}, 'prometheus_retention_time is 30 days, not a Prometheus duration'),
    ({'prometheus_retention_time': '0'}, 'prometheus_retention_time is 0, which keeps nothing'),
    ({'prometheus_scrape_timeout': '30s'}, 'with the timeout not longer than the interval'),
    ({'prometheus_install_method': 'archive'}, 'the archive install needs prometheus_archive_sha256'),
])
def test_prometheus_refuses_bad_input(tmp_path, role_vars, message):
    rc, out, _state = run_role(tmp_path, 'prometheus', **role_vars)
    assert rc != 0
    assert message in flat(out), out[-3000:]


def test_prometheus_accepts_a_short_retention_only_when_told(tmp_path):
    # it passes the retention check and stops at the next one (the archive install without a checksum)
    rc, out, _state = run_role(tmp_path, 'prometheus', prometheus_retention_time='2d', prometheus_retention_allow_short=True,
                               prometheus_install_method='archive')
    assert rc != 0
    assert 'the archive install needs prometheus_archive_sha256' in flat(out)
    assert 'must stay at least 30 days' not in flat(out)


@pytest.mark.parametrize('role_vars, message', [
    ({'node_exporter_install_method': 'archive'}, 'the archive install needs node_exporter_archive_sha256'),
    ({'node_exporter_port': 70000}, 'node_exporter_port is 1-65535'),
    ({'node_exporter_textfile_dir': 'relative/dir'}, 'node_exporter_textfile_dir is an absolute path'),
])
def test_node_exporter_refuses_bad_input(tmp_path, role_vars, message):
    rc, out, _state = run_role(tmp_path, 'node_exporter', **role_vars)
    assert rc != 0
    assert message in flat(out), out[-3000:]


HASH = bcrypt.hashpw(b'scrape-secret', bcrypt.gensalt(4)).decode()


def preflight(tmp_path, role, hosts, show):
    """The role's preflight.yml on these hosts ({name: role variables}), then a task that prints ``show`` (a template of
    the role's own variables: what would reach the command line and the configuration); one run."""
    play = [{'name': 'Preflight', 'hosts': 'all', 'gather_facts': True, 'gather_subset': ['min'],
             'tasks': [{'name': 'The preflight', 'ansible.builtin.include_role': {'name': 'xuanwu.cluster.' + role,
                                                                                  'tasks_from': 'preflight', 'public': True}},
                       {'name': 'What the role would run', 'ansible.builtin.debug': {'msg': 'SHOW ' + show}}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    inv = {'all': {'hosts': hosts, 'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inv))
    rc, out = playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), '--check')
    assert 'Traceback' not in out, out[-3000:]
    return rc, out, by_host(out), recap(out)


def cases(tmp_path, role, hostile, valid, show):
    """A host per hostile case (refused with its message) and per valid case (passes); {valid host: its SHOW text}."""
    bad = dict(zip(case_hosts('bad', hostile), hostile))
    good = dict(zip(case_hosts('good', valid), valid))
    hosts = dict((name, role_vars) for name, (role_vars, _m) in bad.items())
    hosts.update(good)
    rc, out, texts, counts = preflight(tmp_path, role, hosts, show)
    assert rc != 0 if hostile else rc == 0, out[-3000:]
    for name, (role_vars, message) in bad.items():
        assert counts[name]['failed'] == 1, (name, role_vars, texts.get(name))
        assert re.search(message, flat(texts[name])), (name, message, texts[name])
        assert 'SHOW' not in texts[name]
    shown = {}
    for name, role_vars in good.items():
        assert counts[name]['failed'] == 0, (name, role_vars, texts.get(name))
        shown[name] = texts[name][texts[name].index('SHOW'):]
    return [shown[name] for name in sorted(good)]


NOT_A_WILDCARD = r'--web.listen-address=(\d+[.]\d+[.]\d+[.]\d+|\[[0-9a-f:]+\]):9100 '


def test_node_exporter_never_listens_everywhere_unless_told_and_its_web_config(tmp_path):
    hostile = [
        ({'node_exporter_listen_address': '0.0.0.0'}, 'node_exporter_listen_address is 0.0.0.0: every interface of bad00.*'
                                                      'node_exporter_allow_wildcard: true'),
        ({'node_exporter_listen_address': '::'}, 'node_exporter_listen_address is ::: every interface'),
        ({'node_exporter_listen_address': 'gpu01.example'}, "node_exporter_listen_address is an IP address of the host .*"
                                                            "got 'gpu01.example'"),
        ({'node_exporter_listen_address': '10.0.0.1 --web.config.file=/dev/null'}, 'node_exporter_listen_address is an IP address'),
        ({'node_exporter_extra_args': ['--web.listen-address=:9101']}, 'other than --web.listen-address and --web.config.file'),
        ({'ansible_host': '203.0.113.9'}, 'its inventory address 203.0.113.9 .*not an address of the host'),
        ({'node_exporter_basic_auth_users': [{'name': 'prometheus', 'password_hash': 'scrape-secret'}]},
         r'node_exporter_basic_auth_users \(user prometheus\): password_hash is not a bcrypt hash'),
        ({'node_exporter_tls_cert': '/nonexistent/tls.crt', 'node_exporter_tls_key': '/nonexistent/tls.key'},
         r'node_exporter_tls_cert \(/nonexistent/tls.crt\) and node_exporter_tls_key .* are files on the controller'),
        ({'node_exporter_tls_cert': str(tmp_path / 'inventory.yml')}, 'node_exporter_tls_cert and node_exporter_tls_key go together'),
    ]
    valid = [
        {},                                                            # the host's own address (facts)
        {'ansible_host': '127.0.0.1'},                                 # ansible_host, an IP address of the host
        {'node_exporter_listen_address': '', 'node_exporter_allow_wildcard': True},
        {'node_exporter_listen_address': '::', 'node_exporter_allow_wildcard': True, 'node_exporter_port': 9200},
        {'node_exporter_basic_auth_users': [{'name': 'prometheus', 'password_hash': HASH}, {'name': 'ops', 'password': 'x'}],
         'node_exporter_tls_cert': str(tmp_path / 'inventory.yml'), 'node_exporter_tls_key': str(tmp_path / 'play.yml')},
    ]
    own, loopback, every, every6, web = cases(tmp_path, 'node_exporter', hostile, valid,
                                              'ARGS {{ __node_exporter_args | join(" ") }} END')
    assert re.search(NOT_A_WILDCARD, own) and '0.0.0.0' not in own, own
    assert '--web.listen-address=127.0.0.1:9100 ' in loopback and '--web.config.file' not in loopback, loopback
    assert '--web.listen-address=:9100 ' in every, every
    assert '--web.listen-address=[::]:9200 ' in every6, every6
    assert re.search(NOT_A_WILDCARD, web), web
    assert '--web.config.file=/etc/prometheus-node-exporter/web-config.yml' in web, web


# both controllers: the scrape jobs' settings and the listen address are mappings built by templating (strings read
# back on ansible-core 2.16, native values on 2.19)
@pytest.mark.both_controllers
def test_prometheus_listens_on_the_host_and_scrapes_with_credentials_by_file(tmp_path):
    auth = {'username': 'prometheus', 'password': 'scrape-secret'}
    hostile = [
        ({'prometheus_listen_address': '0.0.0.0'}, 'prometheus_listen_address is 0.0.0.0: every interface.*'
                                                   'prometheus_allow_wildcard: true'),
        ({'prometheus_port': 0}, 'prometheus_port is 1-65535'),
        ({'prometheus_basic_auth_users': [{'name': 'admin', 'password_hash': HASH}]},
         "prometheus_basic_auth_users gives no user's password"),
        ({'prometheus_node_exporter_basic_auth': {'username': 'a:b', 'password': 'x'}},
         'prometheus_node_exporter_basic_auth and prometheus_dcgm_exporter_basic_auth are {} or {username'),
        ({'prometheus_dcgm_exporter_basic_auth': {'username': 'prometheus'}}, 'are {} or {username'),
        ({'prometheus_node_exporter_scheme': 'ftp'}, 'the scrape schemes .* are http or https'),
        ({'prometheus_rules_busbw_regression_fraction': 1.5}, 'prometheus_rules_busbw_regression_fraction a fraction above 0'),
        ({'prometheus_rules_validation_max_age_days': 0}, 'prometheus_rules_validation_max_age_days a whole number of days'),
        ({'prometheus_extra_args': ['--web.config.file=/dev/null']}, 'other than --web.listen-address and --web.config.file'),
    ]
    valid = [
        {'prometheus_node_exporter_scheme': 'https', 'prometheus_node_exporter_basic_auth': auth,
         'prometheus_dcgm_exporter_hosts': 'all', 'prometheus_dcgm_exporter_basic_auth': auth,
         'prometheus_scrape_tls_ca': str(tmp_path / 'inventory.yml'),
         'prometheus_basic_auth_users': [{'name': 'viewer', 'password_hash': HASH}, {'name': 'admin', 'password': 'admin-secret'}]},
        {'prometheus_retention_time': '720h'},
    ]
    show = 'ARGS {{ __prometheus_args | join(" ") }} CONFIGS {{ __prometheus_scrape_configs | to_json }} END'
    secured, plain = cases(tmp_path, 'prometheus', hostile, valid, show)
    assert re.search(NOT_A_WILDCARD.replace('9100', '9090'), secured), secured
    assert '--web.config.file=/etc/prometheus/web-config.yml' in secured and '--web.config.file' not in plain
    configs = dict((job['job_name'], job) for job in json.loads(secured[secured.index('CONFIGS ') + 8:secured.rindex(' END')]))
    assert configs['node']['scheme'] == 'https' and configs['node']['tls_config'] == {'ca_file': '/etc/prometheus/scrape-ca.crt'}
    assert configs['node']['basic_auth'] == {'username': 'prometheus', 'password_file': '/etc/prometheus/node_exporter.password'}
    assert configs['dcgm']['basic_auth'] == {'username': 'prometheus', 'password_file': '/etc/prometheus/dcgm_exporter.password'}
    assert 'scheme' not in configs['dcgm'] and 'tls_config' not in configs['dcgm']
    # Prometheus scrapes itself as the first user that gives a password, at the address it listens on
    assert configs['prometheus']['basic_auth'] == {'username': 'admin', 'password_file': '/etc/prometheus/prometheus.password'}
    assert configs['prometheus']['static_configs'][0]['targets'][0] != 'localhost:9090'
    assert 'secret' not in secured[secured.index('CONFIGS '):]
    assert '--storage.tsdb.retention.time=720h' in plain


def test_dcgm_exporter_listens_on_the_host_and_reads_its_web_config_in_the_container(tmp_path):
    hostile = [
        ({'dcgm_exporter_listen_address': '::'}, 'dcgm_exporter_listen_address is ::: every interface.*'
                                                 'dcgm_exporter_allow_wildcard: true'),
        ({'dcgm_exporter_port': 70000}, 'dcgm_exporter_port is a TCP port 1-65535'),
        ({'dcgm_exporter_version': '3.1.8-3.1.5', 'dcgm_exporter_basic_auth_users': [{'name': 'prometheus', 'password_hash': HASH}]},
         '--web-config-file .* needs dcgm-exporter 3.3.0 or newer'),
    ]
    valid = [
        {'dcgm_exporter_tls_remote_src': True, 'dcgm_exporter_tls_cert': '/etc/pki/dcgm.crt', 'dcgm_exporter_tls_key': '/etc/pki/dcgm.key',
         'dcgm_exporter_basic_auth_users': [{'name': 'prometheus', 'password_hash': HASH}], 'ansible_host': '127.0.0.1'},
        {},
    ]
    web, plain = cases(tmp_path, 'dcgm_exporter', hostile, valid, 'EXEC {{ __dcgm_exporter_exec | join(" ") }} END')
    # the TLS files stay where they are on the host, mounted read-only into the container with the web config
    for path in ('/etc/dcgm-exporter/web-config.yml', '/etc/pki/dcgm.crt', '/etc/pki/dcgm.key'):
        assert '-v %s:%s:ro' % (path, path) in web, web
    assert web.endswith('-a 127.0.0.1:9400 --web-config-file /etc/dcgm-exporter/web-config.yml END'), web
    assert re.search(r'-a (\d+[.]\d+[.]\d+[.]\d+|\[[0-9a-f:]+\]):9400 END', plain) and 'web-config' not in plain, plain
