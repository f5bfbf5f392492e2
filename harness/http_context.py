"""A real `sp context serve --http` process on 127.0.0.1 for the tests of one module."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from harness.startup import START_S


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class HttpServer:
    url: str
    port: int
    home: Path
    root: Path
    process: subprocess.Popen[bytes]
    stderr: Path

    def log(self) -> str:
        return self.stderr.read_text(errors="replace")


@contextmanager
def http_server(
    home: Path,
    root: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    port: int | None = None,
    client: bool = False,
) -> Iterator[HttpServer]:
    """``client``: run it under ``flock`` as a client program would start it, so that the
    gateway sees the test's `sp approvals` as a human outside the requester's client."""
    port = port or free_port()
    stderr = home / f"http-{port}.log"
    argv = [
        sys.executable,
        "-c",
        "from safeport.cli import main; main()",
        "context",
        "serve",
        "--root",
        str(root),
    ]
    argv += ["--http", f"127.0.0.1:{port}", *extra]
    if client:
        argv = ["flock", str(home / f"client-{port}.lock"), *argv]
    environment = {**os.environ, "SAFEPORT_HOME": str(home), **(env or {})}
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            argv, env=environment, stdout=errors, stderr=errors, start_new_session=True
        )
    server = HttpServer(f"http://127.0.0.1:{port}", port, home, root, process, stderr)
    try:
        _wait_listening(server)
        yield server
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server under flock as well
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        _wait_group_gone(process.pid)


def _wait_group_gone(group: int) -> None:
    """Until every process of the group has exited: flock may end before the server under it,
    which would still hold the port a next server on the same port binds."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.killpg(group, signal.SIGKILL)


def _wait_listening(server: HttpServer) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"the server exited: {server.log()}")
        try:
            httpx.get(server.url + "/.well-known/oauth-protected-resource/mcp", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"the server did not listen: {server.log()}")
