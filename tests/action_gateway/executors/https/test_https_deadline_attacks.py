"""A request's deadline against a server that stalls before any HTTP: it accepts TCP and never
starts TLS, or trickles its handshake a byte at a time. The answer comes within ``timeout_s`` +
2 s, says the connection was closed, and the server sees it closed."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from harness.real_tls import API_HOST
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import HttpOperation, HttpService
from tests.action_gateway.executors.hostile_ssh import running_raw_server
from tests.action_gateway.executors.hostile_tls import HostileServer
from tests.action_gateway.executors.https.test_https_deadline import (
    CONTRACT_S,
    TIMEOUT_S,
    _token,
    executor,  # noqa: F401 (a fixture)
    hostile,  # noqa: F401 (a fixture, for its CA file)
)
from tests.action_gateway.executors.planned import PlannedHttp, PreparingExecutor

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.https"

pytestmark = pytest.mark.integration


def _silent(conn: socket.socket, stop: threading.Event) -> None:
    conn.settimeout(0.2)
    while not stop.is_set():
        try:
            if not conn.recv(4096):
                return  # the client hung up
        except TimeoutError:
            continue


def _handshake_trickle(conn: socket.socket, stop: threading.Event) -> None:
    # A TLS record header promising a large ServerHello, then its bytes one every 0.3 s.
    conn.sendall(b"\x16\x03\x03\x40\x00\x02")
    conn.settimeout(0.3)
    while not stop.is_set():
        try:
            if not conn.recv(4096):
                return
        except TimeoutError:
            conn.sendall(b"\x00")


@pytest.mark.parametrize("behaviour", [_silent, _handshake_trickle], ids=["silent", "trickle"])
def test_a_server_that_never_finishes_the_tls_handshake_is_cut_off_in_time(
    executor: PreparingExecutor,  # noqa: F811
    hostile: HostileServer,  # noqa: F811
    behaviour: Callable[[socket.socket, threading.Event], None],
) -> None:
    with running_raw_server(behaviour) as port:
        service = HttpService.model_validate(
            {
                "base_url": f"https://{API_HOST}:{port}/",
                "credential": "deploy-token",
                "ca_file": str(hostile.ca_file),
                "allow_private_addresses": True,
                "timeout_s": TIMEOUT_S,
            }
        )
        operation = HttpOperation.model_validate(
            {"method": "GET", "path": "/x", "params": {}, "response_fields": ["state"]}
        )
        started = time.monotonic()
        with pytest.raises(ActionError) as caught:
            executor.http_request(PlannedHttp("deploy-api", service, "op", operation, {}), _token())
        elapsed = time.monotonic() - started
    assert elapsed <= CONTRACT_S, elapsed
    assert caught.value.failure == "timeout" and caught.value.stopped_by == "close"
    assert "deadline-token-5c1e" not in str(caught.value)
