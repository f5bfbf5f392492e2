"""A request's deadline holds from the gateway's side against a TLS server (the suite's hostile
one, its certificate from a test CA) that trickles its answer a byte a second, or says nothing
at all: the answer comes within ``timeout_s`` + 2 s, the server sees its connection closed, and
the next request to it works."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator

import pytest

from harness.real_tls import API_HOST
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import HttpOperation, HttpService
from safeport.vault.secrets import SecretBytes, TokenSecret
from tests.action_gateway.executors.hostile_tls import (
    Behaviour,
    HostileServer,
    json_response,
    running_hostile_server,
)
from tests.action_gateway.executors.https.test_https_executor import StaticResolver
from tests.action_gateway.executors.planned import PlannedHttp, PreparingExecutor

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.https"

pytestmark = pytest.mark.integration

TIMEOUT_S = 1
CONTRACT_S = TIMEOUT_S + 2.0


@pytest.fixture
def executor() -> Iterator[PreparingExecutor]:
    resolver = StaticResolver({API_HOST: ["127.0.0.1"]})
    executor = PreparingExecutor(GatewayExecutor(resolver=resolver))
    yield executor
    executor.close_all()


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with running_hostile_server() as server:
        yield server


def _action(server: HostileServer) -> PlannedHttp:
    service = HttpService.model_validate(
        {
            "base_url": server.base_url(),
            "credential": "deploy-token",
            "ca_file": str(server.ca_file),
            "allow_private_addresses": True,
            "timeout_s": TIMEOUT_S,
        }
    )
    operation = HttpOperation.model_validate(
        {"method": "GET", "path": "/x", "params": {}, "response_fields": ["state"]}
    )
    return PlannedHttp("deploy-api", service, "op", operation, {})


def _token() -> TokenSecret:
    return TokenSecret(SecretBytes(b"deadline-token-5c1e"))


def _trickle(
    server: HostileServer, first: bytes, byte: bytes | None, closed: threading.Event
) -> Behaviour:
    """Send ``first``, then ``byte`` once a second (nothing when None) until the client hangs
    up, which sets ``closed``."""

    def behaviour(conn: socket.socket, head: bytes) -> None:
        conn.sendall(first)
        conn.settimeout(1.0)
        try:
            while not server.stop.is_set():
                try:
                    if not conn.recv(1):
                        break
                except TimeoutError:
                    if byte is not None:
                        conn.sendall(byte)
        except (OSError, ssl.SSLError):
            pass
        closed.set()

    return behaviour


@pytest.mark.parametrize(
    ("first", "byte"),
    [
        (b"HTTP/1.1 200 OK\r\n", b"X"),  # headers a byte a second
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{", b" "),  # the body likewise
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"1"),  # a chunk's size
        (b"", None),  # nothing at all after the request
    ],
    ids=["headers", "body", "chunked", "silent"],
)
def test_a_trickling_server_is_cut_off_in_time_and_its_connection_closed(
    hostile: HostileServer, executor: PreparingExecutor, first: bytes, byte: bytes | None
) -> None:
    closed = threading.Event()
    hostile.behaviour = _trickle(hostile, first, byte, closed)
    started = time.monotonic()
    with pytest.raises(ActionError) as caught:
        executor.http_request(_action(hostile), _token())
    elapsed = time.monotonic() - started
    assert caught.value.failure == "timeout" and caught.value.stopped_by == "close"
    assert elapsed <= CONTRACT_S, elapsed
    assert closed.wait(10), "the server's connection was left open"
    # The pool holds no half-read connection: the next request gets a fresh one and its answer.
    hostile.behaviour = lambda conn, head: conn.sendall(json_response(b'{"state": "ok"}'))
    result = executor.http_request(_action(hostile), _token())
    assert result.status == 200 and result.fields == {"state": "ok"}
