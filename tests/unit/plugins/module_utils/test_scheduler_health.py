"""_scheduler's health before a return to service: the decision (health_findings) on what real and derived outputs
say (tests/fixtures/scheduler/README.md), the actions daemon and health against fake commands, and the judge's site
overrides on the findings. The parsers' cases are in cases/scheduler.yaml."""
import json
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue, _judge, _scheduler as s, _workloads

RUN = '2026-12-01.r1'
FIXTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'scheduler'))
ACTIVE = {'unit': 'slurmd', 'source': 'systemd', 'state': 'active', 'active': True, 'detail': 'systemctl is-active slurmd: active (exit code 0)'}
DEAD = {'unit': 'slurmd', 'source': 'systemd', 'state': 'inactive', 'active': False,
        'detail': 'systemctl is-active slurmd: inactive (exit code 3)'}
KUBELET = dict(ACTIVE, unit='kubelet', detail='systemctl is-active kubelet: active (exit code 0)')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def slurm(controller='derived-scontrol-idle-drain-ours-oneliner.txt', view='derived-slurmd-C-med0304.txt', daemon=None, **kw):
    health = {'backend': 'slurm', 'node': 'med0304', 'run_id': RUN, 'daemon': dict(ACTIVE) if daemon is None else daemon,
              'controller': s.parse_scontrol_node(fixture(controller)), 'node_view': s.parse_slurmd_config(fixture(view)) if view else None,
              'hostname': 'med0304', 'gpus': 4, 'gpu_vendor': 'nvidia', 'errors': []}
    health.update(kw)
    return health


def kube(node='derived-kubectl-node-gpu-node05.json', daemon=None, **kw):
    daemon = dict(KUBELET) if daemon is None else daemon
    text = fixture(node)
    controller = s.parse_kube_nodes(text)[3] if node == 'derived-kubectl-nodes.json' else s.parse_kube_node(text)
    health = {'backend': 'kubernetes', 'node': controller['name'], 'run_id': RUN, 'daemon': daemon, 'controller': controller,
              'node_view': None, 'hostname': controller['name'], 'gpus': 8, 'gpu_vendor': 'nvidia', 'errors': []}
    health.update(kw)
    return health


def checks(health):
    return [(f['check'], f['component']) for f in s.health_findings(health, 'h1')]


# ------------------------------------------------------------------------------------------------ slurm

def test_a_healthy_slurm_node_drained_by_this_run_may_return():
    assert s.health_findings(slurm(), 'h1') == []


def test_a_dead_slurmd_keeps_the_node_out():
    found = s.health_findings(slurm(daemon=DEAD), 'h1')
    assert [(f['check'], f['component'], f['severity']) for f in found] == [('scheduler.daemon_down', 'slurmd', 'fail')]
    assert found[0]['host'] == 'h1' and found[0]['measured'] == 'systemctl is-active slurmd: inactive (exit code 3)'
    assert 'slurmd is not running on the node' in found[0]['message']


def test_a_daemon_found_as_a_process_only_where_systemd_does_not_answer():
    gone = {'unit': 'slurmd', 'source': 'process', 'state': 'not running', 'active': False, 'detail': 'no slurmd process is running'}
    assert checks(slurm(daemon=gone)) == [('scheduler.daemon_down', 'slurmd')]
    assert s.health_findings(slurm(daemon=gone), 'h1')[0]['expected'] == 'running'
    assert checks(slurm(daemon=dict(gone, state='running', active=True))) == []


def test_down_not_responding_is_no_state_to_return_from():
    found = s.health_findings(slurm(controller='derived-scontrol-down-not-responding-oneliner.txt'), 'h1')
    assert [(f['check'], f['measured']) for f in found] == [('scheduler.node_state', 'DOWN+NOT_RESPONDING')]
    assert 'DOWN, NOT_RESPONDING' in found[0]['message'] and 'reason "Not responding"' in found[0]['message']


@pytest.mark.parametrize('state', ['IDLE+DRAIN*', 'down*', 'DOWN+DRAIN+NOT_RESPONDING', 'IDLE+DRAIN+FAIL', 'FUTURE'])
def test_other_states_a_resume_would_not_clear(state):
    health = slurm()
    health['controller'] = dict(health['controller'], state=state)
    assert ('scheduler.node_state', 'med0304') in checks(health)


def test_invalid_registration_after_our_drain_keeps_the_node_out():
    found = s.health_findings(slurm(controller='derived-scontrol-idle-drain-invalid-reg-oneliner.txt'), 'h1')
    assert [(f['check'], f['measured']) for f in found] == [('scheduler.node_state', 'IDLE+DRAIN+INVALID_REG')]
    assert '(INVALID_REG)' in found[0]['message']


def test_less_memory_than_slurm_conf_is_a_view_mismatch():
    found = s.health_findings(slurm(view='derived-slurmd-C-med0304-low-memory.txt'), 'h1')
    assert [(f['check'], f['component'], f['measured'], f['expected']) for f in found] == [
        ('scheduler.view_mismatch', 'slurmd RealMemory', 257343, '>= 385215')]
    assert 'INVALID_REG' in found[0]['message']


def test_fewer_cpus_or_gpus_than_slurm_conf_is_a_view_mismatch():
    health = slurm(gpus=3)
    health['node_view'] = dict(health['node_view'], cpus=32)
    assert checks(health) == [('scheduler.view_mismatch', 'slurmd CPUs'), ('scheduler.view_mismatch', 'slurmd Gres gpu')]
    # slurmd -C's own Gres (AutoDetect) is taken before the probe's count
    health = slurm(gpus=8)
    health['node_view'] = dict(health['node_view'], gres='gpu:tesla:2', gpus=2)
    found = s.health_findings(health, 'h1')
    assert [(f['component'], f['measured']) for f in found] == [('slurmd Gres gpu', 2)]
    assert found[0]['message'].startswith('slurmd -C (Gres=gpu:tesla:2) sees 2 GPU(s)')
    # more than configured is no mismatch; an unknown count is not compared
    assert checks(slurm(gpus=8)) == [] and checks(slurm(gpus=None)) == []


def test_a_host_whose_slurmd_is_another_node_is_a_view_mismatch():
    found = s.health_findings(slurm(view='slurmd-C-gpu-autodetect.txt'), 'h1')
    assert ('scheduler.view_mismatch', 'slurmd NodeName') in [(f['check'], f['component']) for f in found]
    assert 'says NodeName=las3' in found[0]['message']
    # a fully qualified host name of the same node matches
    health = slurm()
    health['node_view'] = dict(health['node_view'], name='MED0304.cluster.example')
    assert checks(health) == []


def test_a_drain_of_someone_else_is_not_lifted():
    found = s.health_findings(slurm(controller='scontrol-mixed-drain.txt'), 'h1')
    assert [f['check'] for f in found] == ['scheduler.node_state']
    assert 'someone else (reason "deep power-off required for PSU")' in found[0]['message']


def test_what_could_not_be_read_is_not_measured_never_a_pass():
    found = s.health_findings(slurm(daemon=None, controller='derived-scontrol-idle-drain-ours-oneliner.txt',
                                    errors=['slurmd -C on the node: slurmd not found']), 'h1')
    assert [(f['check'], f['severity']) for f in found] == [('scheduler.not_measured', 'fail')]
    assert s.health_findings({'backend': 'slurm', 'errors': ['scontrol failed']}, 'h1')[0]['check'] == 'scheduler.not_measured'
    # no health at all from the module: the evaluator says so
    found = _workloads.evaluate('scheduler', {'msg': 'scheduler_node: boom'}, {}, 'h1')
    assert [f['check'] for f in found] == ['scheduler.not_measured'] and 'boom' in found[0]['message']


# ------------------------------------------------------------------------------------------- kubernetes

def test_a_healthy_kubernetes_gpu_node_may_return():
    assert s.health_findings(kube(), 'h1') == []


def test_an_inactive_kubelet_keeps_the_node_out():
    found = s.health_findings(kube(daemon=dict(KUBELET, state='inactive', active=False,
                                               detail='systemctl is-active kubelet: inactive (exit code 3)')), 'h1')
    assert [(f['check'], f['component']) for f in found] == [('scheduler.daemon_down', 'kubelet')]


def test_a_node_not_ready_keeps_the_node_out():
    found = s.health_findings(kube(node='derived-kubectl-nodes.json', gpus=None), 'h1')
    assert [(f['check'], f['measured']) for f in found] == [('scheduler.node_state', 'Ready=Unknown')]
    assert 'is not Ready (Unknown)' in found[0]['message']
    health = kube()
    health['controller'] = dict(health['controller'], ready=False, ready_status='False')
    assert [(f['check'], f['measured']) for f in s.health_findings(health, 'h1')] == [('scheduler.node_state', 'Ready=False')]


@pytest.mark.parametrize('gpus, vendor, measured', [(7, 'nvidia', 8), (4, 'amd', 0)])
def test_allocatable_gpus_other_than_the_probe_saw(gpus, vendor, measured):
    found = s.health_findings(kube(gpus=gpus, gpu_vendor=vendor), 'h1')
    resource = 'amd.com/gpu' if vendor == 'amd' else 'nvidia.com/gpu'
    assert [(f['check'], f['component'], f['measured'], f['expected']) for f in found] == [
        ('scheduler.view_mismatch', resource, measured, gpus)]


def test_a_kubelet_registered_by_another_host_is_a_view_mismatch():
    found = s.health_findings(kube(hostname='gpu-node06'), 'h1')
    assert [(f['check'], f['component']) for f in found] == [('scheduler.view_mismatch', 'kubelet node name')]


def test_a_cordon_of_someone_else_is_not_lifted():
    found = s.health_findings(kube(node='derived-kubectl-node-gpu-node03.json', gpus=None), 'h1')
    assert ('scheduler.node_state', 'gpu-node03') in [(f['check'], f['component']) for f in found]


# ------------------------------------------------------------------------------ the actions, faked

class FakeNode(object):
    """systemctl, slurmd and scontrol of one node; every call is recorded with whether it would change anything."""

    def __init__(self, unit='active\n', unit_rc=0, slurmd_c=None, slurmd_rc=0, show=None):
        self.unit, self.unit_rc = unit, unit_rc
        self.slurmd_c = fixture('derived-slurmd-C-med0304.txt') if slurmd_c is None else slurmd_c
        self.slurmd_rc = slurmd_rc
        self.show = fixture('derived-scontrol-idle-drain-ours-oneliner.txt') if show is None else show
        self.calls = []

    def __call__(self, argv, mutating):
        self.calls.append((argv, mutating))
        if argv[1] == 'is-active':
            return self.unit_rc, self.unit, ''
        if argv[1] == '-C':
            return self.slurmd_rc, self.slurmd_c, '' if self.slurmd_rc == 0 else 'slurmd: fatal: bad config\n'
        if argv[1:3] == ['--oneliner', 'show']:
            return (0, self.show, '') if self.show else (1, '', 'slurm_load_node error: Unable to contact slurm controller\n')
        raise AssertionError(argv)


def params(action, **kw):
    out = dict(backend='slurm', action=action, run_id=RUN, reason='rollout', node='med0304', nodes=[], drain_timeout=60,
               poll_interval=10, max_drain_share=0.25, scontrol='scontrol', sinfo='sinfo', kubectl='kubectl', kubeconfig='',
               systemctl='systemctl', slurmd='slurmd', daemon_unit='', daemon=None, gpus=4, gpu_vendor=None)
    out.update(kw)
    return out


def local(running=(), missing=None):
    return {'processes': lambda: set(running), 'hostname': lambda: 'med0304', 'missing': missing or {}}


def test_daemon_reads_systemd_and_slurmd_on_the_node():
    fake = FakeNode(unit='inactive\n', unit_rc=3)
    result = s.run_action(params('daemon', run_id=None), fake, None, None, True, local())
    assert result['daemon'] == DEAD and result['hostname'] == 'med0304' and result['node_view_error'] is None
    assert result['node_view']['real_memory'] == 385215 and result['changed'] is False
    assert [c[0] for c in fake.calls] == [['systemctl', 'is-active', 'slurmd'], ['slurmd', '-C']]
    assert not [c for c in fake.calls if c[1]], 'the daemon action changes nothing'


def test_daemon_looks_for_the_process_where_systemd_does_not_answer():
    fake = FakeNode(unit='', unit_rc=1)
    result = s.run_action(params('daemon'), fake, None, None, False, local(running={'slurmd', 'munged'}))
    assert (result['daemon']['source'], result['daemon']['state'], result['daemon']['active']) == ('process', 'running', True)
    assert result['daemon']['detail'].startswith('systemctl is-active slurmd answered no unit state (exit code 1')
    # no systemctl at all, no process
    result = s.run_action(params('daemon', systemctl=None), FakeNode(), None, None, False, local())
    assert (result['daemon']['source'], result['daemon']['active']) == ('process', False)


def test_daemon_says_what_it_could_not_read():
    result = s.run_action(params('daemon', slurmd=None), FakeNode(), None, None, False,
                          local(missing={'slurmd': 'scheduler_slurmd: slurmd not found on PATH of this host'}))
    assert result['node_view'] is None and 'slurmd not found' in result['node_view_error']
    result = s.run_action(params('daemon'), FakeNode(slurmd_rc=1, slurmd_c=''), None, None, False, local())
    assert result['node_view_error'].startswith('slurmd -C failed (exit code 1): slurmd: fatal: bad config')


def judged(result):
    """The module's answer to health with what the action plugin adds on the controller (_scheduler.health_result)."""
    assert 'findings' not in result and 'healthy' not in result, 'the node judges nothing'
    return dict(result, **s.health_result(result))


def test_health_judges_what_the_node_and_the_controller_say():
    node = s.run_action(params('daemon'), FakeNode(unit='failed\n', unit_rc=3), None, None, False, local())
    fake = FakeNode()
    result = judged(s.run_action(params('health', daemon=json.loads(json.dumps(node))), fake, None, None, True, local()))
    assert result['healthy'] is False and [f['check'] for f in result['findings']] == ['scheduler.daemon_down']
    assert result['message'].startswith('node med0304 is not fit to return to service: slurmd is not running')
    assert result['health']['controller']['state'] == 'IDLE+DRAIN' and result['changed'] is False
    assert fake.calls == [(['scontrol', '--oneliner', 'show', 'node', 'med0304'], False)]
    healthy = s.run_action(params('daemon'), FakeNode(), None, None, False, local())
    result = judged(s.run_action(params('health', daemon=healthy), FakeNode(), None, None, False, local()))
    assert result['healthy'] is True and result['findings'] == []
    assert result['message'] == ('node med0304: slurmd active, IDLE+DRAIN in the controller, its own view matches: fit to return '
                                 'to service')


def test_health_never_fails_for_what_it_cannot_read():
    result = judged(s.run_action(params('health', daemon={'failed': True, 'msg': 'unreachable'}), FakeNode(show=''), None, None,
                                 False, local()))
    assert result['healthy'] is False
    assert [f['check'] for f in result['findings']] == ['scheduler.not_measured', 'scheduler.not_measured']
    assert 'unreachable' in result['findings'][0]['message'] and 'Unable to contact slurm controller' in result['findings'][1]['message']


def test_health_needs_the_run_id():
    with pytest.raises(s.SchedulerError, match='scheduler_run_id is required for health'):
        s.run_action(params('health', run_id=None), FakeNode(), None, None, False, local())


# ------------------------------------------------------------------------------------------------- judge

def test_the_checks_are_in_the_catalogue_and_the_judge_applies_the_sites_overrides():
    assert set(s.CHECKS) <= set(_catalogue.CATALOGUE)
    run = {'health': slurm(daemon=DEAD, view='derived-slurmd-C-med0304-low-memory.txt')}
    judge = _judge.Judge({'schema_version': 1, 'name': 'p', 'checks': {'severity': {'scheduler.view_mismatch': 'warn'}}})
    assert [(f['check'], f['severity']) for f in judge.workload('scheduler', run, 'h1')] == [
        ('scheduler.daemon_down', 'fail'), ('scheduler.view_mismatch', 'warn')]
    summary = _workloads.summarise_run('scheduler', dict(run, node='med0304'))
    assert summary['component'] == 'med0304' and summary['scheduler'] == {
        'backend': 'slurm', 'daemon': 'slurmd inactive (systemd)', 'state': 'IDLE+DRAIN',
        'reason': 'xuanwu 2026-12-01.r1: failed checks: gpu.count, nvlink.links_down', 'node_view': 'CPUs=64 RealMemory=257343',
        'errors': 0}
