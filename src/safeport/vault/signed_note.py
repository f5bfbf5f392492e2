"""Checkpoints in the C2SP signed-note form (``tlog-checkpoint``), so tools made for
transparency-log checkpoints can read, store and cosign them.

One note per journal::

    safeport/actions/3f9a0c1d2e4b5a69       origin: the journal and the signing key's id
    184                                       tree size: the records the journal held
    q1Zr…=                                    root hash: the last record's hash, base64
                                              (blank line)
    — safeport/actions/3f9a0c1d2e4b5a69 AbCd…  key hash (4 bytes) + Ed25519 signature, base64

The journal is a hash chain, not a Merkle tree: the "root hash" is the hash of record ``size``,
which commits to every earlier record through the ``prev`` links. Whoever holds the journal can
check that a note still matches it (`sp audit verify --checkpoint`); a witness holding only notes
can check signatures and that sizes never shrink, but cannot check consistency between two notes
without the records in between (there are no Merkle consistency proofs).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from safeport.errors import Denied
from safeport.shared.audit import JournalHead

_ED25519 = b"\x01"  # the signed-note signature type for Ed25519
_DASH = "\u2014 "  # an em dash and a space start every signature line
_ORIGIN_RE = re.compile(r"safeport/(?P<journal>[a-z][a-z0-9_-]{0,63})/(?P<key>[0-9a-f]{16})")
_SIZE_RE = re.compile(r"0|[1-9][0-9]{0,18}")
MAX_NOTE = 4096


class NoteInvalid(Denied):
    """A text that is not a safeport checkpoint note, or whose signature is not the key's."""


@dataclass(frozen=True)
class CheckpointNote:
    """A parsed note: what it says and its exact text (the bytes a time stamp covers)."""

    journal: str
    head: JournalHead
    text: str


def key_id(public_key: bytes) -> str:
    """The short id of a checkpoint key in the origin line (16 hex of its SHA-256)."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def origin(journal: str, public_key: bytes) -> str:
    return f"safeport/{journal}/{key_id(public_key)}"


def note_body(journal: str, head: JournalHead, public_key: bytes) -> str:
    root = base64.b64encode(bytes.fromhex(head.hash)).decode("ascii")
    return f"{origin(journal, public_key)}\n{head.seq}\n{root}\n"


def _key_hash(name: str, public_key: bytes) -> bytes:
    """The signed-note key hash: SHA-256(name, newline, signature type, public key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + _ED25519 + public_key).digest()[:4]


def sign_note(journal: str, head: JournalHead, private: Ed25519PrivateKey) -> str:
    """The signed note for ``journal`` ending at ``head``."""
    public = private.public_key().public_bytes_raw()
    body = note_body(journal, head, public)
    name = origin(journal, public)
    signature = private.sign(body.encode())
    blob = base64.b64encode(_key_hash(name, public) + signature).decode("ascii")
    return f"{body}\n{_DASH}{name} {blob}\n"


def read_note(text: str, public_key: bytes) -> CheckpointNote:
    """Parse one note and check its signature with ``public_key`` (pure); raise otherwise."""
    if len(text) > MAX_NOTE or "\r" in text:
        raise NoteInvalid("the note is too long or has carriage returns")
    body, sep, signatures = text.partition("\n\n")
    lines = body.split("\n")
    if not sep or len(lines) < 3:
        raise NoteInvalid("the note lacks an origin, a size, a root hash or its signature")
    match = _ORIGIN_RE.fullmatch(lines[0])
    if match is None or not _SIZE_RE.fullmatch(lines[1]):
        raise NoteInvalid("the note's origin or size is not a safeport checkpoint's")
    if match["key"] != key_id(public_key):
        raise NoteInvalid(f"the note was signed by key {match['key']}, not by this vault's")
    try:
        root = base64.b64decode(lines[2], validate=True)
    except binascii.Error as exc:
        raise NoteInvalid("the note's root hash is not base64") from exc
    if len(root) != 32:
        raise NoteInvalid("the note's root hash is not 32 bytes")
    signed = body + "\n"
    name = lines[0]
    if not _has_signature(signatures, name, public_key, signed.encode()):
        raise NoteInvalid(f"no valid signature by {name} on the note")
    head = JournalHead(seq=int(lines[1]), hash=root.hex())
    return CheckpointNote(journal=match["journal"], head=head, text=signed + "\n" + signatures)


def _has_signature(signatures: str, name: str, public_key: bytes, message: bytes) -> bool:
    verifier = Ed25519PublicKey.from_public_bytes(public_key)
    for line in signatures.split("\n"):
        if not line.startswith(_DASH):
            continue
        signer, _, blob = line[len(_DASH) :].partition(" ")
        try:
            raw = base64.b64decode(blob, validate=True)
        except binascii.Error:
            continue
        if signer != name or raw[:4] != _key_hash(name, public_key):
            continue  # another party's cosignature: kept, not judged
        try:
            verifier.verify(raw[4:], message)
        except InvalidSignature:
            return False
        return True
    return False


def split_notes(text: str) -> list[str]:
    """Notes printed one after another (`sp audit checkpoint --note`): a note ends after its
    signature lines; the next starts with its origin line."""
    notes: list[str] = []
    current: list[str] = []
    in_signatures = False
    for line in text.split("\n"):
        if in_signatures and not line.startswith(_DASH):
            notes.append("\n".join(current) + "\n")
            current, in_signatures = [], False
            if not line:
                continue
        current.append(line)
        if not line and current[:-1]:
            in_signatures = True
    if current and any(current):
        notes.append("\n".join(current).rstrip("\n") + "\n")
    return notes


def note_head(text: str) -> tuple[str, int] | None:
    """The journal and size a note names, its signature unchecked (pure): for the gateway's
    own bookkeeping of what it stamped, never for judging a stamp (:func:`read_note` does)."""
    lines = text[:MAX_NOTE].split("\n", 2)
    match = _ORIGIN_RE.fullmatch(lines[0])
    if match is None or len(lines) < 2 or not _SIZE_RE.fullmatch(lines[1]):
        return None
    return match["journal"], int(lines[1])
