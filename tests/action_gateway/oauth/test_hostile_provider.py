"""An authorization server that answers badly, on real TLS (a test CA), as an attacker's or a
broken provider would: an answer past the size bound, one that never ends or comes too slowly,
a redirect, a compressed answer, broken HTTP, an http:// endpoint, a certificate from another CA.
Each is refused with a bounded wait, nothing is followed or sent anywhere else, and no error
quotes what was posted (the refresh token, the client secret) or what came back."""

from __future__ import annotations

import json
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trustme

from harness.real_tls import API_HOST
from safeport.action_gateway.oauth.client import OAuthClient
from safeport.action_gateway.oauth.errors import (
    OAuthBadResponse,
    OAuthError,
    OAuthGrantDead,
    OAuthUnreachable,
)
from safeport.action_gateway.oauth.transport import FormValue, OAuthHttp
from safeport.shared.schemas.config_oauth import OAuthGrantSpec
from safeport.vault.secrets import SecretBytes
from tests.action_gateway.executors.hostile_tls import (
    HostileServer,
    json_response,
    response,
    running_hostile_server,
)

REFRESH = "CANARY-hostile-refresh-7c1f9a"
SECRET = "CANARY-hostile-client-secret-22b0"
MAX_BYTES = 4096
TIMEOUT_S = 1.0
# The bound on any one refused request: the timeout plus a loaded machine's scheduling.
BOUND_S = TIMEOUT_S + 4.0


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with running_hostile_server() as server:
        yield server


def _http(ca_file: Path | str) -> OAuthHttp:
    return OAuthHttp(
        str(ca_file),
        TIMEOUT_S,
        MAX_BYTES,
        allow_private=True,
        resolver=lambda host, port: ["127.0.0.1"],
    )


def _refresh(server: HostileServer, path: str = "/token") -> Callable[[], object]:
    http = _http(server.ca_file)
    form: dict[str, FormValue] = {"grant_type": "refresh_token", "refresh_token": _refresh_token()}
    secret = SecretBytes(SECRET.encode())
    return lambda: http.post_form(
        f"{server.base_url()}{path}", form, basic=("sp-confidential", secret)
    )


def _refresh_token() -> SecretBytes:
    return SecretBytes(REFRESH.encode())


def _everything_said(error: BaseException) -> str:
    text = "".join(traceback.format_exception(error)) + repr(error)
    seen: BaseException | None = error
    while seen is not None:
        text += repr(seen) + str(seen.args)
        seen = seen.__cause__ or seen.__context__
    return text


def _refused(call: Callable[[], object], kind: type[OAuthError]) -> OAuthError:
    started = time.monotonic()
    with pytest.raises(OAuthError) as caught:
        call()
    assert time.monotonic() - started < BOUND_S
    assert isinstance(caught.value, kind), caught.value
    said = _everything_said(caught.value)
    assert REFRESH not in said and SECRET not in said
    assert "CANARY" not in said  # nor anything the server sent back
    return caught.value


def _answer(raw: bytes) -> Callable[[socket.socket, bytes], None]:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        conn.sendall(raw)

    return behaviour


def test_an_answer_past_the_size_bound_is_refused(hostile: HostileServer) -> None:
    body = b'{"access_token": "CANARY-' + b"x" * MAX_BYTES + b'", "token_type": "bearer"}'
    hostile.behaviour = _answer(json_response(body))
    error = _refused(_refresh(hostile), OAuthBadResponse)
    assert "max_response_bytes" in error.message


def test_an_answer_that_never_ends_is_cut_at_the_bound(hostile: HostileServer) -> None:
    def endless(conn: socket.socket, head: bytes) -> None:
        conn.sendall(response("200 OK", {"Content-Type": "application/json"})[:-2])
        conn.sendall(b"Transfer-Encoding: chunked\r\n\r\n")
        while not hostile.stop.is_set():
            conn.sendall(b"400\r\n" + b"CANARY-" * 146 + b"xx\r\n")

    hostile.behaviour = endless
    _refused(_refresh(hostile), OAuthBadResponse)


@pytest.mark.parametrize("stage", ["no answer", "trickled headers", "trickled body"])
def test_a_slow_provider_is_given_up_on_at_the_deadline(hostile: HostileServer, stage: str) -> None:
    release = threading.Event()

    def slow(conn: socket.socket, head: bytes) -> None:
        raw = json_response(b'{"access_token": "CANARY-slow", "token_type": "bearer"}')
        if stage == "no answer":
            release.wait(10)
            return
        split = raw.index(b"\r\n\r\n") + 4 if stage == "trickled body" else 0
        conn.sendall(raw[:split])
        for byte in raw[split:]:
            if release.wait(0.3):
                return
            conn.sendall(bytes([byte]))

    hostile.behaviour = slow
    try:
        _refused(_refresh(hostile), OAuthUnreachable)
    finally:
        release.set()


@pytest.mark.parametrize(
    "location",
    ["https://other.safeport.test/token", "/token-elsewhere", "http://169.254.169.254/latest/"],
)
def test_a_redirect_is_refused_and_never_followed(hostile: HostileServer, location: str) -> None:
    hostile.behaviour = _answer(
        response("307 Temporary Redirect", {"Location": location, "Content-Length": "0"})
    )
    error = _refused(_refresh(hostile), OAuthBadResponse)
    assert "redirect" in error.message
    assert len(hostile.requests) == 1  # the refresh token went nowhere else


def test_a_compressed_answer_is_refused(hostile: HostileServer) -> None:
    hostile.behaviour = _answer(
        json_response(b"\x1f\x8b\x08\x00CANARY", **{"Content-Encoding": "gzip"})
    )
    _refused(_refresh(hostile), OAuthBadResponse)


@pytest.mark.parametrize(
    "raw",
    [
        b"NOT HTTP AT ALL CANARY-junk\r\n\r\n",
        b'HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{"access_token": "CANARY-short"}',
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    ],
)
def test_broken_http_is_refused(hostile: HostileServer, raw: bytes) -> None:
    def broken(conn: socket.socket, head: bytes) -> None:
        conn.sendall(raw)
        conn.shutdown(socket.SHUT_WR)

    hostile.behaviour = broken
    _refused(_refresh(hostile), OAuthError)


@pytest.mark.parametrize(
    "url",
    [
        "http://api.safeport.test/token",
        "http://127.0.0.1/token",
        "ftp://api.safeport.test/token",
        "https://user:pass@api.safeport.test/token",
    ],
)
def test_a_plain_http_or_odd_endpoint_is_refused_before_any_connection(
    hostile: HostileServer, url: str
) -> None:
    hostile.behaviour = _answer(json_response(b"{}"))
    http = _http(hostile.ca_file)
    form: dict[str, FormValue] = {"grant_type": "refresh_token", "refresh_token": _refresh_token()}
    target = url.replace("api.safeport.test", f"{API_HOST}:{hostile.port}")
    _refused(lambda: http.post_form(target, form), OAuthBadResponse)
    assert hostile.requests == []


def test_a_certificate_from_another_ca_is_refused_before_anything_is_sent(
    hostile: HostileServer, tmp_path: Path
) -> None:
    hostile.behaviour = _answer(json_response(b"{}"))
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    http = _http(other)
    form: dict[str, FormValue] = {"refresh_token": _refresh_token()}
    _refused(lambda: http.post_form(f"{hostile.base_url()}/token", form), OAuthUnreachable)
    assert hostile.requests == []


def test_a_well_behaved_answer_is_read(hostile: HostileServer) -> None:
    # The same server and client, answering properly: the refusals above are the answers'.
    body = b'{"access_token": "a", "token_type": "bearer", "expires_in": 60}'
    hostile.behaviour = _answer(json_response(body))
    answer = _refresh(hostile)()
    assert getattr(answer, "status", None) == 200
    assert getattr(answer, "body", None) == body
    head = hostile.requests[0].decode("latin-1").lower()
    assert "authorization: basic " in head


# --- the provider's answers are wrong, not its HTTP ---------------------------------------------


def _routes(server: HostileServer, answers: dict[str, bytes]) -> None:
    """Answer each path with its raw JSON body (404 elsewhere)."""

    def route(conn: socket.socket, head: bytes) -> None:
        path = head.split(b" ", 2)[1].decode("latin-1").split("?")[0]
        body = answers.get(path)
        if body is None:
            conn.sendall(response("404 Not Found", {"Content-Length": "0"}))
        else:
            status = "400 Bad Request" if b'"error"' in body else "200 OK"
            conn.sendall(
                response(
                    status,
                    {"Content-Type": "application/json", "Content-Length": str(len(body))},
                    body,
                )
            )

    server.behaviour = route


def _client(server: HostileServer) -> OAuthClient:
    spec = OAuthGrantSpec.model_validate(
        {
            "issuer": server.base_url(),
            "client_id": "sp-native",
            "ca_file": str(server.ca_file),
            "allow_private_addresses": True,
            "timeout_s": TIMEOUT_S,
            "max_response_bytes": MAX_BYTES,
        }
    )
    return OAuthClient(spec, _http(server.ca_file))


def _metadata(server: HostileServer, **changes: object) -> bytes:
    base = server.base_url()
    document: dict[str, object] = {
        "issuer": base,
        "authorization_endpoint": f"{base}/auth",
        "token_endpoint": f"{base}/token",
        "code_challenge_methods_supported": ["S256"],
        **changes,
    }
    return json.dumps(document).encode()


WELL_KNOWN = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


@pytest.mark.parametrize(
    "changes",
    [
        {"issuer": "https://evil.safeport.test"},
        {"issuer": "https://api.safeport.test"},  # the right host, another port
        {"token_endpoint": "http://api.safeport.test/token"},
        {"code_challenge_methods_supported": ["plain"]},
    ],
    ids=["other issuer", "other port", "http token endpoint", "no S256"],
)
def test_metadata_that_does_not_hold_is_refused(
    hostile: HostileServer, changes: dict[str, object]
) -> None:
    _routes(hostile, dict.fromkeys(WELL_KNOWN, _metadata(hostile, **changes)))
    _refused(_client(hostile).endpoints, OAuthBadResponse)


@pytest.mark.parametrize(
    "body",
    [
        b"{not json CANARY-broken",
        b'["CANARY-array"]',
        b'{"access_token": 42, "token_type": "bearer"}',
        b'{"access_token": "CANARY-a", "token_type": "mac"}',
        b'{"token_type": "bearer", "refresh_token": "CANARY-r"}',
        b'{"access_token": "CANARY-a", "token_type": "bearer", "expires_in": "soon"}',
    ],
    ids=["not json", "array", "number token", "not bearer", "no access token", "bad expiry"],
)
def test_a_malformed_token_answer_is_refused_without_quoting_it(
    hostile: HostileServer, body: bytes
) -> None:
    _routes(hostile, {**dict.fromkeys(WELL_KNOWN, _metadata(hostile)), "/token": body})
    client = _client(hostile)
    _refused(lambda: client.refresh(SecretBytes(REFRESH.encode()), None), OAuthBadResponse)


def test_an_error_description_holding_a_secret_is_withheld(hostile: HostileServer) -> None:
    leak = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    error = json.dumps({"error": "invalid_request", "error_description": f"bad token {leak}"})
    _routes(hostile, {**dict.fromkeys(WELL_KNOWN, _metadata(hostile)), "/token": error.encode()})
    client = _client(hostile)
    refused = _refused(lambda: client.refresh(SecretBytes(REFRESH.encode()), None), OAuthError)
    assert leak not in _everything_said(refused)
    assert "invalid_request" in refused.message


def test_invalid_grant_is_the_grant_dead(hostile: HostileServer) -> None:
    error = b'{"error": "invalid_grant", "error_description": "refresh token already used"}'
    _routes(hostile, {**dict.fromkeys(WELL_KNOWN, _metadata(hostile)), "/token": error})
    client = _client(hostile)
    _refused(lambda: client.refresh(SecretBytes(REFRESH.encode()), None), OAuthGrantDead)
