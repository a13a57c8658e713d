"""The status of every check of a host (plugins/module_utils/_check_status.py, docs/report-format.md "Check status"):
what the node checks say judged nothing (not applicable, not measured, with why), the one derivation from a host's
report entry, and that junit.xml, report.md, report.html and xuanwu.prom state what it says."""
import copy
import xml.etree.ElementTree as ET

from ansible_collections.xuanwu.cluster.plugins.module_utils import _check_status, _checks, _checks_amd, _judge, _prom
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _report
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import amd_node
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import test_checks as base

IB_PORTS = ('ib.port_state', 'ib.port_rate', 'ib.port_counters')


def _scope(facts, profile):
    judge = _judge.Judge(profile)
    return judge.node_checks(facts, 'n1')


def test_a_healthy_nvidia_host_lists_the_amd_checks_as_not_applicable_and_nothing_unmeasured():
    findings, checks = _scope(base.hgx_facts(), base.hgx_profile())
    assert findings == []
    for check in _checks_amd.CHECKS:
        assert checks[check] == {'status': 'not_applicable', 'why': "the profile's GPUs are NVIDIA (gpu.vendor nvidia): an AMD check"}
    assert not [c for c, v in checks.items() if v['status'] == 'not_measured']
    # what the profile asks for is judged: neither in the scope
    assert not set(checks) & {'gpu.count', 'gpu.topology', 'ib.port_state', 'host.time_sync'}


def test_an_amd_host_lists_the_nvidia_only_checks_as_not_applicable():
    _findings, checks = _scope(amd_node.facts(), base.mi300x_profile())
    for check in ('gpu.nvlink_down', 'gpu.xid', 'gpu.topology', 'gpu.persistence_mode'):
        assert checks[check]['status'] == 'not_applicable' and 'AMD' in checks[check]['why'], check
    for check in ('gpu.count', 'gpu.ecc_mode', 'gpu.xgmi_link', 'gpu.amd_tools_missing'):
        assert check not in checks, check


def test_a_failed_probe_leaves_the_checks_that_read_it_not_measured():
    facts = base.hgx_facts()
    facts['probes']['ibstat'] = dict(base._probe('ibstat', 'failed', 1), error='ibpanic: stat of IB device mlx5_0 failed')
    facts['infiniband'] = {}
    findings, checks = _scope(facts, base.hgx_profile())
    assert [f['check'] for f in findings] == ['probe.failed']
    for check in IB_PORTS + ('ib.ca_type', 'ib.port_count', 'ib.link_layer'):
        assert checks[check] == {'status': 'not_measured',
                                 'why': 'InfiniBand ports: probe ibstat failed: ibpanic: stat of IB device mlx5_0 failed'}, check
    assert 'ib.tools_missing' not in checks
    # the same probe failed where the profile has no InfiniBand: not applicable, whatever the probe did
    _findings, checks = _scope(facts, dict(base.hgx_profile(), infiniband=None))
    assert checks['ib.port_state']['status'] == 'not_applicable'


def test_a_failed_prerequisite_leaves_what_depends_on_it_not_measured():
    facts = base.hgx_facts()
    facts['gpu'] = {'installed': False, 'vendor': 'nvidia'}
    findings, checks = _scope(facts, base.hgx_profile())
    assert 'gpu.driver_missing' in [f['check'] for f in findings]
    for check in ('gpu.count', 'gpu.topology', 'gpu.nvlink_down', 'gpu.ecc_uncorrectable', 'gpu.xid'):
        assert checks[check] == {'status': 'not_measured', 'why': 'the GPUs: nvidia-smi is not installed (gpu.driver_missing)'}, check


def test_a_check_the_profile_switches_off_is_not_applicable_stage_checks_too():
    profile = copy.deepcopy(base.hgx_profile())
    profile['checks'] = {'disable': ['gpu.xid*', 'collectives.busbw_low']}
    _findings, checks = _scope(base.hgx_facts(), profile)
    assert checks['gpu.xid_fatal'] == {'status': 'not_applicable', 'why': 'switched off by the profile (checks.disable: gpu.xid*)'}
    assert 'collectives.busbw_low' not in checks       # a stage check: the catalogue of the caller says
    _findings, checks = _judge.Judge(profile).node_checks(base.hgx_facts(), 'n1', ['collectives.busbw_low'])
    assert checks['collectives.busbw_low']['status'] == 'not_applicable'


def _finding(check, severity='fail'):
    return {'host': 'n1', 'check': check, 'component': 'c', 'severity': severity, 'measured': 1, 'expected': 2,
            'message': 'm', 'remediation': 'r'}


NODE = {'gpu.bad_pages': {'status': 'not_applicable', 'why': 'an AMD check'},
        'ib.port_state': {'status': 'not_measured', 'why': 'probe ibstat failed: exit code 1'}}
CATALOGUE = ('gpu.count', 'gpu.topology', 'gpu.bad_pages', 'ib.port_state', 'host.swap', 'collectives.busbw_low',
             'workload.soak', 'dmon.throttle')


def _entry(findings=(), workloads=None, error=None, checks=None):
    return _report.host_entry('n1', 'error' if error else 'fail' if findings else 'pass', list(findings), {}, 'p', '/p.yml',
                              error=error, workloads=workloads, checks=NODE if checks is None else checks)


def test_one_status_per_check_findings_first_then_what_was_not_measured_or_cannot_apply():
    entry = _entry([_finding('gpu.topology'), _finding('host.swap', 'warn'), _finding('ib.port_state', 'info')])
    got = _check_status.host_checks(entry, CATALOGUE)
    assert dict((c, v['status']) for c, v in got.items()) == {
        'gpu.count': 'pass', 'gpu.topology': 'fail', 'host.swap': 'warn', 'ib.port_state': 'info',
        'gpu.bad_pages': 'not_applicable', 'collectives.busbw_low': 'not_applicable', 'workload.soak': 'not_applicable',
        'dmon.throttle': 'not_applicable'}
    assert got['collectives.busbw_low']['why'] == 'the collectives (nccl-tests) did not run on this host'
    # a host that was not probed: nothing passed
    got = _check_status.host_checks(_entry(error='unreachable: no route to host'), CATALOGUE)
    assert set(v['status'] for v in got.values()) == {'not_measured'}
    assert got['gpu.count']['why'] == 'the host was not probed: unreachable: no route to host'


def test_a_stage_asked_for_that_measured_nothing_leaves_its_checks_not_measured():
    broken = {'kind': 'not_measured', 'stage': 'collectives', 'component': None, 'not_measured': 'no nccl-tests binaries'}
    got = _check_status.host_checks(_entry([_finding('workload.not_measured')], workloads=[broken]), CATALOGUE)
    assert got['collectives.busbw_low'] == {'status': 'not_measured',
                                            'why': 'collectives was asked for and measured nothing: no nccl-tests binaries'}
    assert got['workload.soak']['status'] == 'not_applicable'


def test_the_derivation_is_its_own_fixed_point():
    """report.json keeps every check's status in ``checks``; deriving again from that entry gives the same."""
    rep = _report.build_report('r', 't0', 't1', '1', '2.19', 'validate', {'n1': _entry([_finding('gpu.topology')])}, {})
    entry = rep['hosts']['n1']
    assert entry['checks']['gpu.bad_pages'] == NODE['gpu.bad_pages']
    assert _check_status.host_checks(entry) == entry['checks']


def test_junit_markdown_html_and_prometheus_state_the_same_status():
    rep = _report.build_report('r', 't0', 't1', '1', '2.19', 'validate', {'n1': _entry([_finding('gpu.topology')])}, {})
    catalogue = dict((c, c) for c in CATALOGUE)
    suite = ET.fromstring(_report.render_junit(rep, catalogue)).find('testsuite')
    cases = dict((c.get('name'), c) for c in suite.iter('testcase'))
    assert cases['gpu.count'].find('skipped') is None and cases['gpu.topology'].find('failure') is not None
    assert cases['gpu.bad_pages'].find('skipped').get('message') == 'not applicable: an AMD check'
    assert cases['ib.port_state'].find('skipped').get('message') == 'not measured: probe ibstat failed: exit code 1'
    assert suite.get('skipped') == str(sum(1 for c in cases.values() if c.find('skipped') is not None)) == '5'
    md = _report.render_markdown(rep)
    assert '| not measured | <code>ib.port_state</code> | probe ibstat failed: exit code 1 |' in md
    assert '| not applicable | <code>gpu.bad_pages</code> | an AMD check |' in md
    html = _report.render_html(rep)
    assert '<tr><td class="not-applicable">not applicable</td><td><code>gpu.bad_pages</code></td><td>an AMD check</td></tr>' in html
    prom = _prom.render(rep)
    assert 'xuanwu_check_not_measured{host="n1",run_id="r",check="ib.port_state"} 1' in prom
    assert 'xuanwu_check_not_applicable{host="n1",run_id="r",check="gpu.bad_pages"} 1' in prom
    assert 'xuanwu_check_not_applicable{host="n1",run_id="r",check="gpu.count"}' not in prom
    count = _check_status.counts(rep['hosts']['n1']['checks'])
    assert 'xuanwu_host_checks{host="n1",run_id="r",status="pass"} %d' % count['pass'] in prom


def test_the_node_account_names_only_checks_of_the_catalogue_each_with_a_reason():
    """The node checks' account only names checks of the catalogue, with a known status and a reason."""
    for facts, profile in ((base.hgx_facts(), base.hgx_profile()), (amd_node.facts(), base.mi300x_profile())):
        run = _checks.node_run(facts, _judge.Judge(profile).profile, 'n1')
        assert set(run.scope) <= set(_checks.CHECKS)
        assert all(v['status'] in _check_status.SKIPPED and v['why'] for v in run.scope.values())
