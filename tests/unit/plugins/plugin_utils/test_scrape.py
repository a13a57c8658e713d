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
])
def test_durations(text, seconds):
    assert _scrape.duration_seconds(text) == seconds
    assert prom_filter.prometheus_duration_seconds(text) == seconds


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
