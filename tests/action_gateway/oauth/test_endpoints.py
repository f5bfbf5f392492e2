"""Discovery trusts only the configured issuer; overrides, metadata and presets merge in order."""

from __future__ import annotations

import json

import pytest

from safeport.action_gateway.oauth.endpoints import (
    Metadata,
    metadata_urls,
    parse_metadata,
    resolve,
)
from safeport.action_gateway.oauth.errors import OAuthBadResponse
from safeport.action_gateway.oauth.presets import PRESETS
from safeport.shared.schemas.config_oauth import OAuthGrantSpec

ISSUER = "https://idp.example.com"


def _metadata(**changes: object) -> bytes:
    data: dict[str, object] = {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/auth",
        "token_endpoint": f"{ISSUER}/token",
        "device_authorization_endpoint": f"{ISSUER}/device/auth",
        "revocation_endpoint": f"{ISSUER}/token/revocation",
        "authorization_response_iss_parameter_supported": True,
        "code_challenge_methods_supported": ["S256"],
    }
    data.update(changes)
    return json.dumps({k: v for k, v in data.items() if v is not None}).encode()


def test_metadata_urls_follow_rfc_8414_then_openid_connect() -> None:
    assert metadata_urls("https://idp.example.com") == (
        "https://idp.example.com/.well-known/oauth-authorization-server",
        "https://idp.example.com/.well-known/openid-configuration",
    )
    # RFC 8414 section 3.1's example: the well-known segment goes before the issuer's path.
    assert metadata_urls("https://example.com/issuer1") == (
        "https://example.com/.well-known/oauth-authorization-server/issuer1",
        "https://example.com/issuer1/.well-known/openid-configuration",
    )
    assert metadata_urls("https://idp.example.com:8443/realms/a/")[0] == (
        "https://idp.example.com:8443/.well-known/oauth-authorization-server/realms/a"
    )


def test_metadata_of_the_configured_issuer_is_read() -> None:
    metadata = parse_metadata(_metadata(), ISSUER)
    assert metadata.token_endpoint == f"{ISSUER}/token"
    assert metadata.iss_supported and metadata.code_challenge_methods == ("S256",)
    assert parse_metadata(_metadata(revocation_endpoint=None), ISSUER).revocation_endpoint is None


@pytest.mark.parametrize(
    "issuer",
    [
        ISSUER + "/",
        "https://idp.example.com.evil.example",
        "http://idp.example.com",
        "https://IDP.EXAMPLE.COM",
        "https://attacker.example",
        None,
        "",
        7,
    ],
)
def test_metadata_naming_another_issuer_is_refused(issuer: object) -> None:
    with pytest.raises(OAuthBadResponse, match="another issuer"):
        parse_metadata(_metadata(issuer=issuer), ISSUER)


@pytest.mark.parametrize(
    "field",
    [
        "authorization_endpoint",
        "token_endpoint",
        "device_authorization_endpoint",
        "revocation_endpoint",
    ],
)
@pytest.mark.parametrize(
    "value",
    [
        "http://idp.example.com/token",
        "https://user:pw@idp.example.com/token",
        "https://idp.example.com/token#x",
        "//idp.example.com/token",
        "/token",
        "https://IDP.example.com/token",
        42,
    ],
)
def test_a_metadata_endpoint_that_is_not_an_exact_https_url_is_refused(
    field: str, value: object
) -> None:
    with pytest.raises(OAuthBadResponse, match=field):
        parse_metadata(_metadata(**{field: value}), ISSUER)


def test_unreadable_metadata_and_its_flags() -> None:
    for body in (b"not json", b"[]", b"\xff"):
        with pytest.raises(OAuthBadResponse):
            parse_metadata(body, ISSUER)
    for flag in ("true", 1, None, False):
        body = _metadata(authorization_response_iss_parameter_supported=flag)
        assert parse_metadata(body, ISSUER).iss_supported is False
    with pytest.raises(OAuthBadResponse, match="code_challenge"):
        parse_metadata(_metadata(code_challenge_methods_supported="S256"), ISSUER)


def _spec(**fields: object) -> OAuthGrantSpec:
    return OAuthGrantSpec.model_validate({"client_id": "client-1", **fields})


def test_an_override_wins_over_metadata_which_wins_over_the_preset() -> None:
    metadata = Metadata(
        issuer="https://gitlab.com",
        authorization_endpoint="https://gitlab.com/meta/auth",
        token_endpoint="https://gitlab.com/meta/token",
        device_authorization_endpoint=None,
        revocation_endpoint=None,
        iss_supported=True,
        code_challenge_methods=("S256", "plain"),
    )
    spec = _spec(
        preset="gitlab",
        issuer="https://gitlab.com",
        token_endpoint="https://gitlab.example.net/oauth/token",
    )
    endpoints = resolve(spec, PRESETS["gitlab"], metadata)
    assert endpoints.token == "https://gitlab.example.net/oauth/token"
    assert endpoints.authorization == "https://gitlab.com/meta/auth"
    assert endpoints.device == "https://gitlab.com/oauth/authorize_device"  # the preset's
    assert endpoints.revocation == "https://gitlab.com/oauth/revoke"
    assert endpoints.iss_supported and endpoints.issuer == "https://gitlab.com"
    assert endpoints.scopes == PRESETS["gitlab"].default_scopes


def test_scopes_and_client_auth_come_from_the_policy_then_the_preset() -> None:
    github = PRESETS["github"]
    endpoints = resolve(_spec(preset="github"), github, None)
    assert (
        endpoints.scopes == github.default_scopes and endpoints.client_auth == "client_secret_post"
    )
    assert endpoints.quirks == github.quirks and endpoints.issuer is None
    endpoints = resolve(
        _spec(preset="github", scopes=["gist"], client_auth="client_secret_basic"), github, None
    )
    assert endpoints.scopes == ("gist",) and endpoints.client_auth == "client_secret_basic"
    plain = _spec(
        token_endpoint="https://as.example/t", authorization_endpoint="https://as.example/a"
    )
    endpoints = resolve(plain, None, None)
    assert (endpoints.scopes, endpoints.client_auth, endpoints.quirks) == ((), "none", frozenset())
    assert endpoints.iss_supported is False


def test_no_token_endpoint_or_no_s256_is_refused() -> None:
    bare = Metadata(ISSUER, f"{ISSUER}/a", None, None, None, False, None)
    with pytest.raises(OAuthBadResponse, match="no token endpoint"):
        resolve(_spec(issuer=ISSUER), None, bare)
    plain_only = Metadata(ISSUER, f"{ISSUER}/a", f"{ISSUER}/t", None, None, False, ("plain",))
    with pytest.raises(OAuthBadResponse, match="S256"):
        resolve(_spec(issuer=ISSUER), None, plain_only)
