"""What the rest of safeport may ask of the vault (the gateway, `sp`, the journal writer).

The implementation lives beside this file; these Protocols and value types are the contract the
gateway codes against. Values never leave :class:`UnlockedVault` except as a
:data:`~safeport.vault.secrets.CredentialSecret` handed to an executor.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from safeport.shared.audit import JournalHead
from safeport.vault.secrets import CredentialSecret, SecretBytes, SecretKind


@dataclass(frozen=True)
class EntryInfo:
    """An entry as `sp vault list` shows it: never its value."""

    name: str
    kind: SecretKind
    created: datetime
    rotated: datetime | None
    # The scopes an OAuth grant was given (None for every other kind).
    scopes: tuple[str, ...] | None = None

    def as_json(self) -> dict[str, Any]:
        """The entry as control.sock's ``vault.entries`` and `sp vault list --json` give it."""
        item: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "created": self.created.isoformat(),
            "rotated": None if self.rotated is None else self.rotated.isoformat(),
        }
        if self.scopes is not None:
            item["scopes"] = list(self.scopes)
        return item

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> EntryInfo:
        rotated = item.get("rotated")
        return cls(
            name=str(item["name"]),
            kind=item["kind"],
            created=datetime.fromisoformat(str(item["created"])),
            rotated=datetime.fromisoformat(str(rotated)) if rotated else None,
            scopes=None if item.get("scopes") is None else tuple(map(str, item["scopes"])),
        )


@dataclass(frozen=True)
class AcceptedPolicy:
    """The gateway.toml text a human accepted, and its digest."""

    text: str
    digest: str
    accepted_at: datetime


@dataclass(frozen=True)
class VaultPublicKeys:
    """The public halves in vault.pub.json: seal records and check checkpoints while locked."""

    audit_x25519: bytes
    checkpoint_ed25519: bytes

    @property
    def checkpoint_fingerprint(self) -> str:
        """``SHA256:<base64>`` of the raw Ed25519 public key, as `sp audit verify` prints it."""
        digest = hashlib.sha256(self.checkpoint_ed25519).digest()
        return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class Checkpoint:
    """A signed statement: journal NAME ended at (seq, hash) when the gateway wrote it."""

    journal: str
    head: JournalHead
    signed_at: datetime
    signature: bytes
    signer_fingerprint: str
    # The same statement as a C2SP signed note (safeport.vault.signed_note): the text
    # `sp audit checkpoint --note` prints and a time-stamping authority stamps.
    note: str | None = None


@dataclass(frozen=True)
class VaultEvidence:
    """What the gateway keeps inside the vault about its journals (authenticated, encrypted).

    ``heads`` are the last heads it signed, by journal name; ``highest_generation`` the highest
    vault generation it had seen when it saved this. Compared at unlock with the journals on
    disk and with the file's generation; an old copy of the vault brings back old evidence, which
    is why the generation is also journaled (see action_gateway/evidence/restart_scan.py).
    """

    heads: Mapping[str, JournalHead]
    highest_generation: int


class CheckpointSigner(Protocol):
    def sign(self, journal: str, head: JournalHead) -> Checkpoint: ...


class UnlockedVault(Protocol):
    def entries(self) -> list[EntryInfo]: ...

    def public_keys(self) -> VaultPublicKeys:
        """The public keys kept inside the vault (to check vault.pub.json against at unlock)."""
        ...

    @property
    def generation(self) -> int:
        """Authenticated count of saves; it going backwards means an older file was restored."""
        ...

    def secret(self, name: str) -> CredentialSecret:
        """The value for an executor; raises the vault's error if no such entry."""
        ...

    def add(self, name: str, kind: SecretKind, value: Mapping[str, SecretBytes | str]) -> None: ...

    def remove(self, name: str) -> None: ...

    def rotate(self, name: str, value: Mapping[str, SecretBytes | str]) -> None: ...

    def verify_passphrase(self, passphrase: SecretBytes) -> None:
        """Raise unless ``passphrase`` is the vault's (approvers prove it once per session)."""
        ...

    def change_passphrase(self, old: SecretBytes, new: SecretBytes) -> None: ...

    def accepted_policy(self) -> AcceptedPolicy | None: ...

    def accept_policy(self, text: str) -> AcceptedPolicy: ...

    def checkpoint_signer(self) -> CheckpointSigner: ...

    def approver_keys(self) -> str | None: ...

    def record_approver_keys(self, text: str) -> None: ...

    def evidence(self) -> VaultEvidence | None:
        """The evidence last saved by :meth:`record_evidence` (None for a vault that has none)."""
        ...

    def record_evidence(self, evidence: VaultEvidence) -> None:
        """Save ``evidence`` into the vault (a save like any other: the generation goes up)."""
        ...

    def lock(self) -> None:
        """Zero every unlocked buffer; the object is unusable afterwards."""
        ...


class VaultStore(Protocol):
    """The vault file on disk (locked)."""

    path: Path

    def unlock(self, passphrase: SecretBytes) -> UnlockedVault:
        """One passphrase KDF at a time; every failure is the same error."""
        ...

    def unlock_with_keyring(self) -> UnlockedVault: ...

    def create(self, passphrase: SecretBytes) -> UnlockedVault:
        """Write a new, empty vault; refuses to replace one (`sp vault init` through the
        gateway, in dedicated-account mode where only the gateway's account may write it)."""
        ...

    def public_keys(self) -> VaultPublicKeys: ...
