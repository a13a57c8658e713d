"""Prometheus's scrape configuration from an inventory, and Prometheus durations (role prometheus)."""
import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.filter import prometheus as prom_filter
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _scrape

DAY = 86400


@pytest.mark.parametrize('text, seconds', [
    ('30d', 30 * DAY), ('720h', 30 * DAY), ('1y', 365 * DAY), ('4w2d', 30 * DAY), ('90d', 90 * DAY),
    ('1d12h', 36 * 3600), ('15s', 15), ('1500ms', 1.5), ('0', 0), (' 30d ', 30 * DAY), ('2w', 14 * DAY),
    ('5w', 35 * DAY), ('35d', 35 * DAY), ('365d', 365 * DAY), ('1h', 3600), ('1m', 60), ('1s', 1), ('7ms', 0.007),
    ('0s', 0), ('43200m', 30 * DAY), ('2592000s', 30 * DAY),
    ('1y2w3d4h5m6s7ms', 365 * DAY + 14 * DAY + 3 * DAY + 4 * 3600 + 5 * 60 + 6 + 0.007),
])
def test_durations(text, seconds):
    assert _scrape.duration_seconds(text) == seconds
    assert prom_filter.prometheus_duration_seconds(text) == seconds
    assert prom_filter.prometheus_duration_seconds(text, 'prometheus_retention_time') == seconds


# What the prometheus role asked and what Prometheus 2.42 reports for it (/api/v1/status/flags): the role's verify
# compares them as seconds, so each pair is the same retention.
@pytest.mark.parametrize('asked, reported', [
    ('35d', '5w'), ('365d', '1y'), ('720h', '30d'), ('4w2d', '30d'), ('30d', '30d'), ('90d', '90d'),
    ('14d', '2w'), ('1d24h', '2d'), ('60m', '1h'), ('1500ms', '1s500ms'), ('0', '0s'), ('8760h', '1y'), ('366d', '366d'),
])
def test_prometheus_spells_a_duration_its_own_way(asked, reported):
    assert _scrape.duration_text(_scrape.duration_seconds(asked)) == reported
    assert _scrape.duration_seconds(reported) == _scrape.duration_seconds(asked)


@pytest.mark.parametrize('value', [-1, None, '30d', True])
def test_duration_text_wants_seconds(value):
    with pytest.raises(ValueError, match='number of seconds'):
        _scrape.duration_text(value)


def test_a_malformed_duration_names_its_variable():
    with pytest.raises(AnsibleFilterError, match=r"^prometheus_retention_time: '30 days' is not a Prometheus duration"):
        prom_filter.prometheus_duration_seconds('30 days', 'prometheus_retention_time')
    with pytest.raises(AnsibleFilterError, match=r"^storage.tsdb.retention.time: a Prometheus duration is text"):
        prom_filter.prometheus_duration_seconds(None, 'storage.tsdb.retention.time')


@pytest.mark.parametrize('text', ['', '30', 'd', '30 d', '-30d', '1.5d', '12h1d', '30days', '1d1d', 'thirty', '30D'])
def test_not_durations(text):
    with pytest.raises(ValueError, match='not a Prometheus duration'):
        _scrape.duration_seconds(text)
    assert prom_filter.prometheus_duration_seconds(text) is None


@pytest.mark.parametrize('value', [None, 30, ['30d']])
def test_a_duration_is_text(value):
    with pytest.raises(ValueError, match='duration is text'):
        _scrape.duration_seconds(value)
    assert prom_filter.prometheus_duration_seconds(value) is None


def _inventory(count):
    hosts = ['gpu%04d' % i for i in range(count)]
    # every third host has an address of its own, one of them IPv6
    hostvars = {}
    for i, host in enumerate(hosts):
        hostvars[host] = {'ansible_host': '10.%d.%d.%d' % (i // 65536, i // 256 % 256, i % 256)} if i % 3 == 0 else {}
    if count > 3:
        hostvars[hosts[3]] = {'ansible_host': 'fd00::3'}
    return hosts, hostvars


def test_a_thousand_hosts():
    hosts, hostvars = _inventory(1000)
    configs = prom_filter.prometheus_scrape_configs(hosts, hostvars, node_port=9100, dcgm_hosts=hosts[:500], dcgm_port=9400)
    jobs = dict((c['job_name'], c['static_configs']) for c in configs)
    assert sorted(jobs) == ['dcgm', 'node', 'prometheus']
    assert jobs['prometheus'] == [{'targets': ['localhost:9090']}]
    assert [s['labels']['instance'] for s in jobs['node']] == hosts
    assert [s['labels']['instance'] for s in jobs['dcgm']] == hosts[:500]
    for static in jobs['node']:
        host = static['labels']['instance']
        want = hostvars[host].get('ansible_host', host)
        want = '[%s]' % want if ':' in want else want
        assert static['targets'] == ['%s:9100' % want]
    assert jobs['node'][3]['targets'] == ['[fd00::3]:9100']
    assert jobs['dcgm'][0]['targets'] == ['10.0.0.0:9400']
    assert jobs['node'][1]['targets'] == ['gpu0001:9100']
    # it is what prometheus.yml holds: plain YAML that reads back the same
    assert yaml.safe_load(yaml.safe_dump({'scrape_configs': configs}))['scrape_configs'] == configs


def test_no_dcgm_job_without_its_port_or_hosts():
    hosts, hostvars = _inventory(3)
    assert [c['job_name'] for c in prom_filter.prometheus_scrape_configs(hosts, hostvars, dcgm_hosts=hosts)] == ['prometheus', 'node']
    assert [c['job_name'] for c in prom_filter.prometheus_scrape_configs(hosts, hostvars, dcgm_port=9400)] == ['prometheus', 'node']
    assert [c['job_name'] for c in prom_filter.prometheus_scrape_configs(hosts, hostvars, self_target='')] == ['node']


def test_a_host_listed_twice_is_scraped_once():
    hosts, hostvars = _inventory(2)
    node = prom_filter.prometheus_scrape_configs(hosts + hosts[:1], hostvars)[1]
    assert [s['labels']['instance'] for s in node['static_configs']] == hosts


@pytest.mark.parametrize('kwargs, message', [
    ({'node_port': 0}, 'node_exporter port must be 1-65535'),
    ({'node_port': 70000}, 'node_exporter port must be 1-65535'),
    ({'node_port': 'http'}, 'node_exporter port must be a TCP port number'),
    ({'node_port': True}, 'node_exporter port must be a TCP port number'),
    ({'dcgm_port': -1}, 'dcgm-exporter port must be 1-65535 \\(0: off\\)'),
    ({'node_job': 'node exporter'}, 'not a Prometheus job name'),
    ({'node_job': 'x', 'dcgm_job': 'x'}, 'need different names'),
])
def test_bad_settings(kwargs, message):
    hosts, hostvars = _inventory(2)
    with pytest.raises(AnsibleFilterError, match=message):
        prom_filter.prometheus_scrape_configs(hosts, hostvars, **kwargs)


@pytest.mark.parametrize('hosts, hostvars, message', [
    (['gpu1'], {}, "'gpu1' is not a host of the inventory"),
    (['gpu 1'], {'gpu 1': {}}, "'gpu 1' is not an inventory host name"),
    (['gpu1'], {'gpu1': {'ansible_host': 'x"; drop'}}, 'the address of gpu1'),
    (['gpu1', {'name': 'x'}], {'gpu1': {}}, "is not an inventory host name"),
    ('gpu1', {'gpu1': {}}, 'must be lists of inventory host names'),
])
def test_bad_hosts(hosts, hostvars, message):
    with pytest.raises(AnsibleFilterError, match=message):
        prom_filter.prometheus_scrape_configs(hosts, hostvars)


def _jobs(**kwargs):
    hosts, hostvars = _inventory(2)
    configs = prom_filter.prometheus_scrape_configs(hosts, hostvars, dcgm_hosts=hosts, dcgm_port=9400, **kwargs)
    return dict((c['job_name'], c) for c in configs)


def test_job_settings_https_and_basic_auth_by_file():
    node = {'scheme': 'https', 'tls_config': {'ca_file': '/etc/prometheus/scrape-ca.crt'},
            'basic_auth': {'username': 'prometheus', 'password_file': '/etc/prometheus/node_exporter.password'}}
    jobs = _jobs(job_settings={'node': node, 'prometheus': {'scheme': 'http'}})
    assert list(jobs['node']) == ['job_name', 'scheme', 'basic_auth', 'tls_config', 'static_configs']
    assert jobs['node']['scheme'] == 'https'
    assert jobs['node']['basic_auth'] == {'username': 'prometheus', 'password_file': '/etc/prometheus/node_exporter.password'}
    assert jobs['node']['tls_config'] == {'ca_file': '/etc/prometheus/scrape-ca.crt'}
    # the jobs not named keep plain http (Prometheus's default: no scheme key)
    assert list(jobs['dcgm']) == ['job_name', 'static_configs']
    assert list(jobs['prometheus']) == ['job_name', 'static_configs']


@pytest.mark.parametrize('settings, message', [
    ({'node': {'basic_auth': {'username': 'p', 'password': 'secret'}}}, 'the password stays in a file of its own'),
    ({'node': {'basic_auth': {'username': 'p:q', 'password_file': '/x'}}}, 'username \\(no colon\\)'),
    ({'node': {'basic_auth': {'username': 'p', 'password_file': 'relative'}}}, 'password_file \\(an absolute path\\)'),
    ({'node': {'scheme': 'ftp'}}, 'scheme is http or https'),
    ({'node': {'tls_config': {'ca_file': '/ca'}}}, 'tls_config without scheme https'),
    ({'node': {'scheme': 'https', 'tls_config': {'insecure_skip_verify': True}}}, 'tls_config holds ca_file'),
    ({'node': {'bearer_token': 'x'}}, 'bearer_token not one of scheme, basic_auth, tls_config'),
    ({'other': {}}, 'job_settings maps the jobs'),
])
def test_job_settings_refused(settings, message):
    with pytest.raises(AnsibleFilterError, match=message):
        _jobs(job_settings=settings)


def test_a_refused_password_is_not_in_the_message():
    with pytest.raises(AnsibleFilterError) as err:
        _jobs(job_settings={'node': {'basic_auth': {'username': 'p', 'password': 'hunter2-secret'}}})
    assert 'hunter2-secret' not in str(err.value)
