"""Link flaps (_links.py): the growth of the InfiniBand error counters between the probe's read and the
read at the end of the run, on the counters of the fault corpus (tests/fixtures/derived/ib/)."""
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _links, _probe, _workloads
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_ib import parse_ib_counters
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import validate_profile

IB = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'derived', 'ib'))
PROFILE = validate_profile({'schema_version': 1, 'name': 't', 'infiniband': {'ports_min': 8}})


def counters(name):
    with open(os.path.join(IB, name)) as handle:
        return parse_ib_counters(handle.read())


def before():
    """The probe's infiniband facts: ibstat ports with their counters merged in."""
    cas = dict((ca, {'ports': dict((port, {'counters': values}) for port, values in ports.items())})
               for ca, ports in counters('ib_counters_8x_healthy.txt').items())
    return {'installed': True, 'cas': cas}


def after(name, status='ok'):
    return {'schema_version': 1, 'source': 'replay', 'probes': {'ib_counters_end': {'status': status, 'error': None}},
            'infiniband': {'counters': counters(name) if name else None}}


def judge(run, profile=PROFILE):
    return _workloads.evaluate('link_counters', run, profile, 'n1')


def test_healthy_load_has_no_finding():
    assert judge({'before': before(), 'after': after('ib_counters_8x_after_load_healthy.txt')}) == []


def test_port_that_went_down_under_load_fails_with_the_growth():
    findings = judge({'before': before(), 'after': after('ib_counters_8x_after_load_mlx5_3_link_downed.txt')})
    assert [(f['check'], f['component'], f['severity']) for f in findings] == [('workload.ib_counter_growth', 'mlx5_3/1', 'fail')]
    assert findings[0]['measured'] == ('link_downed +2 (0 -> 2, max +0), link_error_recovery +1 (0 -> 1, max +0), '
                                       'symbol_error +57 (0 -> 57, max +10)')
    assert 'mlxlink' in findings[0]['remediation']


def test_thresholds_come_from_the_profile():
    profile = validate_profile({'schema_version': 1, 'name': 't',
                                'infiniband': {'ports_min': 8, 'counters_growth_max': {'link_downed': 2, 'symbol_error': 100}}})
    assert judge({'before': before(), 'after': after('ib_counters_8x_after_load_mlx5_3_link_downed.txt')}, profile) == []
    off = validate_profile({'schema_version': 1, 'name': 't', 'infiniband': {'ports_min': 8, 'counters_growth_max': {}}})
    assert judge({'before': before(), 'after': after(None)}, off) == []


@pytest.mark.parametrize('end, why', [(after(None, status='skipped'), 'skipped'), ({}, 'not read')])
def test_second_read_missing_is_not_a_pass(end, why):
    findings = judge({'before': before(), 'after': end})
    assert [(f['check'], f['severity'], f['measured']) for f in findings] == [('workload.ib_counters_unread', 'warn', why)]


def test_port_missing_from_the_end_read_is_reported():
    end = after('ib_counters_8x_after_load_healthy.txt')
    del end['infiniband']['counters']['mlx5_5']
    findings = judge({'before': before(), 'after': end})
    assert [(f['check'], f['component']) for f in findings] == [('workload.ib_counters_unread', 'mlx5_5/1')]


def test_counter_reset_between_reads_counts_the_new_value():
    start = {'counters': {'mlx5_0': {'1': {'link_downed': 7}}}}
    end = {'counters': {'mlx5_0': {'1': {'link_downed': 1}}}}
    assert _links.counter_growth(start, end, ['link_downed']) == {
        'mlx5_0/1': {'link_downed': {'before': 7, 'after': 1, 'growth': 1}}}


def test_run_summary_lists_the_growth():
    summary = _workloads.summarise_run('link_counters', {
        'before': before(), 'after': after('ib_counters_8x_after_load_mlx5_3_link_downed.txt'), 'component': 'ib'})
    want = {'link_downed': 2, 'link_error_recovery': 1, 'symbol_error': 57, 'port_rcv_errors': 0}
    assert summary['counter_growth']['mlx5_3/1'] == want
    assert summary['counter_growth']['mlx5_0/1']['link_downed'] == 0


class _Fake(object):
    """A runner that answers the end read from a file (what a replay of a bundle does)."""

    def __init__(self, text):
        self.text = text

    def obtain(self, probe):
        return _probe.Output('ok', probe.alternatives[0].command, rc=0, stdout=self.text, alternative=probe.alternatives[0])


def test_stage_end_reads_only_the_counters():
    with open(os.path.join(IB, 'ib_counters_8x_after_load_healthy.txt')) as handle:
        facts = _probe.probe(_Fake(handle.read()), stage='end')
    assert sorted(facts['probes']) == ['ib_counters_end']
    assert sorted(facts) == ['infiniband', 'probes', 'schema_version', 'source']
    assert facts['infiniband']['counters']['mlx5_3']['1']['port_xmit_data'] > 0
