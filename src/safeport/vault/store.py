"""The vault file on disk: create, unlock (passphrase or keyring), back up, and save atomically.

:class:`VaultFile` is the :class:`~safeport.vault.interface.VaultStore` the gateway and `sp` use.
It never holds a secret itself; unlocking returns an :class:`~safeport.vault.unlocked.OpenVault`
that does, and that writes every change back through :meth:`VaultFile.replace` under the
file lock.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from safeport.errors import EnvironmentProblem, UsageError
from safeport.shared.paths import SafeportPaths, ensure_owned_dir, ensure_private_dir
from safeport.vault import envelope
from safeport.vault.errors import KeyringProblem, VaultChanged
from safeport.vault.files import (
    MAX_VAULT_BYTES,
    FileLock,
    VaultMissing,
    create_exclusive,
    read_private_file,
    remove_stale_temps,
    replace_atomically,
)
from safeport.vault.format import Header, split_file
from safeport.vault.interface import VaultPublicKeys
from safeport.vault.kdf import PRODUCTION_KDF, KdfParams, derive_key, new_salt, zero
from safeport.vault.keyring_wrap import KeyringBackend, OsKeyring, decode_keyring_key
from safeport.vault.passphrase import require_passphrase
from safeport.vault.payload import Payload, decode_payload
from safeport.vault.public_file import read_public_keys, write_public_keys
from safeport.vault.secrets import SecretBytes
from safeport.vault.unlocked import OpenVault

if TYPE_CHECKING:
    from safeport.shared.audit import BodySealer
    from safeport.vault.backing_file import BackingFile
    from safeport.vault.checkpoints import VaultCheckpointSigner
    from safeport.vault.interface import CheckpointSigner, UnlockedVault, VaultStore
    from safeport.vault.sealing import AuditSealer

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class VaultFile:
    """``vault.sp`` (and its ``vault.pub.json``) at a path; holds no secret while locked."""

    def __init__(
        self,
        path: Path,
        public_path: Path | None = None,
        *,
        keyring: KeyringBackend | None = None,
        clock: Clock = _utc_now,
        max_bytes: int = MAX_VAULT_BYTES,
    ) -> None:
        """``max_bytes``: the largest vault file this reads, and so the largest it saves."""
        self.path = path
        self.max_bytes = max_bytes
        self.public_path = public_path or path.with_name("vault.pub.json")
        self.keyring: KeyringBackend = keyring if keyring is not None else OsKeyring()
        self.clock = clock
        self._lock = FileLock(path)

    @classmethod
    def at(cls, paths: SafeportPaths, **options: object) -> VaultFile:
        return cls(paths.vault_file, paths.vault_public_file, **options)  # type: ignore[arg-type]

    # -- locked-state questions ---------------------------------------------------------------

    def exists(self) -> bool:
        return self.path.exists() or self.path.is_symlink()

    def header(self) -> Header:
        """The header as stored (unauthenticated until an unlock succeeds)."""
        data = read_private_file(self.path, what="vault file", max_bytes=self.max_bytes)
        header, _, _ = split_file(data, source=str(self.path))
        return header

    def public_keys(self) -> VaultPublicKeys:
        """The keys in vault.pub.json (what sealing and checkpoint checks use while locked)."""
        return read_public_keys(self.public_path)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the vault's file lock (re-entrant) across a read-modify-write."""
        with self._lock.held():
            yield

    # -- create / unlock ----------------------------------------------------------------------

    def create(self, passphrase: SecretBytes, *, kdf: KdfParams = PRODUCTION_KDF) -> OpenVault:
        """Write a new, empty vault and its public key file; refuses to replace an existing one."""
        require_passphrase(passphrase)
        folder = self.path.parent
        if folder.is_dir() and not folder.is_symlink():
            # An existing folder may be a dedicated account's 0750 state folder; what matters
            # is that nobody else can create or replace entries in it.
            ensure_owned_dir(folder, mode=0o750)
        else:
            ensure_private_dir(folder)
        with self.locked():
            if self.exists():
                raise EnvironmentProblem(
                    f"a vault already exists at {self.path}",
                    hint="nothing was changed; use `sp vault passphrase` to change its passphrase",
                )
            audit_key = X25519PrivateKey.generate()
            signing_key = Ed25519PrivateKey.generate()
            public = VaultPublicKeys(
                audit_x25519=audit_key.public_key().public_bytes(
                    serialization.Encoding.Raw, serialization.PublicFormat.Raw
                ),
                checkpoint_ed25519=signing_key.public_key().public_bytes(
                    serialization.Encoding.Raw, serialization.PublicFormat.Raw
                ),
            )
            now = self.clock()
            payload = Payload(
                created=now,
                entries={},
                audit_private=SecretBytes(audit_key.private_bytes_raw()),
                checkpoint_private=SecretBytes(signing_key.private_bytes_raw()),
                public=public,
                policy=None,
            )
            vault_id = secrets.token_hex(16)
            salt = new_salt()
            data_key = envelope.new_data_key()
            kek = derive_key(passphrase, salt, kdf)
            try:
                wrap = envelope.wrap_for_passphrase(kek, data_key, vault_id)
            finally:
                zero(kek)
            header = Header(
                vault_id=vault_id,
                generation=0,
                entries=0,
                kdf=kdf,
                salt=salt,
                passphrase_wrap=wrap,
                keyring_wrap=None,
                public=public,
                payload_nonce=envelope.new_nonce(),
            )
            vault = OpenVault(self, header, data_key, payload)
            vault.save_new()
            write_public_keys(self.public_path, public)
            return vault

    def unlock(self, passphrase: SecretBytes) -> OpenVault:
        """Decrypt with the passphrase; every failure past the version is :class:`CannotUnlock`."""
        require_passphrase(passphrase)

        def unwrap(header: Header) -> bytearray:
            kek = derive_key(passphrase, header.salt, header.kdf)
            try:
                return envelope.unwrap_from_passphrase(kek, header.passphrase_wrap, header.vault_id)
            finally:
                zero(kek)

        return self._open(unwrap)

    def unlock_with_keyring(self) -> OpenVault:
        """Decrypt with the key kept in the OS keyring (`sp vault keyring enable`)."""

        def unwrap(header: Header) -> bytearray:
            if header.keyring_wrap is None:
                raise KeyringProblem(
                    "keyring unlock is not enabled for this vault",
                    hint="run `sp vault keyring enable`, or unlock with the passphrase",
                )
            stored = self.keyring.get(header.vault_id)
            if stored is None:
                raise KeyringProblem(
                    "the OS keyring holds no key for this vault",
                    hint="unlock with the passphrase and run `sp vault keyring enable` again",
                )
            key = decode_keyring_key(stored)
            try:
                return envelope.unwrap_from_keyring(key, header.keyring_wrap, header.vault_id)
            finally:
                zero(key)

        return self._open(unwrap)

    def _open(self, unwrap: Callable[[Header], bytearray]) -> OpenVault:
        data = read_private_file(self.path, what="vault file", max_bytes=self.max_bytes)
        header, aad, ciphertext = split_file(data, source=str(self.path))
        data_key = unwrap(header)
        try:
            plaintext = envelope.open_payload(data_key, header.payload_nonce, aad, ciphertext)
            try:
                payload = decode_payload(plaintext)
            finally:
                zero(plaintext)
        except BaseException:
            zero(data_key)
            raise
        return OpenVault(self, header, data_key, payload)

    # -- writing ------------------------------------------------------------------------------

    def replace(self, data: bytes, *, expected_generation: int | None) -> None:
        """Atomically replace the file, if it is still the generation the caller unlocked.

        ``expected_generation`` None means the file must not exist yet (first save).
        """
        with self.locked():
            if expected_generation is not None:
                try:
                    current = self.header().generation
                except VaultMissing:
                    current = None
                if current != expected_generation:
                    raise VaultChanged(
                        f"the vault file {self.path} changed since it was unlocked",
                        hint="nothing was saved; unlock again and repeat the change",
                    )
            remove_stale_temps(self.path)
            replace_atomically(self.path, data)

    def backup(self, destination: Path) -> None:
        """Copy the encrypted file byte for byte (still passphrase-protected) to a new file."""
        with self.locked():
            data = read_private_file(self.path, what="vault file", max_bytes=self.max_bytes)
            split_file(data, source=str(self.path))  # refuse to back up something that is no vault
            if destination.resolve() == self.path.resolve():
                raise UsageError("the backup must be a different file than the vault")
            create_exclusive(destination, data)


if TYPE_CHECKING:  # mypy proves the classes meet the contract the gateway codes against

    def _conforms(
        store: VaultFile, vault: OpenVault, sealer: AuditSealer, signer: VaultCheckpointSigner
    ) -> tuple[VaultStore, BackingFile, UnlockedVault, BodySealer, CheckpointSigner]:
        return store, store, vault, sealer, signer
