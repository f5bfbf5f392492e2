"""The Ed25519 key access tokens are signed with: kept in the vault, used only while unlocked.

The key's 32-byte seed is a vault entry (``oauth-signing-key``, kind token), created the first
time a token is needed; ``kid`` is a digest of the public key, so the context server can tell
keys apart after a rotation (removing the entry, then locking and unlocking the vault, makes a
new key at the next use, and every token signed with the old one stops verifying). Verification
errors all read the same: a caller learns that a token is not good, never which check failed.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError

from safeport.errors import Denied
from safeport.shared.outside_json import JsonRefused, jwt_parts
from safeport.shared.schemas.oauth_wire import AccessClaims, PublicKey

ENTRY_NAME = "oauth-signing-key"
_REQUIRED = ("exp", "iat", "jti", "sub", "aud", "iss")


class TokenRejected(Denied):
    """An access token that is not good (any reason: the same message for all)."""

    def __init__(self) -> None:
        super().__init__("the access token is not valid")


@dataclass(frozen=True)
class SigningKey:
    private: Ed25519PrivateKey
    kid: str
    x: str  # the raw public key, base64url without padding

    @classmethod
    def from_seed(cls, seed: bytes) -> SigningKey:
        private = Ed25519PrivateKey.from_private_bytes(seed)
        raw = private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        kid = hashlib.sha256(raw).hexdigest()[:32]
        return cls(private, kid, _b64(raw))

    @property
    def public(self) -> PublicKey:
        return PublicKey(kid=self.kid, x=self.x)

    def mac_key(self, purpose: bytes) -> bytes:
        """A key for a MAC over the gateway's own files, derived from the seed (one-way)."""
        seed = self.private.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        return hashlib.sha256(b"safeport oauth mac\0" + purpose + b"\0" + seed).digest()

    def sign_bytes(self, message: bytes) -> bytes:
        """An Ed25519 signature over ``message`` (the codes and refresh tokens:
        ``shared.grant_tokens``); the private key stays here."""
        return self.private.sign(message)

    def sign(self, claims: AccessClaims) -> str:
        return jwt.encode(
            claims.model_dump(), self.private, algorithm="EdDSA", headers={"kid": self.kid}
        )

    def verify(
        self, token: str, *, issuer: str, audience: str, now: float, expired_ok: bool = False
    ) -> AccessClaims:
        """The token's claims if this key signed it, for this audience, not expired (unless
        ``expired_ok``: revoking a token that has expired is harmless)."""
        public: Ed25519PublicKey = self.private.public_key()
        try:
            header, _ = jwt_parts(token)  # the strict decoder first (``outside_json``)
            if header.get("kid") != self.kid or header.get("alg") != "EdDSA":
                raise TokenRejected()
            decoded = jwt.decode(
                token,
                public,
                algorithms=["EdDSA"],
                audience=audience,
                issuer=issuer,
                options={
                    "require": ["exp", "iat", "jti", "sub", "aud", "iss"],
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                },
            )
            claims = AccessClaims.model_validate(decoded)
        except (JsonRefused, jwt.PyJWTError, ValidationError, ValueError) as exc:
            raise TokenRejected() from exc
        if (claims.exp <= now and not expired_ok) or claims.iat > now + 60:  # our clock
            raise TokenRejected()
        return claims


def new_seed() -> str:
    return secrets.token_hex(32)


def seed_from_entry(text: bytes) -> bytes:
    seed = bytes.fromhex(text.decode("ascii"))
    if len(seed) != 32:
        raise ValueError("not an Ed25519 seed")
    return seed


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
