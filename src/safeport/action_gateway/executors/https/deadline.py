"""One deadline for a whole HTTPS request, on every wait of its pooled connections.

httpx's timeouts apply to each read on its own, so a server sending one byte every
``timeout_s - ε`` (headers, body or the TLS handshake) would otherwise hold a worker forever.
The deadline travels with the request (a context variable), not with the connection: connections
are pooled and shared by requests.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore


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
