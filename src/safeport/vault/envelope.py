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
from safeport.vault.kdf import KEY_BYTES

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
    try:
        AESGCM(data_key).decrypt_into(nonce, ciphertext, aad, out)
    except InvalidTag as exc:
        raise CannotUnlock() from exc
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
    try:
        AESGCM(key).decrypt_into(wrap.nonce, wrap.ciphertext, aad, out)
    except InvalidTag as exc:
        raise CannotUnlock() from exc
    return out
