"""Codes and refresh tokens that name their client: ``<random part>.<signature>``.

The random part is 256 bits (``secrets.token_urlsafe(32)``); the signature is the gateway's
Ed25519 signature over a message that names the kind of grant and the client it was issued to,
base64url without padding. The gateway stores a digest of the whole token and stays the only
judge of whether it is good; the signature only lets the HTTP context server, which holds the
public keys alone, tell a request from a client the gateway issued something to apart from a
stranger's (``context_server.http.grant_charge``).
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from collections.abc import Callable, Iterable
from typing import Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

GrantKind = Literal["code", "refresh"]
Sign = Callable[[bytes], bytes]

RANDOM_CHARS = 43  # 32 bytes, base64url without padding
SIGNATURE_CHARS = 86  # 64 bytes, base64url without padding
TOKEN_CHARS = RANDOM_CHARS + 1 + SIGNATURE_CHARS
MAX_CLIENT_ID_CHARS = 512  # the wire contract's bound on a client id
_SHAPE = re.compile(rf"[A-Za-z0-9_-]{{{RANDOM_CHARS}}}\.[A-Za-z0-9_-]{{{SIGNATURE_CHARS}}}")


def message(kind: GrantKind, client_id: str, random_part: str) -> bytes:
    """What is signed: a prefix of its own (no other signature of this key can pass for it),
    the kind (a code cannot pass for a refresh token) and the client."""
    return b"safeport oauth %s\0%s\0%s" % (
        kind.encode("ascii"),
        client_id.encode("utf-8"),
        random_part.encode("ascii"),
    )


def mint(kind: GrantKind, client_id: str, sign: Sign) -> str:
    random_part = secrets.token_urlsafe(32)
    signature = sign(message(kind, client_id, random_part))
    return f"{random_part}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode('ascii')}"


def signed_for(
    token: str, kind: GrantKind, client_id: str, keys: Iterable[Ed25519PublicKey]
) -> bool:
    """Whether one of ``keys`` signed ``token`` as a ``kind`` for ``client_id``.

    The shape is checked first (exact length, alphabet) so that anything else costs a regular
    expression on at most :data:`TOKEN_CHARS` characters, never a decode or a signature check.
    """
    if len(token) != TOKEN_CHARS or not _SHAPE.fullmatch(token):
        return False
    if not 0 < len(client_id) <= MAX_CLIENT_ID_CHARS or "\0" in client_id:
        return False
    random_part, encoded = token.split(".")
    try:
        signature = base64.urlsafe_b64decode(encoded + "==")
    except (ValueError, binascii.Error):
        return False
    # 86 characters carry 516 bits for 512, and the decoder ignores the last one's low four:
    # only the spelling the gateway made counts (a grant it never issued is not its grant).
    if base64.urlsafe_b64encode(signature).rstrip(b"=").decode("ascii") != encoded:
        return False
    signed = message(kind, client_id, random_part)
    for key in keys:
        try:
            key.verify(signature, signed)
        except InvalidSignature:
            continue
        return True
    return False
