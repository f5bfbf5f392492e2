"""The vault while unlocked: entries, values for executors, keys, the accepted policy.

Every change is written back at once (atomically, under the file lock) and only then applied in
memory, so a failed save leaves both the file and this object as they were. ``lock()`` zeroes
every buffer this object owns; afterwards each call raises :class:`VaultLocked`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import threading
from collections.abc import Mapping
from typing import Literal

from safeport.errors import EnvironmentProblem
from safeport.shared.schemas.config import parse_gateway_policy
from safeport.vault import envelope
from safeport.vault.backing_file import BackingFile
from safeport.vault.checkpoints import VaultCheckpointSigner
from safeport.vault.credentials import check_name, check_value, to_secret
from safeport.vault.errors import CannotUnlock, EntryError, KeyringProblem, VaultLocked
from safeport.vault.files import VaultMissing
from safeport.vault.format import Header, encode_prefix_and_header
from safeport.vault.interface import AcceptedPolicy, EntryInfo, VaultEvidence, VaultPublicKeys
from safeport.vault.kdf import KdfParams, derive_key, new_salt, zero
from safeport.vault.keyring_wrap import encode_keyring_key, new_keyring_key
from safeport.vault.passphrase import require_passphrase
from safeport.vault.payload import Entry, Payload, encode_payload
from safeport.vault.public_file import read_public_keys, write_public_keys
from safeport.vault.sealing import AuditOpener
from safeport.vault.secrets import CredentialSecret, SecretBytes, SecretKind

PublicFileState = Literal["matches", "missing", "mismatch"]


class OpenVault:
    """The :class:`~safeport.vault.interface.UnlockedVault` implementation."""

    def __init__(self, store: BackingFile, header: Header, data_key: bytearray, payload: Payload):
        self._store = store
        self._header = header
        self._data_key = data_key
        self._payload = payload
        self._mutex = threading.RLock()
        self._open = True

    def __reduce__(self) -> str | tuple[object, ...]:
        # Neither pickled nor copied: a copy would outlive lock() with its own "unlocked" flag.
        raise TypeError("an unlocked vault cannot be pickled or copied")

    def __repr__(self) -> str:
        state = "unlocked" if self._open else "locked"
        count = len(self._payload.entries)
        return f"OpenVault({str(self._store.path)!r}, {state}, entries={count})"

    # -- reading ------------------------------------------------------------------------------

    def entries(self) -> list[EntryInfo]:
        with self._mutex:
            self._require_open()
            return [e.info() for e in sorted(self._payload.entries.values(), key=lambda e: e.name)]

    def secret(self, name: str) -> CredentialSecret:
        with self._mutex:
            entry = self._entry(name)
            return to_secret(entry.kind, entry.secrets, entry.plain)

    def public_keys(self) -> VaultPublicKeys:
        """The public keys kept inside the vault (the reference for vault.pub.json)."""
        with self._mutex:
            self._require_open()
            return self._payload.public

    def public_file_state(self) -> PublicFileState:
        """Whether vault.pub.json still holds this vault's keys (a swap seals to someone else)."""
        try:
            on_disk = read_public_keys(self._store.public_path)
        except VaultMissing:
            return "missing"
        except EnvironmentProblem:
            # Planted FIFO, symlink, loose mode, garbage: not our keys either, and the same
            # remedy (rewrite it from the keys inside the vault) applies.
            return "mismatch"
        return "matches" if on_disk == self.public_keys() else "mismatch"

    def rewrite_public_file(self) -> None:
        """Write vault.pub.json from the keys inside the vault (after a restore or a swap)."""
        write_public_keys(self._store.public_path, self.public_keys())

    @property
    def keyring_enabled(self) -> bool:
        return self._header.keyring_wrap is not None

    @property
    def vault_id(self) -> str:
        return self._header.vault_id

    @property
    def generation(self) -> int:
        """Saves since creation (authenticated): a holder that records it can spot a rollback."""
        return self._header.generation

    def accepted_policy(self) -> AcceptedPolicy | None:
        with self._mutex:
            self._require_open()
            return self._payload.policy

    def checkpoint_signer(self) -> VaultCheckpointSigner:
        with self._mutex:
            self._require_open()
            return VaultCheckpointSigner(self._payload.checkpoint_private, self._payload.public)

    def evidence(self) -> VaultEvidence | None:
        with self._mutex:
            self._require_open()
            return self._payload.evidence

    def record_evidence(self, evidence: VaultEvidence) -> None:
        """Save the gateway's journal heads and highest generation seen (no-op if unchanged)."""
        with self._mutex:
            self._require_open()
            if self._payload.evidence == evidence:
                return
            self._commit(dataclasses.replace(self._payload, evidence=evidence))

    def approver_keys(self) -> str | None:
        with self._mutex:
            self._require_open()
            return self._payload.approver_keys

    def record_approver_keys(self, text: str) -> None:
        """Save the enrolled security keys (their counters move with every approval)."""
        with self._mutex:
            self._require_open()
            if self._payload.approver_keys != text:
                self._commit(dataclasses.replace(self._payload, approver_keys=text))

    def audit_opener(self) -> AuditOpener:
        """Opens sealed journal bodies (for `sp audit show`); unusable after lock."""
        with self._mutex:
            self._require_open()
            return AuditOpener(self._payload.audit_private)

    # -- changes ------------------------------------------------------------------------------

    def add(self, name: str, kind: SecretKind, value: Mapping[str, SecretBytes | str]) -> None:
        check_name(name)
        secrets, plain = check_value(name, kind, value)
        with self._mutex:
            self._require_open()
            if name in self._payload.entries:
                _wipe_all(secrets)
                raise EntryError(
                    f"an entry named {name!r} already exists",
                    hint="use `sp vault rotate` to replace its value",
                )
            entry = Entry(name, kind, self._store.clock(), None, secrets, plain)
            entries = {**self._payload.entries, name: entry}
            self._commit_or_wipe(dataclasses.replace(self._payload, entries=entries), secrets)

    def remove(self, name: str) -> None:
        with self._mutex:
            entry = self._entry(name)
            entries = {k: v for k, v in self._payload.entries.items() if k != name}
            self._commit(dataclasses.replace(self._payload, entries=entries))
            entry.wipe()

    def rotate(self, name: str, value: Mapping[str, SecretBytes | str]) -> None:
        with self._mutex:
            old = self._entry(name)
            secrets, plain = check_value(name, old.kind, value)
            entry = Entry(name, old.kind, old.created, self._store.clock(), secrets, plain)
            entries = {**self._payload.entries, name: entry}
            self._commit_or_wipe(dataclasses.replace(self._payload, entries=entries), secrets)
            old.wipe()

    def accept_policy(self, text: str) -> AcceptedPolicy:
        """Store gateway.toml text a human accepted (it must parse); returns it with its digest."""
        _, digest = parse_gateway_policy(text)
        with self._mutex:
            self._require_open()
            policy = AcceptedPolicy(text=text, digest=digest, accepted_at=self._store.clock())
            self._commit(dataclasses.replace(self._payload, policy=policy))
            return policy

    def verify_passphrase(self, passphrase: SecretBytes) -> None:
        with self._mutex:
            self._require_open()
            header = self._header
        if len(passphrase) == 0:
            raise CannotUnlock()
        kek = derive_key(passphrase, header.salt, header.kdf)
        try:
            wrap, vault_id = header.passphrase_wrap, header.vault_id
            candidate = envelope.unwrap_from_passphrase(kek, wrap, vault_id)
        finally:
            zero(kek)
        try:
            with self._mutex:
                self._require_open()
                if not hmac.compare_digest(candidate, self._data_key):
                    raise CannotUnlock()
        finally:
            zero(candidate)

    def change_passphrase(
        self, old: SecretBytes, new: SecretBytes, *, kdf: KdfParams | None = None
    ) -> None:
        """Re-encrypt under a new data key wrapped by the new passphrase.

        A new data key (not just a rewrap) means an old copy of the file plus the old passphrase
        tells nothing about the new file. The keyring wrap is dropped with the old data key;
        `sp vault keyring enable` makes a new one. ``kdf`` None keeps the recorded parameters.
        """
        require_passphrase(new)
        self.verify_passphrase(old)
        with self._mutex:
            self._require_open()
            params = kdf or self._header.kdf
            salt = new_salt()
            data_key = envelope.new_data_key()
            kek = derive_key(new, salt, params)
            try:
                wrap = envelope.wrap_for_passphrase(kek, data_key, self._header.vault_id)
            finally:
                zero(kek)
            had_keyring = self._header.keyring_wrap is not None
            try:
                self._commit(
                    self._payload,
                    header=dataclasses.replace(
                        self._header, kdf=params, salt=salt, passphrase_wrap=wrap, keyring_wrap=None
                    ),
                    data_key=data_key,
                )
            except BaseException:
                zero(data_key)
                raise
            zero(self._data_key)
            self._data_key = data_key
        if had_keyring:
            # The item can no longer unwrap anything: leaving it behind is harmless.
            with contextlib.suppress(KeyringProblem):
                self._store.keyring.delete(self._header.vault_id)

    def enable_keyring(self) -> None:
        """Store a second wrap of the data key whose key lives in the OS keyring."""
        with self._mutex:
            self._require_open()
            key = new_keyring_key()
            try:
                wrap = envelope.wrap_for_keyring(key, self._data_key, self._header.vault_id)
                self._store.keyring.set(self._header.vault_id, encode_keyring_key(key))
            finally:
                zero(key)
            try:
                header = dataclasses.replace(self._header, keyring_wrap=wrap)
                self._commit(self._payload, header=header)
            except BaseException:
                self._store.keyring.delete(self._header.vault_id)
                raise

    def disable_keyring(self) -> None:
        """Drop the keyring wrap from the file, then the key from the OS keyring."""
        with self._mutex:
            self._require_open()
            if self._header.keyring_wrap is not None:
                self._commit(
                    self._payload, header=dataclasses.replace(self._header, keyring_wrap=None)
                )
            try:
                self._store.keyring.delete(self._header.vault_id)
            except KeyringProblem as exc:
                raise KeyringProblem(
                    "keyring unlock is disabled in the vault, but the OS keyring item could not "
                    "be deleted",
                    hint="it no longer opens this file (but still opens older backups); remove "
                    "the 'safeport-vault' item by hand",
                ) from exc

    def lock(self) -> None:
        with self._mutex:
            if not self._open:
                return
            self._open = False
            zero(self._data_key)
            self._payload.wipe()

    # -- internals ----------------------------------------------------------------------------

    def save_new(self) -> None:
        """First write of a vault made by :meth:`VaultFile.create`."""
        with self._mutex:
            self._commit(self._payload, first=True)

    def _entry(self, name: str) -> Entry:
        self._require_open()
        entry = self._payload.entries.get(name)
        if entry is None:
            check_name(name)
            raise EntryError(f"no entry named {name!r} in the vault", hint="see `sp vault list`")
        return entry

    def _require_open(self) -> None:
        if not self._open:
            raise VaultLocked()

    def _commit_or_wipe(self, payload: Payload, secrets: Mapping[str, SecretBytes]) -> None:
        try:
            self._commit(payload)
        except BaseException:
            _wipe_all(secrets)
            raise

    def _commit(
        self,
        payload: Payload,
        *,
        header: Header | None = None,
        data_key: bytearray | None = None,
        first: bool = False,
    ) -> None:
        """Encrypt ``payload`` under a fresh nonce, replace the file, then adopt the new state."""
        base = header or self._header
        key = self._data_key if data_key is None else data_key
        new_header = dataclasses.replace(
            base,
            generation=self._header.generation + (0 if first else 1),
            entries=len(payload.entries),
            payload_nonce=envelope.new_nonce(),
        )
        prefix = encode_prefix_and_header(new_header)
        plaintext = encode_payload(payload)
        try:
            limit = self._store.max_bytes
            if len(prefix) + len(plaintext) + 16 > limit:
                # Reading refuses anything larger, so saving it would lock the owner out.
                raise EntryError(
                    f"the vault would grow past {limit // (1024 * 1024)} MiB",
                    hint="nothing was saved; remove entries you no longer need",
                )
            ciphertext = envelope.seal_payload(key, new_header.payload_nonce, prefix, plaintext)
        finally:
            zero(plaintext)
        expected = None if first else self._header.generation
        self._store.replace(prefix + ciphertext, expected_generation=expected)
        self._header = new_header
        self._payload = payload


def _wipe_all(secrets: Mapping[str, SecretBytes]) -> None:
    for value in secrets.values():
        value.wipe()
