"""One grant's OAuth client: what each step sends and how each answer ends it (a recording
transport for the decisions, the suite's TLS server for a whole round trip)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import pytest

from harness.real_tls import TlsServer
from safeport.action_gateway.oauth.client import DEVICE_GRANT, OAuthClient
from safeport.action_gateway.oauth.errors import (
    OAuthBadResponse,
    OAuthGrantDead,
    OAuthRefused,
)
from safeport.action_gateway.oauth.protocol import DevicePending, TokenGrant
from safeport.action_gateway.oauth.transport import FormValue, OAuthHttp, RawResponse
from safeport.shared.schemas.config_oauth import OAuthGrantSpec
from safeport.vault.secrets import SecretBytes

ISSUER = "https://idp.example.com"
ACCESS = "at-Lq2Wv7Kp4Xz1Rm8Tn5Ys3Bc6Hd0Jf"
REFRESH = "rt-Pf7Hj2Kl9Qw3Er6Ty1Ui8Op5As0Dz"
SECRET = "cs-Zx5Cv8Bn1Mq4Wr7Ty0Ui3Op6As9Df"
JSON = "application/json"


def _json(status: int = 200, **fields: object) -> RawResponse:
    return RawResponse(status, JSON, json.dumps(fields).encode())


def _ok(fields: dict[str, object]) -> RawResponse:
    return RawResponse(200, JSON, json.dumps(fields).encode())


def _tokens(**changes: object) -> RawResponse:
    fields: dict[str, object] = {
        "access_token": ACCESS,
        "token_type": "Bearer",
        "expires_in": 600,
        "refresh_token": REFRESH,
    }
    fields.update(changes)
    return _ok(fields)


def _metadata(**changes: object) -> RawResponse:
    fields: dict[str, object] = {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/auth",
        "token_endpoint": f"{ISSUER}/token",
        "device_authorization_endpoint": f"{ISSUER}/device",
        "revocation_endpoint": f"{ISSUER}/revoke",
        "authorization_response_iss_parameter_supported": True,
        "code_challenge_methods_supported": ["S256"],
    }
    fields.update(changes)
    return _ok(fields)


@dataclass
class Posted:
    url: str
    form: dict[str, str]
    basic: tuple[str, str] | None


@dataclass
class FakeHttp:
    """Answers by URL, in order; records what was asked (secrets revealed for the test only)."""

    answers: dict[str, list[RawResponse]] = field(default_factory=dict)
    gets: list[str] = field(default_factory=list)
    posts: list[Posted] = field(default_factory=list)

    def get_json(self, url: str) -> RawResponse:
        self.gets.append(url)
        return self._next(url)

    def post_form(
        self,
        url: str,
        form: Mapping[str, FormValue],
        *,
        basic: tuple[str, SecretBytes] | None = None,
    ) -> RawResponse:
        shown = {
            k: v.reveal().decode() if isinstance(v, SecretBytes) else v for k, v in form.items()
        }
        pair = None if basic is None else (basic[0], basic[1].reveal().decode())
        self.posts.append(Posted(url, shown, pair))
        return self._next(url)

    def _next(self, url: str) -> RawResponse:
        queue = self.answers.get(url)
        if not queue:
            return _json(404, error="not_found")
        return queue.pop(0) if len(queue) > 1 else queue[0]


def _client(fake: FakeHttp, **spec: object) -> OAuthClient:
    fields: dict[str, object] = {"issuer": ISSUER, "client_id": "client-1"}
    fields.update(spec)
    return OAuthClient(OAuthGrantSpec.model_validate(fields), fake)  # type: ignore[arg-type]


def _discovering() -> FakeHttp:
    return FakeHttp(answers={f"{ISSUER}/.well-known/oauth-authorization-server": [_metadata()]})


def test_discovery_reads_rfc_8414_then_openid_connect_once() -> None:
    fake = FakeHttp(answers={f"{ISSUER}/.well-known/openid-configuration": [_metadata()]})
    client = _client(fake)
    endpoints = client.endpoints()
    assert endpoints.token == f"{ISSUER}/token" and endpoints.iss_supported
    client.endpoints()
    assert fake.gets == [
        f"{ISSUER}/.well-known/oauth-authorization-server",
        f"{ISSUER}/.well-known/openid-configuration",
    ]


def test_metadata_of_another_issuer_stops_the_grant() -> None:
    fake = FakeHttp(
        answers={
            f"{ISSUER}/.well-known/oauth-authorization-server": [
                _metadata(issuer="https://evil.example", token_endpoint="https://evil.example/t")
            ]
        }
    )
    with pytest.raises(OAuthBadResponse, match="another issuer"):
        _client(fake).endpoints()
    with pytest.raises(OAuthBadResponse, match="no metadata"):
        _client(FakeHttp()).endpoints()
    # Endpoints the policy gives are enough without metadata.
    given = _client(FakeHttp(), token_endpoint=f"{ISSUER}/t", authorization_endpoint=f"{ISSUER}/a")
    assert given.endpoints().token == f"{ISSUER}/t"


def test_a_code_flow_sends_the_verifier_and_the_exact_redirect_uri() -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/token"] = [_tokens(scope="read")]
    client = _client(fake, scopes=["read", "write"])
    flow = client.begin_code("http://127.0.0.1:43111/callback")
    query = parse_qs(urlsplit(flow.url).query)
    assert query["code_challenge_method"] == ["S256"] and query["state"] == [flow.state]
    assert query["redirect_uri"] == ["http://127.0.0.1:43111/callback"]
    assert query["scope"] == ["read write"] and flow.scopes == ("read", "write")
    callback = {"code": "the-code", "state": flow.state, "iss": ISSUER}
    grant = client.exchange_code(flow, callback, None)
    assert isinstance(grant, TokenGrant) and grant.scopes == ("read",)
    (posted,) = fake.posts
    assert posted.url == f"{ISSUER}/token" and posted.basic is None
    assert posted.form == {
        "client_id": "client-1",
        "grant_type": "authorization_code",
        "code": "the-code",
        "redirect_uri": "http://127.0.0.1:43111/callback",
        "code_verifier": flow.pkce.verifier.reveal().decode(),
    }
    assert flow.pkce.verifier.reveal().decode() not in repr(flow) and flow.state not in repr(flow)


@pytest.mark.parametrize(
    "callback",
    [
        {"code": "c", "state": "another"},
        {"code": "c"},
        {"code": "c", "state": "{state}", "iss": "https://evil.example"},
        {"code": "c", "state": "{state}"},  # the provider says it sends iss
        {"error": "access_denied", "state": "{state}", "iss": ISSUER},
    ],
)
def test_a_callback_failing_its_checks_sends_nothing(callback: dict[str, str]) -> None:
    fake = _discovering()
    client = _client(fake)
    flow = client.begin_code("http://127.0.0.1:43111/callback")
    query = {key: value.replace("{state}", flow.state) for key, value in callback.items()}
    with pytest.raises(OAuthRefused):
        client.exchange_code(flow, query, None)
    assert fake.posts == []


@pytest.mark.parametrize(
    "uri",
    [
        "http://localhost:43111/callback",
        "http://192.168.1.2:43111/callback",
        "http://127.0.0.1.evil.example/callback",
        "http://127.0.0.1:43111/callback?x=1",
        "http://127.0.0.1:43111/callback#f",
        "javascript:alert(1)",
        "http://user@127.0.0.1:1/cb",
    ],
)
def test_a_redirect_uri_other_than_loopback_or_https_is_refused(uri: str) -> None:
    with pytest.raises(OAuthRefused, match="redirect URI"):
        _client(_discovering()).begin_code(uri)


def test_loopback_and_https_redirect_uris_are_taken() -> None:
    client = _client(_discovering())
    for uri in ("http://127.0.0.1:1/cb", "http://[::1]:8080/callback", "https://app.example/cb"):
        assert client.begin_code(uri).redirect_uri == uri


@pytest.mark.parametrize(
    ("client_auth", "basic", "in_form"),
    [
        ("none", None, {"client_id": "client-1"}),
        ("client_secret_post", None, {"client_id": "client-1", "client_secret": SECRET}),
        ("client_secret_basic", ("client-1", SECRET), {}),
    ],
)
def test_each_client_authentication_method(
    client_auth: str, basic: tuple[str, str] | None, in_form: dict[str, str]
) -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/token"] = [_tokens()]
    client = _client(fake, client_auth=client_auth)
    client.refresh(SecretBytes(REFRESH.encode()), SecretBytes(SECRET.encode()))
    (posted,) = fake.posts
    assert posted.basic == basic
    assert posted.form == {**in_form, "grant_type": "refresh_token", "refresh_token": REFRESH}


def test_no_secret_given_sends_the_client_id_alone() -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/token"] = [_tokens()]
    _client(fake, client_auth="client_secret_basic").refresh(SecretBytes(REFRESH.encode()), None)
    assert fake.posts[0].basic is None and fake.posts[0].form["client_id"] == "client-1"
    assert "client_secret" not in fake.posts[0].form


def test_a_refused_refresh_is_a_dead_grant_only_for_invalid_grant() -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/token"] = [_json(400, error="invalid_grant")]
    with pytest.raises(OAuthGrantDead) as caught:
        _client(fake).refresh(SecretBytes(REFRESH.encode()), None)
    assert caught.value.code == "oauth_grant_dead" and REFRESH not in str(caught.value)
    assert caught.value.__cause__ is None
    for error in ("invalid_client", "temporarily_unavailable", "invalid_scope"):
        fake.answers[f"{ISSUER}/token"] = [_json(400, error=error)]
        with pytest.raises(OAuthRefused) as refused:
            _client(fake).refresh(SecretBytes(REFRESH.encode()), None)
        assert not isinstance(refused.value, OAuthGrantDead)
    fake.answers[f"{ISSUER}/token"] = [_json(503)]
    with pytest.raises(OAuthBadResponse):
        _client(fake).refresh(SecretBytes(REFRESH.encode()), None)


def test_the_device_flow_starts_polls_and_ends() -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/device"] = [
        _json(
            device_code="dev-code-1",
            user_code="ABCD-EFGH",
            verification_uri=f"{ISSUER}/activate",
            expires_in=600,
            interval=1,
        )
    ]
    fake.answers[f"{ISSUER}/token"] = [
        _json(400, error="authorization_pending"),
        _json(400, error="slow_down"),
        _tokens(),
    ]
    client = _client(fake, scopes=["openid", "offline_access"])
    device = client.device_start(None)
    assert device.user_code == "ABCD-EFGH" and device.interval == 1
    assert fake.posts[0].form == {"client_id": "client-1", "scope": "openid offline_access"}
    assert client.device_poll(device, None) == DevicePending(slow_down=False)
    assert client.device_poll(device, None) == DevicePending(slow_down=True)
    grant = client.device_poll(device, None)
    assert isinstance(grant, TokenGrant)
    assert fake.posts[1].form == {
        "client_id": "client-1",
        "grant_type": DEVICE_GRANT,
        "device_code": "dev-code-1",
    }
    fake.answers[f"{ISSUER}/token"] = [_json(400, error="expired_token")]
    with pytest.raises(OAuthRefused) as caught:
        client.device_poll(device, None)
    assert caught.value.error == "expired_token"
    fake.answers[f"{ISSUER}/token"] = [_json(400, error="access_denied")]
    with pytest.raises(OAuthRefused, match="access_denied"):
        client.device_poll(device, None)


def test_no_device_endpoint_is_said() -> None:
    fake = FakeHttp(
        answers={
            f"{ISSUER}/.well-known/oauth-authorization-server": [
                _metadata(device_authorization_endpoint=None)
            ]
        }
    )
    with pytest.raises(OAuthBadResponse, match="device"):
        _client(fake).device_start(None)


def test_revocation_follows_rfc_7009_where_there_is_an_endpoint() -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/revoke"] = [RawResponse(200, None, b"")]
    assert _client(fake).revoke(SecretBytes(REFRESH.encode()), "refresh_token", None) is True
    assert fake.posts[0].form == {
        "client_id": "client-1",
        "token": REFRESH,
        "token_type_hint": "refresh_token",
    }
    fake.answers[f"{ISSUER}/revoke"] = [_json(503, error="temporarily_unavailable")]
    with pytest.raises(OAuthBadResponse, match="HTTP 503"):
        _client(fake).revoke(SecretBytes(REFRESH.encode()), "refresh_token", None)
    bare = FakeHttp()
    spec = {"issuer": None, "preset": "github", "client_id": "c"}
    assert _client(bare, **spec).revoke(SecretBytes(b"t"), "access_token", None) is False
    assert bare.posts == []


def test_a_github_preset_asks_with_commas_and_reads_a_form_answer() -> None:
    fake = FakeHttp()
    fake.answers["https://github.com/login/oauth/access_token"] = [
        RawResponse(
            200,
            "application/x-www-form-urlencoded; charset=utf-8",
            f"access_token={ACCESS}&scope=repo%2Cgist&token_type=bearer".encode(),
        )
    ]
    client = _client(fake, issuer=None, preset="github", scopes=["repo", "gist"])
    flow = client.begin_code("http://127.0.0.1:5000/callback")
    assert parse_qs(urlsplit(flow.url).query)["scope"] == ["repo,gist"]
    grant = client.exchange_code(flow, {"code": "c", "state": flow.state}, SecretBytes(b"s"))
    assert grant.scopes == ("repo", "gist") and grant.refresh_token is None
    assert fake.posts[0].form["client_secret"] == "s" and fake.gets == []


# --- a whole round trip over real TLS ---


@pytest.fixture
def real_http(tls_server: TlsServer) -> Iterator[OAuthHttp]:
    http = OAuthHttp(
        str(tls_server.ca_file), 5, 65536, allow_private=True, resolver=lambda h, p: ["127.0.0.1"]
    )
    yield http
    http.close()


def test_discovery_and_a_refresh_over_real_tls(tls_server: TlsServer, real_http: OAuthHttp) -> None:
    base = tls_server.base_url()
    issuer = f"{base}/oauth-c/issuer"
    with tls_server.recorded.lock:
        tls_server.recorded.answers["/.well-known/oauth-authorization-server/oauth-c/issuer"] = {
            "issuer": issuer,
            "token_endpoint": f"{base}/oauth-c/token",
            "authorization_endpoint": f"{base}/oauth-c/auth",
        }
        tls_server.recorded.answers["/oauth-c/token"] = {
            "access_token": ACCESS,
            "token_type": "Bearer",
            "expires_in": 60,
        }
    spec = OAuthGrantSpec.model_validate(
        {"issuer": issuer, "client_id": "c", "ca_file": str(tls_server.ca_file)}
    )
    client = OAuthClient(spec, real_http)
    grant = client.refresh(SecretBytes(REFRESH.encode()), None)
    assert grant.access_token.reveal() == ACCESS.encode() and grant.expires_in == 60
    with tls_server.recorded.lock:
        posted = [r for r in tls_server.recorded.requests if r["path"] == "/oauth-c/token"]
    assert parse_qs(posted[-1]["body"].decode())["refresh_token"] == [REFRESH]
