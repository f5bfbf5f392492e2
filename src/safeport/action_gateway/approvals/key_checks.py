"""What a security key's touch proves, checked with python-fido2's server side. Pure: no I/O.

A card's challenge is SHA-256 over a canonical encoding of the card id, the digest of the
prepared action (the exact command or request the card shows), the digest of the requester's
identity and the card's wall-clock expiry, so one touch answers one card and nothing else. The
enrolment, removal and policy challenges bind their purpose, their subject and a nonce the
gateway issued once.

:func:`verify_assertion` leaves the WebAuthn checks to ``Fido2Server.authenticate_complete``
(client data type ``webauthn.get``, origin, challenge, rpIdHash, the user-present flag, user
verification when asked, the signature against the enrolled COSE key) and adds the signature
counter, which python-fido2 leaves to its caller: it must go up, except when the stored and the
new counter are both 0, which is how a key without a counter (several passkey providers) says
so; such a key's assertions are still single-use, because each card's challenge is.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from fido2 import cbor
from fido2.cose import CoseKey
from fido2.server import Fido2Server
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import (
    AttestationObject,
    AttestedCredentialData,
    AuthenticationResponse,
    PublicKeyCredentialRpEntity,
    RegistrationResponse,
    UserVerificationRequirement,
)

from safeport.errors import Denied
from safeport.shared.outside_json import loads_object
from safeport.shared.schemas.key_wire import EnrolledKeyView, origin_of

_DOMAIN = "safeport approval v1"
# The wire bounds the base64 at 4096 characters (``key_wire.B64``): 3 KiB of bytes.
MAX_CLIENT_DATA_BYTES = 4096


class KeyRefused(Denied):
    """An assertion or a registration that does not prove what it must."""


@dataclass(frozen=True)
class EnrolledKey:
    """One enrolled credential: its id (base64url), COSE public key, name and last counter."""

    id: str
    name: str
    public_key: bytes  # the COSE key, CBOR
    counter: int
    enrolled_at: str

    def as_json(self) -> dict[str, object]:
        """The key as the ring stored in the vault holds it (read back by :meth:`from_json`)."""
        return {
            "id": self.id,
            "name": self.name,
            "public_key": websafe_encode(self.public_key),
            "counter": self.counter,
            "enrolled_at": self.enrolled_at,
        }

    def view(self) -> EnrolledKeyView:
        """The key as `sp approver keys` shows it: no public key."""
        return EnrolledKeyView(
            id=self.id, name=self.name, counter=self.counter, enrolled_at=self.enrolled_at
        )

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> EnrolledKey:
        return cls(
            id=str(raw["id"]),
            name=str(raw["name"]),
            public_key=websafe_decode(str(raw["public_key"])),
            counter=int(str(raw["counter"])),
            enrolled_at=str(raw["enrolled_at"]),
        )


def card_challenge(
    card_id: str, prepared_sha256: str, requester_sha256: str, expires_unix: int
) -> bytes:
    """The challenge a key signs to approve one card."""
    return _digest(
        {
            "purpose": "card",
            "card": card_id,
            "prepared_sha256": prepared_sha256,
            "requester_sha256": requester_sha256,
            "expires_unix": expires_unix,
        }
    )


def admin_challenge(purpose: str, subject: str, nonce: str) -> bytes:
    """The challenge a key signs to enrol or remove a key, or to accept a policy."""
    return _digest({"purpose": purpose, "subject": subject, "nonce": nonce})


def verify_assertion(
    rp_id: str,
    keys: tuple[EnrolledKey, ...],
    response: Mapping[str, object],
    challenge: bytes,
    *,
    user_verification: bool,
) -> EnrolledKey:
    """The enrolled key, its counter moved to the assertion's, if ``response`` is its valid
    assertion over ``challenge``; else :class:`KeyRefused`."""
    fields = _client_data(response)
    try:
        parsed = AuthenticationResponse.from_dict(response)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        # RecursionError: the authenticator data's extensions are CBOR, read recursively.
        raise KeyRefused("the security key's answer is malformed") from exc
    wanted = websafe_encode(parsed.raw_id)
    key = next((k for k in keys if k.id == wanted), None)
    if key is None:
        raise KeyRefused(
            "the key that signed is not enrolled",
            hint="`sp approver list` shows the enrolled keys; `sp approver enroll` adds one",
        )
    credential = AttestedCredentialData.create(
        b"\0" * 16, parsed.raw_id, CoseKey.parse(_cbor_map(key.public_key))
    )
    state = {
        "challenge": websafe_encode(challenge),
        "user_verification": UserVerificationRequirement.REQUIRED
        if user_verification
        else UserVerificationRequirement.DISCOURAGED,
    }
    client_data = parsed.response.client_data
    if client_data.cross_origin or "topOrigin" in fields:
        # A frame of another origin asked for this signature: the gateway's client never is one.
        raise KeyRefused("the security key's answer was asked for from another origin")
    try:
        _server(rp_id).authenticate_complete(state, [credential], parsed)
    except ValueError as exc:
        raise KeyRefused(f"the security key's answer does not hold: {_reason(exc)}") from exc
    counter = parsed.response.authenticator_data.counter
    if not counter > key.counter and not (counter == 0 and key.counter == 0):
        raise KeyRefused(
            f"key {key.name!r} signed with counter {counter}, not above {key.counter}: "
            "it may have been cloned",
            hint="remove it (`sp approver remove`) and enrol a new one",
        )
    return replace(key, counter=counter)


def verify_registration(
    rp_id: str, user_id: bytes, response: Mapping[str, object], challenge: bytes
) -> tuple[str, bytes, int]:
    """A new credential's (id, COSE public key, counter) if ``response`` registered it for
    ``rp_id`` over ``challenge`` with the user present; else :class:`KeyRefused`."""
    server = _server(rp_id)
    state = {
        "challenge": websafe_encode(challenge),
        "user_verification": UserVerificationRequirement.DISCOURAGED,
    }
    del user_id  # the client data binds the challenge, which binds the purpose and name
    _client_data(response)
    try:
        attestation = AttestationObject(websafe_decode(str(_inner(response)["attestationObject"])))
        attested = attestation.auth_data.credential_data
        raw_id = websafe_encode(attested.credential_id if attested else b"")
        full = {**response, "id": raw_id, "rawId": raw_id}
        auth_data = server.register_complete(state, RegistrationResponse.from_dict(full))
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        # RecursionError: the attestation object is CBOR, which python-fido2 reads recursively
        # and no strict decoder here reads first; its size is bounded at the wire (4 KiB).
        raise KeyRefused(f"the key's registration does not hold: {_reason(exc)}") from exc
    data = auth_data.credential_data
    if data is None:
        raise KeyRefused("the key's registration holds no credential")
    return websafe_encode(data.credential_id), cbor.encode(dict(data.public_key)), auth_data.counter


def _client_data(response: Mapping[str, object]) -> dict[str, Any]:
    """The client data's fields, read by the strict decoder before python-fido2 reads them
    with the standard parser, which recurses once per bracket and keeps the last of a repeated
    key (``crossOrigin`` given twice would be read as its last value). The approver's client
    wrote these bytes; nothing in them counts until the signature over them is checked."""
    try:
        raw = websafe_decode(str(_inner(response)["clientDataJSON"]))
        return loads_object(raw, max_bytes=MAX_CLIENT_DATA_BYTES)
    except (ValueError, KeyError) as exc:  # JsonRefused is a ValueError, as is bad base64
        raise KeyRefused("the security key's answer is malformed") from exc


def _inner(response: Mapping[str, object]) -> Mapping[str, object]:
    inner = response["response"]
    if not isinstance(inner, Mapping):
        raise KeyRefused("the key's registration is malformed")
    return inner


@functools.lru_cache(maxsize=8)
def _server(rp_id: str) -> Fido2Server:
    # Holds no per-request state (the challenge travels in ``state``); building one costs half
    # a check (it lists every COSE algorithm), so one per relying party is kept.
    origin = origin_of(rp_id)
    return Fido2Server(
        PublicKeyCredentialRpEntity(name="safeport", id=rp_id),
        verify_origin=lambda seen: seen == origin,
    )


def _cbor_map(raw: bytes) -> Mapping[int, object]:
    value = cbor.decode(raw)
    if not isinstance(value, Mapping):
        raise KeyRefused("an enrolled key's public key is damaged")
    return value


def _reason(exc: Exception) -> str:
    # python-fido2's messages name the failed check ("User Present flag not set.").
    return str(exc).rstrip(".") or type(exc).__name__


def _digest(fields: Mapping[str, object]) -> bytes:
    canonical = json.dumps(
        {"domain": _DOMAIN, **fields}, sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )
    return hashlib.sha256(canonical.encode("ascii")).digest()
