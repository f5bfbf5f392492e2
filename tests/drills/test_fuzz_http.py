"""Property tests over the HTTP server's parsers of outside input, driven through the real ASGI
app (guards, bearer check, rate gate, relay) in process, with a real `sp gateway run` behind it
as the authorization server: JSON bodies to ``/register``, form bodies to ``/token`` and
``/revoke``, query strings to ``/authorize`` and bearer tokens to ``/mcp``.

For every input the answer is a 4xx with a JSON error body (or what the endpoint documents for
a request it serves: a registration, a revocation that revokes nothing), never a 5xx, and the
app keeps serving. The buckets are wide here so that the parsers are reached; the real server's
rates are tested in ``context_server/http``. Budget: :mod:`tests.drills.fuzz_budget`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote_from_bytes

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from safeport.context_server.http.admission import Admission, Rate
from safeport.context_server.http.app import RemoteRoot, RemoteService, build_app
from safeport.context_server.http.endpoint import HttpEndpoint
from safeport.context_server.http.gateway_oauth import OAuthGateway
from safeport.context_server.http.tenants import TenantServer
from safeport.shared.paths import layout
from safeport.shared.schemas.oauth_wire import Profile
from tests.context_server.http.real_gateway import real_gateway
from tests.drills.fuzz_budget import outside
from tests.drills.test_fuzz_outside_input import ALMOST_JSON, DEEP_PREFIX

PUBLIC = "http://127.0.0.1:8765"
WIDE = Rate(per_second=1e6, burst=1e6)
FORM = {"content-type": "application/x-www-form-urlencoded"}
# What a request the relay cannot serve is answered with: the guards' own codes, OAuth's
# (RFC 6749 §5.2, RFC 7591 §3.2.2), and the gateway's budget of failed token requests
# (``slow_down``, 429), which the fuzzed forms soon spend: the relay still parses each one.
ERRORS = {
    "slow_down",
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unsupported_grant_type",
    "invalid_client_metadata",
    "invalid_redirect_uri",
    "invalid_token",
    "rate_limited",
    "request_too_large",
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    home = Path(tmp_path_factory.mktemp("gw"))
    home.chmod(0o700)
    with real_gateway(home):
        gateway = OAuthGateway(layout({"SAFEPORT_HOME": str(home)}), PUBLIC)
        service = RemoteService([RemoteRoot("r1", str(home))])
        admission = Admission(client_rate=WIDE, anonymous_rate=WIDE, grant_rate=WIDE)

        def no_tenants(roots: frozenset[str], profile: Profile) -> TenantServer:
            raise AssertionError("no token here is good: no tenant is ever made")

        app = build_app(
            HttpEndpoint("127.0.0.1", 8765, PUBLIC),
            service,
            gateway,
            no_tenants,
            admission,
        )
        with TestClient(app, base_url=PUBLIC, raise_server_exceptions=False) as running:
            yield running


def _answered(answer: httpx2.Response, *served: int) -> None:
    assert answer.status_code < 500, (answer.status_code, answer.text[:200])
    if answer.status_code in served:
        return
    assert 400 <= answer.status_code < 500, answer.status_code
    assert answer.json()["error"] in ERRORS, answer.text[:200]


REGISTRATION_PIECES = st.sampled_from(
    [
        '"client_name":"fuzzed"',
        '"redirect_uris":["http://127.0.0.1:9/cb"]',
        '"grant_types":["authorization_code"]',
        '"token_endpoint_auth_method":"none"',
        '"client_name":',
        '"redirect_uris":',
    ]
)


@outside
@given(DEEP_PREFIX, st.lists(REGISTRATION_PIECES | ALMOST_JSON, max_size=12))
def test_any_registration_body_is_answered_without_a_server_error(
    client: TestClient, prefix: str, pieces: list[str]
) -> None:
    body = (prefix + "{" + ",".join(pieces) + "}").encode("utf-8", "surrogatepass")
    _answered(client.post("/register", content=body), 201)


FORM_FIELDS = st.sampled_from(
    ["grant_type", "code", "refresh_token", "client_id", "token", "redirect_uri", "code_verifier"]
)
FORM_VALUES = st.sampled_from(["authorization_code", "refresh_token", "x" * 171]) | st.binary(
    max_size=200
).map(lambda raw: quote_from_bytes(raw))


@outside
@given(
    st.lists(st.tuples(FORM_FIELDS | st.text(max_size=8), FORM_VALUES), max_size=40),
    st.sampled_from(["/token", "/revoke"]),
    st.booleans(),
)
def test_any_token_or_revocation_form_is_answered_without_a_server_error(
    client: TestClient, fields: list[tuple[str, str]], path: str, raw_body: bool
) -> None:
    body = "&".join(
        f"{quote_from_bytes(k.encode('utf-8', 'surrogatepass'))}={v}" for k, v in fields
    )
    headers = FORM if not raw_body else {"content-type": "application/json"}
    answer = client.post(path, content=body.encode(), headers=headers)
    _answered(answer, *((200,) if path == "/revoke" else ()))
    if answer.status_code == 200:
        assert answer.json() == {}  # RFC 7009: nothing to revoke


QUERY_FIELDS = st.sampled_from(
    ["response_type", "client_id", "redirect_uri", "state", "code_challenge", "resource", "scope"]
)


@outside
@given(
    st.lists(st.tuples(QUERY_FIELDS | st.text(max_size=8), st.binary(max_size=120)), max_size=30)
)
def test_any_authorization_query_is_an_error_page_never_a_server_error(
    client: TestClient, fields: list[tuple[str, bytes]]
) -> None:
    query = "&".join(
        f"{quote_from_bytes(k.encode('utf-8', 'surrogatepass'))}={quote_from_bytes(v)}"
        for k, v in fields
    )
    answer = client.get(f"/authorize?{query}", follow_redirects=False)
    assert answer.status_code < 500
    assert answer.status_code in {200, 302, 400, 401, 403, 404, 413, 429}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _text64(text: str) -> str:
    return _b64(text.encode("utf-8", "surrogatepass"))


@outside
@given(DEEP_PREFIX, ALMOST_JSON, ALMOST_JSON, st.binary(max_size=70))
def test_any_bearer_token_is_no_token(
    client: TestClient, prefix: str, header: str, payload: str, signature: bytes
) -> None:
    token = f"{_text64(prefix + header)}.{_text64(payload)}.{_b64(signature)}"
    answer = client.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"authorization": f"Bearer {token}"},
    )
    assert answer.status_code in {401, 431}, answer.status_code


def test_the_app_serves_a_registration_after_the_fuzzing(client: TestClient) -> None:
    answer = client.post(
        "/register",
        json={"client_name": "After", "redirect_uris": ["http://127.0.0.1:9/cb"]},
    )
    assert answer.status_code == 201, answer.text
