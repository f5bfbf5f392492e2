"""`sp context serve --http` as a stranger meets it: the transport's guards, the 401 that
points to the metadata, and the relay when the gateway is down. Each attack has the
legitimate request beside it."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.http_context import HttpServer, http_server
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"

CANARY = "CANARYsmallworkspace"
META = "/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root, home = small_workspace(tmp_path_factory.mktemp("http-guards"))
    with http_server(home, root, "--public-url", "https://tunnel.safeport.test") as running:
        yield running


def get(server: HttpServer, path: str, **headers: str) -> httpx.Response:
    return httpx.get(server.url + path, headers=headers, timeout=10)


def test_the_protected_resource_metadata_names_the_public_url(server: HttpServer) -> None:
    answer = get(server, META)
    assert answer.status_code == 200
    assert answer.json()["resource"] == "https://tunnel.safeport.test/mcp"
    assert answer.json()["authorization_servers"] == ["https://tunnel.safeport.test"]


def test_an_attackers_host_is_misdirected_and_the_tunnels_host_is_served(
    server: HttpServer,
) -> None:
    assert get(server, META, host="attacker.example").status_code == 421
    assert get(server, META, host=f"attacker.example:{server.port}").status_code == 421
    assert get(server, META, host="tunnel.safeport.test").status_code == 200
    assert get(server, META, host=f"localhost:{server.port}").status_code == 200


def test_an_attackers_origin_is_forbidden_and_the_public_origin_is_served(
    server: HttpServer,
) -> None:
    # DNS rebinding: a page at the attacker's origin whose name now resolves to 127.0.0.1.
    assert get(server, META, origin="http://attacker.example").status_code == 403
    assert get(server, META, origin="null").status_code == 403
    assert get(server, META, origin="https://tunnel.safeport.test").status_code == 200


def test_no_token_or_a_bad_one_gets_401_with_the_resource_metadata(server: HttpServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"authorization": "Bearer nonsense"}, {"authorization": "Basic eDp5"}):
        answer = httpx.post(server.url + "/mcp", json=body, headers=headers, timeout=10)
        assert answer.status_code == 401
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="https://tunnel.safeport.test{META}"' in challenge


def test_oversized_bodies_are_refused_before_anything_reads_them(server: HttpServer) -> None:
    big = b'{"x":"' + b"a" * (2 * 1024 * 1024) + b'"}'
    answer = httpx.post(server.url + "/token", content=big, timeout=30)
    assert answer.status_code == 413

    def chunks() -> Iterator[bytes]:
        for _ in range(40):
            yield b"a" * 64 * 1024

    answer = httpx.post(server.url + "/register", content=chunks(), timeout=30)
    assert answer.status_code == 413
    small = httpx.post(server.url + "/register", json={"client_name": "x"}, timeout=30)
    assert small.status_code == 503  # read and relayed; the gateway is down


def test_oversized_headers_are_refused(server: HttpServer) -> None:
    answer = get(server, META, **{"x-big": "a" * 64 * 1024})
    assert answer.status_code in (400, 431)
    assert get(server, META, **{"x-small": "a" * 1024}).status_code == 200


def test_slow_clients_are_cut_off_while_a_prompt_one_is_served(server: HttpServer) -> None:
    outcomes: dict[str, object] = {}

    def slow_head() -> None:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(b"GET " + META.encode() + b" HTTP/1.1\r\n")
            started = time.monotonic()
            try:
                while time.monotonic() - started < 25:
                    sock.sendall(b"X-Drip: 1\r\n")
                    time.sleep(0.5)
                outcomes["head"] = "kept open"
            except OSError:
                outcomes["head"] = time.monotonic() - started

    def slow_body() -> None:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            head = (
                f"POST /token HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n"
            )
            sock.sendall(head.encode())
            started = time.monotonic()
            try:
                while time.monotonic() - started < 25:
                    sock.sendall(b"a")
                    time.sleep(0.5)
                    sock.setblocking(False)
                    try:
                        if sock.recv(4096).startswith(b"HTTP/1.1 408"):
                            outcomes["body"] = time.monotonic() - started
                            return
                    except BlockingIOError:
                        pass
                    finally:
                        sock.setblocking(True)
                outcomes["body"] = "kept open"
            except OSError:
                outcomes["body"] = time.monotonic() - started

    threads = [threading.Thread(target=slow_head), threading.Thread(target=slow_body)]
    for thread in threads:
        thread.start()
    time.sleep(1)
    assert get(server, META).status_code == 200  # served meanwhile
    for thread in threads:
        thread.join(timeout=40)
    assert isinstance(outcomes["head"], float) and outcomes["head"] < 20
    assert isinstance(outcomes["body"], float) and outcomes["body"] < 20


def test_connections_that_never_send_a_byte_are_closed_and_stop_blocking_others(
    server: HttpServer,
) -> None:
    # More silent connections than the server's concurrency limit: while they hold, a prompt
    # request is turned away (503); they must not hold for longer than the head's deadline.
    silent = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(260)]
    try:
        started = time.monotonic()
        for sock in silent:
            assert sock.recv(1) == b""  # closed by the server, not by the test
        assert time.monotonic() - started < 20
        assert get(server, META).status_code == 200
    finally:
        for sock in silent:
            sock.close()


def test_the_relay_refuses_repeated_parameters_and_says_when_the_gateway_is_down(
    server: HttpServer,
) -> None:
    assert get(server, "/authorize?client_id=a&client_id=b").status_code == 400
    down = get(server, "/authorize?client_id=a&response_type=code")
    assert down.status_code == 503
    assert down.json()["error"] == "temporarily_unavailable"
    assert get(server, "/.well-known/oauth-authorization-server").status_code == 503
    form = {"grant_type": "authorization_code", "code": "x"}
    assert httpx.post(server.url + "/token", data=form, timeout=10).status_code == 503
    # A JSON body where a form belongs is malformed, whoever is behind the relay.
    wrong = httpx.post(server.url + "/token", json=form, timeout=10)
    assert wrong.status_code == 400


def test_an_unauthenticated_flood_is_limited(server: HttpServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        codes = [client.get(META).status_code for _ in range(150)]
    assert 429 in codes
    assert codes[:20] == [200] * 20
    time.sleep(1.0)  # the bucket refills at its rate


def test_nothing_from_a_private_file_or_the_server_log_leaks(server: HttpServer) -> None:
    assert CANARY not in server.log()
    for path in ("/mcp", META, "/authorize?x=.env", "/.env", "/proj/.env"):
        assert CANARY not in get(server, path).text


def test_a_non_loopback_bind_without_tls_is_refused(tmp_path: Path) -> None:
    root, home = small_workspace(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from safeport.cli import main; main()",
            "context",
            "serve",
            "--root",
            str(root),
            "--http",
            "0.0.0.0:18999",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"SAFEPORT_HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode != 0
    assert "without TLS" in done.stderr
