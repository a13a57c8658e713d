"""The HTTP connections of ``xuanwu serve``: uvicorn's h11 protocol with a deadline for the request head
and a cap on open connections, so that idle or slow clients cannot hold the service.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive`` but has no deadline before the
first request, and its ``limit_concurrency`` counts idle connections too (then every request, /health
included, gets 503). Here:

- a connection that has not sent a complete request head within ``header_timeout`` seconds of being
  opened (or of its previous response) is closed;
- when ``max_connections`` are open, a new one first closes the oldest idle connection (no request in
  progress); if every connection is busy, the new one is closed at once. ``max_connections`` and the
  listen backlog (asyncio accepts up to ``backlog`` connections before any of them is looked at) together
  stay below the process's descriptor limit, so accept() never runs out of descriptors.
"""
from __future__ import annotations

import resource

from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 256
RESERVED_DESCRIPTORS = 32     # the store, job logs, the executor's pipes


def connection_cap(wanted: int) -> int:
    """``wanted``, or fewer when the descriptor limit leaves less room: half of what is left after the reserve,
    the other half for the connections accepted in one go (the backlog)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(4, min(wanted, (soft - RESERVED_DESCRIPTORS) // 2))


def guarded_protocol(header_timeout: float = DEFAULT_HEADER_TIMEOUT, max_connections: int = DEFAULT_MAX_CONNECTIONS):
    """An h11 protocol class for ``uvicorn.Config(http=...)`` with these limits."""
    cap = connection_cap(max_connections)

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._head_timer = None
            self._arm_head_timer()
            if len(self.connections) > cap:
                idle = [c for c in self.connections if c is not self and c._idle()]
                if idle:
                    oldest = min(idle, key=lambda c: c._opened)
                    oldest._drop()
                else:
                    self._drop()

        def _arm_head_timer(self) -> None:
            self._opened = self.loop.time()
            if getattr(self, '_head_timer', None) is not None:
                self._head_timer.cancel()
            self._head_timer = self.loop.call_later(header_timeout, self._head_timeout)

        def _idle(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _head_timeout(self) -> None:
            self._head_timer = None
            if self._idle():
                self._drop()

        def _drop(self) -> None:
            if not self.transport.is_closing():
                self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_head_timer()

        def connection_lost(self, exc) -> None:
            if getattr(self, '_head_timer', None) is not None:
                self._head_timer.cancel()
                self._head_timer = None
            super().connection_lost(exc)

    return GuardedH11Protocol
