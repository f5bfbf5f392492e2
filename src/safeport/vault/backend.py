"""What `sp vault …` asks of the vault, whoever holds it.

:class:`VaultBackend` is the seam between the CLI and the vault's holder. Today the only holder
is the file: :class:`FileVaultBackend` does each operation on ``vault.sp`` under its lock
(unlock, change, save, lock again). When a gateway runs, its unlocked state is the one that must
change, so a control-socket backend takes over (the gateway's own work); the CLI code stays the
same because it only sees this Protocol.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from safeport.errors import AuditError
from safeport.vault.errors import VaultLocked
from safeport.vault.files import VaultMissing
from safeport.vault.format import VERSION
from safeport.vault.interface import EntryInfo, VaultPublicKeys
from safeport.vault.kdf import PRODUCTION_KDF, KdfParams
from safeport.vault.secrets import SecretBytes, SecretKind
from safeport.vault.store import VaultFile
from safeport.vault.unlocked import OpenVault, PublicFileState

_T = TypeVar("_T")


@dataclass(frozen=True)
class Authority:
    """How an operation may unlock: a passphrase (asked for only when needed) or the keyring."""

    passphrase: Callable[[], SecretBytes] | None = None
    keyring: bool = False


@dataclass(frozen=True)
class VaultStatus:
    """What `sp vault status` shows; never a value, and nothing that needs the passphrase."""

    path: Path
    exists: bool
    holder: str
    format_version: int | None = None
    kdf: KdfParams | None = None
    entries: int | None = None
    keyring_enabled: bool | None = None
    audit_key_fingerprint: str | None = None
    checkpoint_key_fingerprint: str | None = None
    public_file: Literal["matches header", "missing", "differs from header"] | None = None
    # True only while a running gateway holds it unlocked; at rest a vault is always locked.
    # Not in as_json(): that is also the gateway's `vault.describe` answer, whose schema is the
    # file's; `sp vault status --json` adds it.
    unlocked: bool = False

    def as_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "exists": self.exists,
            "holder": self.holder,
            "format_version": self.format_version,
            "kdf": None
            if self.kdf is None
            else {
                "algorithm": "argon2id",
                "memory_kib": self.kdf.memory_kib,
                "iterations": self.kdf.iterations,
                "lanes": self.kdf.lanes,
            },
            "entries": self.entries,
            "keyring_enabled": self.keyring_enabled,
            "audit_key_fingerprint": self.audit_key_fingerprint,
            "checkpoint_key_fingerprint": self.checkpoint_key_fingerprint,
            "public_file": self.public_file,
        }


@dataclass(frozen=True)
class UnlockReport:
    """The outcome of `sp vault unlock`: who holds the unlocked state, and the public key file."""

    held_by_gateway: bool
    public_file: PublicFileState
    public_file_rewritten: bool


class VaultBackend(Protocol):
    def status(self) -> VaultStatus: ...

    def init(self, passphrase: SecretBytes) -> VaultPublicKeys: ...

    def unlock(
        self, authority: Authority, *, rewrite_public_file: bool = False
    ) -> UnlockReport: ...

    def lock(self) -> bool:
        """True if an unlocked state was dropped; False if nothing held one."""
        ...

    def entries(self, authority: Authority) -> list[EntryInfo]: ...

    def add(
        self,
        authority: Authority,
        name: str,
        kind: SecretKind,
        value: Mapping[str, SecretBytes | str],
    ) -> None: ...

    def remove(self, authority: Authority, name: str) -> str | None:
        """None, or a problem to report (an OAuth grant the gateway could not revoke)."""
        ...

    def rotate(
        self, authority: Authority, name: str, value: Mapping[str, SecretBytes | str]
    ) -> None: ...

    def change_passphrase(self, old: SecretBytes, new: SecretBytes) -> bool:
        """True if keyring unlock was on (and is now off: it wrapped the old data key)."""
        ...

    def backup(self, destination: Path) -> None: ...

    def keyring_enable(self, authority: Authority) -> None: ...

    def keyring_disable(self, authority: Authority) -> None: ...

    def unseal(
        self, authority: Authority, records: list[dict[str, Any]]
    ) -> list[dict[str, Any]]: ...


def key_fingerprint(raw: bytes) -> str:
    digest = hashlib.sha256(raw).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


class FileVaultBackend:
    """Operations straight on the file, under its lock; nothing stays unlocked afterwards."""

    HOLDER = "nobody: no gateway is running, so the vault stays locked at rest"

    def __init__(self, store: VaultFile, *, kdf: KdfParams = PRODUCTION_KDF) -> None:
        self.store = store
        self.kdf = kdf

    def status(self) -> VaultStatus:
        if not self.store.exists():
            return VaultStatus(path=self.store.path, exists=False, holder=self.HOLDER)
        header = self.store.header()
        try:
            on_disk: VaultPublicKeys | None = self.store.public_keys()
        except VaultMissing:
            on_disk = None
        public_file: Literal["matches header", "missing", "differs from header"] = (
            "missing"
            if on_disk is None
            else "matches header"
            if on_disk == header.public
            else "differs from header"
        )
        return VaultStatus(
            path=self.store.path,
            exists=True,
            holder=self.HOLDER,
            format_version=VERSION,
            kdf=header.kdf,
            entries=header.entries,
            keyring_enabled=header.keyring_wrap is not None,
            audit_key_fingerprint=key_fingerprint(header.public.audit_x25519),
            checkpoint_key_fingerprint=header.public.checkpoint_fingerprint,
            public_file=public_file,
        )

    def init(self, passphrase: SecretBytes) -> VaultPublicKeys:
        vault = self.store.create(passphrase, kdf=self.kdf)
        try:
            return vault.public_keys()
        finally:
            vault.lock()

    def unlock(self, authority: Authority, *, rewrite_public_file: bool = False) -> UnlockReport:
        self._require_file()
        with self.store.locked():
            vault = self._open(authority)
            try:
                state = vault.public_file_state()
                rewritten = False
                if state == "missing" or (state == "mismatch" and rewrite_public_file):
                    vault.rewrite_public_file()
                    rewritten = True
                return UnlockReport(
                    held_by_gateway=False, public_file=state, public_file_rewritten=rewritten
                )
            finally:
                vault.lock()

    def lock(self) -> bool:
        return False

    def entries(self, authority: Authority) -> list[EntryInfo]:
        return self._with(authority, lambda vault: vault.entries())

    def add(
        self,
        authority: Authority,
        name: str,
        kind: SecretKind,
        value: Mapping[str, SecretBytes | str],
    ) -> None:
        self._with(authority, lambda vault: vault.add(name, kind, value))

    def remove(self, authority: Authority, name: str) -> str | None:
        return self._with(authority, lambda vault: _remove(vault, name))

    def rotate(
        self, authority: Authority, name: str, value: Mapping[str, SecretBytes | str]
    ) -> None:
        self._with(authority, lambda vault: vault.rotate(name, value))

    def change_passphrase(self, old: SecretBytes, new: SecretBytes) -> bool:
        def change(vault: OpenVault) -> bool:
            had_keyring = vault.keyring_enabled
            # Re-derive with today's parameters, so a passphrase change also upgrades the KDF.
            vault.change_passphrase(old, new, kdf=self.kdf)
            return had_keyring

        return self._with(Authority(passphrase=lambda: old), change)

    def backup(self, destination: Path) -> None:
        self.store.backup(destination)

    def keyring_enable(self, authority: Authority) -> None:
        self._with(authority, lambda vault: vault.enable_keyring())

    def keyring_disable(self, authority: Authority) -> None:
        self._with(authority, lambda vault: vault.disable_keyring())

    def unseal(self, authority: Authority, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        def open_all(vault: OpenVault) -> list[dict[str, Any]]:
            opener = vault.audit_opener()
            out = []
            for record in records:
                sealed = record.get("sealed")
                if isinstance(sealed, dict):
                    record = {k: v for k, v in record.items() if k != "sealed"}
                    try:
                        record["body"] = json.loads(opener.open(sealed))
                    except (AuditError, ValueError):
                        record["body"] = "<sealed: not openable with this vault>"
                out.append(record)
            return out

        return self._with(authority, open_all)

    def _require_file(self) -> None:
        # Before the lock file is created beside it: a missing folder would otherwise read as
        # "cannot open the vault lock".
        if not self.store.exists():
            raise VaultMissing(
                f"no vault file at {self.store.path}", hint="run `sp vault init` first"
            )

    def _with(self, authority: Authority, action: Callable[[OpenVault], _T]) -> _T:
        self._require_file()
        with self.store.locked():
            vault = self._open(authority)
            try:
                return action(vault)
            finally:
                vault.lock()

    def _open(self, authority: Authority) -> OpenVault:
        if authority.keyring:
            return self.store.unlock_with_keyring()
        if authority.passphrase is None:
            raise VaultLocked()
        return self.store.unlock(authority.passphrase())


def _remove(vault: OpenVault, name: str) -> str | None:
    """Remove ``name``; an OAuth grant removed with no gateway running is not revoked at its
    provider (only the gateway talks to providers), which is said."""
    grant = any(entry.name == name and entry.kind == "oauth" for entry in vault.entries())
    vault.remove(name)
    if grant:
        return "the grant was not revoked at its provider: no gateway is running"
    return None
