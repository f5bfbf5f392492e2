"""A hostile HTTPS server on 127.0.0.1: each connection gets a scripted, misbehaving answer.

Unlike the well-behaved server in ``real_tls``, this one writes raw bytes, so it can do what an
attacker's server would: trickle headers one byte at a time, send a gzip bomb, never end a
chunked body, stall the TLS handshake, or send a second response nobody asked for. The
certificate is a real one from a test CA (trustme), so the executor's TLS checks all pass and
only the behaviour under test is hostile.
"""

from __future__ import annotations

import socket
import ssl
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import trustme

from harness.real_tls import API_HOST

Behaviour = Callable[[socket.socket, bytes], None]
"""Called with the connection and the request head (request line and headers) it sent."""


@dataclass
class HostileServer:
    port: int
    ca_file: Path
    behaviour: Behaviour | None = None
    tls: bool = True
    """False: accept TCP and run ``behaviour`` before any TLS (a stalled handshake)."""
    requests: list[bytes] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def base_url(self, host: str = API_HOST) -> str:
        return f"https://{host}:{self.port}"


def response(status: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


def json_response(body: bytes, **headers: str) -> bytes:
    return response(
        "200 OK",
        {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers},
        body,
    )


def _read_head(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


@contextmanager
def running_hostile_server() -> Iterator[HostileServer]:
    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert(API_HOST).configure_cert(context)
    workdir = Path(tempfile.mkdtemp(prefix="sp-hostile-"))
    ca_file = workdir / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    listener = socket.create_server(("127.0.0.1", 0))
    server = HostileServer(port=int(listener.getsockname()[1]), ca_file=ca_file)

    def handle(raw: socket.socket) -> None:
        conn = raw
        try:
            behaviour = server.behaviour
            assert behaviour is not None
            if not server.tls:
                behaviour(raw, b"")
                return
            conn = context.wrap_socket(raw, server_side=True)
            head = _read_head(conn)
            server.requests.append(head)
            behaviour(conn, head)
        except (OSError, ssl.SSLError):
            pass  # the client hung up on us: that is what most tests want
        finally:
            with suppress(OSError):
                conn.close()

    def accept_loop() -> None:
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=handle, args=(raw,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    try:
        yield server
    finally:
        server.stop.set()
        listener.close()
        ca_file.unlink(missing_ok=True)
        workdir.rmdir()
