# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of the batch schedulers' output (private to the collection): Slurm's ``scontrol show node``, ``sinfo`` and
``slurmd -C``, Kubernetes' ``kubectl get node(s)/pods -o json`` and ``systemctl is-active``; with the words they share
with the drain logic of ``_scheduler`` (a node's condition, whose drain a reason names). Text in, a dict (a list, a
count) out; anything but text is a ParseError. ``_scheduler`` re-exports every name, so its callers are unchanged."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError, excerpt

REASON_PREFIX = 'xuanwu'
# The node's own health check between runs (_health, docs/node-health.md) drains with reasons of this prefix; a rollout
# takes such a drained node over (it revalidates it), and the health check resumes only its own.
HEALTH_REASON_PREFIX = 'xuanwu-health'
ANNOTATION_RUN = 'xuanwu.io/drained-by'
ANNOTATION_REASON = 'xuanwu.io/drain-reason'

# The conditions a node is in, whatever the backend.
AVAILABLE, DRAINING, DRAINED, DOWN = 'available', 'draining', 'drained', 'down'
UNAVAILABLE = (DRAINING, DRAINED, DOWN)


def _text(text, source):
    """``text`` itself when it is text; anything else (None, bytes, a number) is a ParseError."""
    if not isinstance(text, str):
        raise ParseError(source, 'expected text, got %s' % type(text).__name__, text)
    return text


# ------------------------------------------------------------------------------------------- reasons


def is_health_reason(reason):
    """True for a drain of the node's own health check (``xuanwu-health: ...``, ``xuanwu-health epilog: ...``:
    _health, docs/node-health.md)."""
    reason = (reason or '').strip()
    return reason == HEALTH_REASON_PREFIX or bool(re.match(r'^%s( [a-z]+)?:' % re.escape(HEALTH_REASON_PREFIX), reason))


def reason_owner(reason, run_id):
    """``'ours'`` (this run), ``'xuanwu'`` (another run of the collection), ``'health'`` (the node's health check),
    ``'other'`` or ``None`` (no reason)."""
    reason = (reason or '').strip()
    if not reason:
        return None
    if is_health_reason(reason):
        return 'health'
    mine = '%s %s' % (REASON_PREFIX, run_id)
    if run_id and (reason == mine or reason.startswith(mine + ':')):
        return 'ours'
    if re.match(r'^%s [A-Za-z0-9][A-Za-z0-9._-]*(:|$)' % REASON_PREFIX, reason):
        return 'xuanwu'
    return 'other'


# --------------------------------------------------------------------------------------------- slurm

SLURM_SHOW = 'scontrol show node'
# The fields scontrol prints after Reason (Slurm 20.11 - 25.x): they end the reason in --oneliner output.
_AFTER_REASON = r'(?:Comment|Extra|InstanceId|InstanceType|ReservationName)='
_REASON = re.compile(r'(?:^|\s)Reason=(.*?)(?:\s+\[([^\]@\s]*)@([^\]\s]*)\])?(?=\s+%s|\s*$)' % _AFTER_REASON, re.S)
_FIELD = re.compile(r'(?:^|\s)([A-Za-z_]+)=(\S*)')
_NOT_FOUND = re.compile(r'Node (\S+) not found', re.I)
# Base states of node_state_string_complete(); the flags follow, joined with "+".
SLURM_BASES = ('IDLE', 'MIXED', 'ALLOCATED', 'ALLOC', 'DOWN', 'ERROR', 'FUTURE', 'UNKNOWN', 'COMPLETING')
SLURM_BUSY = ('MIXED', 'ALLOCATED', 'ALLOC', 'ERROR')
# Bases (scontrol) and sinfo %T words of a node that takes no job for reasons other than a drain.
SLURM_OUT = ('DOWN', 'FUTURE', 'UNKNOWN', 'UNK', 'INVAL', 'REBOOT', 'REBOOT_ISSUED', 'NO_RESPOND')


def slurm_condition(state):
    """Condition of a Slurm node from scontrol's State (``IDLE+DRAIN``, ``MIXED+DRAIN``, ``DOWN+NOT_RESPONDING``,
    ``DRAINING``, ``down*``, ...): ``available``, ``draining`` (DRAIN with jobs left), ``drained``, ``down``."""
    words = [w for w in re.split(r'[+]', state.strip().upper().rstrip('*~#%$@^!-')) if w]
    if not words:
        raise ParseError(SLURM_SHOW, 'empty State', state)
    base, flags = words[0], set(words[1:])
    drain = 'DRAIN' in flags or base in ('DRAIN', 'DRAINED', 'DRAINING') or 'FAIL' in flags or base in ('FAIL', 'FAILING')
    busy = base in SLURM_BUSY or 'COMPLETING' in flags or base in ('DRAINING', 'FAILING', 'COMPLETING')
    if drain:
        return DRAINING if busy else DRAINED
    if base in SLURM_OUT or 'NOT_RESPONDING' in flags or state.strip().endswith('*'):
        return DOWN
    return AVAILABLE


def parse_scontrol_node(text, name=None):
    """One node of ``scontrol --oneliner show node NAME`` (the multi-line form works too).

    Returns ``{name, state, condition, reason, reason_user, reason_time, partitions, cpu_alloc}``; the
    reason loses the ``[user@time]`` that scontrol adds."""
    text = _text(text, SLURM_SHOW)
    missing = _NOT_FOUND.search(text)
    if missing:
        raise ParseError(SLURM_SHOW, 'node %s not found' % missing.group(1), text)
    records = [r for r in re.split(r'(?=(?:^|\n)NodeName=)', text.strip()) if r.strip()]
    if name is not None:
        records = [r for r in records if re.match(r'\s*NodeName=%s(\s|$)' % re.escape(name), r)]
    if len(records) != 1:
        raise ParseError(SLURM_SHOW, 'expected one NodeName=%s record, found %d' % (name or '...', len(records)), text)
    record = records[0]
    reason_match = _REASON.search(record)
    head = record[:reason_match.start()] if reason_match else record
    fields = dict(_FIELD.findall(head))
    if 'State' not in fields or not fields['State']:
        raise ParseError(SLURM_SHOW, 'no State= in the NodeName=%s record' % fields.get('NodeName', '?'), text)
    gres = fields.get('Gres')
    return {
        'name': fields.get('NodeName'),
        'state': fields['State'],
        'condition': slurm_condition(fields['State']),
        'reason': ' '.join(reason_match.group(1).split()) if reason_match else '',
        'reason_user': reason_match.group(2) if reason_match else None,
        'reason_time': reason_match.group(3) if reason_match else None,
        'partitions': [p for p in fields.get('Partitions', '').split(',') if p],
        'cpu_alloc': _count(fields.get('CPUAlloc')),
        # the configuration the controller holds of the node (slurm.conf), compared with slurmd -C by health
        'host_name': fields.get('NodeHostName') or None,
        'cpus': _count(fields.get('CPUTot')),
        'real_memory': _count(fields.get('RealMemory')),
        'gres': gres,
        'gpus': gres_gpus(gres),
    }


def _count(value):
    """A whole number of at most 12 digits, else None (a value scontrol does not print, or one out of reach)."""
    return int(value) if isinstance(value, str) and re.match(r'^[0-9]{1,12}$', value) else None


def gres_gpus(gres):
    """The GPUs in a Gres value: ``gpu:tesla:4(S:0-1)`` 4, ``gpu:h100:4,gpu:a100:2`` 6, ``gpu`` 1, ``(null)`` 0;
    None when there is no value or a count is not a whole number (``gpu:tesla:4K``)."""
    if gres is None:
        return None
    text = re.sub(r'\([^)]*\)', '', gres.strip())
    if text in ('', 'null', 'N/A'):
        return 0
    total = 0
    for item in text.split(','):
        parts = item.strip().split(':')
        if parts[0] != 'gpu':
            continue
        if len(parts) == 1 or (len(parts) == 2 and not re.match(r'^[0-9]+$', parts[1])):
            total += 1
            continue
        count = _count(parts[-1])
        if count is None:
            return None
        total += count
    return total


SINFO_FORMAT = '%N|%P|%T'
SINFO = 'sinfo -h -N -o %s' % SINFO_FORMAT


def parse_sinfo_nodes(text):
    """``sinfo -h -N -o '%N|%P|%T'``: one row per node and partition, ``[{node, partition, state, unavailable}]``.

    The default partition's ``*`` is dropped; a state with ``*`` (not responding), drained, draining,
    down, fail(ing), future, unknown or inval is unavailable."""
    rows = []
    for number, line in enumerate(_text(text, SINFO).splitlines(), 1):
        if not line.strip():
            continue
        parts = line.strip().split('|')
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise ParseError(SINFO, 'line %d is not NODE|PARTITION|STATE: %r' % (number, excerpt(line, 120)), text)
        node, partition, state = (p.strip() for p in parts)
        rows.append({'node': node, 'partition': partition.rstrip('*'), 'state': state,
                     'unavailable': slurm_condition(state) != AVAILABLE})
    if not rows:
        raise ParseError(SINFO, 'no node listed', text)
    return rows


# ---------------------------------------------------------------------------------------- kubernetes

KUBE_NODE = 'kubectl get node -o json'
KUBE_NODES = 'kubectl get nodes -o json'
KUBE_PODS = 'kubectl get pods -o json'


def _json(text, source, kind):
    text = _text(text, source)
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ParseError(source, 'not JSON (%s)' % err, text)
    if not isinstance(data, dict) or data.get('kind') != kind:
        raise ParseError(source, 'not a %s object' % kind, text)
    return data


def _mapping(value, source, what, text):
    """``value`` when it is a dict (``None``: an empty one); anything else is a ParseError naming ``what``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(source, '%s is not an object' % what, text)
    return value


def _kube_node(item, source, text):
    meta = _mapping(item, source, 'a node', text).get('metadata')
    meta = _mapping(meta, source, 'metadata', text)
    if not isinstance(meta.get('name'), str):
        raise ParseError(source, 'a node without metadata.name', text)
    where = 'node %s: ' % meta['name']
    annotations = _mapping(meta.get('annotations'), source, where + 'metadata.annotations', text)
    spec = _mapping(item.get('spec'), source, where + 'spec', text)
    status = _mapping(item.get('status'), source, where + 'status', text)
    conditions = status.get('conditions') or []
    if not isinstance(conditions, list):
        raise ParseError(source, where + 'status.conditions is not a list', text)
    ready = [c.get('status') for c in conditions if isinstance(c, dict) and c.get('type') == 'Ready']
    cordoned = spec.get('unschedulable') is True
    is_ready = ready == ['True']
    drained_by = annotations.get(ANNOTATION_RUN)
    reason = annotations.get(ANNOTATION_REASON)
    if not isinstance(drained_by, (str, type(None))) or not isinstance(reason, (str, type(None))):
        raise ParseError(source, where + 'the xuanwu.io annotations are not strings', text)
    if cordoned:
        condition = DRAINED
    elif not is_ready:
        condition = DOWN
    else:
        condition = AVAILABLE
    # the owner is the run named by xuanwu.io/drained-by: a reason that names another run does not count;
    # a cordon without that annotation has no reason (someone else's)
    if cordoned and drained_by:
        reason = reason if reason_owner(reason, drained_by) == 'ours' else '%s %s' % (REASON_PREFIX, drained_by)
    else:
        reason = ''
    return {'name': meta['name'], 'state': 'cordoned' if cordoned else ('ready' if is_ready else 'not ready'),
            'condition': condition, 'unschedulable': cordoned, 'ready': is_ready, 'drained_by': drained_by,
            'reason': reason, 'ready_status': ready[0] if len(ready) == 1 and isinstance(ready[0], str) else None,
            'host_name': _kube_host_name(meta, status), 'gpus': _kube_gpus(status)}


# The device plugins' resource names of a node's GPUs (NVIDIA's and AMD's Kubernetes device plugins).
KUBE_GPU_RESOURCES = {'nvidia': 'nvidia.com/gpu', 'amd': 'amd.com/gpu'}


def _kube_host_name(meta, status):
    """The host name the kubelet registered: the ``Hostname`` address, else the ``kubernetes.io/hostname`` label."""
    addresses = status.get('addresses')
    for address in addresses if isinstance(addresses, list) else []:
        if isinstance(address, dict) and address.get('type') == 'Hostname' and isinstance(address.get('address'), str):
            return address['address']
    labels = meta.get('labels')
    label = labels.get('kubernetes.io/hostname') if isinstance(labels, dict) else None
    return label if isinstance(label, str) else None


def _kube_gpus(status):
    """``{resource: count}`` of the GPU resources in ``status.allocatable`` (a count that is not a whole number: None)."""
    allocatable = status.get('allocatable')
    if not isinstance(allocatable, dict):
        return {}
    out = {}
    for resource in KUBE_GPU_RESOURCES.values():
        if resource in allocatable:
            value = allocatable[resource]
            out[resource] = _count(value) if isinstance(value, str) else (
                value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10 ** 12 else None)
    return out


def parse_kube_node(text):
    """``kubectl get node NAME -o json``: ``{name, state, condition, unschedulable, ready, drained_by, reason}``."""
    return _kube_node(_json(text, KUBE_NODE, 'Node'), KUBE_NODE, text)


def parse_kube_nodes(text):
    """``kubectl get nodes -o json``: the list of nodes as ``parse_kube_node`` reads one."""
    data = _json(text, KUBE_NODES, 'List')
    items = data.get('items')
    if not isinstance(items, list):
        raise ParseError(KUBE_NODES, 'no items list', text)
    return [_kube_node(item, KUBE_NODES, text) for item in items]


def parse_kube_pods(text):
    """Pods that keep a node busy: not finished, not DaemonSet-managed, not static (mirror) pods."""
    data = _json(text, KUBE_PODS, 'List')
    items = data.get('items')
    if not isinstance(items, list):
        raise ParseError(KUBE_PODS, 'no items list', text)
    count = 0
    for pod in items:
        pod = _mapping(pod, KUBE_PODS, 'a pod', text)
        meta = _mapping(pod.get('metadata'), KUBE_PODS, 'a pod\'s metadata', text)
        phase = _mapping(pod.get('status'), KUBE_PODS, 'a pod\'s status', text).get('phase')
        owners = meta.get('ownerReferences') or []
        owners = [o.get('kind') for o in owners if isinstance(o, dict)] if isinstance(owners, list) else []
        mirror = 'kubernetes.io/config.mirror' in _mapping(meta.get('annotations'), KUBE_PODS, 'a pod\'s annotations', text)
        if phase in ('Succeeded', 'Failed') or 'DaemonSet' in owners or mirror:
            continue
        count += 1
    return count


# -------------------------------------------------------------------------------------------- health

SYSTEMCTL = 'systemctl is-active'
SLURMD_C = 'slurmd -C'
# systemd's active states as `systemctl is-active` prints them; a daemon is up in the first three.
UNIT_UP = ('active', 'reloading', 'refreshing')
UNIT_STATES = UNIT_UP + ('inactive', 'failed', 'activating', 'deactivating', 'maintenance', 'unknown')


def parse_systemctl_is_active(text):
    """``systemctl is-active UNIT``: one unit state, ``{state, active}`` (``active`` also while reloading)."""
    words = _text(text, SYSTEMCTL).split()
    if len(words) != 1 or words[0] not in UNIT_STATES:
        raise ParseError(SYSTEMCTL, 'not one unit state (%s)' % ', '.join(UNIT_STATES), text)
    return {'state': words[0], 'active': words[0] in UNIT_UP}


def parse_slurmd_config(text):
    """``slurmd -C``: the node as slurmd reads its hardware, in slurm.conf's words: ``{name, cpus, boards,
    sockets_per_board, cores_per_socket, threads_per_core, real_memory, gres, gpus, uptime}``.

    The line of ``NodeName=... CPUs=...`` (``name`` None where slurmd prints no NodeName); slurmd's log lines, the
    ``Found gpu:... with Autodetect=...`` line and ``UpTime=`` (on its own line or at the end) around it."""
    _text(text, SLURMD_C)
    lines = [line.strip() for line in text.splitlines()]
    config = [line for line in lines if re.match(r'^(?:NodeName|CPUs)=\S', line)]
    if len(config) != 1:
        raise ParseError(SLURMD_C, 'expected one NodeName=... CPUs=... line, found %d' % len(config), text)
    fields = dict(_FIELD.findall(config[0]))
    cpus, memory = _count(fields.get('CPUs')), _count(fields.get('RealMemory'))
    if cpus is None or memory is None:
        raise ParseError(SLURMD_C, 'no whole CPUs= and RealMemory= in %r' % excerpt(config[0], 200), text)
    uptime = fields.get('UpTime') or next((line[len('UpTime='):] for line in lines if line.startswith('UpTime=')), None)
    gres = fields.get('Gres')
    return {'name': fields.get('NodeName') or None, 'cpus': cpus, 'boards': _count(fields.get('Boards')),
            'sockets_per_board': _count(fields.get('SocketsPerBoard')), 'cores_per_socket': _count(fields.get('CoresPerSocket')),
            'threads_per_core': _count(fields.get('ThreadsPerCore')), 'real_memory': memory, 'gres': gres,
            'gpus': gres_gpus(gres) if gres is not None else None, 'uptime': uptime or None}
