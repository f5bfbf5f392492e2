"""One deadline for a whole SSH action: getting a transport (connecting, the banner, the key
exchange, authentication, a stale pooled one replaced) and the command on it.

Each paramiko wait has its own timeout (``connect_timeout_s`` for the socket, the banner, the
key exchange and authentication each), so a server that accepts and then stalls would otherwise
hold the answer for several times ``connect_timeout_s`` before the command's ``timeout_s`` even
started. The deadline travels with the call (a context variable), as the HTTPS one does
(shared/http_deadline.py), so the pool's opener keeps its signature.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("safeport_ssh_deadline", default=None)


@contextmanager
def action_deadline(deadline: float) -> Iterator[None]:
    """Bound every SSH wait in this block (in this thread) by ``deadline`` (monotonic time)."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def within(seconds: float) -> float:
    """``seconds``, cut to what is left of the current action's deadline (0 once it passed)."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return seconds
    return max(0.0, min(seconds, deadline - time.monotonic()))
