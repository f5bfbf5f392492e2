"""Run the ASGI app with uvicorn, bounded against slow and oversized clients.

uvicorn bounds a request's headers in size (h11's incomplete-event limit) but not in time: a
client that trickles its request line and headers would hold its connection for ever. The
protocol below closes a connection whose request has not fully arrived
:data:`HEADER_DEADLINE_S` after the connection opened (or, between requests, after its first
byte). Connections and in-flight requests are capped
(``limit_concurrency`` answers 503 beyond it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import uvicorn
from starlette.applications import Starlette
from uvicorn.protocols.http.h11_impl import H11Protocol

from safeport.context_server.http.endpoint import HttpEndpoint
from safeport.context_server.http.guard import MAX_HEADER_BYTES

log = logging.getLogger(__name__)

HEADER_DEADLINE_S = 10.0
MAX_CONNECTIONS = 256
KEEP_ALIVE_S = 5


class DeadlineH11Protocol(H11Protocol):
    """h11 with a deadline on each request's head: started when the connection opens and by
    the first byte that arrives while no request is in progress, cancelled when the request
    begins. uvicorn times nothing on a fresh connection: one that never sends a byte would
    hold its place under ``limit_concurrency`` for ever, and a few hundred would turn every
    approved client away with 503."""

    header_deadline_s = HEADER_DEADLINE_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer = self.loop.call_later(self.header_deadline_s, self._head_too_slow)

    def data_received(self, data: bytes) -> None:
        if self._between_requests() and self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_deadline_s, self._head_too_slow)
        super().data_received(data)
        if not self._between_requests() and self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._between_requests() and not self.transport.is_closing():
            log.info("closed a connection whose request head was too slow")
            self.transport.close()


def uvicorn_config(app: Starlette, endpoint: HttpEndpoint) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=endpoint.host,
        port=endpoint.port,
        http=DeadlineH11Protocol,
        ws="none",
        lifespan="on",
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=KEEP_ALIVE_S,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        ssl_certfile=str(endpoint.tls_cert) if endpoint.tls_cert else None,
        ssl_keyfile=str(endpoint.tls_key) if endpoint.tls_key else None,
    )


def run(app: Starlette, endpoint: HttpEndpoint) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn handles both)."""
    uvicorn.Server(uvicorn_config(app, endpoint)).run()
