"""_scheduler: command lines, reasons, the ownership decisions and whole actions against fake schedulers
(no cluster needed). The parsers' cases are in cases/scheduler.yaml."""
import json

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _scheduler as s

RUN = '2026-12-01.r1'


# ------------------------------------------------------------------------------------------ commands

@pytest.mark.parametrize('argv, expected', [
    (s.scontrol_show('scontrol', 'gpu1'), ['scontrol', '--oneliner', 'show', 'node', 'gpu1']),
    (s.scontrol_drain('/usr/bin/scontrol', 'gpu1', 'xuanwu r1: failed checks: gpu.count'),
     ['/usr/bin/scontrol', 'update', 'nodename=gpu1', 'state=drain', 'reason=xuanwu r1: failed checks: gpu.count']),
    (s.scontrol_resume('scontrol', 'gpu1'), ['scontrol', 'update', 'nodename=gpu1', 'state=resume']),
    (s.sinfo_nodes('sinfo'), ['sinfo', '-h', '-N', '-o', '%N|%P|%T']),
    (s.kubectl_get_node('kubectl', '', 'n1'), ['kubectl', 'get', 'node', 'n1', '-o', 'json']),
    (s.kubectl_get_nodes('kubectl', '/etc/k.conf'), ['kubectl', '--kubeconfig', '/etc/k.conf', 'get', 'nodes', '-o', 'json']),
    (s.kubectl_annotate('kubectl', '', 'n1', 'r1', 'xuanwu r1: rollout'),
     ['kubectl', 'annotate', '--overwrite', 'node', 'n1', 'xuanwu.io/drained-by=r1', 'xuanwu.io/drain-reason=xuanwu r1: rollout']),
    (s.kubectl_unannotate('kubectl', '', 'n1'), ['kubectl', 'annotate', 'node', 'n1', 'xuanwu.io/drained-by-', 'xuanwu.io/drain-reason-']),
    (s.kubectl_drain('kubectl', '', 'n1', 600),
     ['kubectl', 'drain', 'n1', '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=600s']),
    (s.kubectl_drain('kubectl', '', 'n1', 0), ['kubectl', 'cordon', 'n1']),
    (s.kubectl_uncordon('kubectl', 'k', 'n1'), ['kubectl', '--kubeconfig', 'k', 'uncordon', 'n1']),
    (s.kubectl_pods_on('kubectl', '', 'n1'),
     ['kubectl', 'get', 'pods', '--all-namespaces', '--field-selector', 'spec.nodeName=n1', '-o', 'json']),
])
def test_command_lines(argv, expected):
    assert argv == expected


# ------------------------------------------------------------------------------------------- reasons

@pytest.mark.parametrize('reason, owner', [
    ('xuanwu %s: rollout' % RUN, 'ours'),
    ('xuanwu %s' % RUN, 'ours'),
    ('xuanwu %s: failed checks: gpu.count' % RUN, 'ours'),
    ('xuanwu %s0: rollout' % RUN, 'xuanwu'),          # another run id that starts with ours
    ('xuanwu other-run: rollout', 'xuanwu'),
    ('xuanwu%s: rollout' % RUN, 'other'),
    ('Kill task failed', 'other'),
    ('replace PSU xuanwu %s: x' % RUN, 'other'),
    ('', None),
    (None, None),
])
def test_reason_owner(reason, owner):
    assert s.reason_owner(reason, RUN) == owner


def test_our_reason_is_one_line_and_names_the_run():
    assert s.our_reason(RUN, 'failed checks:\n gpu.count,  nvlink') == 'xuanwu %s: failed checks: gpu.count, nvlink' % RUN
    assert s.our_reason(RUN, '') == 'xuanwu %s: rollout' % RUN


@pytest.mark.parametrize('text', ['x' * 1000, u'\u68c0\u67e5\u5931\u8d25 ' * 100, 'failed checks: ' + ', '.join(['gpu.count'] * 60)])
def test_a_long_reason_is_cut_to_slurms_255_bytes_keeping_the_owner(text):
    reason = s.our_reason(RUN, text)
    assert len(reason.encode('utf-8')) <= s.SLURM_REASON_MAX_BYTES
    assert reason.endswith('...')
    assert s.reason_owner(reason, RUN) == 'ours'


@pytest.mark.parametrize('state, condition', [
    ('IDLE', 'available'), ('MIXED', 'available'), ('ALLOCATED', 'available'), ('IDLE+POWERED_DOWN', 'available'),
    ('idle~', 'available'), ('mixed-', 'available'), ('IDLE+RESERVED', 'available'), ('maint', 'available'),
    ('IDLE+DRAIN', 'drained'), ('DOWN+DRAIN', 'drained'), ('drained', 'drained'), ('drained*', 'drained'),
    ('MIXED+DRAIN', 'draining'), ('ALLOCATED+DRAIN', 'draining'), ('IDLE+DRAIN+COMPLETING', 'draining'),
    ('draining', 'draining'), ('MIXED+DRAIN+REBOOT_REQUESTED', 'draining'), ('failing', 'draining'), ('fail', 'drained'),
    ('DOWN', 'down'), ('DOWN+NOT_RESPONDING', 'down'), ('down*', 'down'), ('idle*', 'down'), ('IDLE+NOT_RESPONDING', 'down'),
    ('FUTURE', 'down'), ('unknown', 'down'), ('inval', 'down'), ('reboot^', 'down'), ('REBOOT_ISSUED', 'down'),
])
def test_slurm_condition(state, condition):
    assert s.slurm_condition(state) == condition


# ----------------------------------------------------------------------------------------- decisions

DECISIONS = [
    # action, condition, reason, step, owned
    ('drain', 'available', '', 'drain', True),
    ('drain', 'drained', 'xuanwu %s: rollout' % RUN, 'none', True),
    ('drain', 'draining', 'xuanwu %s: rollout' % RUN, 'wait', True),
    ('drain', 'drained', 'Kill task failed', 'none', False),
    ('drain', 'draining', 'deep power-off required for PSU', 'none', False),
    ('drain', 'down', 'Not responding', 'none', False),
    ('drain', 'drained', 'xuanwu older-run: failed checks: gpu.count', 'none', False),
    ('drain', 'drained', '', 'none', False),
    # the node's health check drained it between runs: the rollout takes it over and revalidates it; while its jobs
    # still run (draining) it is left alone
    ('drain', 'drained', 'xuanwu-health: gpu.xid_fatal gpu3: Xid 79 x1 (expected no Xid 79)', 'relabel', True),
    ('drain', 'drained', 'xuanwu-health epilog: gpu.process gpu0: pid 4 x (expected no process)', 'relabel', True),
    ('drain', 'draining', 'xuanwu-health: gpu.count gpu: 7 (expected 8)', 'none', False),
    ('resume', 'drained', 'xuanwu-health: gpu.count gpu: 7 (expected 8)', 'none', False),
    ('fail', 'drained', 'xuanwu-health: gpu.count gpu: 7 (expected 8)', 'none', False),
    ('drain', 'drained', 'xuanwu-healthy: admin note', 'none', False),
    ('resume', 'drained', 'xuanwu %s: rollout' % RUN, 'resume', True),
    ('resume', 'draining', 'xuanwu %s: rollout' % RUN, 'resume', True),
    ('resume', 'drained', 'Kill task failed', 'none', False),
    ('resume', 'drained', 'xuanwu older-run: rollout', 'none', False),
    ('resume', 'available', '', 'none', False),
    ('fail', 'drained', 'xuanwu %s: rollout' % RUN, 'relabel', True),
    ('fail', 'draining', 'xuanwu %s: rollout' % RUN, 'relabel', True),
    ('fail', 'drained', 'bad dimm', 'none', False),
    ('fail', 'available', '', 'none', False),
    ('fail', 'down', 'Not responding', 'none', False),
]


@pytest.mark.parametrize('action, condition, reason, step, owned', DECISIONS)
def test_decide(action, condition, reason, step, owned):
    got_step, got_owned, why = s.decide(action, condition, reason, RUN)
    assert (got_step, got_owned) == (step, owned), why
    if not owned and reason:
        assert reason in why        # the message says whose drain it is


# --------------------------------------------------------------------------------------------- plan

ROWS = [dict(node='n%d' % i, partition='gpu', unavailable=i in (1,)) for i in range(1, 11)] + \
    [dict(node='n%d' % i, partition='debug', unavailable=False) for i in (2, 3, 11, 12)]


@pytest.mark.parametrize('nodes, share, ok, words', [
    (['n2'], 0.25, True, ['gpu 2/10']),
    (['n2', 'n3'], 0.25, False, ['partition debug: 2 of 4 nodes would be unavailable']),
    (['n4'], 0.25, True, ['gpu 2/10']),
    (['n4', 'n5'], 0.3, True, ['gpu 3/10']),
    (['n4', 'n5', 'n6'], 0.25, False, ['partition gpu: 4 of 10 nodes would be unavailable (1 already drained or down, 3 in this batch)',
                                       'more than scheduler_max_drain_share 0.25 (2 nodes)']),
    (['n1'], 0.1, True, ['gpu 1/10']),            # already unavailable: counted once
    (['n4'], 0.1, False, ['partition gpu: 2 of 10']),
    (['n4', 'n99'], 1.0, False, ['node not listed by the scheduler: n99']),
])
def test_plan(nodes, share, ok, words):
    got, message, parts = s.plan_batch(nodes, ROWS, share)
    assert got is ok, message
    for word in words:
        assert word in message


# ------------------------------------------------------------------------------ actions, fake Slurm


class FakeSlurm(object):
    """scontrol/sinfo on a dict of nodes; a drained node with jobs stays MIXED+DRAIN for ``polls`` reads."""

    def __init__(self, **nodes):
        self.nodes = dict((k, dict(v)) for k, v in nodes.items())
        self.calls = []

    def __call__(self, argv, mutating):
        self.calls.append((argv, mutating))
        if argv[1:3] == ['--oneliner', 'show']:
            node = self.nodes.get(argv[-1])
            if node is None:
                return 1, '', 'Node %s not found\n' % argv[-1]
            if 'DRAIN' in node['state'] and node.get('polls') is not None:
                if node['polls'] <= 0:
                    node['state'] = 'IDLE+DRAIN'
                node['polls'] -= 1
            reason = ' Reason=%s [root@2026-12-01T01:00:00]' % node['reason'] if node.get('reason') else ''
            return 0, 'NodeName=%s CPUAlloc=0 State=%s Partitions=gpu%s\n' % (argv[-1], node['state'], reason), ''
        if argv[1] == 'update':
            name = argv[2].split('=', 1)[1]
            node = self.nodes[name]
            if argv[3] == 'state=drain':
                base = node['state'].split('+')[0]
                node['state'] = base + '+DRAIN'
                node['reason'] = argv[4].split('=', 1)[1]
            else:
                node['state'] = node['state'].split('+')[0]
                node['reason'] = ''
            return 0, '', ''
        if argv[0] == 'sinfo':
            return 0, ''.join('%s|gpu|%s\n' % (n, 'drained' if 'DRAIN' in v['state'] else 'idle') for n, v in self.nodes.items()), ''
        raise AssertionError(argv)


class Clock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def params(action, **kw):
    out = dict(backend='slurm', action=action, run_id=RUN, reason='rollout', node='n1', nodes=[], drain_timeout=60,
               poll_interval=10, max_drain_share=0.25, scontrol='scontrol', sinfo='sinfo', kubectl='kubectl', kubeconfig='')
    out.update(kw)
    return out


def act(fake, action, check_mode=False, **kw):
    clock = Clock()
    return s.run_action(params(action, **kw), fake, clock.sleep, clock, check_mode)


def mutations(fake):
    return [argv for argv, mutating in fake.calls if mutating]


def test_slurm_drain_waits_until_drained_then_resume_returns_it():
    fake = FakeSlurm(n1={'state': 'MIXED', 'reason': '', 'polls': 2})
    result = act(fake, 'drain')
    assert (result['owned'], result['changed'], result['drained'], result['timed_out']) == (True, True, True, False)
    assert result['before'] == {'state': 'available', 'reason': '', 'detail': 'MIXED'}
    assert result['after']['state'] == 'drained' and result['after']['reason'] == 'xuanwu %s: rollout' % RUN
    assert result['jobs_running'] == 0
    assert result['commands'] == ['scontrol update nodename=n1 state=drain reason=xuanwu %s: rollout' % RUN]
    result = act(fake, 'resume')
    assert (result['owned'], result['changed'], result['after']['state']) == (True, True, 'available')
    assert (fake.nodes['n1']['state'], fake.nodes['n1']['reason']) == ('IDLE', '')


def test_slurm_drain_times_out_while_jobs_run():
    fake = FakeSlurm(n1={'state': 'ALLOCATED', 'reason': '', 'polls': 1000})
    result = act(fake, 'drain', drain_timeout=30, poll_interval=10)
    assert (result['timed_out'], result['drained'], result['owned'], result['jobs_running']) == (True, False, True, None)
    assert result['after']['state'] == 'draining'
    assert 'timed out after 30s' in result['message'] and 'still running' in result['message']
    reads = [argv for argv, mutating in fake.calls if not mutating]
    assert len(reads) == 1 + 1 + 3        # before, after the update, one per poll (30 s / 10 s)


def test_slurm_someone_elses_drain_is_left_alone_by_drain_fail_and_resume():
    fake = FakeSlurm(n1={'state': 'IDLE+DRAIN', 'reason': 'bad dimm'})
    for action in ('drain', 'fail', 'resume'):
        result = act(fake, action, reason='failed checks: gpu.count')
        assert (result['owned'], result['changed'], result['commands']) == (False, False, []), action
        assert 'someone else (reason "bad dimm")' in result['message']
    assert mutations(fake) == []
    assert fake.nodes['n1'] == {'state': 'IDLE+DRAIN', 'reason': 'bad dimm'}


def test_slurm_fail_replaces_our_reason_and_keeps_the_node_drained():
    fake = FakeSlurm(n1={'state': 'IDLE+DRAIN', 'reason': 'xuanwu %s: rollout' % RUN})
    result = act(fake, 'fail', reason='failed checks: gpu.count, nvlink.links_down')
    assert (result['owned'], result['changed'], result['drained']) == (True, True, True)
    assert fake.nodes['n1']['reason'] == 'xuanwu %s: failed checks: gpu.count, nvlink.links_down' % RUN
    again = act(fake, 'fail', reason='failed checks: gpu.count, nvlink.links_down')
    assert (again['changed'], again['commands']) == (False, [])


def test_slurm_a_resumed_run_owns_its_drain():
    fake = FakeSlurm(n1={'state': 'IDLE+DRAIN', 'reason': 'xuanwu %s: rollout' % RUN})
    result = act(fake, 'drain')
    assert (result['owned'], result['changed'], result['drained']) == (True, False, True)
    assert mutations(fake) == []


def test_check_mode_runs_nothing_that_changes_and_lists_what_it_would():
    fake = FakeSlurm(n1={'state': 'IDLE', 'reason': ''})
    result = act(fake, 'drain', check_mode=True)
    assert mutations(fake) == []
    assert result['changed'] is True
    assert result['commands'] == ['scontrol update nodename=n1 state=drain reason=xuanwu %s: rollout' % RUN]
    assert result['after'] == {'state': 'drained', 'reason': 'xuanwu %s: rollout' % RUN, 'detail': None}
    assert fake.nodes['n1'] == {'state': 'IDLE', 'reason': ''}


@pytest.mark.parametrize('change, message', [
    (dict(backend='lsf'), "scheduler_backend 'lsf' is not one of none, slurm, kubernetes"),
    (dict(action='cordon'), "scheduler_action 'cordon' is not one of drain, resume, fail, plan"),
    (dict(run_id=None), 'scheduler_run_id is required for drain'),
    (dict(run_id=''), 'scheduler_run_id is required for drain'),
    (dict(run_id='run 1'), "scheduler_run_id 'run 1' is not a run id"),
    (dict(run_id='r1:x'), "scheduler_run_id 'r1:x' is not a run id"),
    (dict(node='n1; reboot'), "scheduler_node_name 'n1; reboot' is not a node name"),
    (dict(node='-n1'), "scheduler_node_name '-n1' is not a node name"),
    (dict(max_drain_share=1.5), 'scheduler_max_drain_share must be a number from 0 to 1, found 1.5'),
    (dict(poll_interval=0), 'scheduler_poll_interval must be a whole number of seconds (1 or more), found 0'),
    (dict(node='n9'), 'node n9 is not known to Slurm (scontrol --oneliner show node n9: Node n9 not found)'),
    (dict(action='plan', nodes=[]), 'scheduler_nodes is empty'),
])
def test_bad_input_is_a_clear_error(change, message):
    with pytest.raises(s.SchedulerError) as err:
        act(FakeSlurm(n1={'state': 'IDLE', 'reason': ''}), change.pop('action', 'drain'), **change)
    assert message in str(err.value)


def test_none_backend_changes_nothing_and_says_so():
    result = act(FakeSlurm(), 'drain', backend='none', run_id=None)
    assert result['message'] == 'no scheduler (scheduler_backend none): nothing to drain'
    # owned: no scheduler holds the node for someone else, so the rollout provisions and validates it
    assert (result['changed'], result['owned'], result['commands']) == (False, True, [])


def test_a_rollout_without_a_scheduler_changes_and_judges_every_node():
    """scheduler_backend none: each node is the rollout's to change (it was recorded as someone else's drain, and a
    site.yml run provisioned and validated nothing yet said passed)."""
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _rollout
    drain = act(FakeSlurm(), 'drain', backend='none', run_id='CHG-1')
    assert drain['owned'] is True and _rollout.drained(drain) is True
    state = {'drain': drain, 'check_mode': False}
    report = {'gate_hosts': ['n1'], 'failed_checks': {'n1': ['gpu.count']}, 'verdicts': {'n1': 'fail'}}
    assert _rollout.outcome('n1', state, report) == {'outcome': 'failed', 'failed_checks': ['gpu.count'], 'reasons': ['fail']}


def test_slurm_plan_reads_sinfo_once_and_refuses_over_the_share():
    fake = FakeSlurm(**dict(('n%d' % i, {'state': 'IDLE+DRAIN' if i == 1 else 'IDLE', 'reason': 'x'}) for i in range(1, 9)))
    ok = act(fake, 'plan', nodes=['n2'])
    assert ok['failed'] is False and ok['partitions'][0]['unavailable_after'] == 2
    refused = act(fake, 'plan', nodes=['n2', 'n3'])
    assert refused['failed'] is True
    assert 'partition gpu: 3 of 8 nodes would be unavailable (1 already drained or down, 2 in this batch)' in refused['message']
    assert [argv[0] for argv, _m in fake.calls] == ['sinfo', 'sinfo']


# ------------------------------------------------------------------------- actions, fake Kubernetes


class FakeKube(object):
    def __init__(self, cordoned=False, annotations=None, pods=0, drain_error=None):
        self.cordoned, self.annotations, self.pods, self.drain_error = cordoned, dict(annotations or {}), pods, drain_error
        self.calls = []

    def node(self):
        return {'kind': 'Node', 'metadata': {'name': 'n1', 'annotations': self.annotations},
                'spec': {'unschedulable': True} if self.cordoned else {},
                'status': {'conditions': [{'type': 'Ready', 'status': 'True'}]}}

    def __call__(self, argv, mutating):
        self.calls.append((argv, mutating))
        verb = argv[1]
        if verb == 'get' and argv[2] == 'node':
            return 0, json.dumps(self.node()), ''
        if verb == 'get' and argv[2] == 'nodes':
            return 0, json.dumps({'kind': 'List', 'items': [self.node()]}), ''
        if verb == 'get' and argv[2] == 'pods':
            items = [{'metadata': {'name': 'p%d' % i}, 'status': {'phase': 'Running'}} for i in range(self.pods)]
            return 0, json.dumps({'kind': 'List', 'items': items}), ''
        if verb == 'annotate':
            for item in argv[4:] if argv[2] == '--overwrite' else argv[3:]:
                if item.endswith('-') and '=' not in item:
                    self.annotations.pop(item[:-1], None)
                elif '=' in item:
                    key, value = item.split('=', 1)
                    self.annotations[key] = value
            return 0, '', ''
        if verb in ('drain', 'cordon'):
            self.cordoned = True
            if self.drain_error:
                return 1, '', self.drain_error
            self.pods = 0
            return 0, '', ''
        if verb == 'uncordon':
            self.cordoned = False
            return 0, '', ''
        raise AssertionError(argv)


def kube(fake, action, check_mode=False, **kw):
    return act(fake, action, check_mode, backend='kubernetes', **kw)


def test_kubernetes_drain_annotates_then_drains_and_resume_undoes_both():
    fake = FakeKube(pods=3)
    result = kube(fake, 'drain')
    assert [argv[1] for argv in mutations(fake)] == ['annotate', 'drain']
    assert (result['owned'], result['drained'], result['jobs_running'], result['timed_out']) == (True, True, 0, False)
    assert fake.annotations == {'xuanwu.io/drained-by': RUN, 'xuanwu.io/drain-reason': 'xuanwu %s: rollout' % RUN}
    result = kube(fake, 'resume')
    assert (result['owned'], result['changed'], fake.cordoned, fake.annotations) == (True, True, False, {})


def test_kubernetes_someone_elses_cordon_is_left_alone():
    fake = FakeKube(cordoned=True)
    for action in ('drain', 'fail', 'resume'):
        result = kube(fake, action)
        assert (result['owned'], result['changed']) == (False, False), action
        assert 'someone else (no reason given)' in result['message']
    assert mutations(fake) == [] and fake.cordoned


def test_kubernetes_ownership_is_the_drained_by_annotation():
    fake = FakeKube(cordoned=True, annotations={'xuanwu.io/drained-by': 'other-run', 'xuanwu.io/drain-reason': 'xuanwu %s: x' % RUN})
    result = kube(fake, 'resume')
    assert (result['owned'], result['changed'], result['before']['reason']) == (False, False, 'xuanwu other-run')
    assert 'another xuanwu run' in result['message'] and fake.cordoned


def test_kubernetes_drain_timeout_leaves_it_cordoned_and_counts_the_pods():
    error = ('error: unable to drain node "n1" due to error: [error when evicting pods/"p0" -n "default": '
             'global timeout reached: 60s], continuing command...')
    fake = FakeKube(pods=2, drain_error=error)
    result = kube(fake, 'drain')
    assert (result['timed_out'], result['drained'], result['jobs_running']) == (True, False, 2)
    assert result['after']['state'] == 'draining'
    assert 'global timeout reached' in result['message']


def test_kubernetes_other_drain_errors_fail():
    fake = FakeKube(drain_error='Error from server (Forbidden): nodes "n1" is forbidden')
    with pytest.raises(s.SchedulerError) as err:
        kube(fake, 'drain')
    assert 'Forbidden' in str(err.value)


def test_kubernetes_check_mode_runs_only_reads():
    fake = FakeKube()
    result = kube(fake, 'drain', check_mode=True)
    assert mutations(fake) == [] and not fake.cordoned
    assert result['changed'] is True and len(result['commands']) == 2
