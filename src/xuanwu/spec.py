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
import shlex
import string
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
MAX_RETRIES = 20
PARAM_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]{0,63}$')
PLAYBOOK_KEYS = ('name', 'playbook', 'inventory', 'limit', 'extra_vars', 'timeout_sec', 'webhook_url', 'retry_count',
                 'retry_on_timeout')
COMMAND_KEYS = ('name', 'command', 'nodes', 'timeout_sec', 'webhook_url', 'retry_count', 'retry_on_exit_codes',
                'retry_on_timeout')
BATCH_KEYS = ('name', 'input_dir', 'output_dir', 'max_concurrency', 'retry_count', 'timeout_sec', 'task_list',
              'command', 'nodes', 'retry_on_exit_codes', 'retry_on_timeout')
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
    argv: list | None = None        # a batch task's command template filled in: run without a shell
    cwd: str | None = None
    retry_count: int = 0
    retry_on_exit_codes: list = dataclasses.field(default_factory=list)
    retry_on_timeout: bool = False  # a timeout is the job's own (permanent) unless this says it is worth a retry

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


def _bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(field, 'must be true or false, got %s' % _show(value))
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
    from .webhooks import check_url
    if not re.match(r'^https?://[^\s]+$', url):
        raise SpecError(_prefix(field, 'webhook_url'), 'must be an http:// or https:// URL, got %s'
                        % _show(_no_userinfo(url)))
    try:
        check_url(url)
    except ValueError as exc:
        raise SpecError(_prefix(field, 'webhook_url'), str(exc)) from None
    return url


def _no_userinfo(url: str) -> str:
    return re.sub(r'//[^/@\s]*@', '//***@', url)


def _not_option(value: str, field: str) -> str:
    """``value`` unless it would be read as an option of the program it is given to."""
    if value.startswith('-'):
        raise SpecError(field, '%s starts with "-": it would be read as an option, not as a value' % _show(value))
    return value


def _exit_codes(value: Any, field: str) -> list:
    if not isinstance(value, list) or len(value) > 255:
        raise SpecError(field, 'must be a list of exit statuses (1 to 255)')
    return sorted(set(_int(v, '%s[%d]' % (field, i), 1, 255) for i, v in enumerate(value)))


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


def parse_job(data: dict, config, field: str = '', default_timeout=None, default_name=None,
              default_retry_on_timeout=False) -> JobSpec:
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
    retry = _int(data.get('retry_count', 0), _prefix(field, 'retry_count'), 0, MAX_RETRIES)
    on_timeout = _bool(data.get('retry_on_timeout', default_retry_on_timeout), _prefix(field, 'retry_on_timeout'))
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
        codes = _exit_codes(data.get('retry_on_exit_codes', []), _prefix(field, 'retry_on_exit_codes'))
        return JobSpec(kind='command', name=name, timeout_sec=timeout, command=command, nodes=list(nodes),
                       webhook_url=webhook, retry_count=retry, retry_on_exit_codes=codes, retry_on_timeout=on_timeout)
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
        limit = _not_option(_str(data['limit'], _prefix(field, 'limit'), LIMIT_RE, ' (an Ansible host pattern)'),
                            _prefix(field, 'limit'))
    extra = {} if data.get('extra_vars') is None else _extra_vars(data['extra_vars'], _prefix(field, 'extra_vars'))
    return JobSpec(kind='playbook', name=name, timeout_sec=timeout, playbook=playbook,
                   playbook_path=str(config.playbook_path(playbook)), inventory=str(inv), limit=limit,
                   extra_vars=extra, webhook_url=webhook, retry_count=retry, retry_on_timeout=on_timeout)


def _template(value: Any, field: str) -> list:
    """The argv of a batch's command template (split as a shell would, run without one), each placeholder
    ``{name}`` checked."""
    text = _str(value, field)
    if len(text) > MAX_COMMAND or '\x00' in text:
        raise SpecError(field, 'must be at most %d characters without NUL' % MAX_COMMAND)
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise SpecError(field, 'cannot be split into arguments: %s' % exc) from None
    if not argv:
        raise SpecError(field, 'holds no program')
    for token in argv:
        for dummy, name, spec, conv in _fields(token, field):
            if name is not None and (not PARAM_RE.match(name) or spec or conv):
                raise SpecError(field, 'placeholder {%s} is not a plain {name}' % name)
    return argv


def _fields(token: str, field: str):
    try:
        return list(string.Formatter().parse(token))
    except ValueError as exc:
        raise SpecError(field, 'bad placeholder in %s: %s (write {{ and }} for braces)' % (_show(token), exc)) from None


def _params(value: Any, field: str) -> dict:
    value = _mapping(value, field)
    out = {}
    for key, item in value.items():
        if not isinstance(key, str) or not PARAM_RE.match(key):
            raise SpecError(field, 'parameter name %s is not an identifier' % _show(key))
        where = '%s.%s' % (field, key)
        if isinstance(item, bool) or not isinstance(item, (str, int, float)) or \
                (isinstance(item, float) and not math.isfinite(item)):
            raise SpecError(where, 'must be a string or a number, got %s' % _show(item))
        text = str(item)
        if '\x00' in text or len(text) > 4096:
            raise SpecError(where, 'must be at most 4096 characters without NUL')
        out[key] = _not_option(text, where)
    return out


def _fill(argv: list, params: dict, field: str) -> list:
    out = []
    for token in argv:
        for dummy, name, dummy2, dummy3 in _fields(token, field):
            if name is not None and name not in params:
                raise SpecError(field + '.' + name, 'missing: the command template uses {%s}' % name)
        out.append(token.format_map(params))
    return out


# Names in a batch's output_dir that are not a task's folder: a task of this id would collide with them.
RESERVED_TASK_IDS = frozenset(('summary.json',))


def _task_id_of(name: str) -> str:
    stem = re.sub(r'[^A-Za-z0-9._-]', '_', name)
    stem = re.sub(r'^[^A-Za-z0-9]+', '', stem)
    return stem[:64] or 'task'


def _job_or_template(params: Any, field: str) -> None:
    """A task's params without a command template must be a job: when they are neither (the field guide's
    ``{"model": "small", "steps": 100}``), say how our format runs them: a batch ``command`` template."""
    if not isinstance(params, dict) or 'playbook' in params or 'command' in params:
        return
    names = [k for k in params if isinstance(k, str) and PARAM_RE.match(k)][:4] or ['name']
    example = 'python3 train.py ' + ' '.join('--%s {%s}' % (k.replace('_', '-'), k) for k in names)
    raise SpecError(_prefix(field, 'playbook'),
                    'missing: a job needs playbook (a registered playbook name) or command (a shell command with '
                    'nodes); to run one command per task with these params, give the batch a command template with '
                    'a {name} per parameter instead, e.g. "command": "%s" (docs/jobs.md, batch files)' % example)


def parse_batch(data: dict, config, base_dir=None) -> BatchSpec:
    """Validate a batch file's content; relative ``input_dir``/``output_dir`` are taken from ``base_dir``
    (the batch file's folder; default the current directory).

    Two shapes: each task's ``params`` is a job (playbook or command), or, when the batch names a
    ``command`` template, the task's own parameters, filled into the template (an argv, no shell) and given
    to it as environment variables (``XUANWU_PARAM_<NAME>``). Without ``task_list``, every file of
    ``input_dir`` is a task (its id from the file name, its parameters ``input_file`` and ``input_name``)."""
    data = _mapping(data, 'batch')
    _no_unknown(data, BATCH_KEYS, '')
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    name = _str(data['name'], 'name', NAME_RE) if 'name' in data else 'batch'
    if 'output_dir' not in data:
        raise SpecError('output_dir', 'missing: the folder of the per-task logs and summary.json')
    output_dir = str((base / _path('output_dir', data['output_dir'])).resolve())
    template = _template(data['command'], 'command') if data.get('command') is not None else None
    if template is None:
        for key in ('nodes', 'retry_on_exit_codes'):
            if key in data:
                raise SpecError(key, 'only with a batch command template (command); else give it in each '
                                     'task\'s params')
    input_dir = None
    if data.get('input_dir') is not None:
        input_dir = str((base / _path('input_dir', data['input_dir'])).resolve())
        if not os.path.isdir(input_dir):
            raise SpecError('input_dir', '%s is not a folder' % _show(data['input_dir']))
    concurrency = _int(data.get('max_concurrency', config.max_concurrency), 'max_concurrency', 1, 1024)
    retry = _int(data.get('retry_count', 0), 'retry_count', 0, MAX_RETRIES)
    timeout = _int(data.get('timeout_sec', config.default_timeout_sec), 'timeout_sec', 1, MAX_TIMEOUT_SEC)
    on_timeout = _bool(data.get('retry_on_timeout', False), 'retry_on_timeout')
    if 'task_list' in data:
        items = data['task_list']
        if not isinstance(items, list) or not items or len(items) > MAX_TASKS:
            raise SpecError('task_list', 'must be a list of 1 to %d tasks' % MAX_TASKS)
    elif input_dir is None:
        raise SpecError('task_list', 'missing: the list of tasks (or an input_dir whose files are the tasks)')
    elif template is None:
        raise SpecError('task_list', 'missing: the list of tasks (or a command template, run once per file of '
                                     'input_dir)')
    else:
        files = sorted(e for e in os.listdir(input_dir) if os.path.isfile(os.path.join(input_dir, e))
                       and not e.startswith('.'))
        if not files or len(files) > MAX_TASKS:
            raise SpecError('input_dir', 'must hold 1 to %d files (one task each), found %d' % (MAX_TASKS, len(files)))
        items, taken = [], set(RESERVED_TASK_IDS)
        for entry in files:
            task_id, k = _task_id_of(entry), 1
            while task_id in taken:
                k += 1
                task_id = '%s-%d' % (_task_id_of(entry)[:60], k)
            taken.add(task_id)
            items.append({'task_id': task_id, 'params': {'input_file': os.path.join(input_dir, entry),
                                                         'input_name': entry}})
    nodes, codes = ['localhost'], []
    if template is not None:
        if 'nodes' in data:
            nodes = data['nodes']
            if not isinstance(nodes, list) or not nodes or len(nodes) > MAX_NODES:
                raise SpecError('nodes', 'must be a list of 1 to %d host names' % MAX_NODES)
            for i, node in enumerate(nodes):
                _str(node, 'nodes[%d]' % i, NODE_RE, ' (a host name or address)')
        codes = _exit_codes(data.get('retry_on_exit_codes', []), 'retry_on_exit_codes')
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
        if task_id in RESERVED_TASK_IDS:
            raise SpecError(where + '.task_id', '%s is reserved: output_dir/%s is the batch\'s summary'
                            % (_show(task_id), task_id))
        seen.add(task_id)
        if 'params' not in item:
            what = 'the parameters of the command template' if template else 'the job this task runs (playbook or command)'
            raise SpecError(where + '.params', 'missing: %s' % what)
        task_out = os.path.join(output_dir, task_id)
        if template is not None:
            params = _params(item['params'], where + '.params')
            argv = _fill(template, params, where + '.params')
            env = {'XUANWU_PARAM_%s' % key.upper(): value for key, value in params.items()}
            job = JobSpec(kind='command', name=task_id, timeout_sec=timeout, command=shlex.join(argv),
                          nodes=list(nodes), argv=argv, cwd=str(base), env=env, retry_on_exit_codes=codes,
                          retry_on_timeout=on_timeout)
        else:
            _job_or_template(item['params'], where + '.params')
            job = parse_job(item['params'], config, field=where + '.params', default_timeout=timeout,
                            default_name=task_id, default_retry_on_timeout=on_timeout)
        if template is not None:
            job.env.update(XUANWU_TASK_ID=task_id, XUANWU_OUTPUT_DIR=task_out)
        if input_dir is not None:
            job.env['XUANWU_INPUT_DIR'] = input_dir
            if job.kind == 'playbook':
                job.extra_vars.setdefault('xuanwu_input_dir', input_dir)
        tasks.append(TaskSpec(task_id=task_id, job=job))
    return BatchSpec(name=name, output_dir=output_dir, input_dir=input_dir, max_concurrency=concurrency,
                     retry_count=retry, timeout_sec=timeout, tasks=tasks)
