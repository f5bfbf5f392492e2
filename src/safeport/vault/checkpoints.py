"""Signed journal heads: what the gateway wrote, so a later cut or rewrite of the file shows.

The gateway signs the head its :class:`~safeport.shared.audit.JournalWriter` holds in memory
(never a head re-read from the file, which an attacker could have shortened first). A checkpoint
file lists one signed head per journal::

    {"format": "safeport-checkpoint", "version": 1,
     "checkpoints": [{"journal": "actions", "seq": 184, "hash": "…", "signed_at": "…",
                      "signer": "SHA256:…", "signature": "<base64 Ed25519>"}]}

Verification compares the journal's stored hash at the signed sequence with the signed hash: a
clean truncation ends the journal before that sequence, and a rollback or re-chained rewrite
(valid chain, different records) has a different hash there.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from safeport.errors import AuditError, Denied
from safeport.shared.audit import ChainReport, JournalHead
from safeport.vault.errors import VaultLocked
from safeport.vault.interface import Checkpoint, VaultPublicKeys
from safeport.vault.secrets import SecretBytes
from safeport.vault.signed_note import MAX_NOTE, NoteInvalid, read_note, sign_note

FORMAT = "safeport-checkpoint"
UNSIGNED_JOURNALS = frozenset({"reads"})
_CONTEXT = b"safeport checkpoint v1\x00"
_JOURNAL_RE = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_HASH_RE = re.compile(r"[0-9a-f]{64}")
_SIGNER_RE = re.compile(r"SHA256:[A-Za-z0-9+/]{43}")


class CheckpointInvalid(Denied):
    """The checkpoint file is malformed, or its signature is not the vault's."""


def checkpoint_message(journal: str, head: JournalHead, signed_at: datetime) -> bytes:
    """The exact bytes signed: a domain tag, then canonical JSON of the statement."""
    statement = {
        "journal": journal,
        "seq": head.seq,
        "hash": head.hash,
        "signed_at": signed_at.isoformat(),
    }
    return _CONTEXT + json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()


class VaultCheckpointSigner:
    """Signs heads with the vault's Ed25519 key; stops working when the vault locks."""

    def __init__(
        self,
        private: SecretBytes,
        public: VaultPublicKeys,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._private = private
        self._fingerprint = public.checkpoint_fingerprint
        self._clock = clock

    def sign(self, journal: str, head: JournalHead) -> Checkpoint:
        if not _JOURNAL_RE.fullmatch(journal):
            raise AuditError(f"{journal!r} is not a journal name")
        if len(self._private) == 0:
            raise VaultLocked()
        signed_at = self._clock().replace(microsecond=0)
        with self._private.exposed() as raw:
            key = Ed25519PrivateKey.from_private_bytes(raw)
        signature = key.sign(checkpoint_message(journal, head, signed_at))
        return Checkpoint(
            journal=journal,
            head=head,
            signed_at=signed_at,
            signature=signature,
            signer_fingerprint=self._fingerprint,
            note=sign_note(journal, head, key),
        )


def verify_checkpoint(checkpoint: Checkpoint, public: VaultPublicKeys) -> None:
    """Return if the checkpoint was signed by this vault's key; raise otherwise."""
    if checkpoint.signer_fingerprint != public.checkpoint_fingerprint:
        raise CheckpointInvalid(
            f"the checkpoint was signed by {checkpoint.signer_fingerprint}, not by this vault "
            f"({public.checkpoint_fingerprint})"
        )
    key = Ed25519PublicKey.from_public_bytes(public.checkpoint_ed25519)
    message = checkpoint_message(checkpoint.journal, checkpoint.head, checkpoint.signed_at)
    try:
        key.verify(checkpoint.signature, message)
    except InvalidSignature as exc:
        raise CheckpointInvalid(
            f"the checkpoint for journal {checkpoint.journal!r} has an invalid signature"
        ) from exc
    if checkpoint.note is None:
        return
    try:
        note = read_note(checkpoint.note, public.checkpoint_ed25519)
    except NoteInvalid as exc:
        raise CheckpointInvalid(f"the note for journal {checkpoint.journal!r}: {exc}") from exc
    if (note.journal, note.head) != (checkpoint.journal, checkpoint.head):
        raise CheckpointInvalid(f"the note for journal {checkpoint.journal!r} says otherwise")


def dump_checkpoints(checkpoints: Sequence[Checkpoint]) -> bytes:
    document = {
        "format": FORMAT,
        "version": 1,
        "checkpoints": [
            {
                "journal": cp.journal,
                "seq": cp.head.seq,
                "hash": cp.head.hash,
                "signed_at": cp.signed_at.isoformat(),
                "signer": cp.signer_fingerprint,
                "signature": base64.b64encode(cp.signature).decode("ascii"),
                **({"note": cp.note} if cp.note is not None else {}),
            }
            for cp in checkpoints
        ],
    }
    return json.dumps(document, indent=2, sort_keys=True).encode("ascii") + b"\n"


def load_checkpoints(data: bytes, *, source: str) -> list[Checkpoint]:
    """Parse a checkpoint file (signatures are checked separately by :func:`verify_checkpoint`)."""
    try:
        document = json.loads(data)
        if document["format"] != FORMAT or document["version"] != 1:
            raise ValueError("format")
        checkpoints = []
        for raw in document["checkpoints"]:
            journal, digest, seq = raw["journal"], raw["hash"], raw["seq"]
            if not isinstance(journal, str) or not _JOURNAL_RE.fullmatch(journal):
                raise ValueError("journal")
            if not isinstance(digest, str) or not _HASH_RE.fullmatch(digest):
                raise ValueError("hash")
            if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
                raise ValueError("seq")
            # The signer is echoed in refusals: anything but a fingerprint (an ANSI sequence
            # that restyles the terminal, say) is refused here.
            if not isinstance(raw["signer"], str) or not _SIGNER_RE.fullmatch(raw["signer"]):
                raise ValueError("signer")
            note = raw.get("note")
            if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE):
                raise ValueError("note")
            checkpoints.append(
                Checkpoint(
                    journal=journal,
                    head=JournalHead(seq=seq, hash=digest),
                    signed_at=datetime.fromisoformat(raw["signed_at"]),
                    signature=base64.b64decode(raw["signature"], validate=True),
                    signer_fingerprint=raw["signer"],
                    note=note,
                )
            )
    except (ValueError, TypeError, KeyError, binascii.Error, RecursionError) as exc:
        raise CheckpointInvalid(f"{source} is not a safeport checkpoint file") from exc
    return checkpoints


def check_consistent(checkpoints: Sequence[Checkpoint]) -> None:
    """Refuse signed heads of one journal that contradict each other (pure).

    Each is genuine (signatures are checked first), so a contradiction is itself evidence: two
    different hashes at one sequence, or a head signed later at a lower sequence, mean the
    journal was cut or rewritten and the gateway carried on writing from the altered file.
    Comparing only the latest head with the file would let that fork pass unnoticed.
    """
    by_journal: dict[str, list[Checkpoint]] = {}
    for checkpoint in checkpoints:
        by_journal.setdefault(checkpoint.journal, []).append(checkpoint)
    for journal, heads in by_journal.items():
        heads.sort(key=lambda cp: (cp.signed_at, cp.head.seq))
        by_seq: dict[int, str] = {}
        for earlier, later in itertools.pairwise(heads):
            if later.head.seq < earlier.head.seq:
                raise CheckpointInvalid(
                    f"journal {journal!r} was signed at sequence {earlier.head.seq} and later at "
                    f"sequence {later.head.seq}: it was cut and written again (or the clock was "
                    "set back)"
                )
        for cp in heads:
            if by_seq.setdefault(cp.head.seq, cp.head.hash) != cp.head.hash:
                raise CheckpointInvalid(
                    f"journal {journal!r} has two different signed records at sequence "
                    f"{cp.head.seq}: it was rewritten after a checkpoint"
                )


@dataclass(frozen=True)
class CheckpointVerdict:
    """How a journal compares with its signed head; ``ok`` False is exit 1."""

    ok: bool
    status: str  # "matches" | "truncated" | "rewritten" | "unsigned" | "missing"
    detail: str


def compare(report: ChainReport, checkpoint: Checkpoint | None, journal: str) -> CheckpointVerdict:
    """Judge a verified chain against the checkpoint signed for it (pure)."""
    if journal in UNSIGNED_JOURNALS:
        return CheckpointVerdict(
            True,
            "unsigned",
            f"{journal}.jsonl has no signer (the context server holds no key); chain only",
        )
    if checkpoint is None:
        return CheckpointVerdict(False, "missing", f"the checkpoint file has no head for {journal}")
    verdict = compare_head(report, checkpoint.head)
    if verdict.ok and checkpoint.head.seq:
        signed_at = checkpoint.signed_at.isoformat()
        return CheckpointVerdict(True, "matches", f"{verdict.detail} signed at {signed_at}")
    return verdict


def compare_head(report: ChainReport, signed: JournalHead) -> CheckpointVerdict:
    """Judge a verified chain against a head recorded for it (pure): the gateway runs this at
    start and at unlock against the heads it signed before, `sp audit verify` against the file."""
    if signed.seq == 0:
        return CheckpointVerdict(True, "matches", "signed while the journal was empty")
    last = report.last_sequence or 0
    if report.chain == "broken" and (report.broken_at or 0) <= signed.seq:
        return CheckpointVerdict(
            False, "rewritten", f"the chain breaks before the signed sequence {signed.seq}"
        )
    if last < signed.seq:
        return CheckpointVerdict(
            False,
            "truncated",
            f"journal ends at sequence {last} but sequence {signed.seq} was signed",
        )
    if report.captured_hash != signed.hash:
        return CheckpointVerdict(
            False,
            "rewritten",
            f"sequence {signed.seq} differs from the signed record (rollback or rewrite)",
        )
    return CheckpointVerdict(True, "matches", f"sequence {signed.seq} matches the head")
