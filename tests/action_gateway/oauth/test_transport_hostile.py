"""The OAuth transport against a provider that misbehaves on purpose (the suite's hostile TLS
server, its certificate from a test CA): an answer trickled a byte at a time is cut at the one
deadline, a compressed or unframed answer is refused, and no error quotes what it sent."""

from __future__ import annotations

import gzip
import socket
import time
from collections.abc import Iterator

import pytest

from safeport.action_gateway.oauth.errors import OAuthBadResponse, OAuthError, OAuthUnreachable
from safeport.action_gateway.oauth.transport import OAuthHttp
from safeport.vault.secrets import SecretBytes
from tests.action_gateway.executors.hostile_tls import (
    Behaviour,
    HostileServer,
    json_response,
    response,
    running_hostile_server,
)

TIMEOUT_S = 1.0
# The answer comes within the deadline and a margin for a loaded machine; without the deadline
# the trickle below would last over 10 s.
CONTRACT_S = TIMEOUT_S + 4.0
LEAK = b'{"access_token": "at-Hostile7Trickle3Value9Never5Shown"'


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with running_hostile_server() as server:
        yield server


def _http(server: HostileServer, timeout_s: float = TIMEOUT_S) -> OAuthHttp:
    return OAuthHttp(
        str(server.ca_file),
        timeout_s,
        65536,
        allow_private=True,
        resolver=lambda h, p: ["127.0.0.1"],
    )


def _quiet(exc: BaseException) -> None:
    assert isinstance(exc, OAuthError)
    assert exc.__cause__ is None and exc.__context__ is None
    for text in (str(exc), repr(exc), exc.diagnostic()):
        assert "at-Hostile" not in text and "c0de-verifier" not in text


def _trickle(head: bytes, body: bytes, every_s: float) -> Behaviour:
    def behaviour(conn: socket.socket, _: bytes) -> None:
        conn.sendall(head)
        for byte in body:
            conn.sendall(bytes([byte]))
            time.sleep(every_s)

    return behaviour


def test_a_body_trickled_byte_by_byte_is_cut_at_the_one_deadline(hostile: HostileServer) -> None:
    body = LEAK + b" " * 60 + b"}"
    head = response(
        "200 OK", {"Content-Type": "application/json", "Content-Length": str(len(body))}
    )
    hostile.behaviour = _trickle(head, body, 0.2)
    http = _http(hostile)
    try:
        started = time.monotonic()
        with pytest.raises(OAuthUnreachable, match="in time") as caught:
            http.post_form(
                f"{hostile.base_url()}/token", {"code_verifier": SecretBytes(b"c0de-verifier")}
            )
        assert time.monotonic() - started < CONTRACT_S
        _quiet(caught.value)
    finally:
        http.close()


def test_headers_trickled_byte_by_byte_are_cut_at_the_one_deadline(hostile: HostileServer) -> None:
    head = response("200 OK", {"Content-Type": "application/json", "X-Pad": "p" * 60})
    hostile.behaviour = _trickle(b"", head, 0.2)
    http = _http(hostile)
    try:
        started = time.monotonic()
        with pytest.raises(OAuthUnreachable, match="in time") as caught:
            http.get_json(f"{hostile.base_url()}/meta")
        assert time.monotonic() - started < CONTRACT_S
        _quiet(caught.value)
    finally:
        http.close()


def test_a_compressed_answer_is_refused(hostile: HostileServer) -> None:
    bomb = gzip.compress(b"{" + b" " * 1_000_000 + b"}")

    def behaviour(conn: socket.socket, _: bytes) -> None:
        conn.sendall(json_response(bomb, **{"Content-Encoding": "gzip"}))

    hostile.behaviour = behaviour
    http = _http(hostile, timeout_s=5)
    try:
        with pytest.raises(OAuthBadResponse, match="compressed") as caught:
            http.get_json(f"{hostile.base_url()}/meta")
        _quiet(caught.value)
    finally:
        http.close()


def test_an_answer_cut_short_is_a_broken_protocol_not_a_token(hostile: HostileServer) -> None:
    def behaviour(conn: socket.socket, _: bytes) -> None:
        conn.sendall(
            response("200 OK", {"Content-Type": "application/json", "Content-Length": "500"}, LEAK)
        )

    hostile.behaviour = behaviour
    http = _http(hostile, timeout_s=5)
    try:
        with pytest.raises(OAuthBadResponse, match="protocol") as caught:
            http.post_form(
                f"{hostile.base_url()}/token", {"code_verifier": SecretBytes(b"c0de-verifier")}
            )
        _quiet(caught.value)
    finally:
        http.close()


def test_a_redirect_with_a_location_is_refused_and_not_followed(hostile: HostileServer) -> None:
    def behaviour(conn: socket.socket, _: bytes) -> None:
        conn.sendall(
            response(
                "307 Temporary Redirect",
                {"Location": "https://evil.example/steal", "Content-Length": "0"},
            )
        )

    hostile.behaviour = behaviour
    http = _http(hostile, timeout_s=5)
    try:
        with pytest.raises(OAuthBadResponse, match="redirect") as caught:
            http.post_form(
                f"{hostile.base_url()}/token", {"code_verifier": SecretBytes(b"c0de-verifier")}
            )
        _quiet(caught.value)
        assert "evil.example" not in str(caught.value)
        assert len(hostile.requests) == 1
    finally:
        http.close()
