"""Fingerprints of secret values: how a person allows a false positive back without writing it.

A fingerprint is ``fp1:`` and the hex HMAC-SHA256 of the exact value under a random key kept in
safeport's own folder, never in a workspace. Keyed, so a fingerprint in ``context.toml`` (or one
seen over a shoulder) confirms no guess of the value without the key; exact, so allowing one
value back lets no other value through, however alike.

Only a best-effort finding may be allowed back (:data:`ALLOWABLE_KINDS`): known token formats and
private keys are what the detector guarantees to withhold, and nothing turns that off but the
loud per-root switch.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from safeport.shared.secret_scan.spans import GENERIC_KINDS

PREFIX = "fp1:"
KEY_BYTES = 32
ALLOWABLE_KINDS = GENERIC_KINDS
_SHAPE = re.compile(r"fp1:[0-9a-f]{64}")


def fingerprint(value: str, key: bytes) -> str:
    """The keyed fingerprint of ``value``'s UTF-8 bytes (a lone surrogate kept, never fatal)."""
    if len(key) != KEY_BYTES:
        raise ValueError("a fingerprint key is 32 bytes")
    data = value.encode("utf-8", "surrogatepass")
    return PREFIX + hmac.new(key, data, hashlib.sha256).hexdigest()


def is_fingerprint(text: str) -> bool:
    """Whether ``text`` is written as a fingerprint (``fp1:`` and 64 lowercase hex digits)."""
    return _SHAPE.fullmatch(text) is not None
