"""The vault's AEAD steps: wrap the data key, seal and open the payload (pure, no I/O).

A random 256-bit data key encrypts the payload; it is stored wrapped under the passphrase key
(and, optionally, under a key kept in the OS keyring). Changing the passphrase rewraps rather
than re-encrypting everything. Every failure here is :class:`CannotUnlock`.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from safeport.vault.errors import CannotUnlock
from safeport.vault.format import KeyWrap
from safeport.vault.kdf import KEY_BYTES, zero

NONCE_BYTES = 12
_PASSPHRASE_WRAP = b"safeport vault: data key under passphrase key v1\x00"
_KEYRING_WRAP = b"safeport vault: data key under keyring key v1\x00"


def new_data_key() -> bytearray:
    return bytearray(os.urandom(KEY_BYTES))


def wrap_for_passphrase(kek: bytearray, data_key: bytearray, vault_id: str) -> KeyWrap:
    return _wrap(kek, data_key, _PASSPHRASE_WRAP + vault_id.encode("ascii"))


def unwrap_from_passphrase(kek: bytearray, wrap: KeyWrap, vault_id: str) -> bytearray:
    return _unwrap(kek, wrap, _PASSPHRASE_WRAP + vault_id.encode("ascii"))


def wrap_for_keyring(key: bytearray, data_key: bytearray, vault_id: str) -> KeyWrap:
    return _wrap(key, data_key, _KEYRING_WRAP + vault_id.encode("ascii"))


def unwrap_from_keyring(key: bytearray, wrap: KeyWrap, vault_id: str) -> bytearray:
    return _unwrap(key, wrap, _KEYRING_WRAP + vault_id.encode("ascii"))


def seal_payload(data_key: bytearray, nonce: bytes, aad: bytes, plaintext: bytearray) -> bytes:
    return AESGCM(data_key).encrypt(nonce, plaintext, aad)


def open_payload(data_key: bytearray, nonce: bytes, aad: bytes, ciphertext: bytes) -> bytearray:
    """Decrypt into a fresh buffer the caller zeroes; a bad tag is :class:`CannotUnlock`."""
    if len(ciphertext) < 16:
        raise CannotUnlock()
    out = bytearray(len(ciphertext) - 16)
    _decrypt_into(data_key, nonce, ciphertext, aad, out)
    return out


def new_nonce() -> bytes:
    return os.urandom(NONCE_BYTES)


def _wrap(key: bytearray, data_key: bytearray, aad: bytes) -> KeyWrap:
    nonce = new_nonce()
    return KeyWrap(nonce=nonce, ciphertext=AESGCM(key).encrypt(nonce, data_key, aad))


def _unwrap(key: bytearray, wrap: KeyWrap, aad: bytes) -> bytearray:
    if len(wrap.nonce) != NONCE_BYTES or len(wrap.ciphertext) != KEY_BYTES + 16:
        raise CannotUnlock()
    out = bytearray(KEY_BYTES)
    _decrypt_into(key, wrap.nonce, wrap.ciphertext, aad, out)
    return out


def _decrypt_into(
    key: bytearray, nonce: bytes, ciphertext: bytes, aad: bytes, out: bytearray
) -> None:
    """Decrypt into ``out``, or zero it and refuse.

    GCM writes the plaintext before it checks the tag, so after a failure ``out`` holds the
    decrypted bytes anyway: with only the tag altered, that is the real data key or every
    secret in the payload. They must not be left behind in memory (or in a traceback's locals).
    """
    try:
        AESGCM(key).decrypt_into(nonce, ciphertext, aad, out)
    except InvalidTag as exc:
        zero(out)
        raise CannotUnlock() from exc
