# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain, resume and plan nodes of a batch scheduler (no Ansible imports; Python 3.8 compatible): what module
``scheduler_node`` carries; no check, no remediation text (``_scheduler`` judges on the controller and re-exports
every name of this module).

Command construction (argument vectors, never shell text) and the ownership decisions of the ``scheduler_node``
module, for the backends ``none``, ``slurm`` and ``kubernetes``; the tools' output is read by ``_parse_scheduler``
(scontrol, sinfo, slurmd -C, kubectl, systemctl is-active), whose names this module re-exports.

Ownership rule: a drain made by this collection carries the reason ``xuanwu <run id>: <text>``
(Slurm: the node's Reason; Kubernetes: the annotations ``xuanwu.io/drained-by`` and
``xuanwu.io/drain-reason``). A node that is unavailable for any other reason belongs to someone else
and is never changed. ``run_action`` carries out one action through a ``run(argv, mutating)``
callable, so that every decision is testable without a scheduler.

Before a node returns to service, ``health`` reads the scheduler's own view of it: the node's daemon (slurmd,
kubelet: ``systemctl is-active``, else its process), the controller's state of the node, and the node's own view
(``slurmd -C``; the host name, the GPUs the probe saw); ``_scheduler.health_findings`` turns what was read into
findings on the controller (docs/scheduler.md).

Parsers raise only ``ParseError``; bad input and failed commands raise ``SchedulerError``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError, excerpt
# The parsers of the schedulers' output and the words they share with the logic here (conditions, reason owners) live
# in _parse_scheduler; every name stays importable from this module.
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_scheduler import (  # noqa: F401 pylint: disable=unused-import
    ANNOTATION_REASON, ANNOTATION_RUN, AVAILABLE, DOWN, DRAINED, DRAINING, HEALTH_REASON_PREFIX, KUBE_GPU_RESOURCES,
    KUBE_NODE, KUBE_NODES, KUBE_PODS, REASON_PREFIX, SINFO, SINFO_FORMAT, SLURM_BASES, SLURM_BUSY, SLURM_OUT, SLURM_SHOW,
    SLURMD_C, SYSTEMCTL, UNAVAILABLE, UNIT_STATES, UNIT_UP, _NOT_FOUND, gres_gpus, is_health_reason, parse_kube_node,
    parse_kube_nodes, parse_kube_pods, parse_sinfo_nodes, parse_scontrol_node, parse_slurmd_config,
    parse_systemctl_is_active, reason_owner, slurm_condition,
)

BACKENDS = ('none', 'slurm', 'kubernetes')
ACTIONS = ('drain', 'resume', 'fail', 'plan', 'daemon', 'health')
DEFAULT_REASON = 'rollout'
# slurmdbd keeps a node event's reason in a TINYTEXT column (255 bytes); a longer reason is cut there.
SLURM_REASON_MAX_BYTES = 255
ELLIPSIS = '...'
# Kubernetes annotation values have no length limit short of the object's 256 KiB; keep them readable.
KUBE_REASON_MAX_CHARS = 1024
RUN_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
NODE_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$')


class SchedulerError(Exception):
    """Bad input, a command that failed, or a state that forbids the action (message for the user)."""


# ---------------------------------------------------------------------------------------------- input


def check_run_id(run_id, action):
    if action in ('plan', 'daemon'):
        return
    if run_id is None or run_id == '':
        raise SchedulerError('scheduler_run_id is required for %s' % action)
    if not RUN_ID.match(str(run_id)):
        raise SchedulerError('scheduler_run_id %r is not a run id (1-64 characters: letters, digits, ".", "_", "-", '
                             'starting with a letter or digit)' % (run_id,))


def check_node_name(name, what='scheduler_node_name'):
    if not isinstance(name, str) or not NODE_NAME.match(name):
        raise SchedulerError('%s %r is not a node name (letters, digits, ".", "_", "-")' % (what, name))


def check_params(params):
    """Validate what the module received; raise SchedulerError naming the option."""
    if params['backend'] not in BACKENDS:
        raise SchedulerError('scheduler_backend %r is not one of %s' % (params['backend'], ', '.join(BACKENDS)))
    if params['action'] not in ACTIONS:
        raise SchedulerError('scheduler_action %r is not one of %s' % (params['action'], ', '.join(ACTIONS)))
    if params['backend'] == 'none':
        return
    check_run_id(params.get('run_id'), params['action'])
    share = params.get('max_drain_share')
    if not isinstance(share, (int, float)) or isinstance(share, bool) or not 0 <= share <= 1:
        raise SchedulerError('scheduler_max_drain_share must be a number from 0 to 1, found %r' % (share,))
    for key in ('drain_timeout', 'poll_interval'):
        value = params.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < (0 if key == 'drain_timeout' else 1):
            raise SchedulerError('scheduler_%s must be a whole number of seconds (%s), found %r'
                                 % (key, '0 or more' if key == 'drain_timeout' else '1 or more', value))
    if params['action'] == 'plan':
        nodes = params.get('nodes') or []
        if not nodes:
            raise SchedulerError('scheduler_nodes is empty: plan needs the node names of the batch')
        for name in nodes:
            check_node_name(name, 'scheduler_nodes item')
    else:
        check_node_name(params.get('node'))


# ------------------------------------------------------------------------------------------- reasons


def _cut_bytes(text, limit):
    data = text.encode('utf-8')
    if len(data) <= limit:
        return text
    return data[:limit - len(ELLIPSIS)].decode('utf-8', 'ignore').rstrip() + ELLIPSIS


def our_reason(run_id, text, limit_bytes=SLURM_REASON_MAX_BYTES):
    """``xuanwu <run id>: <text>`` on one line, cut to ``limit_bytes`` (UTF-8) with "..." at the end.

    The run id and its colon always survive the cut, so the reason still names its owner."""
    text = ' '.join(str(text if text is not None else '').split()) or DEFAULT_REASON
    return _cut_bytes('%s %s: %s' % (REASON_PREFIX, run_id, text), limit_bytes)


def whose(reason, run_id):
    """Words for the message: whose drain this is."""
    owner = reason_owner(reason, run_id)
    if owner == 'ours':
        return 'this run (%s)' % run_id
    if owner == 'xuanwu':
        return 'another xuanwu run (reason "%s")' % reason
    if owner == 'health':
        return 'the node\'s health check (reason "%s")' % reason
    if owner == 'other':
        return 'someone else (reason "%s")' % reason
    return 'someone else (no reason given)'


# --------------------------------------------------------------------------------------------- slurm

def scontrol_show(scontrol, node):
    return [scontrol, '--oneliner', 'show', 'node', node]


def scontrol_drain(scontrol, node, reason):
    # one argv element per key=value: scontrol takes the reason with its spaces, no shell quoting involved
    return [scontrol, 'update', 'nodename=%s' % node, 'state=drain', 'reason=%s' % reason]


def scontrol_resume(scontrol, node):
    return [scontrol, 'update', 'nodename=%s' % node, 'state=resume']


def sinfo_nodes(sinfo):
    return [sinfo, '-h', '-N', '-o', SINFO_FORMAT]


# ---------------------------------------------------------------------------------------- kubernetes

KUBE_DRAIN_TIMEOUT = re.compile(r'global timeout reached|drain did not complete within', re.I)


def kubectl(binary, kubeconfig, *args):
    head = [binary] + (['--kubeconfig', kubeconfig] if kubeconfig else [])
    return head + list(args)


def kubectl_get_node(binary, kubeconfig, node):
    return kubectl(binary, kubeconfig, 'get', 'node', node, '-o', 'json')


def kubectl_get_nodes(binary, kubeconfig):
    return kubectl(binary, kubeconfig, 'get', 'nodes', '-o', 'json')


def kubectl_annotate(binary, kubeconfig, node, run_id, reason):
    return kubectl(binary, kubeconfig, 'annotate', '--overwrite', 'node', node,
                   '%s=%s' % (ANNOTATION_RUN, run_id), '%s=%s' % (ANNOTATION_REASON, reason))


def kubectl_unannotate(binary, kubeconfig, node):
    return kubectl(binary, kubeconfig, 'annotate', 'node', node, ANNOTATION_RUN + '-', ANNOTATION_REASON + '-')


def kubectl_drain(binary, kubeconfig, node, timeout):
    # --timeout=0s would wait forever: a timeout of 0 means "do not wait", which only cordons
    if timeout <= 0:
        return kubectl(binary, kubeconfig, 'cordon', node)
    return kubectl(binary, kubeconfig, 'drain', node, '--ignore-daemonsets', '--delete-emptydir-data',
                   '--timeout=%ds' % timeout)


def kubectl_uncordon(binary, kubeconfig, node):
    return kubectl(binary, kubeconfig, 'uncordon', node)


def kubectl_pods_on(binary, kubeconfig, node):
    return kubectl(binary, kubeconfig, 'get', 'pods', '--all-namespaces', '--field-selector',
                   'spec.nodeName=%s' % node, '-o', 'json')


# ---------------------------------------------------------------------------------------------- plan


def plan_batch(nodes, rows, share, where='partition'):
    """Refuse a batch that would leave more than ``share`` of any partition it touches unavailable.

    ``rows``: ``[{node, partition, unavailable}]`` (a node once per partition). Returns
    ``(ok, message, partitions)``, ``partitions`` a list of ``{partition, total, unavailable_before,
    unavailable_after, limit, ok}``; a batch node the scheduler does not list is a refusal."""
    known = set(r['node'] for r in rows)
    unknown = [n for n in nodes if n not in known]
    if unknown:
        return False, 'scheduler plan: %s not listed by the scheduler: %s; the share of the %s cannot be measured' % (
            'node' if len(unknown) == 1 else 'nodes', ', '.join(unknown), where), []
    batch = set(nodes)
    parts = {}
    for row in rows:
        entry = parts.setdefault(row['partition'], {'all': set(), 'down': set()})
        entry['all'].add(row['node'])
        if row['unavailable']:
            entry['down'].add(row['node'])
    summary, refused = [], []
    for name in sorted(parts):
        entry = parts[name]
        if not entry['all'] & batch:
            continue
        after = entry['down'] | (entry['all'] & batch)
        total = len(entry['all'])
        ok = len(after) <= share * total + 1e-9
        item = {'partition': name, 'total': total, 'unavailable_before': len(entry['down']),
                'unavailable_after': len(after), 'batch': len(entry['all'] & batch), 'limit': share, 'ok': ok}
        summary.append(item)
        if not ok:
            refused.append('%s %s: %d of %d nodes would be unavailable (%d already drained or down, %d in this batch), '
                           'more than scheduler_max_drain_share %s (%d nodes)'
                           % (where, name, len(after), total, item['unavailable_before'], item['batch'], share,
                              int(share * total + 1e-9)))
    if refused:
        return False, 'scheduler plan refused: ' + '; '.join(refused), summary
    return True, 'scheduler plan: %d node(s) may be drained; %s' % (len(batch), ', '.join(
        '%s %s %d/%d unavailable after' % (where, s['partition'], s['unavailable_after'], s['total']) for s in summary)), summary


# --------------------------------------------------------------------------------------------- logic


def decide(action, condition, reason, run_id):
    """What an action does to a node in ``condition`` with ``reason``: ``(step, owned, why)``.

    ``step``: ``'drain'`` (drain it and wait), ``'wait'`` (ours, wait for the jobs), ``'resume'``,
    ``'relabel'`` (ours: put the new reason on it), ``'none'`` (change nothing)."""
    owner = reason_owner(reason, run_id) if condition in UNAVAILABLE else None
    ours = owner == 'ours'
    if action == 'drain':
        if condition == AVAILABLE:
            return 'drain', True, 'drained by this run'
        if ours:
            return ('wait' if condition == DRAINING else 'none'), True, 'already drained by this run (resumed run)'
        if owner == 'health' and condition == DRAINED:
            return 'relabel', True, ('drained by the node\'s health check (reason "%s"); taken over by this run, which '
                                     'revalidates it and returns it to service only if it passes' % reason)
        return 'none', False, 'already %s by %s; left as it is' % (condition, whose(reason, run_id))
    if action == 'resume':
        if condition == AVAILABLE:
            return 'none', False, 'not drained; nothing to resume'
        if ours:
            return 'resume', True, 'returned to service (drained by this run)'
        return 'none', False, '%s by %s, not by this run; left as it is' % (condition, whose(reason, run_id))
    # fail
    if ours:
        return 'relabel', True, 'kept drained with the failure as its reason'
    if condition == AVAILABLE:
        return 'none', False, 'not drained by this run (the node is in service); left as it is'
    return 'none', False, '%s by %s, not by this run; left as it is' % (condition, whose(reason, run_id))


def _result(params, **kw):
    out = {'backend': params['backend'], 'node': params.get('node'), 'action': params['action'],
           'before': None, 'after': None, 'owned': False, 'changed': False, 'drained': False,
           'timed_out': False, 'jobs_running': None, 'commands': [], 'message': ''}
    out.update(kw)
    return out


def _checked(run, argv, mutating):
    rc, out, err = run(argv, mutating)
    if rc != 0:
        raise SchedulerError('%s failed (exit code %s): %s' % (' '.join(argv), rc, excerpt((err or out or '').strip(), 300)))
    return out


class _Backend(object):
    def __init__(self, params, run):
        self.p, self.run = params, run

    def read(self):
        raise NotImplementedError

    def parse_or_fail(self, parser, text, *args):
        try:
            return parser(text, *args)
        except ParseError as err:
            raise SchedulerError('%s; read: %r' % (err, err.excerpt))


class _Slurm(_Backend):
    def read(self):
        argv = scontrol_show(self.p['scontrol'], self.p['node'])
        rc, out, err = self.run(argv, False)
        if rc != 0 and _NOT_FOUND.search((err or '') + (out or '')):
            raise SchedulerError('node %s is not known to Slurm (%s: %s)' % (self.p['node'], ' '.join(argv), (err or out).strip()))
        if rc != 0:
            raise SchedulerError('%s failed (exit code %s): %s' % (' '.join(argv), rc, excerpt((err or out or '').strip(), 300)))
        node = self.parse_or_fail(parse_scontrol_node, out, self.p['node'])
        node['jobs_running'] = 0 if node['condition'] == DRAINED else None
        return node

    def drain_commands(self, reason):
        return [scontrol_drain(self.p['scontrol'], self.p['node'], reason)]

    def resume_commands(self):
        return [scontrol_resume(self.p['scontrol'], self.p['node'])]

    relabel_commands = drain_commands

    def wait_commands(self):
        return []

    def needs_wait(self):
        return True

    def inventory(self):
        out = _checked(self.run, sinfo_nodes(self.p['sinfo']), False)
        return self.parse_or_fail(parse_sinfo_nodes, out), 'partition'


class _Kubernetes(_Backend):
    def k(self, fn, *args):
        return fn(self.p['kubectl'], self.p.get('kubeconfig'), *args)

    def read(self):
        out = _checked(self.run, self.k(kubectl_get_node, self.p['node']), False)
        node = self.parse_or_fail(parse_kube_node, out)
        node['jobs_running'] = None
        return node

    def drain_commands(self, reason):
        # the annotation first: a crash between the two leaves a schedulable node whose stale annotation is ignored
        return [self.k(kubectl_annotate, self.p['node'], self.p['run_id'], reason),
                self.k(kubectl_drain, self.p['node'], self.p['drain_timeout'])]

    def resume_commands(self):
        return [self.k(kubectl_uncordon, self.p['node']), self.k(kubectl_unannotate, self.p['node'])]

    def relabel_commands(self, reason):
        return [self.k(kubectl_annotate, self.p['node'], self.p['run_id'], reason)]

    def wait_commands(self):
        # a cordoned node of this run that still runs pods (an earlier drain timed out): evict them again
        if self.pods():
            return [self.k(kubectl_drain, self.p['node'], self.p['drain_timeout'])]
        return []

    def needs_wait(self):
        return False

    def pods(self):
        out = _checked(self.run, self.k(kubectl_pods_on, self.p['node']), False)
        return self.parse_or_fail(parse_kube_pods, out)

    def inventory(self):
        out = _checked(self.run, self.k(kubectl_get_nodes), False)
        nodes = self.parse_or_fail(parse_kube_nodes, out)
        return [{'node': n['name'], 'partition': 'cluster', 'state': n['state'],
                 'unavailable': n['condition'] != AVAILABLE} for n in nodes], 'cluster'


def _view(node):
    return {'state': node['condition'], 'reason': node['reason'], 'detail': node['state']}


def _wait(backend, params, sleep, clock, node):
    """Poll until the node is drained or the timeout passes; returns the last state read."""
    deadline = clock() + params['drain_timeout']
    while node['condition'] == DRAINING:
        left = deadline - clock()
        if left <= 0:
            break
        sleep(min(params['poll_interval'], left))
        node = backend.read()
    return node


def run_action(params, run, sleep, clock, check_mode=False, local=None):
    """Carry out ``params['action']``; ``run(argv, mutating) -> (rc, stdout, stderr)`` runs a command
    (the caller skips mutating ones in check mode). ``local`` (action ``daemon``, on the node itself) gives
    ``processes()`` (the names of the running processes), ``hostname()`` and ``missing`` (``{option: why}`` of the
    binaries not found). Returns the module's result dict."""
    check_params(params)
    if params['backend'] == 'none':
        # no scheduler holds the node for anyone else: the rollout may change it (owned), nothing to drain or resume
        return _result(params, owned=True, message='no scheduler (scheduler_backend none): nothing to %s' % params['action'])
    if params['action'] == 'daemon':
        return read_daemon(params, run, local)
    backend = (_Slurm if params['backend'] == 'slurm' else _Kubernetes)(params, run)
    if params['action'] == 'health':
        return read_health(params, backend)
    if params['action'] == 'plan':
        rows, where = backend.inventory()
        ok, message, partitions = plan_batch(list(params['nodes']), rows, params['max_drain_share'], where)
        return _result(params, node=None, failed=not ok, message=message, partitions=partitions)

    node = backend.read()
    step, owned, why = decide(params['action'], node['condition'], node['reason'], params['run_id'])
    if step == 'none' and owned and params['action'] == 'drain':
        step = 'wait'
    result = _result(params, before=_view(node), after=_view(node), owned=owned,
                     drained=node['condition'] == DRAINED, jobs_running=node['jobs_running'])
    limit = SLURM_REASON_MAX_BYTES if params['backend'] == 'slurm' else KUBE_REASON_MAX_CHARS
    reason = our_reason(params['run_id'], params.get('reason'), limit)
    commands = {'drain': lambda: backend.drain_commands(reason), 'relabel': lambda: backend.relabel_commands(reason),
                'resume': backend.resume_commands, 'wait': backend.wait_commands}.get(step, list)()
    if step == 'relabel' and node['reason'] == reason:
        commands = []
    result['commands'] = [' '.join(c) for c in commands]
    result['changed'] = bool(commands)
    message = 'node %s: %s' % (params['node'], why)
    if check_mode:
        predicted = {'drain': (DRAINED, reason), 'relabel': (node['condition'], reason), 'resume': (AVAILABLE, '')}
        if step in predicted:
            state, text = predicted[step]
            result['after'] = {'state': state, 'reason': text, 'detail': None}
        result['message'] = message + (' (check mode: nothing changed)' if commands else '')
        return result
    timeout_text = None
    for argv in commands:
        rc, out, err = run(argv, True)
        if rc != 0 and step in ('drain', 'wait') and params['backend'] == 'kubernetes' and KUBE_DRAIN_TIMEOUT.search((err or '') + (out or '')):
            timeout_text = (err or out).strip()
            continue
        if rc != 0:
            raise SchedulerError('node %s: %s failed (exit code %s): %s'
                                 % (params['node'], ' '.join(argv), rc, excerpt((err or out or '').strip(), 300)))
    if step in ('drain', 'wait') and backend.needs_wait():
        node = _wait(backend, params, sleep, clock, backend.read())
    else:
        node = backend.read()
    if params['backend'] == 'kubernetes' and step in ('drain', 'wait'):
        result['jobs_running'] = backend.pods()
        if timeout_text or result['jobs_running']:
            node['condition'] = DRAINING
    elif params['backend'] == 'slurm':
        result['jobs_running'] = node['jobs_running']
    result['after'] = _view(node)
    result['drained'] = node['condition'] == DRAINED
    if step in ('drain', 'wait') and node['condition'] == DRAINING:
        result['timed_out'] = True
        running = ('%d pod(s)' % result['jobs_running']) if result['jobs_running'] is not None else \
            'jobs (state %s%s)' % (node['state'], ', CPUAlloc=%s' % node['cpu_alloc'] if node.get('cpu_alloc') is not None else '')
        message += '; timed out after %ds: %s still running, the node stays draining' % (params['drain_timeout'], running)
        if timeout_text:
            message += ' (kubectl: %s)' % excerpt(timeout_text, 200)
    result['message'] = message
    return result


# -------------------------------------------------------------------------------------------- health

# The node's daemon of each backend: its systemd unit and its process name.
DAEMON_UNITS = {'slurm': 'slurmd', 'kubernetes': 'kubelet'}


def daemon_unit(params):
    """The node daemon's unit: ``daemon_unit``, else the backend's (slurmd, kubelet)."""
    return params.get('daemon_unit') or DAEMON_UNITS[params['backend']]


def read_daemon(params, run, local):
    """Action ``daemon``, on the node itself: the daemon's state (``systemctl is-active``; the process where systemd does
    not answer), the node's host name and, for Slurm, ``slurmd -C``. Never fails for what it reads: what could not be
    read is in ``daemon_error`` / ``node_view_error`` (``health`` makes it a finding)."""
    unit = daemon_unit(params)
    missing = local.get('missing') or {}
    daemon, detail = None, ''
    if params.get('systemctl'):
        rc, out, err = run([params['systemctl'], 'is-active', unit], False)
        try:
            state = parse_systemctl_is_active(out)
            daemon = {'unit': unit, 'source': 'systemd', 'state': state['state'], 'active': state['active'],
                      'detail': 'systemctl is-active %s: %s (exit code %s)' % (unit, state['state'], rc)}
        except ParseError:
            # no systemd here (a container, no bus): the process decides
            detail = 'systemctl is-active %s answered no unit state (exit code %s: %s); ' % (
                unit, rc, excerpt(' '.join(((err or '') + ' ' + (out or '')).split()), 160))
    if daemon is None:
        process = unit[:-len('.service')] if unit.endswith('.service') else unit
        running = process in local['processes']()
        daemon = {'unit': unit, 'source': 'process', 'state': 'running' if running else 'not running', 'active': running,
                  'detail': detail + ('a %s process is running' % process if running else 'no %s process is running' % process)}
    node_view = view_error = None
    if params['backend'] == 'slurm':
        if not params.get('slurmd'):
            view_error = missing.get('slurmd') or 'slurmd not given'
        else:
            argv = [params['slurmd'], '-C']
            rc, out, err = run(argv, False)
            try:
                if rc != 0:
                    raise SchedulerError('%s failed (exit code %s): %s' % (' '.join(argv), rc, excerpt((err or out or '').strip(), 300)))
                node_view = parse_slurmd_config(out)
            except (ParseError, SchedulerError) as err_:
                view_error = str(err_)
    hostname = local['hostname']()
    message = 'node %s: %s %s (%s)' % (params['node'], unit, daemon['state'], daemon['source'])
    return _result(params, daemon=daemon, hostname=hostname, node_view=node_view, node_view_error=view_error, message=message)


def read_health(params, backend):
    """Action ``health``: the controller's state of the node beside what ``daemon`` read on the node (``params['daemon']``,
    its registered result), as ``health``; the action plugin of ``scheduler_node`` judges it on the controller
    (``_scheduler.health_result``). Never fails for what it reads: an error is listed in ``health['errors']`` (a
    ``scheduler.not_measured`` finding)."""
    source = params.get('daemon') if isinstance(params.get('daemon'), dict) else {}
    errors = []
    daemon = source.get('daemon') if isinstance(source.get('daemon'), dict) else None
    if daemon is None:
        errors.append('the node daemon was not read on the node: %s' % excerpt(str(source.get('msg') or 'no result of the daemon action'), 300))
    if source.get('node_view_error'):
        errors.append('slurmd -C on the node: %s' % excerpt(str(source['node_view_error']), 300))
    controller = None
    try:
        controller = backend.read()
    except SchedulerError as err:
        errors.append(str(err))
    keep = ('name', 'state', 'condition', 'reason', 'host_name', 'cpus', 'real_memory', 'gres', 'gpus', 'ready', 'ready_status')
    health = {'backend': params['backend'], 'node': params['node'], 'run_id': params['run_id'], 'daemon': daemon,
              'controller': dict((k, controller.get(k)) for k in keep if k in controller) if controller else None,
              'node_view': source.get('node_view') if isinstance(source.get('node_view'), dict) else None,
              'hostname': source.get('hostname') if isinstance(source.get('hostname'), str) else None,
              'gpus': params.get('gpus'), 'gpu_vendor': params.get('gpu_vendor') or None, 'errors': errors}
    return _result(params, health=health)
