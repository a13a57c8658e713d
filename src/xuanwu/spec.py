"""Job and batch specifications: validation of what a user submits, before anything runs.

``parse_job`` and ``parse_batch`` take decoded JSON/YAML (a dict) and return dataclasses; any
problem raises ``SpecError(field, message)`` whose ``str()`` is one line that names the field.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from pathlib import Path
from typing import Any

NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
NODE_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$')
LIMIT_RE = re.compile(r'^[A-Za-z0-9_.:,&!*\[\]\-]{1,1024}$')
VAR_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]{0,127}$')
MAX_TIMEOUT_SEC = 7 * 24 * 3600
MAX_COMMAND = 8192
MAX_NODES = 4096
MAX_TASKS = 10000
PLAYBOOK_KEYS = ('name', 'playbook', 'inventory', 'limit', 'extra_vars', 'timeout_sec', 'webhook_url')
COMMAND_KEYS = ('name', 'command', 'nodes', 'timeout_sec', 'webhook_url')
BATCH_KEYS = ('name', 'input_dir', 'output_dir', 'max_concurrency', 'retry_count', 'timeout_sec', 'task_list')
TASK_KEYS = ('task_id', 'params')


class SpecError(ValueError):
    """A submitted job or batch that cannot run. ``field`` names the offending key (dotted path)."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = ' '.join(str(message).split())
        super().__init__('%s: %s' % (field, self.message))


@dataclasses.dataclass
class JobSpec:
    kind: str                       # 'playbook' or 'command'
    name: str
    timeout_sec: int
    playbook: str | None = None     # a registry name
    playbook_path: str | None = None
    inventory: str | None = None    # resolved path inside an inventory root
    limit: str | None = None
    extra_vars: dict = dataclasses.field(default_factory=dict)
    command: str | None = None
    nodes: list = dataclasses.field(default_factory=list)
    env: dict = dataclasses.field(default_factory=dict)
    webhook_url: str | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> 'JobSpec':
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclasses.dataclass
class TaskSpec:
    task_id: str
    job: JobSpec

    def to_dict(self) -> dict:
        return {'task_id': self.task_id, 'job': self.job.to_dict()}


@dataclasses.dataclass
class BatchSpec:
    name: str
    output_dir: str
    input_dir: str | None
    max_concurrency: int
    retry_count: int
    timeout_sec: int
    tasks: list

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out['tasks'] = [t.to_dict() for t in self.tasks]
        return out


def _mapping(value: Any, field: str) -> dict:
    if not isinstance(value, dict):
        raise SpecError(field, 'must be an object (mapping), got %s' % type(value).__name__)
    return value


def _no_unknown(data: dict, allowed, field: str) -> None:
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        prefix = field + '.' if field else ''
        key = unknown[0] if re.match(r'^[A-Za-z0-9_-]{1,64}$', unknown[0]) else _show(unknown[0])
        raise SpecError(prefix + key, 'unknown key; allowed: %s' % ', '.join(allowed))


def _int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or (isinstance(value, float) and (not math.isfinite(value) or value != int(value))):
        raise SpecError(field, 'must be an integer, got %s' % _show(value))
    value = int(value)
    if value < low or value > high:
        raise SpecError(field, 'must be between %d and %d, got %d' % (low, high, value))
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + '...'


def _str(value: Any, field: str, pattern=None, what='') -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(field, 'must be a non-empty string, got %s' % _show(value))
    if pattern is not None and not pattern.match(value):
        raise SpecError(field, '%s does not match %s%s' % (_show(value), pattern.pattern, what))
    return value


def _path(field: str, value: Any) -> str:
    text = _str(value, field)
    if '\x00' in text:
        raise SpecError(field, 'contains a NUL character')
    return text


def _inside(path: Path, roots) -> bool:
    for root in roots:
        root = Path(os.path.realpath(root))
        if path == root or root in path.parents:
            return True
    return False


def _prefix(field: str, key: str) -> str:
    return '%s.%s' % (field, key) if field else key


def _timeout(data: dict, config, field: str, default=None) -> int:
    if 'timeout_sec' in data:
        return _int(data['timeout_sec'], _prefix(field, 'timeout_sec'), 1, MAX_TIMEOUT_SEC)
    return default if default is not None else config.default_timeout_sec


def _webhook(data: dict, field: str):
    if data.get('webhook_url') is None:
        return None
    url = _str(data['webhook_url'], _prefix(field, 'webhook_url'))
    if not re.match(r'^https?://[^\s]+$', url):
        raise SpecError(_prefix(field, 'webhook_url'), 'must be an http:// or https:// URL, got %s' % _show(url))
    return url


def _extra_vars(value: Any, field: str) -> dict:
    value = _mapping(value, field)
    for key in value:
        if not isinstance(key, str) or not VAR_RE.match(key):
            raise SpecError(field, 'variable name %s is not a valid identifier' % _show(key))
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SpecError(field, 'must hold JSON values only: %s' % exc) from None
    return dict(value)


def parse_job(data: dict, config, field: str = '', default_timeout=None, default_name=None) -> JobSpec:
    """Validate a job submission; ``field`` prefixes error fields (used by batches)."""
    data = _mapping(data, field or 'job')
    has_playbook, has_command = 'playbook' in data, 'command' in data
    if has_playbook and has_command:
        raise SpecError(_prefix(field, 'command'), 'a job is either a playbook job (playbook) or a command job '
                                                   '(command), not both')
    if not has_playbook and not has_command:
        raise SpecError(_prefix(field, 'playbook'), 'missing: a job needs playbook (a registered playbook name) '
                                                    'or command (a shell command with nodes)')
    _no_unknown(data, PLAYBOOK_KEYS if has_playbook else COMMAND_KEYS, field)
    if 'name' in data or default_name is None:
        if 'name' not in data:
            raise SpecError(_prefix(field, 'name'), 'missing')
        name = _str(data['name'], _prefix(field, 'name'), NAME_RE)
    else:
        name = default_name
    timeout = _timeout(data, config, field, default_timeout)
    webhook = _webhook(data, field)
    if has_command:
        command = _str(data['command'], _prefix(field, 'command'))
        if len(command) > MAX_COMMAND or '\x00' in command:
            raise SpecError(_prefix(field, 'command'), 'must be at most %d characters without NUL' % MAX_COMMAND)
        if 'nodes' not in data:
            raise SpecError(_prefix(field, 'nodes'), 'missing: a command job names the nodes it runs on')
        nodes = data['nodes']
        if not isinstance(nodes, list) or not nodes or len(nodes) > MAX_NODES:
            raise SpecError(_prefix(field, 'nodes'), 'must be a list of 1 to %d host names' % MAX_NODES)
        for i, node in enumerate(nodes):
            _str(node, '%s[%d]' % (_prefix(field, 'nodes'), i), NODE_RE, ' (a host name or address)')
        if len(set(nodes)) != len(nodes):
            raise SpecError(_prefix(field, 'nodes'), 'lists a node twice')
        return JobSpec(kind='command', name=name, timeout_sec=timeout, command=command, nodes=list(nodes),
                       webhook_url=webhook)
    playbook = _str(data['playbook'], _prefix(field, 'playbook'))
    if playbook not in config.playbooks:
        raise SpecError(_prefix(field, 'playbook'), 'unknown playbook %s; registered: %s (a name, never a path)'
                        % (_show(playbook), ', '.join(sorted(config.playbooks))))
    if 'inventory' not in data:
        raise SpecError(_prefix(field, 'inventory'), 'missing: a playbook job names its inventory')
    inv_text = _path(_prefix(field, 'inventory'), data['inventory'])
    inv = Path(inv_text).expanduser()
    if not inv.is_absolute():
        inv = Path(config.project_root) / inv
    inv = Path(os.path.realpath(inv))
    if not _inside(inv, config.inventory_roots):
        raise SpecError(_prefix(field, 'inventory'), '%s resolves outside the inventory roots (%s)'
                        % (_show(inv_text), ', '.join(str(r) for r in config.inventory_roots)))
    if not inv.exists():
        raise SpecError(_prefix(field, 'inventory'), '%s does not exist' % _show(inv_text))
    limit = None
    if data.get('limit') is not None:
        limit = _str(data['limit'], _prefix(field, 'limit'), LIMIT_RE, ' (an Ansible host pattern)')
    extra = {} if data.get('extra_vars') is None else _extra_vars(data['extra_vars'], _prefix(field, 'extra_vars'))
    return JobSpec(kind='playbook', name=name, timeout_sec=timeout, playbook=playbook,
                   playbook_path=str(config.playbook_path(playbook)), inventory=str(inv), limit=limit,
                   extra_vars=extra, webhook_url=webhook)


def parse_batch(data: dict, config, base_dir=None) -> BatchSpec:
    """Validate a batch file's content; relative ``input_dir``/``output_dir`` are taken from ``base_dir``
    (the batch file's folder; default the current directory)."""
    data = _mapping(data, 'batch')
    _no_unknown(data, BATCH_KEYS, '')
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    name = _str(data['name'], 'name', NAME_RE) if 'name' in data else 'batch'
    if 'output_dir' not in data:
        raise SpecError('output_dir', 'missing: the folder of the per-task logs and summary.json')
    output_dir = str((base / _path('output_dir', data['output_dir'])).resolve())
    input_dir = None
    if data.get('input_dir') is not None:
        input_dir = str((base / _path('input_dir', data['input_dir'])).resolve())
        if not os.path.isdir(input_dir):
            raise SpecError('input_dir', '%s is not a folder' % _show(data['input_dir']))
    concurrency = _int(data.get('max_concurrency', config.max_concurrency), 'max_concurrency', 1, 1024)
    retry = _int(data.get('retry_count', 0), 'retry_count', 0, 20)
    timeout = _int(data.get('timeout_sec', config.default_timeout_sec), 'timeout_sec', 1, MAX_TIMEOUT_SEC)
    if 'task_list' not in data:
        raise SpecError('task_list', 'missing: the list of tasks')
    items = data['task_list']
    if not isinstance(items, list) or not items or len(items) > MAX_TASKS:
        raise SpecError('task_list', 'must be a list of 1 to %d tasks' % MAX_TASKS)
    tasks, seen = [], set()
    for i, item in enumerate(items):
        where = 'task_list[%d]' % i
        item = _mapping(item, where)
        _no_unknown(item, TASK_KEYS, where)
        if 'task_id' not in item:
            raise SpecError(where + '.task_id', 'missing')
        task_id = _str(item['task_id'], where + '.task_id', NAME_RE, ' (letters, digits, . _ -; no paths)')
        if task_id in seen:
            raise SpecError(where + '.task_id', 'duplicate task id %s' % _show(task_id))
        seen.add(task_id)
        if 'params' not in item:
            raise SpecError(where + '.params', 'missing: the job this task runs (playbook or command)')
        job = parse_job(item['params'], config, field=where + '.params', default_timeout=timeout,
                        default_name=task_id)
        if input_dir is not None:
            job.env['XUANWU_INPUT_DIR'] = input_dir
            if job.kind == 'playbook':
                job.extra_vars.setdefault('xuanwu_input_dir', input_dir)
        tasks.append(TaskSpec(task_id=task_id, job=job))
    return BatchSpec(name=name, output_dir=output_dir, input_dir=input_dir, max_concurrency=concurrency,
                     retry_count=retry, timeout_sec=timeout, tasks=tasks)
