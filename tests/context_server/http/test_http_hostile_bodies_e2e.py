"""Hostile bodies, queries and tokens against `sp context serve --http` and the real gateway:
each answered with its documented 4xx (an OAuth ``invalid_request`` body on the authorization
endpoints, the JSON-RPC parse error on ``/mcp``, a 401 for a token that is no token) within a
bounded time, and the same server answers the legitimate request that follows."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from harness.http_context import HttpServer, http_server
from harness.remote_flow import Browser, MemoryTokens, provider, read_remotely
from tests.context_server.http.real_gateway import real_gateway
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"

# Each request is bounded: a hung worker fails the test instead of hanging it.
TIMEOUT = httpx.Timeout(10.0)

HOSTILE_JSON = {
    "100,000 [": b"[" * 100_000,
    "100,000 {": b"{" * 100_000,
    "nested keys": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "repeated key": b'{"client_name":"a","redirect_uris":["http://127.0.0.1:9/cb"],'
    b'"client_name":"b"}',
    "NaN": b'{"client_name":NaN}',
    "Infinity": b'{"client_name":"a","x":-Infinity}',
    "1e999999": b'{"client_name":"a","x":1e999999}',
    "10^5-digit integer": b'{"client_name":"a","x":' + b"9" * 100_000 + b"}",
    "lone surrogate": b'{"client_name":"\\ud800","redirect_uris":["http://127.0.0.1:9/cb"]}',
    "invalid UTF-8": b'{"client_name":"\xff\xfe"}',
    "raw NUL": b'{"client_name":"a"}\x00',
    "not an object": b"[1,2,3]",
    # A string that never closes, full of escaped quotes, just under the 1 MiB body bound: the
    # decoder must not read the rest of the body again from each of them.
    "unterminated escaped quotes": b'{"client_name":"' + b'\\"' * 524_000,
}
OAUTH_400 = {"error": "invalid_request", "error_description": "malformed or oversized request"}
PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
LEGITIMATE = {"client_name": "Legitimate", "redirect_uris": ["http://127.0.0.1:9/cb"]}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("gw")
    home.chmod(0o700)
    with real_gateway(home):
        yield home


@pytest.fixture(scope="module")
def server(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root, _ = small_workspace(tmp_path_factory.mktemp("ws"))
    with http_server(home, root, client=True) as running:
        yield running


@pytest.fixture(scope="module")
def approved(home: Path, server: HttpServer) -> tuple[Browser, MemoryTokens]:
    browser, storage = Browser(home), MemoryTokens()
    session = anyio.run(
        read_remotely, server.url + "/mcp", provider(server.url + "/mcp", browser, storage)
    )
    assert session.read["text"] == "zebra crossing\n"
    return browser, storage


def _post(server: HttpServer, path: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(server.url + path, content=body, headers=headers, timeout=TIMEOUT)


@pytest.mark.parametrize("body", HOSTILE_JSON.values(), ids=HOSTILE_JSON.keys())
def test_hostile_json_posted_to_register_is_invalid_request(
    server: HttpServer, body: bytes
) -> None:
    answer = _post(server, "/register", body, **{"content-type": "application/json"})
    assert answer.status_code == 400
    assert answer.json() == OAUTH_400
    assert answer.headers["cache-control"] == "no-store"


def test_registration_still_works_after_the_hostile_bodies(server: HttpServer) -> None:
    for body in HOSTILE_JSON.values():
        _post(server, "/register", body)
    answer = httpx.post(server.url + "/register", json=LEGITIMATE, timeout=TIMEOUT)
    assert answer.status_code == 201, answer.text
    assert answer.json()["client_name"] == "Legitimate"
    assert "Traceback" not in server.log()


HOSTILE_FORMS = {
    "invalid UTF-8": b"grant_type=refresh_token&refresh_token=%ff%fe%00",
    "NUL": b"grant_type=authorization_code&code=\x00\x00&client_id=%00",
    "repeated field": b"grant_type=refresh_token&grant_type=authorization_code",
    "too many fields": b"&".join(b"f%d=1" % n for n in range(100)),
    "100,000 [": b"token=" + b"[" * 100_000,
    "a JSON body": b'{"grant_type":' * 10_000,
    "a surrogate escape": b"grant_type=%ed%a0%80",
}


# RFC 6749 §5.2: what a token request that cannot be served is answered with.
TOKEN_ERRORS = {"invalid_request", "invalid_grant", "invalid_client", "unsupported_grant_type"}


@pytest.mark.parametrize("form", HOSTILE_FORMS.values(), ids=HOSTILE_FORMS.keys())
def test_hostile_forms_to_token_are_answered_4xx(server: HttpServer, form: bytes) -> None:
    answer = _post(server, "/token", form, **{"content-type": "application/x-www-form-urlencoded"})
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.json()["error"] in TOKEN_ERRORS


@pytest.mark.parametrize("form", HOSTILE_FORMS.values(), ids=HOSTILE_FORMS.keys())
def test_hostile_forms_to_revoke_are_refused_or_revoke_nothing(
    server: HttpServer, form: bytes
) -> None:
    """RFC 7009 §2.2: a token the server does not know is answered 200, as if revoked."""
    answer = _post(server, "/revoke", form, **{"content-type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 200 or 400 <= answer.status_code < 500, answer.text
    if answer.status_code == 200:
        assert answer.json() == {}
    else:
        assert answer.json()["error"] in {"invalid_request", "invalid_client"}


def test_a_hostile_json_body_to_token_is_not_a_form(server: HttpServer) -> None:
    answer = _post(server, "/token", b"[" * 100_000, **{"content-type": "application/json"})
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"


HOSTILE_QUERIES = [
    "client_id=" + "%5B" * 20_000,
    "client_id=%ff%fe&redirect_uri=%00",
    "client_id=a&client_id=b",
    "response_type=code&" + "&".join(f"x{n}=1" for n in range(2000)),
    "state=%ed%a0%80",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_to_authorize_are_an_error_page(server: HttpServer, query: str) -> None:
    answer = httpx.get(f"{server.url}/authorize?{query}", timeout=TIMEOUT)
    assert 400 <= answer.status_code < 500
    assert "location" not in answer.headers  # redirected nowhere


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jws(header: bytes, payload: bytes = b"{}") -> str:
    return f"{_b64(header)}.{_b64(payload)}.{_b64(b'x' * 64)}"


HOSTILE_TOKENS = [
    _jws(b"[" * 9000),
    _jws(b'{"alg":"EdDSA","kid":"k"}', b"[" * 9000),
    _jws(b'{"alg":"EdDSA","kid":"k","alg":"none"}'),
    _jws(b'{"alg":"EdDSA","kid":"k"}', b'{"exp":1e999999}'),
    _jws(b'{"alg":"EdDSA","kid":"\\ud800"}'),
    _jws(b"\xff\xfe"),
    "a.b.c",
    "e30.e30." + "A" * 12_000,
]


@pytest.mark.parametrize("token", HOSTILE_TOKENS)
def test_a_hostile_bearer_token_is_no_token(server: HttpServer, token: str) -> None:
    answer = httpx.post(
        server.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"authorization": f"Bearer {token}"},
        timeout=TIMEOUT,
    )
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer ")


# A list is well-formed JSON (a batch): the SDK's to judge, not the parser's.
NOT_JSON_RPC = {name: body for name, body in HOSTILE_JSON.items() if name != "not an object"}


@pytest.mark.parametrize("body", NOT_JSON_RPC.values(), ids=NOT_JSON_RPC.keys())
def test_hostile_json_posted_to_mcp_is_the_json_rpc_parse_error(
    server: HttpServer, approved: tuple[Browser, MemoryTokens], body: bytes
) -> None:
    _, storage = approved
    assert storage.tokens is not None
    headers = {
        "authorization": f"Bearer {storage.tokens.access_token}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    answer = _post(server, "/mcp", body, **headers)
    assert answer.status_code == 400
    assert answer.json() == PARSE_ERROR


def test_the_approved_client_still_reads_after_every_hostile_request(
    server: HttpServer, approved: tuple[Browser, MemoryTokens]
) -> None:
    browser, storage = approved
    session = anyio.run(
        read_remotely, server.url + "/mcp", provider(server.url + "/mcp", browser, storage)
    )
    assert session.read["text"] == "zebra crossing\n"
    assert server.process.poll() is None
    assert "Traceback" not in server.log()


@pytest.mark.parametrize(
    "extra",
    [
        {"padding": "x" * 900_000},
        {"client_name": "y" * 100_000},
        {"redirect_uris": ["http://127.0.0.1:9/cb"] * 20_000},
    ],
    ids=["900 KiB of padding", "a 100,000-character name", "20,000 redirect URIs"],
)
def test_a_well_formed_registration_over_a_frame_is_refused_not_taken_for_a_broken_gateway(
    server: HttpServer, extra: dict[str, object]
) -> None:
    """Under the body bound, over the gateway's 64 KiB frame: refused before it is relayed
    (the gateway would close the connection unread: a 500 or a 503 "down" before)."""
    answer = httpx.post(server.url + "/register", json=LEGITIMATE | extra, timeout=TIMEOUT)
    assert answer.status_code == 400, answer.text[:200]
    assert answer.json()["error"] == "invalid_request"
    assert httpx.post(server.url + "/register", json=LEGITIMATE, timeout=TIMEOUT).status_code == 201
