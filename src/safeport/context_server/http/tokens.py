"""The resource server's check of an access token: a compact JWS (EdDSA over Ed25519) signed by
the gateway, for this issuer and this resource, not expired.

The keys come from the gateway (``oauth_keys``) and are cached; a token naming a key id the
cache does not hold triggers one refetch, at most every :data:`REFETCH_EVERY_S`, so a flood of
tokens with made-up key ids cannot turn into a flood on agent.sock. Every failure is the same
``None``: a client learns nothing from which check refused its token. Whether the client is
still approved is a separate question (``standing``).

A token whose signature and claims held is remembered (its exact text, with its claims), so a
client's next requests skip the signature check and the parsing; the times are checked on every
request all the same, and a change of the gateway's keys forgets every remembered token.
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from mcp.server.auth.provider import AccessToken
from pydantic import ValidationError

from safeport.shared.outside_json import JsonRefused, jwt_parts
from safeport.shared.schemas.oauth_wire import AccessClaims, OAuthKeysResult

log = logging.getLogger(__name__)

REFETCH_EVERY_S = 10.0
# Clock skew tolerated between the gateway and this process (the same machine: small).
LEEWAY_S = 5
MAX_TOKEN_CHARS = 4096
MAX_REMEMBERED = 1024

FetchKeys = Callable[[], Awaitable[OAuthKeysResult]]
Clock = Callable[[], float]


@dataclass(frozen=True)
class VerifiedToken:
    """An access token whose signature, issuer, audience and lifetime held."""

    claims: AccessClaims
    token: str


class SigningKeys:
    """The gateway's public keys by key id, fetched on first use and on an unknown key id."""

    def __init__(self, fetch: FetchKeys, clock: Clock = time.monotonic) -> None:
        self._fetch = fetch
        self._clock = clock
        self._keys: dict[str, Ed25519PublicKey] = {}
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()
        self.generation = 0  # changes whenever the set of keys does

    async def key(self, kid: str) -> Ed25519PublicKey | None:
        found = self._keys.get(kid)
        if found is not None:
            return found
        async with self._lock:
            if kid not in self._keys and self._may_refetch():
                await self._refresh()
        return self._keys.get(kid)

    def cached(self) -> tuple[Ed25519PublicKey, ...]:
        """The keys held now, without fetching: what a token request's grant is checked with
        (``grant_charge``), so a flood of token requests never reaches agent.sock."""
        return tuple(self._keys.values())

    async def warm(self) -> None:
        """Fetch the keys if none are held (at start, and once a human approved a client: its
        code exchange follows). A failed fetch here does not count against the refetch
        allowance, so it cannot hold back the fetch the first access token needs."""
        if self._keys:
            return
        async with self._lock:
            if self._keys:
                return
            before = self._fetched_at
            await self._refresh()
            if not self._keys:
                self._fetched_at = before

    def _may_refetch(self) -> bool:
        last = self._fetched_at
        return last is None or self._clock() - last >= REFETCH_EVERY_S

    async def _refresh(self) -> None:
        self._fetched_at = self._clock()
        try:
            answer = await self._fetch()
        except Exception as exc:  # the gateway is down: keep the keys we have, fail closed
            log.warning("the gateway's token keys could not be fetched: %s", type(exc).__name__)
            return
        keys: dict[str, Ed25519PublicKey] = {}
        for entry in answer.keys:
            try:
                raw = base64.urlsafe_b64decode(entry.x + "=" * (-len(entry.x) % 4))
                keys[entry.kid] = Ed25519PublicKey.from_public_bytes(raw)
            except (ValueError, binascii.Error):
                log.warning("the gateway sent a malformed token key; ignored")
        if keys.keys() != self._keys.keys():
            self.generation += 1
        self._keys = keys


class TokenChecker:
    """Verifies access tokens for one issuer (the public URL) and one resource (its /mcp)."""

    def __init__(
        self, keys: SigningKeys, issuer: str, resource: str, clock: Clock = time.time
    ) -> None:
        self._keys = keys
        self._issuer = issuer
        self._resource = resource
        self._clock = clock
        self._verified: dict[str, AccessClaims] = {}
        self._generation = keys.generation

    async def verify(self, token: str) -> VerifiedToken | None:
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        if self._generation != self._keys.generation:
            self._verified.clear()
            self._generation = self._keys.generation
        claims = self._verified.get(token)
        if claims is None:
            generation = self._generation
            claims = await self._verify_signed(token)
            if claims is None:
                return None
            if generation == self._keys.generation:  # not checked with keys since replaced
                if len(self._verified) >= MAX_REMEMBERED:
                    self._verified.clear()  # the live tokens are checked once more each
                self._verified[token] = claims
        now = self._clock()
        if claims.exp + LEEWAY_S < now or claims.iat - LEEWAY_S > now:
            return None
        return VerifiedToken(claims, token)

    async def _verify_signed(self, token: str) -> AccessClaims | None:
        """The claims of a token whose header, signature, issuer, audience and shape hold."""
        try:
            # Read by the strict decoder first: the JWT library's own parser would let a
            # deeply nested header escape as a RecursionError (a 500, not a 401).
            header, _ = jwt_parts(token)
        except JsonRefused:
            return None
        kid = header.get("kid")
        if header.get("alg") != "EdDSA" or not isinstance(kid, str) or not 0 < len(kid) <= 128:
            return None
        key = await self._keys.key(kid)
        if key is None:
            return None
        try:
            raw = jwt.decode(
                token,
                key=key,
                algorithms=["EdDSA"],
                audience=self._resource,
                issuer=self._issuer,
                # Times are checked in ``verify``, against this checker's clock, every time.
                options={
                    "require": ["exp", "iat", "iss", "aud", "sub", "jti"],
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                },
            )
            claims = AccessClaims.model_validate(raw)
        except (jwt.PyJWTError, ValidationError):
            return None
        return claims if claims.sp_roots else None


class GatewayTokenVerifier:
    """The SDK's ``TokenVerifier`` over :class:`TokenChecker`: what its bearer middleware
    puts on the request (``scope["user"].access_token``), the claims kept whole."""

    def __init__(self, checker: TokenChecker) -> None:
        self._checker = checker

    async def verify_token(self, token: str) -> AccessToken | None:
        verified = await self._checker.verify(token)
        if verified is None:
            return None
        claims = verified.claims
        return AccessToken(
            token=token,
            client_id=claims.sub,
            scopes=[],
            expires_at=claims.exp,
            resource=claims.aud,
            subject=claims.sub,
            claims=claims.model_dump(),
        )


def claims_of(access: AccessToken) -> AccessClaims:
    """The claims :class:`GatewayTokenVerifier` kept on the SDK's token."""
    return AccessClaims.model_validate(access.claims or {})
