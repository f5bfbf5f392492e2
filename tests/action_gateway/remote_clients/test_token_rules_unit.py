"""The authorization server's pure decisions, with time as a parameter: token verification,
code lifetime, access-token expiry, PKCE, redirect URIs and the user code."""

from __future__ import annotations

import base64
import hashlib
import secrets

import jwt
import pytest

from safeport.action_gateway.remote_clients import authorization_rules as rules
from safeport.action_gateway.remote_clients.signing_key import SigningKey, TokenRejected
from safeport.action_gateway.remote_clients.token_ledger import Binding, TokenLedger
from safeport.shared.schemas.oauth_wire import AccessClaims

ISSUER = "https://tunnel.example.net"
AUDIENCE = f"{ISSUER}/mcp"
NOW = 1_900_000_000


class Clock:
    def __init__(self) -> None:
        self.now = float(NOW)

    def __call__(self) -> float:
        return self.now


def _claims(**changes: object) -> AccessClaims:
    base: dict[str, object] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "sp-client",
        "exp": NOW + 600,
        "iat": NOW,
        "jti": "jti-0001",
        "sp_roots": ["docs"],
        "sp_profile": "reader",
        "sp_client": "Test Client",
    }
    return AccessClaims.model_validate(base | changes)


def _key() -> SigningKey:
    return SigningKey.from_seed(secrets.token_bytes(32))


def test_a_token_verifies_for_its_audience_until_it_expires() -> None:
    key = _key()
    token = key.sign(_claims())
    assert key.verify(token, issuer=ISSUER, audience=AUDIENCE, now=NOW + 599).sub == "sp-client"
    with pytest.raises(TokenRejected):
        key.verify(token, issuer=ISSUER, audience=AUDIENCE, now=NOW + 600)


@pytest.mark.parametrize(
    "audience,issuer",
    [("https://other.example/mcp", ISSUER), (AUDIENCE, "https://other.example"), (ISSUER, ISSUER)],
)
def test_a_token_for_another_audience_or_issuer_is_rejected(audience: str, issuer: str) -> None:
    key = _key()
    with pytest.raises(TokenRejected):
        key.verify(key.sign(_claims()), issuer=issuer, audience=audience, now=NOW)


def test_another_keys_token_or_an_unsigned_one_is_rejected_with_the_same_message() -> None:
    key, other = _key(), _key()
    unsigned = jwt.encode(_claims().model_dump(), "", algorithm="none", headers={"kid": key.kid})
    forged_kid = jwt.encode(
        _claims().model_dump(), other.private, algorithm="EdDSA", headers={"kid": key.kid}
    )
    messages = set()
    for token in (other.sign(_claims()), unsigned, forged_kid, "not.a.token"):
        with pytest.raises(TokenRejected) as caught:
            key.verify(token, issuer=ISSUER, audience=AUDIENCE, now=NOW)
        messages.add(caught.value.message)
    assert messages == {"the access token is not valid"}


def _binding() -> Binding:
    return Binding("sp-client", "Test Client", AUDIENCE, ISSUER, ("docs",), "reader")


def test_a_code_lives_sixty_seconds_and_an_access_token_until_its_exp() -> None:
    clock = Clock()
    ledger = TokenLedger(clock, _key().sign_bytes)
    late = ledger.new_code(_binding(), "https://c.example/cb", "x" * 43)
    clock.now += 60
    assert ledger.redeem_code(late, lambda record: None).problem == "invalid_grant"
    code = ledger.new_code(_binding(), "https://c.example/cb", "x" * 43)
    clock.now += 59
    family = ledger.redeem_code(code, lambda record: None).family
    assert family is not None
    ledger.issued(family, "jti-1", clock.now + 600)
    assert ledger.access_state("sp-client", "jti-1") is None
    assert ledger.access_state("sp-other", "jti-1") == "unknown token"
    clock.now += 600
    assert ledger.access_state("sp-client", "jti-1") == "expired"


def test_pkce_s256_matches_only_its_own_verifier() -> None:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert rules.pkce_matches(verifier, challenge)
    assert not rules.pkce_matches(secrets.token_urlsafe(48), challenge)
    assert not rules.pkce_matches("short", challenge)
    assert not rules.pkce_matches(challenge, challenge)  # plain: the challenge as verifier


@pytest.mark.parametrize(
    "uri,good",
    [
        ("https://chatgpt.com/connector_platform_oauth_redirect", True),
        ("http://localhost:8080/cb", True),
        ("http://127.0.0.1/cb", True),
        ("http://[::1]:9/cb", True),
        ("http://example.com/cb", False),
        ("http://localhost.evil.example/cb", False),
        ("https://example.com/cb#x", False),
        ("https://u:p@example.com/cb", False),
        ("custom-app:/cb", False),
        ("https://exa mple.com/cb", False),
    ],
)
def test_redirect_uris_that_can_be_registered(uri: str, good: bool) -> None:
    assert (rules.redirect_uri_problem(uri) is None) is good


def test_the_user_code_uses_letters_that_cannot_be_confused() -> None:
    code = rules.user_code_from(secrets.choice)
    assert len(code) == 9 and code[4] == "-"
    assert set(code.replace("-", "")) <= set(rules.USER_CODE_ALPHABET)
    assert not set("AEIOU01L") & set(rules.USER_CODE_ALPHABET)


def test_two_uses_of_one_refresh_token_at_once_are_a_reuse_not_two_grants() -> None:
    """The new refresh token is made after the ledger's lock is let go (signing comes between):
    a second use of the same token in that gap must already count as a reuse."""
    ledger = TokenLedger(Clock(), _key().sign_bytes)
    code = ledger.new_code(_binding(), "https://c.example/cb", "x" * 43)
    family = ledger.redeem_code(code, lambda record: None).family
    assert family is not None
    first = ledger.next_refresh(family)
    assert ledger.rotate(first, lambda family: None).family is family
    racing = ledger.rotate(first, lambda family: None)  # before next_refresh ran for the first
    assert racing.family is None and racing.replayed_family == family.id
    assert family.revoked is not None
    # The legitimate sequence: rotate, then the next token, then that one rotates in turn.
    code = ledger.new_code(_binding(), "https://c.example/cb", "x" * 43)
    other = ledger.redeem_code(code, lambda record: None).family
    assert other is not None
    token = ledger.next_refresh(other)
    for _ in range(3):
        assert ledger.rotate(token, lambda family: None).family is other
        token = ledger.next_refresh(other)
    assert other.revoked is None


def test_the_agent_profile_is_granted_only_while_remote_actions_are_on() -> None:
    assert rules.granted_profile("agent", actions_on=True) == "agent"
    assert rules.granted_profile("agent", actions_on=False) == "reader"
    assert rules.granted_profile("reader", actions_on=True) == "reader"
    assert rules.granted_profile("reader", actions_on=False) == "reader"
