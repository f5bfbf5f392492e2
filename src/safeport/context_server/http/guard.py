"""The transport's guards, outermost first, before any token is looked at.

* ``Host`` must name the public URL or loopback at our port (421 otherwise): a DNS-rebinding
  page reaches the server under the attacker's host name. ``Origin``, when a browser sends one,
  must be the public URL's or loopback's (403): a page elsewhere cannot drive the endpoints.
* Request bodies are bounded in size (413) and in time (408): a client that trickles its body
  cannot hold a connection and a task for long. Slow headers are the HTTP server's to bound
  (see ``serving``).
* After the bearer middleware has looked at the token, :class:`RateGate` charges the request
  to its client's bucket, or to the shared anonymous one (429 with ``Retry-After``). An
  anonymous token request is charged by its handler instead, which can tell from the grant's
  signature which client it comes from (``grant_charge``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from safeport.context_server.http.admission import Admission

MAX_BODY_BYTES = 1024 * 1024
# h11 bounds a head that arrives in pieces; one that arrives whole is bounded here.
MAX_HEADER_BYTES = 16 * 1024
BODY_DEADLINE_S = 10.0


class TransportGuard:
    """Host and Origin checks and the body's size and time bounds."""

    def __init__(
        self,
        app: ASGIApp,
        hosts: Collection[str],
        origins: Collection[str],
        max_body: int = MAX_BODY_BYTES,
        body_deadline_s: float = BODY_DEADLINE_S,
    ) -> None:
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(o.lower() for o in origins)
        self.max_body = max_body
        self.body_deadline_s = body_deadline_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets here
        if sum(len(k) + len(v) + 4 for k, v in scope["headers"]) > MAX_HEADER_BYTES:
            await plain(send, 431, "request headers too large")
            return
        headers = Headers(scope=scope)
        if headers.get("host", "").lower() not in self.hosts:
            await plain(send, 421, "misdirected request: unknown Host")
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            await plain(send, 403, "forbidden: cross-origin request")
            return
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            await plain(send, 413, "request body too large")
            return
        body = await self._read_body(receive, send)
        if body is None:
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, receive: Receive, send: Send) -> list[Message] | None:
        """The whole body, read within the deadline and the size bound (None: refused)."""
        messages: list[Message] = []
        size = 0
        with anyio.move_on_after(self.body_deadline_s) as deadline:
            while True:
                message = await receive()
                messages.append(message)
                if message["type"] != "http.request":
                    return messages
                size += len(message.get("body", b""))
                if size > self.max_body:
                    await plain(send, 413, "request body too large")
                    return None
                if not message.get("more_body", False):
                    return messages
        if deadline.cancel_called:
            await plain(send, 408, "request body too slow")
        return None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
    queue: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    queue += [m for m in messages if m["type"] != "http.request"]

    async def replayed() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replayed


TOKEN_PATH = "/token"  # noqa: S105 - a path, not a secret


class RateGate:
    """Charge each request to its approved client, or to the anonymous bucket; an anonymous
    POST to :data:`TOKEN_PATH` is let through for its handler to charge."""

    def __init__(self, app: ASGIApp, admission: Admission) -> None:
        self.app = app
        self.admission = admission

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        user = scope.get("user")
        if isinstance(user, AuthenticatedUser):
            wait = self.admission.admit_client(user.access_token.client_id)
        elif scope["path"] == TOKEN_PATH and scope["method"] == "POST":
            wait = None
        else:
            wait = self.admission.admit_anonymous()
        if wait is not None:
            await plain(send, 429, TOO_MANY, [(b"retry-after", retry_after(wait).encode())])
            return
        await self.app(scope, receive, send)


TOO_MANY = "too many requests"


def retry_after(wait: float) -> str:
    """``Retry-After`` for a wait in seconds: whole seconds, at least one."""
    return str(max(1, math.ceil(wait)))


async def plain(
    send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """A short JSON error answer (``error`` and ``error_description``), nothing echoed back."""
    body = json.dumps({"error": _ERROR_CODES.get(status, "error"), "error_description": text})
    data = body.encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


_ERROR_CODES = {
    401: "invalid_token",
    403: "forbidden",
    408: "request_timeout",
    413: "request_too_large",
    421: "misdirected_request",
    429: "rate_limited",
    431: "request_too_large",
    503: "temporarily_unavailable",
}
