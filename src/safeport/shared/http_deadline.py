"""One deadline for a whole HTTPS request, on every wait of its connections.

httpx's timeouts apply to each read on its own, so a server sending one byte every
``timeout_s - ε`` (headers, body or the TLS handshake) would otherwise hold a worker forever.
The deadline travels with the request (a context variable), not with the connection: connections
are pooled and shared by requests. The HTTPS executor's pinned backend (which the OAuth client
also uses) connects through :class:`DeadlineBackend`; a time-stamping authority's client is
:func:`deadline_client`.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx


@contextmanager
def request_deadline(deadline: float) -> Iterator[None]:
    """Bound every wait in this block (in this thread) by ``deadline`` (monotonic time)."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


# The monotonic time by which the current request (in this thread) must be over.
_DEADLINE: ContextVar[float | None] = ContextVar("safeport_https_deadline", default=None)


def bounded_wait(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` cut to what is left of the current request's deadline; raise once it passed."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise expired("the request's deadline passed")
    return remaining if timeout is None else min(timeout, remaining)


class DeadlineStream(httpcore.NetworkStream):
    """A connection's stream whose every wait ends by the current request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, bounded_wait(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, bounded_wait(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        try:
            limit = bounded_wait(timeout, httpcore.ConnectTimeout)
        except httpcore.ConnectTimeout:
            self._inner.close()  # as the inner stream does when its own handshake fails
            raise
        return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, limit))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own backend, its connections' every wait bounded by the request's deadline."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        limit = bounded_wait(timeout, httpcore.ConnectTimeout)
        return DeadlineStream(
            self._inner.connect_tcp(host, port, limit, local_address, socket_options)
        )

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("no unix sockets")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _DeadlineTransport(httpx.HTTPTransport):
    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        super().__init__(verify=ssl_context, trust_env=False)
        # httpx does not expose the network backend; its pool is replaced by the same pool on
        # ours (the trickling-server tests fail if this ever stops working).
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            network_backend=DeadlineBackend(),
            max_connections=4,
            max_keepalive_connections=0,
            http1=True,
            http2=False,
        )


def deadline_client(ssl_context: ssl.SSLContext | None = None) -> httpx.Client:
    """A client whose requests, made inside :func:`request_deadline`, end by that deadline:
    no redirects followed, no proxy or CA taken from the environment, no connection kept."""
    context = ssl_context if ssl_context is not None else httpx.create_ssl_context()
    return httpx.Client(
        transport=_DeadlineTransport(context), follow_redirects=False, trust_env=False
    )
