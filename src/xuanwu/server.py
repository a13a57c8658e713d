"""The job service: an authenticated HTTP API over the store and the executor (``xuanwu serve``).

FastAPI on uvicorn (docs/service.md says why). Every endpoint but ``GET /health`` needs
``Authorization: Bearer <token>``. Bodies are JSON objects of at most ``body_limit`` bytes; they are
checked by ``xuanwu.spec`` and any problem is a 4xx whose message names the field, never a traceback.
"""
from __future__ import annotations

import asyncio
import collections
import json
import logging
import math
import os
import re
import threading
import time
from pathlib import Path
from urllib.parse import parse_qsl

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

from . import FINAL_STATES, STATES, __version__
from .auth import bearer_matches, credential_in_query
from .metrics import Metrics
from .secure import private_dir, redact_spec, redact_text
from .serve_options import DEFAULT_BODY_LIMIT, serve_settings
from .spec import SpecError, parse_batch, parse_job
from .store import BatchConflict, disk_full
from .webhooks import webhook_job

LOG = logging.getLogger('xuanwu.server')
JOB_ID_RE = re.compile(r'^j-[0-9a-f]{12}$')
BATCH_ID_RE = re.compile(r'^b-[0-9a-f]{12}$')
MAX_DEPTH = 32
HISTORY_BYTES_PER_JOB = 4 * 1024 * 1024    # serialised events kept per job for SSE clients that connect late
FINISHED_HISTORIES = 64                     # finished jobs whose events are kept
KEEPALIVE_SEC = 15.0
STATE_EVENT = 'state'
BODY_TIMEOUT_SEC = 30.0
LOG_CHUNK = 1024 * 1024     # the most bytes GET .../log answers at once
INTERNAL_JOB_FIELDS = ('attempt_list', 'pid_start', 'owner', 'mark', 'cgroup', 'not_before')


class BodyError(Exception):
    """A request body that is not a usable JSON object."""

    def __init__(self, status: int, message: str, field: str = 'body'):
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


def log_safe(text, limit: int = 512) -> str:
    """A client's text for one log line: control characters (newlines, ESC, DEL, C1) shown as \\xNN, cut to ``limit``."""
    text = str(text)
    shown = re.sub('[\x00-\x1f\x7f-\x9f]', lambda m: '\\x%02x' % ord(m.group(0)), text[:limit])
    return shown + ('...' if len(text) > limit else '')


def _error(status: int, message: str, field: str | None = None, headers=None) -> JSONResponse:
    body = {'detail': message}
    if field:
        body['field'] = field
    return JSONResponse(body, status_code=status, headers=headers)


def _reject_constant(name: str):
    raise BodyError(400, 'malformed JSON: %s is not a JSON number' % name)


def _walk(value, path: str, depth: int = 0) -> None:
    """Refuse NUL characters, non-finite numbers and deep nesting anywhere in a decoded body."""
    if depth > MAX_DEPTH:
        raise BodyError(422, 'nested deeper than %d levels' % MAX_DEPTH, path or 'body')
    if isinstance(value, dict):
        for key, item in value.items():
            sub = '%s.%s' % (path, key) if path else str(key)
            if '\x00' in key:
                raise BodyError(422, 'a key contains a NUL character', path or 'body')
            _walk(item, sub, depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, '%s[%d]' % (path or 'body', i), depth + 1)
    elif isinstance(value, str):
        if '\x00' in value:
            raise BodyError(422, 'contains a NUL character', path or 'body')
    elif isinstance(value, float) and not math.isfinite(value):
        raise BodyError(422, 'must be a finite number', path or 'body')


def decode_body(raw: bytes) -> dict:
    """The JSON object in ``raw``, or BodyError."""
    if not raw.strip():
        raise BodyError(400, 'empty body: send a JSON object (Content-Type: application/json)')
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise BodyError(400, 'the body is not UTF-8 (byte %d)' % exc.start) from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise BodyError(422, 'nested deeper than %d levels' % MAX_DEPTH) from None
    except json.JSONDecodeError as exc:
        raise BodyError(400, 'malformed JSON at line %d column %d: %s' % (exc.lineno, exc.colno, exc.msg)) from None
    except ValueError as exc:   # e.g. an integer longer than Python's digit limit
        raise BodyError(400, 'malformed JSON: %s' % str(exc).split(';', maxsplit=1)[0]) from None
    if not isinstance(data, dict):
        raise BodyError(422, 'must be a JSON object, got %s' % type(data).__name__)
    _walk(data, '')
    return data


def _inside(path: str, root: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base + os.sep)


class EventHub:
    """Fans the executor's events out to SSE clients, each event serialised once. Keeps, for clients that
    connect late, the last events of each job within a byte budget per job (the oldest go first), and
    the histories of the last finished jobs only."""

    def __init__(self, job_bytes: int = HISTORY_BYTES_PER_JOB, finished_jobs: int = FINISHED_HISTORIES):
        self._lock = threading.Lock()
        self._history: dict = {}      # job id -> [deque of (serial, final, message), bytes]
        self._finished: collections.deque = collections.deque()
        self._subscribers: dict = collections.defaultdict(list)
        self._serial = 0
        self.job_bytes = job_bytes
        self.finished_jobs = finished_jobs

    def publish(self, job_id: str, event: dict) -> None:
        final = _final_state(event) is not None
        with self._lock:
            self._serial += 1
            item = (self._serial, final, _sse(self._serial, event))
            entry = self._history.setdefault(job_id, [collections.deque(), 0])
            entry[0].append(item)
            entry[1] += len(item[2])
            while entry[1] > self.job_bytes and len(entry[0]) > 1:
                entry[1] -= len(entry[0].popleft()[2])
            if final:
                self._finished.append(job_id)
                while len(self._finished) > self.finished_jobs:
                    self._history.pop(self._finished.popleft(), None)
            subscribers = list(self._subscribers.get(job_id, ()))
        for loop, q in subscribers:
            try:
                loop.call_soon_threadsafe(q.put_nowait, item)
            except RuntimeError:    # the client's loop is closed
                pass

    def subscribe(self, job_id: str, loop, q) -> list:
        """Register ``q``; the (serial, final, message) items kept so far."""
        with self._lock:
            self._subscribers[job_id].append((loop, q))
            entry = self._history.get(job_id)
            return list(entry[0]) if entry else []

    def unsubscribe(self, job_id: str, loop, q) -> None:
        with self._lock:
            subs = self._subscribers.get(job_id, [])
            if (loop, q) in subs:
                subs.remove((loop, q))
            if not subs:
                self._subscribers.pop(job_id, None)

    def kept_bytes(self) -> int:
        with self._lock:
            return sum(entry[1] for entry in self._history.values())


def _final_state(event: dict) -> str | None:
    """The final state a state-change event announces, else None."""
    if event.get('type') == STATE_EVENT and event.get('status') in FINAL_STATES:
        return event['status']
    return None


def public_job(job: dict) -> dict:
    """The API's view of a store record: status, reason, attempts, timestamps, artifact paths; the spec with
    its secret-looking extra_vars masked (xuanwu.secure.redact_spec)."""
    out = {k: v for k, v in job.items() if k not in INTERNAL_JOB_FIELDS}
    out['spec'] = redact_spec(job.get('spec'))
    out['attempt_list'] = job.get('attempt_list', [])
    if job.get('status') == 'queued' and job.get('not_before'):
        out['retry_at'] = job['not_before']
    return out


def _job_secrets(config, job_id: str) -> list:
    """The values of a job's secret extra_vars, masked in its log as the API sends it."""
    try:
        with open(Path(config.data_dir) / 'jobs' / job_id / 'secret-vars.json', encoding='utf-8') as handle:
            values = json.load(handle).values()
    except (OSError, ValueError):
        return []
    return [v if isinstance(v, str) else json.dumps(v) for v in values if v not in (None, '')]


class LogChoiceError(Exception):
    """A log request that names no output of the job: an unknown node, or no node where the job kept one per node."""

    def __init__(self, status: int, message: str, nodes: list):
        super().__init__(message)
        self.status = status
        self.message = message
        self.nodes = nodes


def job_nodes(job: dict) -> list:
    """The nodes a command job runs on, as its spec names them (none for a playbook job)."""
    nodes = (job.get('spec') or {}).get('nodes') if job.get('kind') == 'command' else None
    return [n for n in nodes if isinstance(n, str)] if isinstance(nodes, list) else []


def _listed(nodes: list, most: int = 20) -> str:
    shown = ', '.join(nodes[:most])
    return shown + (' and %d more (the job\'s spec lists them)' % (len(nodes) - most) if len(nodes) > most else '')


def job_log_path(job: dict, attempt: int | None = None, stream: str = 'stdout',
                 node: str | None = None) -> tuple[Path | None, str | None]:
    """The output file of an attempt of ``job`` (default its last) and the node it is of (None: several or
    none): a command's stdout.txt/stderr.txt, over SSH the file of ``node`` (stdout-<node>.txt), a playbook's
    ansible-runner stdout; (None, node) when there is none (yet). ``node`` must be one of the job's nodes (else
    LogChoiceError, 404), and is needed when the attempt kept one file per node for several (422); the file's
    name is made of the job's own node, never of the request's text."""
    nodes = job_nodes(job)
    if node is not None:
        if node not in nodes:
            what = ('its nodes: %s' % _listed(nodes) if nodes
                    else 'a playbook job has one output for all its hosts: leave node out')
            raise LogChoiceError(404, 'job %s has no node %r; %s' % (job['id'], node[:256], what), nodes)
        node = nodes[nodes.index(node)]
    attempts = job.get('attempt_list') or []
    if not attempts:
        return None, node
    chosen = attempts[-1] if attempt is None else next((a for a in attempts if a['n'] == attempt), None)
    if chosen is None or not chosen.get('artifact_dir'):
        return None, node
    adir = Path(chosen['artifact_dir'])
    if job['kind'] == 'command':
        shared = adir / ('%s.txt' % stream)
        if shared.is_file():   # Slurm or local: one file for all the nodes
            if node is not None and len(nodes) > 1:
                raise LogChoiceError(422, 'the %d nodes of job %s wrote one %s together (%s): leave node out'
                                     % (len(nodes), job['id'], stream, (job.get('info') or {}).get('mode') or 'local'),
                                     nodes)
            return shared, node or (nodes[0] if len(nodes) == 1 else None)
        if node is None:
            if len(nodes) > 1:
                raise LogChoiceError(422, 'job %s ran on %d nodes: %s; each has its own %s: add ?node=<name>'
                                     % (job['id'], len(nodes), _listed(nodes), stream), nodes)
            node = nodes[0] if nodes else None
        if node is None:
            return None, None
        path = adir / ('%s-%s.txt' % (stream, node))
        return (path if path.is_file() else None), node
    path = adir / 'artifacts' / ('%s-%d' % (job['id'], chosen['n'])) / stream
    return (path if path.is_file() else None), None


class Guard:
    """ASGI middleware: credentials in the query string, the Bearer token, the body size limit and the
    access log (method, path without query, status; never a header)."""

    def __init__(self, app, token: str | None, body_limit: int):
        self.app = app
        self.token = token
        self.body_limit = body_limit

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http':
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = {'code': 0}

        async def send_logged(message):
            if message['type'] == 'http.response.start':
                status['code'] = message['status']
            await send(message)

        try:
            response = self._refuse(scope)
            if response is None:
                receive, response = await self._bounded(scope, receive)
            if response is not None:
                await response(scope, _empty_receive, send_logged)
            else:
                await self.app(scope, receive, send_logged)
        finally:
            client = scope.get('client') or ('-', 0)
            # the path is the client's: %0a, escape bytes and other controls would forge lines or colours in the log
            LOG.info('%s %s %s %d %.1fms', client[0], log_safe(scope['method']), log_safe(scope['path']), status['code'],
                     (time.monotonic() - started) * 1000)

    def _refuse(self, scope):
        query = scope.get('query_string', b'').decode('latin-1')
        if query and credential_in_query(pair[0] for pair in parse_qsl(query, keep_blank_values=True)):
            return _error(400, 'a credential in the query string is refused (URLs end up in logs): '
                               'send the token in the Authorization header as "Bearer <token>"')
        if scope['path'] == '/health' or self.token is None:
            return None
        header = None
        for name, value in scope.get('headers', ()):
            if name == b'authorization':
                header = value.decode('latin-1')
                break
        if not bearer_matches(header, self.token):
            return _error(401, 'missing or wrong credentials: send "Authorization: Bearer <token>"',
                          headers={'WWW-Authenticate': 'Bearer'})
        return None

    async def _bounded(self, scope, receive):
        """(a receive that replays the body read here, None), or (None, a 4xx response): 413 once the body
        passes the limit, without reading the rest."""
        if scope['method'] not in ('POST', 'PUT', 'PATCH'):
            return receive, None
        for name, value in scope.get('headers', ()):
            if name == b'content-length':
                try:
                    length = int(value)
                except ValueError:
                    return None, _error(400, 'Content-Length is not a number')
                if length > self.body_limit:
                    return None, _error(413, 'body of %d bytes is larger than the limit of %d bytes' % (length, self.body_limit))
        chunks, size = [], 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), BODY_TIMEOUT_SEC)
            except asyncio.TimeoutError:
                return None, _error(408, 'the body did not arrive within %d s' % BODY_TIMEOUT_SEC)
            if message['type'] == 'http.disconnect':
                return None, _error(400, 'the client went away before sending the body')
            chunk = message.get('body', b'')
            size += len(chunk)
            if size > self.body_limit:
                return None, _error(413, 'body larger than the limit of %d bytes' % self.body_limit)
            chunks.append(chunk)
            if not message.get('more_body'):
                break
        body = b''.join(chunks)
        sent = {'done': False}

        async def replay():
            if sent['done']:
                return await receive()
            sent['done'] = True
            return {'type': 'http.request', 'body': body, 'more_body': False}
        return replay, None


async def _empty_receive():
    return {'type': 'http.request', 'body': b'', 'more_body': False}


def create_app(config, store, executor, token: str | None, body_limit: int = DEFAULT_BODY_LIMIT,
               notifier=None, metrics: Metrics | None = None) -> FastAPI:
    """The ASGI application. ``token`` None disables authentication (``xuanwu serve`` allows that on
    loopback only, when asked explicitly)."""
    app = FastAPI(title='xuanwu', version=__version__, docs_url=None, redoc_url=None, openapi_url=None)
    hub = EventHub()
    metrics = metrics or Metrics()
    batches_root = Path(config.data_dir) / 'batches'
    private_dir(config.data_dir)
    app.state.hub, app.state.metrics = hub, metrics

    def on_event(job_id: str, event: dict) -> None:
        hub.publish(job_id, event)
        if event.get('type') != STATE_EVENT:
            return
        if event.get('status') == 'attempt_started':
            metrics.attempt_started()
        final = _final_state(event)
        if final is None:
            return
        job = store.get_job(job_id)
        if job is None:
            return
        started, finished = job.get('started'), job.get('finished')
        metrics.finished(final, finished - started if started and finished else None)
        if notifier is not None:
            url = (job.get('spec') or {}).get('webhook_url')
            notifier.notify(webhook_job(job), url)

    executor.on_event(on_event)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request, exc):
        errors = exc.errors()
        first = errors[0] if errors else {}
        field = '.'.join(str(p) for p in first.get('loc', ()) if p not in ('query', 'path', 'body')) or 'request'
        return _error(422, '%s: %s' % (field, first.get('msg', 'invalid')), field)

    @app.exception_handler(Exception)
    async def internal_error(request, exc):
        if disk_full(exc):
            # the store or the data dir cannot be written: nothing was accepted, and the client may try again later
            LOG.error('%s %s refused: the disk of the data dir %s is full: %s', request.method,
                      log_safe(request.url.path), config.data_dir, exc)
            why = exc.strerror if isinstance(exc, OSError) else exc
            return _error(507, 'the service cannot write its data dir: the disk is full (%s); nothing was accepted '
                          'or changed; try again once space is freed' % why, 'service', headers={'Retry-After': '60'})
        LOG.error('%s %s failed: %s: %s', request.method, request.url.path, type(exc).__name__, exc, exc_info=exc)
        return _error(500, 'internal error; the service log has the details')

    async def _body(request: Request):
        try:
            return decode_body(await request.body()), None
        except BodyError as exc:
            metrics.rejected()
            return None, _error(exc.status, '%s: %s' % (exc.field, exc.message), exc.field)

    def _spec_error(exc: SpecError) -> JSONResponse:
        metrics.rejected()
        return _error(422, str(exc), exc.field or 'body')

    @app.get('/health')
    def health():
        return {'status': 'ok'}

    @app.post('/api/v1/jobs', status_code=201)
    async def submit_job(request: Request):
        data, problem = await _body(request)
        if problem is not None:
            return problem
        try:
            spec = parse_job(data, config)
        except SpecError as exc:
            return _spec_error(exc)
        job_id = await asyncio.to_thread(executor.submit, spec)
        metrics.submitted()
        LOG.info('job %s (%s %s) queued', job_id, spec.kind, spec.name)
        return JSONResponse({'job_id': job_id, 'status': 'queued'}, status_code=201,
                            headers={'Location': '/api/v1/jobs/%s' % job_id})

    def _job_or_404(job_id: str):
        job = store.get_job(job_id) if JOB_ID_RE.match(job_id) else None
        if job is None:
            return None, _error(404, 'no job %s' % job_id[:40], 'job_id')
        return job, None

    @app.get('/api/v1/jobs/{job_id}')
    def get_job(job_id: str):
        job, problem = _job_or_404(job_id)
        return problem or public_job(job)

    @app.get('/api/v1/jobs')
    def list_jobs(status: str | None = Query(None, pattern='^(%s)$' % '|'.join(STATES)),
                  limit: int = Query(100, ge=1, le=1000), offset: int = Query(0, ge=0, le=10 ** 9)):
        jobs = store.list_jobs(status=status, limit=limit, offset=offset)
        return {'jobs': [public_job(j) for j in jobs], 'total': store.count_jobs(status),
                'limit': limit, 'offset': offset}

    @app.post('/api/v1/jobs/{job_id}/cancel', status_code=202)
    def cancel_job(job_id: str):
        job, problem = _job_or_404(job_id)
        if problem is not None:
            return problem
        if job['status'] in FINAL_STATES:
            return _error(409, 'job %s is already %s' % (job_id, job['status']), 'job_id')
        executor.cancel(job_id)
        LOG.info('job %s: cancel requested', job_id)
        job = store.get_job(job_id)
        return JSONResponse({'job_id': job_id, 'status': job['status']}, status_code=202)

    @app.get('/api/v1/jobs/{job_id}/log')
    def job_log(job_id: str, attempt: int | None = Query(None, ge=1, le=1000),
                stream: str = Query('stdout', pattern='^(stdout|stderr)$'),
                offset: int | None = Query(None, ge=0, le=2 ** 53), tail: int | None = Query(None, ge=1, le=LOG_CHUNK),
                length: int = Query(LOG_CHUNK, ge=1, le=LOG_CHUNK), node: str | None = Query(None, max_length=1024)):
        """The output of an attempt (default the last): ``offset``+``length`` bytes, or the last ``tail`` bytes,
        or the first ``length``; of one ``node`` of a command job that ran over SSH on several (needed there).
        Headers: X-Log-Size (the file's size now), X-Log-Offset, X-Log-Attempt, X-Log-Node (the node whose
        output it is, when it is one node's)."""
        job, problem = _job_or_404(job_id)
        if problem is not None:
            return problem
        if offset is not None and tail is not None:
            return _error(422, 'offset and tail: give one of them', 'tail')
        try:
            path, node = job_log_path(job, attempt, stream, node)
        except LogChoiceError as exc:
            return JSONResponse({'detail': exc.message, 'field': 'node', 'nodes': exc.nodes}, status_code=exc.status)
        if path is None:
            where = ' of node %s' % node if node else ''
            where += ' in attempt %d' % attempt if attempt else ''
            return _error(404, 'job %s has no %s%s yet' % (job_id, stream, where), 'attempt' if attempt else 'job_id')
        with open(path, 'rb') as handle:
            size = os.fstat(handle.fileno()).st_size
            start = max(0, size - tail) if tail is not None else min(offset or 0, size)
            handle.seek(start)
            data = handle.read(tail if tail is not None else length)
        used = job['attempt_list'][-1]['n'] if attempt is None else attempt
        text = redact_text(data.decode('utf-8', errors='replace'), _job_secrets(config, job_id))
        headers = {'X-Log-Size': str(size), 'X-Log-Offset': str(start), 'X-Log-Attempt': str(used),
                   'Cache-Control': 'no-cache'}
        if node:
            headers['X-Log-Node'] = node
        return PlainTextResponse(text, headers=headers)

    @app.get('/api/v1/jobs/{job_id}/events')
    async def job_events(job_id: str):
        problem = (await asyncio.to_thread(_job_or_404, job_id))[1]
        if problem is not None:
            return problem
        return StreamingResponse(_stream(job_id), media_type='text/event-stream',
                                 headers={'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no'})

    async def _stream(job_id: str):
        loop = asyncio.get_running_loop()
        q: asyncio.Queue = asyncio.Queue()
        kept = hub.subscribe(job_id, loop, q)
        try:
            last = 0
            for serial, final, message in kept:
                last = serial
                yield message
                if final:
                    return
            # The job may have ended before this process saw it (a restart): the store has the last word.
            while True:
                current = await asyncio.to_thread(store.get_job, job_id, False)
                if current['status'] in FINAL_STATES:
                    yield _sse(last, {'type': STATE_EVENT, 'job_id': job_id, 'status': current['status'],
                                      'reason': current.get('reason')})
                    return
                try:
                    while True:
                        serial, final, message = await asyncio.wait_for(q.get(), KEEPALIVE_SEC)
                        if serial <= last:
                            continue
                        last = serial
                        yield message
                        if final:
                            return
                except asyncio.TimeoutError:
                    yield ': keepalive\n\n'
        finally:
            hub.unsubscribe(job_id, loop, q)

    @app.post('/api/v1/batches', status_code=201)
    async def submit_batch(request: Request):
        data, problem = await _body(request)
        if problem is not None:
            return problem
        for key in ('input_dir', 'output_dir'):
            value = data.get(key)
            if isinstance(value, str) and (os.path.isabs(value) or '..' in Path(value).parts):
                metrics.rejected()
                return _error(422, '%s: through the API a relative folder under the service\'s batch folder, '
                                   'without "..", got %r' % (key, value[:200]), key)
        private_dir(batches_root)
        if isinstance(data.get('input_dir'), str) and isinstance(data.get('task_list'), list):
            # the field guide's batch names ./inputs with its tasks listed: an empty folder of the service's
            private_dir(batches_root / data['input_dir'])
        try:
            spec = parse_batch(data, config, base_dir=batches_root)
        except SpecError as exc:
            return _spec_error(exc)
        for key in ('input_dir', 'output_dir'):
            value = getattr(spec, key)
            if value is not None and not _inside(value, batches_root):
                metrics.rejected()
                return _error(422, '%s: resolves outside the service\'s batch folder' % key, key)
        try:
            batch_id = await asyncio.to_thread(_start_batch, spec)
        except BatchConflict as exc:
            metrics.rejected()
            return _error(409, str(exc), 'output_dir')
        return JSONResponse({'batch_id': batch_id, 'status': 'running', 'output_dir': spec.output_dir,
                             'tasks': len(spec.tasks)},
                            status_code=201, headers={'Location': '/api/v1/batches/%s' % batch_id})

    def _start_batch(spec) -> str:
        batch_id = executor.submit_batch(spec)
        LOG.info('batch %s (%d tasks) queued', batch_id, len(spec.tasks))
        return batch_id

    @app.get('/api/v1/batches/{batch_id}')
    def get_batch(batch_id: str):
        found = store.get_batch(batch_id) if BATCH_ID_RE.match(batch_id) else None
        if found is None:
            return _error(404, 'no batch %s' % batch_id[:40], 'batch_id')
        found.pop('owner', None)
        if found['status'] in ('cancelling', 'finishing'):
            # the store's inner steps; the API's batch states are those of jobs: running until final
            found['cancel_requested'] = found['status'] == 'cancelling' or \
                bool((found.get('summary') or {}).get('cancel_requested'))
            found['status'] = 'running'
        return found

    @app.post('/api/v1/batches/{batch_id}/cancel', status_code=202)
    def cancel_batch(batch_id: str):
        found = store.get_batch(batch_id) if BATCH_ID_RE.match(batch_id) else None
        if found is None:
            return _error(404, 'no batch %s' % batch_id[:40], 'batch_id')
        if not executor.cancel_batch(batch_id):
            return _error(409, 'batch %s is already %s' % (batch_id, found['status']), 'batch_id')
        LOG.info('batch %s: cancel requested', batch_id)
        return JSONResponse({'batch_id': batch_id, 'status': store.get_batch(batch_id)['status']}, status_code=202)

    @app.get('/metrics')
    def metrics_text():
        counts = {state: store.count_jobs(state) for state in STATES}
        return PlainTextResponse(metrics.render(counts), media_type='text/plain; version=0.0.4')

    return Guard(app, token, body_limit)


def _sse(serial: int, event: dict) -> str:
    kind = event.get('type') or event.get('event') or 'message'
    data = json.dumps(event, default=str, separators=(',', ':'))
    return 'id: %d\nevent: %s\ndata: %s\n\n' % (serial, re.sub(r'[^A-Za-z0-9_.-]', '_', str(kind))[:64], data)


def serve(args, config) -> int:
    """Run the service until SIGINT/SIGTERM. Jobs run in their own process sessions: they outlive a stop
    of the service, and the next start re-attaches them (Executor.recover)."""
    import uvicorn

    from .runner import Executor
    from .store import open_store
    from .webhooks import Notifier

    from .httpguard import connection_cap, guarded_protocol

    logging.basicConfig(level=logging.INFO, format='%(asctime)s %(levelname)s %(name)s: %(message)s')
    settings = serve_settings(args, config=config)
    if settings['token'] is None:
        LOG.warning('serving WITHOUT authentication on %s: every local user can run jobs', args.bind)
    if settings['plaintext_remote']:
        LOG.warning('serving plain HTTP on %s (--insecure-plaintext): the token crosses the network readable',
                    args.bind)
    store = open_store(config)
    executor = Executor(config, store, config.max_concurrency, serve_all=True)
    secret = settings['webhook_secret']
    notifier = Notifier(secret.encode() if secret else None, getattr(config, 'webhook_url', None))
    app = create_app(config, store, executor, settings['token'], body_limit=args.max_body_bytes, notifier=notifier)
    recovered = executor.recover()
    LOG.info('recovered after start: %s', json.dumps(recovered, default=str))
    LOG.info('xuanwu %s serving on %s://%s:%d, data in %s, at most %d jobs at once', __version__,
             'https' if args.tls_cert else 'http', args.bind, args.port, config.data_dir, config.max_concurrency)
    try:
        settings = uvicorn.Config(app, host=args.bind, port=args.port, ssl_certfile=args.tls_cert,
                                  ssl_keyfile=args.tls_key, access_log=False, log_config=None, server_header=False,
                                  timeout_graceful_shutdown=5,
                                  http=guarded_protocol(args.header_timeout, args.max_connections),
                                  # asyncio accepts up to `backlog` connections in one go, before any is looked
                                  # at: few, so that they never exhaust the descriptors
                                  backlog=max(2, connection_cap(args.max_connections) // 4),
                                  timeout_keep_alive=int(min(args.header_timeout, 5)) or 1,
                                  h11_max_incomplete_event_size=16 * 1024)
        uvicorn.Server(settings).run()
    finally:
        notifier.close()
        executor.shutdown(wait=False)
    return 0
