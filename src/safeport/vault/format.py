"""The bytes of ``vault.sp``: a versioned header and an encrypted payload (pure, no I/O).

::

    b"SPVAULT\\0" | version u16 | header length u32 | header (canonical JSON) | AEAD ciphertext

The header holds what is needed before decryption (KDF parameters and salt, the wrapped data
key, the payload nonce, the public keys and a few counts); it is authenticated as the payload's
associated data, so a changed header byte fails exactly like a wrong passphrase. The payload is a
small binary layout rather than JSON so that secret values can be sliced straight from the
decrypted buffer into ``bytearray``s and the buffer zeroed, without passing through ``str``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from safeport.shared.audit import JournalHead
from safeport.vault.errors import CannotUnlock, NotAVault
from safeport.vault.interface import AcceptedPolicy, VaultEvidence, VaultPublicKeys
from safeport.vault.kdf import KEY_BYTES, SALT_BYTES, KdfParams, zero
from safeport.vault.secrets import SecretBytes, SecretKind

MAGIC = b"SPVAULT\x00"
VERSION = 1
_PREFIX = struct.Struct(">8sHI")
PREFIX_BYTES = _PREFIX.size
MAX_HEADER_BYTES = 64 * 1024
_BLOB_LEN = struct.Struct(">I")
KINDS: tuple[SecretKind, ...] = ("token", "basic", "ssh-key")
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


@dataclass
class Entry:
    """One credential while unlocked: metadata in the clear, values in wipeable buffers."""

    name: str
    kind: SecretKind
    created: datetime
    rotated: datetime | None
    secrets: dict[str, SecretBytes]
    plain: dict[str, str] = field(default_factory=dict)

    def wipe(self) -> None:
        for value in self.secrets.values():
            value.wipe()


@dataclass
class Payload:
    created: datetime
    entries: dict[str, Entry]
    audit_private: SecretBytes
    checkpoint_private: SecretBytes
    public: VaultPublicKeys
    policy: AcceptedPolicy | None
    evidence: VaultEvidence | None = None
    approver_keys: str | None = None  # the enrolled security keys (JSON), integrity-protected

    def wipe(self) -> None:
        for entry in self.entries.values():
            entry.wipe()
        self.audit_private.wipe()
        self.checkpoint_private.wipe()


# -- header --------------------------------------------------------------------------------------


def encode_prefix_and_header(header: Header) -> bytes:
    """Everything before the ciphertext; also the payload's associated data."""
    body = _canonical(
        {
            "vault_id": header.vault_id,
            "generation": header.generation,
            "entries": header.entries,
            "kdf": {
                "alg": "argon2id",
                "memory_kib": header.kdf.memory_kib,
                "iterations": header.kdf.iterations,
                "lanes": header.kdf.lanes,
                "salt": _b64(header.salt),
            },
            "wrap": _wrap_json(header.passphrase_wrap),
            "keyring": None if header.keyring_wrap is None else _wrap_json(header.keyring_wrap),
            "public": {
                "audit_x25519": _b64(header.public.audit_x25519),
                "checkpoint_ed25519": _b64(header.public.checkpoint_ed25519),
            },
            "payload_nonce": _b64(header.payload_nonce),
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
        vault_id=_str(raw["vault_id"]),
        generation=_int(raw["generation"]),
        entries=_int(raw["entries"]),
        kdf=KdfParams(
            memory_kib=_int(kdf["memory_kib"]),
            iterations=_int(kdf["iterations"]),
            lanes=_int(kdf["lanes"]),
        ),
        salt=_unb64(kdf["salt"]),
        passphrase_wrap=_parse_wrap(raw["wrap"]),
        keyring_wrap=None if raw["keyring"] is None else _parse_wrap(raw["keyring"]),
        public=VaultPublicKeys(
            audit_x25519=_unb64(public["audit_x25519"]),
            checkpoint_ed25519=_unb64(public["checkpoint_ed25519"]),
        ),
        payload_nonce=_unb64(raw["payload_nonce"]),
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
    return {"nonce": _b64(wrap.nonce), "key": _b64(wrap.ciphertext)}


def _parse_wrap(raw: Any) -> KeyWrap:
    return KeyWrap(nonce=_unb64(raw["nonce"]), ciphertext=_unb64(raw["key"]))


# -- payload -------------------------------------------------------------------------------------


def encode_payload(payload: Payload) -> bytearray:
    """The plaintext payload in a buffer the caller zeroes after encrypting it."""
    blobs: list[SecretBytes] = []

    def ref(value: SecretBytes) -> int:
        blobs.append(value)
        return len(blobs) - 1

    meta: dict[str, object] = {
        "created": payload.created.isoformat(),
        "entries": [
            {
                "name": entry.name,
                "kind": entry.kind,
                "created": entry.created.isoformat(),
                "rotated": None if entry.rotated is None else entry.rotated.isoformat(),
                "secrets": {key: ref(value) for key, value in sorted(entry.secrets.items())},
                "plain": dict(sorted(entry.plain.items())),
            }
            for entry in payload.entries.values()
        ],
        "keys": {
            "audit_x25519": ref(payload.audit_private),
            "checkpoint_ed25519": ref(payload.checkpoint_private),
        },
        "public": {
            "audit_x25519": _b64(payload.public.audit_x25519),
            "checkpoint_ed25519": _b64(payload.public.checkpoint_ed25519),
        },
        "policy": None
        if payload.policy is None
        else {
            "text": payload.policy.text,
            "digest": payload.policy.digest,
            "accepted_at": payload.policy.accepted_at.isoformat(),
        },
    }
    if payload.evidence is not None:
        # Absent (not null) when there is none, so a vault written before it existed and one
        # written now without it encode alike.
        meta["evidence"] = {
            "heads": {
                name: {"seq": head.seq, "hash": head.hash}
                for name, head in sorted(payload.evidence.heads.items())
            },
            "highest_generation": payload.evidence.highest_generation,
        }
    if payload.approver_keys is not None:
        meta["approver_keys"] = payload.approver_keys
    meta_bytes = _canonical(meta)
    # One allocation of the final size: growing a bytearray reallocates and frees the old
    # buffer without zeroing it, which would leave copies of values behind.
    out = bytearray(4 + len(meta_bytes) + sum(4 + len(blob) for blob in blobs))
    view = memoryview(out)
    _BLOB_LEN.pack_into(view, 0, len(meta_bytes))
    view[4 : 4 + len(meta_bytes)] = meta_bytes
    offset = 4 + len(meta_bytes)
    for blob in blobs:
        _BLOB_LEN.pack_into(view, offset, len(blob))
        blob.copy_into(view[offset + 4 : offset + 4 + len(blob)])
        offset += 4 + len(blob)
    view.release()
    return out


def decode_payload(buffer: bytearray) -> Payload:
    """Parse a decrypted payload; the caller zeroes ``buffer`` afterwards.

    The payload was authenticated before this runs, so a failure here means a bug or a vault
    written by something else; it is still reported as :class:`CannotUnlock`.
    """
    blobs: list[SecretBytes] = []
    try:
        view = memoryview(buffer)
        (meta_len,) = _BLOB_LEN.unpack_from(view, 0)
        meta = json.loads(bytes(view[4 : 4 + meta_len]))
        offset = 4 + meta_len
        while offset < len(view):
            (size,) = _BLOB_LEN.unpack_from(view, offset)
            offset += 4
            if offset + size > len(view):
                raise ValueError("blob")
            chunk = bytearray(view[offset : offset + size])
            blobs.append(SecretBytes(chunk))
            zero(chunk)
            offset += size
        view.release()
        return _payload_from(meta, blobs)
    except (ValueError, TypeError, KeyError, IndexError, struct.error, binascii.Error) as exc:
        for blob in blobs:
            blob.wipe()
        raise CannotUnlock() from exc


def _payload_from(meta: Any, blobs: list[SecretBytes]) -> Payload:
    entries: dict[str, Entry] = {}
    for raw in meta["entries"]:
        kind = raw["kind"]
        if kind not in KINDS:
            raise ValueError("kind")
        entries[raw["name"]] = Entry(
            name=_str(raw["name"]),
            kind=kind,
            created=datetime.fromisoformat(raw["created"]),
            rotated=None if raw["rotated"] is None else datetime.fromisoformat(raw["rotated"]),
            secrets={key: blobs[index] for key, index in raw["secrets"].items()},
            plain={key: _str(value) for key, value in raw["plain"].items()},
        )
    policy = meta["policy"]
    evidence = meta.get("evidence")
    return Payload(
        created=datetime.fromisoformat(meta["created"]),
        entries=entries,
        audit_private=blobs[meta["keys"]["audit_x25519"]],
        checkpoint_private=blobs[meta["keys"]["checkpoint_ed25519"]],
        public=VaultPublicKeys(
            audit_x25519=_unb64(meta["public"]["audit_x25519"]),
            checkpoint_ed25519=_unb64(meta["public"]["checkpoint_ed25519"]),
        ),
        policy=None
        if policy is None
        else AcceptedPolicy(
            text=_str(policy["text"]),
            digest=_str(policy["digest"]),
            accepted_at=datetime.fromisoformat(policy["accepted_at"]),
        ),
        evidence=None if evidence is None else _evidence_from(evidence),
        approver_keys=None if meta.get("approver_keys") is None else _str(meta["approver_keys"]),
    )


def _evidence_from(raw: Any) -> VaultEvidence:
    heads = {
        _str(name): JournalHead(seq=_int(head["seq"]), hash=_str(head["hash"]))
        for name, head in raw["heads"].items()
    }
    return VaultEvidence(heads=heads, highest_generation=_int(raw["highest_generation"]))


# -- small pieces --------------------------------------------------------------------------------


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode(
        "ascii"
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: Any) -> bytes:
    return base64.b64decode(_str(value), validate=True)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError("not a count")
    return value
