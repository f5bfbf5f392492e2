"""The bytes of ``vault.sp``: a versioned header, then the encrypted payload (pure, no I/O).

::

    b"SPVAULT\\0" | version u16 | header length u32 | header (canonical JSON) | AEAD ciphertext

The header holds what is needed before decryption (KDF parameters and salt, the wrapped data
key, the payload nonce, the public keys and a few counts); it is authenticated as the payload's
associated data, so a changed header byte fails exactly like a wrong passphrase. What the
ciphertext holds is :mod:`safeport.vault.payload`'s.
"""

from __future__ import annotations

import binascii
import json
import re
import struct
from dataclasses import dataclass
from typing import Any

from safeport.vault.canonical_json import as_count, as_str, b64, canonical, unb64
from safeport.vault.errors import CannotUnlock, NotAVault
from safeport.vault.interface import VaultPublicKeys
from safeport.vault.kdf import KEY_BYTES, SALT_BYTES, KdfParams

MAGIC = b"SPVAULT\x00"
VERSION = 1
_PREFIX = struct.Struct(">8sHI")
PREFIX_BYTES = _PREFIX.size
MAX_HEADER_BYTES = 64 * 1024
_VAULT_ID_RE = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class KeyWrap:
    """The 32-byte data key encrypted under another key (passphrase or keyring)."""

    nonce: bytes
    ciphertext: bytes


@dataclass(frozen=True)
class Header:
    vault_id: str
    generation: int
    entries: int
    kdf: KdfParams
    salt: bytes
    passphrase_wrap: KeyWrap
    keyring_wrap: KeyWrap | None
    public: VaultPublicKeys
    payload_nonce: bytes


# -- header --------------------------------------------------------------------------------------


def encode_prefix_and_header(header: Header) -> bytes:
    """Everything before the ciphertext; also the payload's associated data."""
    body = canonical(
        {
            "vault_id": header.vault_id,
            "generation": header.generation,
            "entries": header.entries,
            "kdf": {
                "alg": "argon2id",
                "memory_kib": header.kdf.memory_kib,
                "iterations": header.kdf.iterations,
                "lanes": header.kdf.lanes,
                "salt": b64(header.salt),
            },
            "wrap": _wrap_json(header.passphrase_wrap),
            "keyring": None if header.keyring_wrap is None else _wrap_json(header.keyring_wrap),
            "public": {
                "audit_x25519": b64(header.public.audit_x25519),
                "checkpoint_ed25519": b64(header.public.checkpoint_ed25519),
            },
            "payload_nonce": b64(header.payload_nonce),
        }
    )
    return _PREFIX.pack(MAGIC, VERSION, len(body)) + body


def split_file(data: bytes, *, source: str) -> tuple[Header, bytes, bytes]:
    """(header, associated data, ciphertext) of a vault file's bytes.

    Raises :class:`NotAVault` when the magic or version is wrong (a different file, or a newer
    sp), and :class:`CannotUnlock` for anything else: past the version, damage and tampering are
    the same failure as a wrong passphrase.
    """
    if len(data) < len(MAGIC) or data[: len(MAGIC)] != MAGIC:
        raise NotAVault(f"{source} is not a safeport vault", hint="check the path")
    if len(data) < PREFIX_BYTES:
        raise CannotUnlock()
    _, version, length = _PREFIX.unpack_from(data)
    if version != VERSION:
        raise NotAVault(
            f"{source} is a safeport vault of format version {version}; this sp reads version "
            f"{VERSION}",
            hint="use the sp release that wrote it",
        )
    end = PREFIX_BYTES + length
    if length > MAX_HEADER_BYTES or len(data) < end:
        raise CannotUnlock()
    try:
        header = _parse_header(json.loads(data[PREFIX_BYTES:end]))
    except (ValueError, TypeError, KeyError, binascii.Error, RecursionError) as exc:
        raise CannotUnlock() from exc
    return header, data[:end], data[end:]


def _parse_header(raw: Any) -> Header:
    kdf = raw["kdf"]
    if kdf["alg"] != "argon2id":
        raise ValueError("kdf")
    public = raw["public"]
    header = Header(
        vault_id=as_str(raw["vault_id"]),
        generation=as_count(raw["generation"]),
        entries=as_count(raw["entries"]),
        kdf=KdfParams(
            memory_kib=as_count(kdf["memory_kib"]),
            iterations=as_count(kdf["iterations"]),
            lanes=as_count(kdf["lanes"]),
        ),
        salt=unb64(kdf["salt"]),
        passphrase_wrap=_parse_wrap(raw["wrap"]),
        keyring_wrap=None if raw["keyring"] is None else _parse_wrap(raw["keyring"]),
        public=VaultPublicKeys(
            audit_x25519=unb64(public["audit_x25519"]),
            checkpoint_ed25519=unb64(public["checkpoint_ed25519"]),
        ),
        payload_nonce=unb64(raw["payload_nonce"]),
    )
    # Everything used before the payload is authenticated (the KDF's salt, the wrap's associated
    # data, the keyring account name) must be checked here: a foreign exception from one of them
    # would tell tampering apart from a wrong passphrase, and crash instead of refusing.
    if not _VAULT_ID_RE.fullmatch(header.vault_id) or len(header.salt) != SALT_BYTES:
        raise ValueError("identity")
    wraps = [header.passphrase_wrap] + ([header.keyring_wrap] if header.keyring_wrap else [])
    if any(len(w.nonce) != 12 or len(w.ciphertext) != KEY_BYTES + 16 for w in wraps):
        raise ValueError("wrap sizes")
    public = header.public
    if len(header.payload_nonce) != 12 or {
        len(public.audit_x25519),
        len(public.checkpoint_ed25519),
    } != {32}:
        raise ValueError("sizes")
    return header


def _wrap_json(wrap: KeyWrap) -> dict[str, str]:
    return {"nonce": b64(wrap.nonce), "key": b64(wrap.ciphertext)}


def _parse_wrap(raw: Any) -> KeyWrap:
    return KeyWrap(nonce=unb64(raw["nonce"]), ciphertext=unb64(raw["key"]))
