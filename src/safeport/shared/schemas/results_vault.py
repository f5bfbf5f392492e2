"""Results of the vault's operations on control.sock (``vault.*``), on the base and the
conventions of :mod:`.results`: an entry is shown by its name and dates, never its value."""

from __future__ import annotations

from typing import Literal

from safeport.shared.schemas.results import PolicyState, Result, VaultState

PublicFileState = Literal["matches", "missing", "mismatch"]


class VaultStateResult(Result):
    vault: VaultState


class KdfView(Result):
    algorithm: str
    memory_kib: int
    iterations: int
    lanes: int


class VaultDescribeResult(Result):
    """``vault.describe``: the header of the file only the gateway's account can read."""

    _ABSENT_WHEN_NONE = frozenset(
        {
            "format_version",
            "kdf",
            "entries",
            "keyring_enabled",
            "audit_key_fingerprint",
            "checkpoint_key_fingerprint",
            "public_file",
            "holder",
        }
    )

    path: str
    exists: bool
    holder: str | None = None
    format_version: int | None = None
    kdf: KdfView | None = None
    entries: int | None = None
    keyring_enabled: bool | None = None
    audit_key_fingerprint: str | None = None
    checkpoint_key_fingerprint: str | None = None
    public_file: Literal["matches header", "missing", "differs from header"] | None = None
    vault: VaultState


class VaultCreatedResult(Result):
    """``vault.init``: the public keys of the new vault, base64."""

    audit_x25519: str
    checkpoint_ed25519: str


class VaultUnlockedResult(Result):
    _ABSENT_WHEN_NONE = frozenset({"public_file"})

    vault: Literal["unlocked"]
    policy: PolicyState
    public_file: PublicFileState | None = None


class VaultKeyringUnlockedResult(Result):
    _ABSENT_WHEN_NONE = frozenset({"public_file"})

    vault: Literal["unlocked"]
    changed: bool
    public_file: PublicFileState | None = None


class VaultLockedResult(Result):
    vault: Literal["locked"]
    changed: bool


class EntryView(Result):
    """An entry as `sp vault list` shows it: never its value."""

    _ABSENT_WHEN_NONE = frozenset({"scopes"})

    name: str
    kind: Literal["token", "basic", "ssh-key", "oauth"]
    created: str
    rotated: str | None
    scopes: list[str] | None = None
    """The scopes an OAuth grant was given (absent for every other kind)."""


class VaultEntriesResult(Result):
    entries: list[EntryView]


class EntryAddedResult(Result):
    added: str


class EntryRotatedResult(Result):
    rotated: str


class EntryRemovedResult(Result):
    _ABSENT_WHEN_NONE = frozenset({"revoke_problem"})

    removed: str
    # An OAuth grant that could not be revoked at its provider (the entry is removed anyway).
    revoke_problem: str | None = None
