"""A checkpoint file as the check `sp audit verify --checkpoint` compares journals with.

Every signature in the file is checked against public keys the person can trust before any
journal is compared: this vault's ``vault.pub.json`` (if the vault file beside it records the
same keys), the gateway account's own copy in dedicated mode, or a copy named on purpose.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from safeport.errors import Error, UsageError
from safeport.shared.audit import ChainReport, JournalHead
from safeport.shared.paths import SafeportPaths
from safeport.vault.checkpoints import (
    CheckpointInvalid,
    CheckpointVerdict,
    check_consistent,
    compare,
    compare_head,
    load_checkpoints,
    verify_checkpoint,
)
from safeport.vault.files import VaultMissing
from safeport.vault.interface import Checkpoint, VaultPublicKeys
from safeport.vault.public_file import decode_public_keys, read_public_keys
from safeport.vault.signed_note import NoteInvalid, read_note, split_notes
from safeport.vault.store import VaultFile

MAX_CHECKPOINT_FILE = 1024 * 1024
MAX_PUBLIC_KEYS_FILE = 64 * 1024


class SignedCheckpoints:
    """The latest signed head of each journal, and the earlier ones the file keeps."""

    def __init__(self, checkpoints: Sequence[Checkpoint]) -> None:
        self._latest: dict[str, Checkpoint] = {}
        for checkpoint in checkpoints:
            latest = self._latest.get(checkpoint.journal)
            if latest is None or checkpoint.head.seq >= latest.head.seq:
                self._latest[checkpoint.journal] = checkpoint
        self._earlier: dict[str, list[Checkpoint]] = {}
        for checkpoint in checkpoints:
            if checkpoint is not self._latest[checkpoint.journal]:
                self._earlier.setdefault(checkpoint.journal, []).append(checkpoint)

    @classmethod
    def read(cls, path: Path, keys: VaultPublicKeys) -> SignedCheckpoints | NoteCheckpoints:
        """Load ``path`` (checkpoint.json's form, or signed notes one after another); every
        signature must be the vault's and the heads consistent."""
        try:
            with path.open("rb") as stream:
                data = stream.read(MAX_CHECKPOINT_FILE + 1)
        except OSError as exc:
            raise Error(f"cannot read the checkpoint file {path}: {exc.strerror}") from exc
        if len(data) > MAX_CHECKPOINT_FILE:
            raise UsageError(f"{path} is too large to be a checkpoint file")
        if data.startswith(b"safeport/"):  # a note's origin line; anything else is JSON's
            return NoteCheckpoints.parse(data, keys, source=str(path))
        loaded = load_checkpoints(data, source=str(path))
        for checkpoint in loaded:
            verify_checkpoint(checkpoint, keys)
        check_consistent(loaded)
        return cls(loaded)

    def journals(self) -> Collection[str]:
        return self._latest.keys()

    def sequences(self, journal: str) -> Sequence[int]:
        latest = self._latest.get(journal)
        if latest is None:
            return ()
        return [latest.head.seq, *(old.head.seq for old in self._earlier.get(journal, []))]

    def judge(self, report: ChainReport, journal: str, index: int) -> CheckpointVerdict:
        if index == 0:
            return compare(report, self._latest.get(journal), journal)
        return compare(report, self._earlier[journal][index - 1], journal)

    def signer(self, journal: str) -> str | None:
        """The fingerprint of the key that signed ``journal``'s latest head."""
        latest = self._latest.get(journal)
        return latest.signer_fingerprint if latest is not None else None

    def notes(self) -> list[str]:
        """The latest head of each journal as a C2SP signed note (`sp audit checkpoint --note`)."""
        return [cp.note for _, cp in sorted(self._latest.items()) if cp.note is not None]


class NoteCheckpoints:
    """Signed notes kept elsewhere (`sp audit checkpoint --note`, appended to by a cron job):
    every head a note names must still be in the journal, the latest first."""

    def __init__(self, heads: dict[str, list[JournalHead]], signer: str) -> None:
        self._heads = heads
        self._signer = signer

    @classmethod
    def parse(cls, data: bytes, keys: VaultPublicKeys, *, source: str) -> NoteCheckpoints:
        heads: dict[str, dict[int, str]] = {}
        try:
            notes = [
                read_note(text, keys.checkpoint_ed25519) for text in split_notes(data.decode())
            ]
        except (NoteInvalid, UnicodeDecodeError) as exc:
            raise CheckpointInvalid(f"{source} is not a checkpoint file: {exc}") from exc
        if not notes:
            raise CheckpointInvalid(f"{source} holds no checkpoint note")
        for note in notes:
            known = heads.setdefault(note.journal, {})
            if known.setdefault(note.head.seq, note.head.hash) != note.head.hash:
                raise CheckpointInvalid(
                    f"journal {note.journal!r} has two different signed notes at sequence "
                    f"{note.head.seq}: it was rewritten between them"
                )
        ordered = {
            journal: [JournalHead(seq, digest) for seq, digest in sorted(by_seq.items())[::-1]]
            for journal, by_seq in heads.items()
        }
        return cls(ordered, keys.checkpoint_fingerprint)

    def journals(self) -> Collection[str]:
        return self._heads.keys()

    def sequences(self, journal: str) -> Sequence[int]:
        return [head.seq for head in self._heads.get(journal, [])]

    def judge(self, report: ChainReport, journal: str, index: int) -> CheckpointVerdict:
        heads = self._heads.get(journal)
        if not heads:
            return compare(report, None, journal)
        verdict = compare_head(report, heads[index])
        if verdict.ok and heads[index].seq:
            return CheckpointVerdict(True, "matches", f"{verdict.detail} of a signed note")
        return verdict

    def signer(self, journal: str) -> str | None:
        return self._signer if journal in self._heads else None


def trusted_public_keys(paths: SafeportPaths, chosen: Path | None = None) -> VaultPublicKeys:
    """The public keys a checkpoint must be signed with: a copy chosen on purpose (an
    auditor's, perhaps another user's: public, so no owner or mode checks; the signature
    check is what matters), else this vault's."""
    if chosen is None:
        return this_vaults_public_keys(paths)
    try:
        with chosen.open("rb") as stream:
            text = stream.read(MAX_PUBLIC_KEYS_FILE)
    except OSError as exc:
        raise Error(f"cannot read {chosen}: {exc.strerror}") from exc
    return decode_public_keys(text, source=str(chosen))


def this_vaults_public_keys(paths: SafeportPaths) -> VaultPublicKeys:
    """vault.pub.json, if the vault file beside it records the same keys.

    Whoever can replace vault.pub.json could otherwise sign a rewritten journal's checkpoint with
    a key of their own. The header copy is not authenticated without the passphrase, but
    changing it too makes the next unlock fail, which is loud. With no vault here (an auditor's
    machine), the public file is all there is; --public-keys names a copy you trust.
    """
    if paths.install is not None:
        # The gateway account's own file, in a folder only it can write: your uid (and so an
        # agent) cannot replace it, and the vault beside it is not yours to read.
        public = paths.install.state_dir / "vault.pub.json"
        return read_public_keys(public, owner=paths.install.uid)
    keys = read_public_keys(paths.vault_public_file)
    try:
        header = VaultFile.at(paths).header()
    except VaultMissing:
        return keys
    except Error as exc:
        raise CheckpointInvalid(
            f"cannot check {paths.vault_public_file} against the vault file ({exc})",
            hint="pass --public-keys with a copy of vault.pub.json you trust",
        ) from exc
    if header.public != keys:
        raise CheckpointInvalid(
            f"{paths.vault_public_file} does not hold the keys recorded in {paths.vault_file}; "
            "it may have been replaced",
            hint="run `sp vault unlock --rewrite-public-keys`, or pass --public-keys with a copy "
            "you trust",
        )
    return keys
