"""The inspector reads what the gateway sends it with the strict decoder: it holds the
capabilities the gateway gave up, so a gateway running hostile code must not be able to crash it
with a message (it stops serving, as on any bad request, and every identity fails closed)."""

from __future__ import annotations

import json
import os
import socket
import sys

import pytest

from safeport.action_gateway.identity.inspector import _serve

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the inspector is Linux-only")


def _served(*requests: bytes) -> list[dict[str, object]]:
    """Each request sent, then the inspector's loop run until it stops; its answers."""
    from safeport.action_gateway.identity.linux import LinuxProbe

    gateway_end, inspector_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with gateway_end, inspector_end:
        for request in requests:
            gateway_end.send(request)
        gateway_end.shutdown(socket.SHUT_WR)  # after these, the gateway has gone
        _serve(inspector_end, LinuxProbe())  # returns, never raises
        inspector_end.close()  # as the inspector's exit would
        answers = []
        gateway_end.settimeout(5)
        while data := gateway_end.recv(1 << 20):
            answers.append(json.loads(data))
        return answers


def test_a_fingerprint_request_is_answered() -> None:
    request = json.dumps({"op": "fingerprint", "pid": os.getpid()}).encode()
    answers = _served(request)
    assert len(answers) == 1 and "fingerprint" in answers[0], answers


@pytest.mark.parametrize(
    "hostile",
    [
        b"[" * 150_000,
        b'{"op":' * 30_000,
        b'{"op":"fingerprint","pid":1,"op":"resolve"}',
        b'{"op":"fingerprint","pid":1e999}',
        b'{"op":"' + b'\\"' * 70_000,
    ],
    ids=["150,000 [", "nested keys", "repeated op", "infinite pid", "unterminated"],
)
def test_a_hostile_request_stops_the_inspector_cleanly_after_what_came_before(
    hostile: bytes,
) -> None:
    good = json.dumps({"op": "fingerprint", "pid": os.getpid()}).encode()
    answers = _served(good, hostile)
    assert len(answers) == 1 and "fingerprint" in answers[0], answers
