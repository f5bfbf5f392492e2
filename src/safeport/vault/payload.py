"""The encrypted part of ``vault.sp``: entries, the vault's private keys, the accepted policy
(pure, no I/O).

::

    metadata length u32 | metadata (canonical JSON) | (value length u32 | value bytes) ...

The payload is a small binary layout rather than JSON so that secret values can be sliced
straight from the decrypted buffer into ``bytearray``s and the buffer zeroed, without passing
through ``str``: the metadata names each value by its place in the list that follows it.
"""

from __future__ import annotations

import binascii
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from safeport.shared.audit import JournalHead
from safeport.vault.canonical_json import as_count, as_str, b64, canonical, unb64
from safeport.vault.errors import CannotUnlock
from safeport.vault.interface import AcceptedPolicy, EntryInfo, VaultEvidence, VaultPublicKeys
from safeport.vault.kdf import zero
from safeport.vault.secrets import SecretBytes, SecretKind

_BLOB_LEN = struct.Struct(">I")
KINDS: tuple[SecretKind, ...] = ("token", "basic", "ssh-key", "oauth")


@dataclass
class Entry:
    """One credential while unlocked: metadata in the clear, values in wipeable buffers."""

    name: str
    kind: SecretKind
    created: datetime
    rotated: datetime | None
    secrets: dict[str, SecretBytes]
    plain: dict[str, str] = field(default_factory=dict)

    def info(self) -> EntryInfo:
        """What `sp vault list` shows of it: an OAuth grant's scopes too, never a value."""
        scopes = tuple(self.plain.get("scopes", "").split()) if self.kind == "oauth" else None
        return EntryInfo(self.name, self.kind, self.created, self.rotated, scopes)

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


# -- encoding ------------------------------------------------------------------------------------


def encode_payload(payload: Payload) -> bytearray:
    """The plaintext payload in a buffer the caller zeroes after encrypting it."""
    blobs: list[SecretBytes] = []

    def ref(value: SecretBytes) -> int:
        blobs.append(value)
        return len(blobs) - 1

    return _pack(canonical(_metadata(payload, ref)), blobs)


def _metadata(payload: Payload, ref: Callable[[SecretBytes], int]) -> dict[str, object]:
    """Everything but the secret values; ``ref`` lists a value and gives its place."""
    meta: dict[str, object] = {
        "created": payload.created.isoformat(),
        "entries": [_entry_metadata(entry, ref) for entry in payload.entries.values()],
        "keys": {
            "audit_x25519": ref(payload.audit_private),
            "checkpoint_ed25519": ref(payload.checkpoint_private),
        },
        "public": {
            "audit_x25519": b64(payload.public.audit_x25519),
            "checkpoint_ed25519": b64(payload.public.checkpoint_ed25519),
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
    return meta


def _entry_metadata(entry: Entry, ref: Callable[[SecretBytes], int]) -> dict[str, object]:
    return {
        "name": entry.name,
        "kind": entry.kind,
        "created": entry.created.isoformat(),
        "rotated": None if entry.rotated is None else entry.rotated.isoformat(),
        "secrets": {key: ref(value) for key, value in sorted(entry.secrets.items())},
        "plain": dict(sorted(entry.plain.items())),
    }


def _pack(meta_bytes: bytes, blobs: list[SecretBytes]) -> bytearray:
    """The metadata, then each value with its length, copied into one new buffer."""
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


# -- decoding ------------------------------------------------------------------------------------


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
            name=as_str(raw["name"]),
            kind=kind,
            created=datetime.fromisoformat(raw["created"]),
            rotated=None if raw["rotated"] is None else datetime.fromisoformat(raw["rotated"]),
            secrets={key: blobs[index] for key, index in raw["secrets"].items()},
            plain={key: as_str(value) for key, value in raw["plain"].items()},
        )
    policy = meta["policy"]
    evidence = meta.get("evidence")
    return Payload(
        created=datetime.fromisoformat(meta["created"]),
        entries=entries,
        audit_private=blobs[meta["keys"]["audit_x25519"]],
        checkpoint_private=blobs[meta["keys"]["checkpoint_ed25519"]],
        public=VaultPublicKeys(
            audit_x25519=unb64(meta["public"]["audit_x25519"]),
            checkpoint_ed25519=unb64(meta["public"]["checkpoint_ed25519"]),
        ),
        policy=None
        if policy is None
        else AcceptedPolicy(
            text=as_str(policy["text"]),
            digest=as_str(policy["digest"]),
            accepted_at=datetime.fromisoformat(policy["accepted_at"]),
        ),
        evidence=None if evidence is None else _evidence_from(evidence),
        approver_keys=None if meta.get("approver_keys") is None else as_str(meta["approver_keys"]),
    )


def _evidence_from(raw: Any) -> VaultEvidence:
    heads = {
        as_str(name): JournalHead(seq=as_count(head["seq"]), hash=as_str(head["hash"]))
        for name, head in raw["heads"].items()
    }
    return VaultEvidence(heads=heads, highest_generation=as_count(raw["highest_generation"]))
