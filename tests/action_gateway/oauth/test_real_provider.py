"""The real authorization server the OAuth grant tests run against (harness/real_oidc.py) behaves
as the tests rely on, checked with plain HTTP and no safeport code: the code flow with PKCE and
RFC 9207 ``iss``, the device flow paced as GitHub paces it, refresh tokens that rotate and whose
reuse revokes the grant, RFC 7009 revocation, the confidential client's authentication, and the
event log that counts token requests."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from harness.oidc_browser import Browser
from harness.real_oidc import CONFIDENTIAL_CLIENT, DEVICE_GRANT, PUBLIC_CLIENT, OidcProvider

SUBJECT = "safeport.action_gateway.oauth"
CALLBACK = "http://127.0.0.1:48213/callback"  # never listened on: the browser stops before it


def _token(provider: OidcProvider, form: dict[str, str], **kw: Any) -> httpx.Response:
    with provider.client() as http:
        return http.post(f"{provider.issuer}/token", data=form, **kw)


def _whoami(provider: OidcProvider, access_token: str) -> int:
    with provider.client() as http:
        answer = http.get(
            provider.resource_url, headers={"Authorization": f"Bearer {access_token}"}
        )
    return answer.status_code


def _code_flow(provider: OidcProvider, account: str = "alice") -> dict[str, Any]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    state = secrets.token_urlsafe(16)
    query = {
        "client_id": PUBLIC_CLIENT,
        "response_type": "code",
        "redirect_uri": CALLBACK,
        "scope": "openid profile",
        "state": state,
        "code_challenge": challenge.decode(),
        "code_challenge_method": "S256",
    }
    with Browser(provider.ca_file, account) as browser:
        final = browser.authorize(f"{provider.issuer}/auth?{urlencode(query)}", CALLBACK)
    back = {k: v[0] for k, v in parse_qs(urlsplit(final).query).items()}
    assert back["state"] == state
    assert back["iss"] == provider.issuer  # RFC 9207: the client can tell which server answered
    form = {
        "grant_type": "authorization_code",
        "code": back["code"],
        "redirect_uri": CALLBACK,
        "client_id": PUBLIC_CLIENT,
    }
    refused = _token(provider, form)  # no verifier: PKCE is required of the public client
    assert refused.status_code == 400
    assert refused.json()["error"] in {"invalid_grant", "invalid_request"}
    answer = _token(provider, {**form, "code_verifier": verifier})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _refresh(provider: OidcProvider, refresh_token: str) -> httpx.Response:
    form = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": PUBLIC_CLIENT,
    }
    return _token(provider, form)


def test_the_code_flow_with_pkce_gives_tokens_the_resource_accepts(
    oidc_provider: OidcProvider,
) -> None:
    with oidc_provider.client() as http:
        metadata = http.get(f"{oidc_provider.issuer}/.well-known/openid-configuration").json()
    assert metadata["issuer"] == oidc_provider.issuer
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert metadata["device_authorization_endpoint"].startswith("https://")
    assert metadata["revocation_endpoint"].startswith("https://")
    before = len(oidc_provider.token_requests("authorization_code"))
    tokens = _code_flow(oidc_provider)
    assert tokens["token_type"].lower() == "bearer"
    assert tokens["refresh_token"] and tokens["expires_in"] == 3600
    assert set(tokens["scope"].split()) == {"openid", "profile"}
    assert _whoami(oidc_provider, tokens["access_token"]) == 200
    assert _whoami(oidc_provider, tokens["access_token"] + "x") == 401
    assert _whoami(oidc_provider, "-") == 401
    # The failed exchange without a verifier and the good one: two token requests, both logged,
    # and no token in the log.
    assert len(oidc_provider.token_requests("authorization_code")) == before + 2
    log = oidc_provider.events_file.read_text()
    assert tokens["access_token"] not in log and tokens["refresh_token"] not in log
    # The issued file knows them: it is what the tests grep everything else for.
    assert tokens["access_token"] in oidc_provider.issued("access_token")
    assert tokens["refresh_token"] in oidc_provider.issued("refresh_token")


def test_a_refresh_rotates_and_a_spent_refresh_token_revokes_the_grant(
    oidc_provider: OidcProvider,
) -> None:
    oidc_provider.set_access_token_ttl(5)
    first = _code_flow(oidc_provider)
    assert first["expires_in"] == 5
    before = len(oidc_provider.token_requests("refresh_token"))
    second = _refresh(oidc_provider, first["refresh_token"])
    assert second.status_code == 200, second.text
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"]
    assert _whoami(oidc_provider, rotated["access_token"]) == 200
    # The spent refresh token used again, as a thief holding a copy would: refused, and the
    # provider revokes the whole grant, so the rotated token and its access token die too.
    reused = _refresh(oidc_provider, first["refresh_token"])
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    after = _refresh(oidc_provider, rotated["refresh_token"])
    assert after.status_code == 400 and after.json()["error"] == "invalid_grant"
    assert _whoami(oidc_provider, rotated["access_token"]) == 401
    outcomes = [e["status"] for e in oidc_provider.token_requests("refresh_token")[before:]]
    assert outcomes == [200, 400, 400]


def test_revocation_ends_the_grant(oidc_provider: OidcProvider) -> None:
    tokens = _code_flow(oidc_provider)
    with oidc_provider.client() as http:
        answer = http.post(
            f"{oidc_provider.issuer}/token/revocation",
            data={
                "token": tokens["refresh_token"],
                "token_type_hint": "refresh_token",
                "client_id": PUBLIC_CLIENT,
            },
        )
    assert answer.status_code == 200
    assert _refresh(oidc_provider, tokens["refresh_token"]).json()["error"] == "invalid_grant"
    assert _whoami(oidc_provider, tokens["access_token"]) == 401
    assert oidc_provider.events("token_revocation")[-1]["status"] == 200


def test_revoking_an_account_kills_its_grants_and_no_other(oidc_provider: OidcProvider) -> None:
    mine, theirs = _code_flow(oidc_provider, "carol"), _code_flow(oidc_provider, "dave")
    assert oidc_provider.revoke_account("carol") >= 1
    assert _refresh(oidc_provider, mine["refresh_token"]).json()["error"] == "invalid_grant"
    assert _whoami(oidc_provider, mine["access_token"]) == 401
    assert _whoami(oidc_provider, theirs["access_token"]) == 200
    assert _refresh(oidc_provider, theirs["refresh_token"]).status_code == 200


def test_the_confidential_client_must_authenticate(oidc_provider: OidcProvider) -> None:
    form = {"grant_type": DEVICE_GRANT, "device_code": "unknown"}
    anonymous = _token(oidc_provider, {**form, "client_id": CONFIDENTIAL_CLIENT})
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "invalid_client"
    wrong = _token(oidc_provider, form, auth=(CONFIDENTIAL_CLIENT, "not-the-secret"))
    assert wrong.status_code == 401
    with oidc_provider.client() as http:
        started = http.post(
            f"{oidc_provider.issuer}/device/auth",
            data={"scope": "openid"},
            auth=(CONFIDENTIAL_CLIENT, oidc_provider.client_secret),
        )
    assert started.status_code == 200, started.text


def test_the_device_flow_paces_polls_as_github_does(oidc_provider: OidcProvider) -> None:
    with oidc_provider.client() as http:
        started = http.post(
            f"{oidc_provider.issuer}/device/auth",
            data={"client_id": PUBLIC_CLIENT, "scope": "openid offline_access"},
        ).json()
    assert started["interval"] == 1
    assert started["verification_uri"] == f"{oidc_provider.issuer}/device"
    form = {"grant_type": DEVICE_GRANT, "device_code": started["device_code"]}
    form["client_id"] = PUBLIC_CLIENT
    first = _token(oidc_provider, form)
    assert first.status_code == 400 and first.json()["error"] == "authorization_pending"
    # Polled again at once (a loaded machine may take a while between two requests, so poll
    # until one lands inside the interval; the first such poll is told to slow down).
    errors = []
    for _ in range(5):
        errors.append(_token(oidc_provider, form).json())
        if errors[-1]["error"] == "slow_down":
            break
    assert errors[-1] == {
        "error": "slow_down",
        "error_description": errors[-1]["error_description"],
        "interval": 2,
    }
    slowed_at = time.monotonic()
    with Browser(oidc_provider.ca_file, "erin") as browser:
        page = browser.approve_device(started["verification_uri"], started["user_code"])
    assert "Sign-in Success" in page or "success" in page.lower()
    time.sleep(max(0.0, 2.1 - (time.monotonic() - slowed_at)))  # the interval it was given
    answer = _token(oidc_provider, form)
    assert answer.status_code == 200, answer.text
    tokens = answer.json()
    assert tokens["refresh_token"] and _whoami(oidc_provider, tokens["access_token"]) == 200
    again = _token(oidc_provider, form)  # a device code is good for one grant only
    assert again.status_code == 400


def test_a_device_code_the_human_refused_is_access_denied(oidc_provider: OidcProvider) -> None:
    with oidc_provider.client() as http:
        started = http.post(
            f"{oidc_provider.issuer}/device/auth",
            data={"client_id": PUBLIC_CLIENT, "scope": "openid"},
        ).json()
    with Browser(oidc_provider.ca_file, "frank", consent=False) as browser:
        browser.approve_device(started["verification_uri"], started["user_code"])
    form = {"grant_type": DEVICE_GRANT, "device_code": started["device_code"]}
    answer = _token(oidc_provider, {**form, "client_id": PUBLIC_CLIENT})
    assert answer.status_code == 400 and answer.json()["error"] == "access_denied"
