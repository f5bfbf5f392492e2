"""Sealing journal bodies to the vault's audit key, so records are written even while locked.

Each record gets a fresh X25519 key pair: the shared secret with the vault's static audit key,
through HKDF-SHA256 (bound to both public keys), gives a one-time AES-256-GCM key. Because that
key is never reused, the nonce can be fixed. The key pairs are derived a few records ahead, off
the request's path (:mod:`safeport.vault.body_keys`). Only the vault (unlocked) can open a body; the
chain covers the sealed bytes, so verification needs no key at all.
"""

from __future__ import annotations

import base64
import binascii
import functools
import weakref
from collections.abc import Mapping
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from safeport.errors import AuditError
from safeport.vault.body_keys import BodyKey, KeyReserve
from safeport.vault.errors import VaultLocked
from safeport.vault.interface import VaultPublicKeys
from safeport.vault.public_file import read_public_keys
from safeport.vault.secrets import SecretBytes

ALGORITHM = "x25519-hkdf-sha256-aes256gcm"
_INFO = b"safeport audit body v1\x00"
_NONCE = bytes(12)
_RAW = (serialization.Encoding.Raw, serialization.PublicFormat.Raw)
# Refilled once half are taken (body_keys): one wake of the deriving thread every two records.
KEYS_AHEAD = 4


class AuditSealer:
    """A :class:`~safeport.shared.audit.BodySealer` built from the public audit key only.

    ``keys_ahead`` one-time keys are derived ahead by a daemon thread (:mod:`.body_keys`);
    0 derives each key inside :meth:`seal`.
    """

    def __init__(self, public: VaultPublicKeys, *, keys_ahead: int = KEYS_AHEAD) -> None:
        recipient = X25519PublicKey.from_public_bytes(public.audit_x25519)
        # The reserve's thread holds only the public key, never this sealer: dropping the
        # sealer stops the thread.
        self._keys = KeyReserve(
            functools.partial(_fresh_key, recipient, public.audit_x25519), keys_ahead
        )
        weakref.finalize(self, self._keys.stop)

    @classmethod
    def from_public_file(cls, path: Path) -> AuditSealer:
        return cls(read_public_keys(path))

    def prepare(self) -> None:
        """The journal is about to wait for the disk: derive the next records' keys meanwhile."""
        self._keys.prepare()

    def seal(self, plaintext: bytes) -> Mapping[str, str]:
        key = self._keys.take()
        ciphertext = AESGCM(key.aes_key).encrypt(_NONCE, plaintext, key.epk)
        return {
            "alg": ALGORITHM,
            "epk": base64.b64encode(key.epk).decode("ascii"),
            "ct": base64.b64encode(ciphertext).decode("ascii"),
        }


class AuditOpener:
    """Opens sealed bodies with the private audit key (only while the vault is unlocked)."""

    def __init__(self, private: SecretBytes) -> None:
        self._private = private

    def open(self, sealed: Mapping[str, object]) -> bytes:
        """The body's canonical JSON; :class:`AuditError` if it is not a body sealed to us."""
        if len(self._private) == 0:
            raise VaultLocked()
        try:
            if sealed.get("alg") != ALGORITHM:
                raise ValueError("algorithm")
            epk = base64.b64decode(str(sealed["epk"]), validate=True)
            ciphertext = base64.b64decode(str(sealed["ct"]), validate=True)
            with self._private.exposed() as raw:
                private = X25519PrivateKey.from_private_bytes(raw)
            own = private.public_key().public_bytes(*_RAW)
            shared = private.exchange(X25519PublicKey.from_public_bytes(epk))
            return AESGCM(_body_key(shared, epk, own)).decrypt(_NONCE, ciphertext, epk)
        except (ValueError, KeyError, InvalidTag, binascii.Error) as exc:
            raise AuditError("a sealed record body could not be opened with this vault") from exc


def _fresh_key(recipient: X25519PublicKey, recipient_raw: bytes) -> BodyKey:
    """A new ephemeral key pair, and the one-time AES key it agrees with ``recipient``."""
    ephemeral = X25519PrivateKey.generate()
    epk = ephemeral.public_key().public_bytes(*_RAW)
    shared = ephemeral.exchange(recipient)
    return BodyKey(epk=epk, aes_key=_body_key(shared, epk, recipient_raw))


def _body_key(shared: bytes, epk: bytes, recipient: bytes) -> bytes:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO + epk + recipient)
    return hkdf.derive(shared)
