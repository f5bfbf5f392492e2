"""The authorization request and its callback: PKCE S256, state, iss (RFC 7636, 6749, 9207)."""

from __future__ import annotations

import base64
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from safeport.action_gateway.oauth.endpoints import Endpoints
from safeport.action_gateway.oauth.errors import OAuthBadResponse, OAuthRefused
from safeport.action_gateway.oauth.presets import (
    ACCESS_TYPE_OFFLINE,
    AUDIENCE,
    SCOPE_SEPARATOR_COMMA,
)
from safeport.action_gateway.oauth.protocol import (
    authorization_url,
    check_callback,
    new_pkce,
    new_state,
    parse_callback_query,
    pkce_challenge,
)
from safeport.vault.secrets import SecretBytes

ISSUER = "https://idp.example.com"
CODE = "SplxlOBeZQQYbYS6WxSbIA-code-of-the-test"
STATE = "af0ifjsldkj-state-of-the-test"


def _endpoints(**changes: object) -> Endpoints:
    values: dict[str, object] = {
        "issuer": ISSUER,
        "authorization": "https://idp.example.com/authorize",
        "token": "https://idp.example.com/token",
        "device": None,
        "revocation": None,
        "iss_supported": False,
        "quirks": frozenset(),
        "client_auth": "none",
        "scopes": ("read", "write"),
    }
    values.update(changes)
    return Endpoints(**values)  # type: ignore[arg-type]


def _refusal_shows_nothing_secret(exc: BaseException, *secrets: str) -> None:
    assert isinstance(exc, OAuthRefused)
    for text in (str(exc), repr(exc), exc.diagnostic(), repr(exc.args)):
        for secret in secrets:
            assert secret not in text


# --- PKCE ---


def test_the_challenge_of_rfc_7636_appendix_b() -> None:
    verifier = SecretBytes(b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
    assert pkce_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_a_new_verifier_is_43_unreserved_characters_and_its_challenge_is_s256() -> None:
    pkce = new_pkce()
    verifier = pkce.verifier.reveal()
    assert re.fullmatch(rb"[A-Za-z0-9_-]{43}", verifier)
    assert pkce.challenge == pkce_challenge(SecretBytes(verifier))
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", pkce.challenge)
    assert len(base64.urlsafe_b64decode(pkce.challenge + "=")) == 32


def test_every_verifier_and_state_is_new() -> None:
    verifiers = {new_pkce().verifier.reveal() for _ in range(50)}
    states = {new_state() for _ in range(50)}
    assert len(verifiers) == 50 and len(states) == 50
    assert all(len(state) >= 43 for state in states)


def test_the_verifier_is_in_no_repr() -> None:
    pkce = new_pkce()
    verifier = pkce.verifier.reveal().decode()
    assert verifier not in repr(pkce) and verifier not in str(pkce)
    assert pkce.challenge in repr(pkce)


# --- the authorization URL ---


def test_the_authorization_url_asks_for_a_code_with_pkce_s256_and_state() -> None:
    url = authorization_url(
        _endpoints(), "client-1", "http://127.0.0.1:5555/callback", ("read", "write"), STATE, "ch"
    )
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://idp.example.com/authorize"
    query = parse_qs(parts.query, strict_parsing=True)
    assert query == {
        "response_type": ["code"],
        "client_id": ["client-1"],
        "redirect_uri": ["http://127.0.0.1:5555/callback"],
        "state": [STATE],
        "code_challenge": ["ch"],
        "code_challenge_method": ["S256"],
        "scope": ["read write"],
    }


def test_the_url_keeps_the_endpoints_own_query_and_reads_provider_quirks() -> None:
    endpoints = _endpoints(authorization="https://idp.example.com/authorize?tenant=a")
    url = authorization_url(endpoints, "c", "http://127.0.0.1:1/cb", ("a", "b"), STATE, "ch")
    query = parse_qs(urlsplit(url).query)
    assert query["tenant"] == ["a"] and query["state"] == [STATE]
    comma = authorization_url(
        _endpoints(quirks=frozenset({SCOPE_SEPARATOR_COMMA})), "c", "http://127.0.0.1:1/cb",
        ("repo", "read:user"), STATE, "ch",
    )  # fmt: skip
    assert parse_qs(urlsplit(comma).query)["scope"] == ["repo,read:user"]
    offline = authorization_url(
        _endpoints(), "c", "http://127.0.0.1:1/cb", ("openid",), STATE, "ch",
        quirks=frozenset({ACCESS_TYPE_OFFLINE}),
    )  # fmt: skip
    query = parse_qs(urlsplit(offline).query)
    assert query["access_type"] == ["offline"] and query["prompt"] == ["consent"]
    audience = authorization_url(
        _endpoints(quirks=frozenset({AUDIENCE})), "c", "http://127.0.0.1:1/cb", ("x",), STATE, "ch"
    )
    query = parse_qs(urlsplit(audience).query)
    assert query["audience"] == ["api.atlassian.com"] and query["prompt"] == ["consent"]
    both = authorization_url(
        _endpoints(quirks=frozenset({AUDIENCE, ACCESS_TYPE_OFFLINE})), "c", "http://127.0.0.1:1/cb",
        ("x",), STATE, "ch",
    )  # fmt: skip
    assert parse_qs(urlsplit(both).query)["prompt"] == ["consent"]  # once


def test_a_value_cannot_add_a_parameter_of_its_own() -> None:
    url = authorization_url(
        _endpoints(), "c&redirect_uri=https://evil.example", "http://127.0.0.1:1/cb", ("a",),
        "s&code_challenge_method=plain", "ch",
    )  # fmt: skip
    query = parse_qs(urlsplit(url).query)
    assert query["redirect_uri"] == ["http://127.0.0.1:1/cb"]
    assert query["code_challenge_method"] == ["S256"]


def test_no_authorization_endpoint_is_said() -> None:
    with pytest.raises(OAuthBadResponse, match="device"):
        authorization_url(
            _endpoints(authorization=None), "c", "http://127.0.0.1:1/cb", (), "s", "c"
        )


# --- the callback ---


def _callback(**changes: str | None) -> dict[str, str]:
    values: dict[str, str | None] = {"code": CODE, "state": STATE, "iss": ISSUER}
    values.update(changes)
    return {key: value for key, value in values.items() if value is not None}


def test_this_flows_callback_gives_its_code_as_a_secret() -> None:
    code = check_callback(_callback(), state=STATE, issuer=ISSUER, iss_required=True)
    assert isinstance(code, SecretBytes) and code.reveal() == CODE.encode()
    assert CODE not in repr(code)
    pairs = list(_callback().items())
    assert check_callback(pairs, state=STATE, issuer=ISSUER, iss_required=True).reveal()


@pytest.mark.parametrize(
    "state", [STATE + "x", STATE[:-1], STATE.upper(), "", " " + STATE, STATE + "\x00"]
)
def test_another_state_is_refused(state: str) -> None:
    with pytest.raises(OAuthRefused, match="state") as caught:
        check_callback(_callback(state=state), state=STATE, issuer=ISSUER, iss_required=False)
    _refusal_shows_nothing_secret(caught.value, CODE)


def test_a_callback_without_state_is_refused_even_with_an_error() -> None:
    for query in (_callback(state=None), {"error": "access_denied"}, {"code": CODE}):
        with pytest.raises(OAuthRefused, match="no state"):
            check_callback(query, state=STATE, issuer=ISSUER, iss_required=False)


@pytest.mark.parametrize(
    "iss",
    [
        ISSUER + "/",
        "https://idp.example.com.evil.example",
        "http://idp.example.com",
        "https://IDP.example.com",
        "https://attacker.example",
        "",
    ],
)
def test_a_callback_from_another_issuer_is_refused(iss: str) -> None:
    for required in (True, False):
        with pytest.raises(OAuthRefused, match="another issuer") as caught:
            check_callback(_callback(iss=iss), state=STATE, issuer=ISSUER, iss_required=required)
        _refusal_shows_nothing_secret(caught.value, CODE)


def test_iss_must_be_there_when_the_provider_says_it_sends_it() -> None:
    with pytest.raises(OAuthRefused, match="no iss"):
        check_callback(_callback(iss=None), state=STATE, issuer=ISSUER, iss_required=True)
    # A provider that does not advertise it (GitHub) may leave it out.
    code = check_callback(_callback(iss=None), state=STATE, issuer=ISSUER, iss_required=False)
    assert code.reveal() == CODE.encode()
    # No known issuer (a preset without one): nothing to compare an iss with.
    assert check_callback(_callback(iss="https://x.example"), state=STATE, issuer=None,
                          iss_required=False).reveal() == CODE.encode()  # fmt: skip


def test_an_error_callback_is_the_providers_no_and_names_its_code() -> None:
    query = _callback(code=None, error="access_denied", error_description="The user said no")
    with pytest.raises(OAuthRefused) as caught:
        check_callback(query, state=STATE, issuer=ISSUER, iss_required=True)
    assert caught.value.error == "access_denied"
    assert "access_denied" in str(caught.value) and "The user said no" in str(caught.value)
    # An error beside a code is still an error: the code is not used.
    with pytest.raises(OAuthRefused) as caught:
        check_callback(
            _callback(error="server_error"), state=STATE, issuer=ISSUER, iss_required=False
        )
    _refusal_shows_nothing_secret(caught.value, CODE)


def test_an_error_callbacks_words_are_cleaned_and_a_secret_in_them_withheld() -> None:
    token = "ghp_" + "Q7w9E1r3T5y7U9i1O3p5A7s9D1f3G5h7J9k1"
    query = _callback(code=None, error="bad\x1b[31m_thing\n", error_description=f"see {token}")
    with pytest.raises(OAuthRefused) as caught:
        check_callback(query, state=STATE, issuer=ISSUER, iss_required=False)
    assert caught.value.error == "bad31m_thing"
    _refusal_shows_nothing_secret(caught.value, token, "\x1b", "\n")
    query = _callback(code=None, error="access_denied", error_description="x\x1b[2J" + "y" * 900)
    with pytest.raises(OAuthRefused) as caught:
        check_callback(query, state=STATE, issuer=ISSUER, iss_required=False)
    assert "\x1b" not in str(caught.value) and len(str(caught.value)) < 300


@pytest.mark.parametrize("name", ["code", "state", "iss", "error"])
def test_a_parameter_given_twice_is_refused(name: str) -> None:
    pairs = [*_callback().items(), (name, "second-" + CODE)]
    if name not in _callback():
        pairs.append((name, "third"))
    with pytest.raises(OAuthRefused, match="twice") as caught:
        check_callback(pairs, state=STATE, issuer=ISSUER, iss_required=False)
    _refusal_shows_nothing_secret(caught.value, CODE)
    query = f"code={CODE}&state={STATE}&{name}=once&{name}=again"
    with pytest.raises(OAuthRefused, match="twice"):
        parse_callback_query(query)


def test_the_raw_query_of_a_redirect_is_read_once_and_bounded() -> None:
    assert parse_callback_query(f"code={CODE}&state={STATE}&iss=https%3A%2F%2Fidp.example.com") == {
        "code": CODE,
        "state": STATE,
        "iss": ISSUER,
    }
    with pytest.raises(OAuthRefused, match="too long"):
        parse_callback_query("code=" + "a" * 9000)
    with pytest.raises(OAuthRefused, match="too many"):
        parse_callback_query("&".join(f"p{i}=1" for i in range(17)))
    with pytest.raises(OAuthRefused, match="without a name"):
        parse_callback_query(f"=x&code={CODE}&state={STATE}")


def test_a_callback_without_a_code_is_refused() -> None:
    for query in (_callback(code=None), _callback(code="")):
        with pytest.raises(OAuthRefused, match="no code"):
            check_callback(query, state=STATE, issuer=ISSUER, iss_required=False)
