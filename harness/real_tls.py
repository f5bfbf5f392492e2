"""A real TLS server on 127.0.0.1 with a CA made for the test (trustme), started once.

It serves one certificate for two names (``api.safeport.test`` and ``other.safeport.test``);
the executor reaches them through the injectable resolver, never /etc/hosts. Endpoints: JSON
status, echo of the request target and Host, slow, huge, redirects (to the other name and to the
metadata address), a header echo (to try to leak the credential), non-JSON and error answers,
and whatever JSON a test puts in ``answers`` for a path (bytes are sent as they are). Every
request is recorded so tests can prove that something never arrived.
"""

from __future__ import annotations

import json
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trustme

API_HOST = "api.safeport.test"
OTHER_HOST = "other.safeport.test"


@dataclass
class Recorded:
    requests: list[dict[str, Any]] = field(default_factory=list)
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # path (without query) -> the JSON a test wants served there, checked before the routes below
    answers: dict[str, object] = field(default_factory=dict)

    def paths(self) -> list[str]:
        with self.lock:
            return [r["path"] for r in self.requests]


@dataclass(frozen=True)
class TlsServer:
    port: int
    ca_file: Path
    recorded: Recorded

    def base_url(self, host: str = API_HOST) -> str:
        return f"https://{host}:{self.port}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.recorded.lock:
            self.server.recorded.requests.append(
                {"path": self.path, "headers": dict(self.headers.items()), "body": body}
            )
        route = self.path.split("?", 1)[0]
        port = self.server.server_address[1]
        with self.server.recorded.lock:
            answer = self.server.recorded.answers.get(route)
        if isinstance(answer, bytes):  # a body sent as it is: hostile JSON for the parsers
            self._send(200, answer, "application/json")
        elif answer is not None:
            self._json(200, answer)
        elif route.startswith("/v1/") and route.endswith("/status"):
            parts = route.split("/")
            self._json(
                200,
                {
                    "environment": parts[2],
                    "service": parts[4],
                    "state": "running",
                    "revision": "r42",
                    "deployment": {"replicas": [{"id": "a"}, {"id": "b"}]},
                    "secret_like": "not declared, never returned",
                },
            )
        elif route.startswith("/echo-target"):
            self._json(200, {"target": self.path, "host": self.headers.get("Host")})
        elif route == "/echo-headers":
            headers = dict(self.headers.items())
            self._json(
                200,
                {
                    "headers": headers,
                    "authorization": headers.get("Authorization", ""),
                    "note": "hello",
                    "x_api_key": headers.get("X-Api-Key", ""),
                },
            )
        elif route == "/slow":
            time.sleep(3)
            self._json(200, {"state": "late"})
        elif route == "/huge":
            self._json(200, {"blob": "x" * (3 * 1024 * 1024)})
        elif route == "/redirect-other":
            self._redirect(f"https://{OTHER_HOST}:{port}/v1/x/services/y/status?token=abc")
        elif route == "/redirect-metadata":
            self._redirect("http://169.254.169.254/latest/meta-data/iam/security-credentials/")
        elif route == "/not-json":
            self._send(200, b"<html>hello</html>", "text/html")
        elif route == "/error":
            self._json(500, {"error": "boom", "state": "broken"})
        elif route == "/deploy":
            self._json(200, {"received": json.loads(body or b"null"), "state": "queued"})
        else:
            self._json(404, {"error": "not found"})

    def _json(self, status: int, payload: object) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Internal-Token", "response-header-never-returned")
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    recorded: Recorded

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client refusing our certificate is a test outcome, not noise

    def get_request(self) -> Any:
        request = super().get_request()
        # Headers and body leave in two writes; without NODELAY every answer waits ~40 ms.
        request[0].setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.recorded.lock:
            self.recorded.connections += 1
        return request


@contextmanager
def running_tls_server() -> Iterator[TlsServer]:
    ca = trustme.CA()
    cert = ca.issue_cert(API_HOST, OTHER_HOST)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(context)
    workdir = Path(tempfile.mkdtemp(prefix="sp-tls-"))
    ca_file = workdir / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    server = _Server(("127.0.0.1", 0), _Handler)
    server.recorded = Recorded()
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield TlsServer(port=server.server_address[1], ca_file=ca_file, recorded=server.recorded)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        ca_file.unlink(missing_ok=True)
        workdir.rmdir()
