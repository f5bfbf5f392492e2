"""The loopback redirect of `sp oauth connect` (RFC 8252 section 7.3): one listener on
``127.0.0.1`` at a port the system picks, that takes the browser's one request to
``/callback`` and hands its query to the gateway.

Nothing here reads the query's meaning: the gateway checks ``state``, ``iss`` and the code. The
listener answers any other path 404 and keeps waiting, refuses a query that names a parameter
twice (the gateway would refuse it too), stops after a bounded number of requests, and never
waits past the caller's deadline.
"""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import TracebackType
from urllib.parse import urlsplit

from safeport.action_gateway.oauth.protocol import parse_callback_query
from safeport.errors import UsageError

CALLBACK_PATH = "/callback"
MAX_REQUESTS = 32
MAX_QUERY_CHARS = 16 * 1024
_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>safeport</title>"
    b"<p>safeport has the provider's answer; return to the terminal.</p>"
)


class LoopbackCallback:
    def __init__(self) -> None:
        self._server = HTTPServer(("127.0.0.1", 0), _Handler)
        self._server.captured = None  # type: ignore[attr-defined]
        self._requests = 0

    @property
    def redirect_uri(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}{CALLBACK_PATH}"

    def wait(self, deadline: float) -> dict[str, str]:
        """The callback's query parameters, once the browser brings them."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise UsageError("no answer from the browser in time; run `sp oauth connect` again")
            if self._requests >= MAX_REQUESTS:
                raise UsageError("too many requests reached the callback listener; connect again")
            self._server.timeout = left
            self._requests += 1
            self._server.handle_request()
            captured: str | None = self._server.captured  # type: ignore[attr-defined]
            if captured is not None:
                return _query(captured)

    def __enter__(self) -> LoopbackCallback:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    timeout = 10  # a connection that sends nothing does not hold the listener

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != CALLBACK_PATH or len(parts.query) > MAX_QUERY_CHARS:
            self.send_error(404)
            return
        self.server.captured = parts.query  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(_PAGE)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(_PAGE)

    def log_message(self, format: str, *args: object) -> None:
        return  # the query holds the authorization code: never printed


def _query(text: str) -> dict[str, str]:
    # Read as the gateway reads it: a name given twice or an oversized query is refused.
    return parse_callback_query(text)
