"""The resource server's token check (pure: keys signed in the test, time a parameter)."""

from __future__ import annotations

import base64
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from safeport.context_server.http.tokens import (
    LEEWAY_S,
    REFETCH_EVERY_S,
    SigningKeys,
    TokenChecker,
)
from safeport.shared.schemas.oauth_wire import OAuthKeysResult, PublicKey

ISSUER = "https://tunnel.example"
RESOURCE = "https://tunnel.example/mcp"
NOW = 1_900_000_000.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Signer:
    def __init__(self, kid: str = "k1") -> None:
        self.kid = kid
        self.key = Ed25519PrivateKey.generate()

    def public(self) -> PublicKey:
        raw = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        x = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        return PublicKey(kid=self.kid, x=x)

    def token(self, **overrides: Any) -> str:
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": RESOURCE,
            "sub": "https://client.example/meta.json",
            "exp": int(NOW) + 300,
            "iat": int(NOW),
            "jti": "token-0000000001",
            "sp_roots": ["proj"],
            "sp_profile": "reader",
            "sp_client": "Example client",
        }
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        return jwt.encode(claims, self.key, algorithm="EdDSA", headers={"kid": self.kid})


class Keys:
    """What the gateway would answer to oauth_keys, counted."""

    def __init__(self, *signers: Signer) -> None:
        self.signers = list(signers)
        self.fetches = 0

    async def __call__(self) -> OAuthKeysResult:
        self.fetches += 1
        return OAuthKeysResult(keys=[s.public() for s in self.signers])


def checker(keys: Keys, clock: list[float] | None = None) -> TokenChecker:
    mono = clock or [0.0]
    return TokenChecker(
        SigningKeys(keys, clock=lambda: mono[0]), ISSUER, RESOURCE, clock=lambda: NOW
    )


@pytest.mark.anyio
async def test_a_token_the_gateway_signed_for_this_resource_is_accepted() -> None:
    signer = Signer()
    verified = await checker(Keys(signer)).verify(signer.token())
    assert verified is not None
    assert verified.claims.sub == "https://client.example/meta.json"
    assert verified.claims.sp_roots == ["proj"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "overrides",
    [
        {"exp": int(NOW) - 60},  # expired
        {"aud": "https://other.example/mcp"},  # another resource's token
        {"aud": ISSUER},  # the issuer, not the MCP endpoint
        {"iss": "https://evil.example"},
        {"jti": None},
        {"sp_roots": []},
        {"sp_profile": "admin"},
        {"sub": None},
    ],
)
async def test_a_token_failing_any_claim_check_is_refused(overrides: dict[str, Any]) -> None:
    signer = Signer()
    assert await checker(Keys(signer)).verify(signer.token(**overrides)) is None


@pytest.mark.anyio
async def test_a_token_signed_by_another_key_under_a_known_kid_is_refused() -> None:
    real, forger = Signer("k1"), Signer("k1")
    assert await checker(Keys(real)).verify(forger.token()) is None


@pytest.mark.anyio
async def test_unsigned_and_symmetric_tokens_are_refused() -> None:
    signer = Signer()
    claims = jwt.decode(signer.token(), options={"verify_signature": False})
    none_token = jwt.encode(claims, "", algorithm="none", headers={"kid": "k1"})
    # HS256 keyed with the public key's text: the classic algorithm-confusion forgery.
    hs_token = jwt.encode(claims, signer.public().x, algorithm="HS256", headers={"kid": "k1"})
    check = checker(Keys(signer))
    assert await check.verify(none_token) is None
    assert await check.verify(hs_token) is None
    assert await check.verify("not.a.token") is None
    assert await check.verify("x" * 10_000) is None


@pytest.mark.anyio
async def test_an_unknown_kid_refetches_the_keys_at_most_once_per_interval() -> None:
    old, rotated = Signer("old"), Signer("new")
    keys = Keys(old)
    clock = [0.0]
    check = checker(keys, clock)
    assert await check.verify(old.token()) is not None
    assert keys.fetches == 1
    for n in range(50):  # a flood of made-up key ids costs no further fetch
        assert await check.verify(Signer(f"made-up-{n}").token()) is None
    assert keys.fetches == 1
    keys.signers.append(rotated)  # the gateway rotated its key
    clock[0] += REFETCH_EVERY_S
    assert await check.verify(rotated.token()) is not None
    assert keys.fetches == 2


@pytest.mark.anyio
async def test_keys_unavailable_fail_closed() -> None:
    async def down() -> OAuthKeysResult:
        raise OSError("no gateway")

    signer = Signer()
    check = TokenChecker(SigningKeys(down), ISSUER, RESOURCE, clock=time.time)
    assert await check.verify(signer.token(exp=int(time.time()) + 60)) is None


@pytest.mark.anyio
async def test_a_remembered_token_still_expires_and_a_changed_one_is_checked_anew() -> None:
    signer = Signer()
    wall = [NOW]
    check = TokenChecker(SigningKeys(Keys(signer)), ISSUER, RESOURCE, clock=lambda: wall[0])
    token = signer.token(exp=int(NOW) + 60)
    assert await check.verify(token) is not None
    assert await check.verify(token) is not None  # remembered
    # One character of the signature changed: not the remembered text, so checked, and refused.
    head, _, signature = token.rpartition(".")
    flipped = signature[:5] + ("A" if signature[5] != "A" else "B") + signature[6:]
    assert await check.verify(f"{head}.{flipped}") is None
    wall[0] = NOW + 60 + LEEWAY_S + 1
    assert await check.verify(token) is None  # the times are checked every time


@pytest.mark.anyio
async def test_remembered_tokens_are_forgotten_when_the_gateways_keys_change() -> None:
    """A key the gateway no longer publishes stops a token it signed, remembered or not."""
    old, new = Signer("k1"), Signer("k2")
    keys, clock = Keys(old), [0.0]
    check = checker(keys, clock)
    token = old.token()
    assert await check.verify(token) is not None
    keys.signers = [new]  # the gateway replaced its key
    clock[0] += REFETCH_EVERY_S
    assert await check.verify(new.token()) is not None  # an unknown kid: the keys refetched
    assert await check.verify(token) is None
