"""Webhooks: a POST to a URL when a job reaches a final state, signed, retried with backoff.

Body: ``event`` ("job.finished"), ``sent_at`` (Unix seconds) and ``job``: its ids, status, reason,
timestamps and links to the API (``webhook_job``), never its spec (extra variables, command) or output.
Headers: ``X-Xuanwu-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the secret>``,
``X-Xuanwu-Timestamp`` (the same ``sent_at``; it is inside the signed body too, so a receiver can
refuse old or replayed deliveries) and ``X-Xuanwu-Delivery`` (unique per delivery, the same on
every retry of it).

Deliveries run on one background thread: a slow or dead receiver never holds up a job.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import queue
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

LOG = logging.getLogger('xuanwu.webhooks')
SIGNATURE_HEADER = 'X-Xuanwu-Signature'
TIMESTAMP_HEADER = 'X-Xuanwu-Timestamp'
DELIVERY_HEADER = 'X-Xuanwu-Delivery'


def sign(secret: bytes, body: bytes) -> str:
    """The signature header's value for ``body``."""
    return 'sha256=' + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, header: str | None) -> bool:
    """True when ``header`` is the signature of ``body`` (what a receiver runs)."""
    return bool(header) and hmac.compare_digest(sign(secret, body), header)


def check_url(url: str) -> str:
    """``url`` if it is an absolute http(s) URL with a host, else ValueError with the reason."""
    try:
        parts = urllib.parse.urlsplit(url)
        # a bad port raises here
        parts.port    # pylint: disable=pointless-statement
    except ValueError:
        raise ValueError('is not a valid URL') from None
    if '@' in parts.netloc or parts.username or parts.password:
        raise ValueError('must not carry credentials (user:password@) in the URL; sign deliveries with '
                         'webhook_secret instead')
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        raise ValueError('must be an absolute http:// or https:// URL with a host, got %r' % url[:200])
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise ValueError('must not hold whitespace or control characters')
    return url


WEBHOOK_FIELDS = ('id', 'name', 'kind', 'status', 'reason', 'error_class', 'rc', 'attempts', 'batch_id', 'task_id',
                  'created', 'started', 'finished')


def webhook_job(job: dict) -> dict:
    """What a webhook tells about ``job``: ids, status and links, nothing of its spec or output."""
    out = {k: job.get(k) for k in WEBHOOK_FIELDS}
    base = '/api/v1/jobs/%s' % job['id']
    out['links'] = {'self': base, 'log': base + '/log', 'events': base + '/events'}
    if job.get('batch_id'):
        out['links']['batch'] = '/api/v1/batches/%s' % job['batch_id']
    return out


class Notifier:
    """Sends final-state notifications; ``notify`` returns at once."""

    def __init__(self, secret: bytes | None, default_url: str | None = None, attempts: int = 5,
                 backoff: float = 1.0, timeout: float = 10.0):
        self.secret = secret
        self.default_url = default_url
        self.attempts = attempts
        self.backoff = backoff
        self.timeout = timeout
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name='xuanwu-webhooks', daemon=True)
        self._thread.start()

    def notify(self, job: dict, url: str | None = None) -> None:
        target = url or self.default_url
        if target:
            try:
                check_url(target)
            except ValueError as exc:
                LOG.warning('webhook for job %s: not sent: the URL %s', job.get('id'), exc)
                return
            self._queue.put((target, job))

    def close(self, wait: float = 5.0) -> None:
        self._queue.put(None)
        self._thread.join(wait)

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            url, job = item
            try:
                self.deliver(url, job)
            except Exception:  # pylint: disable=broad-except
                LOG.exception('webhook for job %s: delivery crashed', job.get('id'))

    def deliver(self, url: str, job: dict) -> bool:
        """POST ``job`` to ``url``; retry with exponential backoff on errors and 5xx; True once a 2xx came back."""
        sent_at = int(time.time())
        body = json.dumps({'event': 'job.finished', 'sent_at': sent_at, 'job': job}, sort_keys=True, default=str).encode()
        headers = {'Content-Type': 'application/json', TIMESTAMP_HEADER: str(sent_at),
                   DELIVERY_HEADER: secrets.token_hex(8), 'User-Agent': 'xuanwu-webhooks'}
        if self.secret:
            headers[SIGNATURE_HEADER] = sign(self.secret, body)
        reason = ''
        for attempt in range(1, self.attempts + 1):
            request = urllib.request.Request(url, data=body, headers=headers, method='POST')
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as resp:  # nosec: operator-set URL
                    LOG.info('webhook for job %s: %s answered %d (attempt %d)', job.get('id'), _host(url), resp.status, attempt)
                    return True
            except urllib.error.HTTPError as exc:
                if 400 <= exc.code < 500 and exc.code not in (408, 429):
                    LOG.warning('webhook for job %s: %s refused it with %d; not retried', job.get('id'), _host(url), exc.code)
                    return False
                reason = 'HTTP %d' % exc.code
            except (urllib.error.URLError, OSError) as exc:
                reason = str(getattr(exc, 'reason', exc))
            LOG.warning('webhook for job %s: %s failed (%s), attempt %d of %d', job.get('id'), _host(url), reason,
                        attempt, self.attempts)
            if attempt < self.attempts:
                time.sleep(self.backoff * 2 ** (attempt - 1))
        return False


def _host(url: str) -> str:
    """The URL without its path and query (which may hold a receiver's own secret) for the log."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or '?'
    return '%s://%s%s' % (parts.scheme, host, ':%d' % parts.port if parts.port else '')
