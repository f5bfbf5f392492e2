"""The gateway's view of the vault: locked or unlocked, and an epoch that every lock bumps.

Grants remember the epoch they were given in; a lock (and so any unlock after it) changes the
epoch, which voids them. Only one passphrase KDF runs at a time, so a flood of wrong guesses
costs the guesser, not the gateway's memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import cast

from safeport.errors import Denied, Error
from safeport.shared.schemas.results_vault import PublicFileState, VaultDescribeResult
from safeport.vault import FileVaultBackend, VaultFile, VaultLocked
from safeport.vault.interface import UnlockedVault, VaultPublicKeys, VaultStore
from safeport.vault.secrets import SecretBytes

# Who unlocked, as journaled: the operation and the requesting process (pid, uid, exe).
Unlocker = Mapping[str, object]


class PassphraseRejected(Denied):
    def __init__(self) -> None:
        super().__init__("the passphrase was not accepted")


class VaultState:
    def __init__(self, store: VaultStore, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._clock = clock
        self._vault: UnlockedVault | None = None
        self._epoch = 0
        self._lock = threading.RLock()
        self._kdf = threading.Lock()
        self._on_lock: list[Callable[[str, UnlockedVault], None]] = []
        self._on_unlock: list[Callable[[UnlockedVault, Unlocker], None]] = []
        self.last_human_activity = clock()

    def on_lock(self, callback: Callable[[str, UnlockedVault], None]) -> None:
        """Called after the gateway stops serving the vault, before it is wiped."""
        self._on_lock.append(callback)

    def on_unlock(self, callback: Callable[[UnlockedVault, Unlocker], None]) -> None:
        """Called after an unlock with who unlocked (for the journal: which process, how)."""
        self._on_unlock.append(callback)

    @property
    def unlocked(self) -> bool:
        return self._vault is not None

    @property
    def epoch(self) -> int:
        return self._epoch

    def current(self) -> tuple[UnlockedVault, int]:
        """The unlocked vault and its epoch, or :class:`VaultLocked` (the same error the vault
        object itself raises once locked, so a lock at any moment reads as one thing)."""
        with self._lock:
            if self._vault is None:
                raise VaultLocked()
            return self._vault, self._epoch

    def unlock(
        self, passphrase: SecretBytes, by: Unlocker | None = None, *, at_epoch: int | None = None
    ) -> bool:
        """Unlock with the passphrase; if already unlocked, only prove it. True if it unlocked.
        ``by`` says who asked (journaled with the unlock; never the passphrase). With
        ``at_epoch``, it unlocks only if the epoch is still that one (no lock or unlock came
        between): otherwise the passphrase is only proved."""
        with self._kdf:
            with self._lock:
                vault = self._vault
            if vault is not None:
                self._prove(vault, passphrase)
                self.touch()
                return False
            try:
                opened = self._store.unlock(passphrase)
            except Denied as exc:
                raise PassphraseRejected() from exc
            with self._lock:
                moved = at_epoch is not None and self._epoch != at_epoch
                if self._vault is not None or moved:  # unlocked (or locked again) meanwhile
                    opened.lock()
                    return False
                self._vault = opened
                self._epoch += 1
            self.touch()
        for callback in self._on_unlock:
            callback(opened, by or {})
        return True

    def unlock_with_keyring(self, by: Unlocker | None = None) -> bool:
        """Unlock through the OS keyring. It unlocks only: it never proves the passphrase, so it
        never makes an approver and never counts as human activity."""
        with self._kdf:
            with self._lock:
                if self._vault is not None:
                    return False
            opened = self._store.unlock_with_keyring()
            with self._lock:
                if self._vault is not None:
                    opened.lock()
                    return False
                self._vault = opened
                self._epoch += 1
        for callback in self._on_unlock:
            callback(opened, {**(by or {}), "with": "keyring"})
        return True

    def create(self, passphrase: SecretBytes) -> VaultPublicKeys:
        """Create the vault file (it stays locked); one KDF at a time, like an unlock."""
        with self._kdf:
            opened = self._store.create(passphrase)
            try:
                return opened.public_keys()
            finally:
                opened.lock()

    def prove(
        self,
        passphrase: SecretBytes,
        by: Unlocker | None = None,
        *,
        unlock: bool = True,
        at_epoch: int | None = None,
    ) -> None:
        """Raise unless ``passphrase`` is the vault's; with ``unlock``, a locked vault is
        unlocked with it. Without, a locked vault is opened only to check, and stays locked:
        a proof that is authority for something else (stop, lock, revoke, a card's answer)
        must not unlock a gateway a human left locked."""
        if unlock:
            self.unlock(passphrase, by, at_epoch=at_epoch)
            return
        with self._kdf:
            with self._lock:
                vault = self._vault
            if vault is not None:
                self._prove(vault, passphrase)
            else:
                try:
                    opened = self._store.unlock(passphrase)
                except Denied as exc:
                    raise PassphraseRejected() from exc
                opened.lock()
            self.touch()

    def lock(self, reason: str) -> bool:
        with self._lock:
            vault = self._vault
            if vault is None:
                return False
            self._vault = None
            self._epoch += 1
        # Every callback runs even if one fails (a journal that cannot be written must not keep
        # the authorization server from forgetting its tokens and replacing its notice); the
        # first failure is raised once all have run.
        failure: BaseException | None = None
        try:
            for callback in self._on_lock:
                try:
                    callback(reason, vault)
                except BaseException as exc:  # raised below, once the others have run
                    failure = failure or exc
        finally:
            vault.lock()
        if failure is not None:
            raise failure
        return True

    def public_keys(self) -> VaultPublicKeys | None:
        try:
            return self._store.public_keys()
        except Error:
            return None

    def describe(self) -> VaultDescribeResult:
        """What `sp vault status` shows, read by the gateway from the file only it can read."""
        store = self._store
        if isinstance(store, VaultFile):
            header = FileVaultBackend(store).status().as_json()
        else:
            header = {"exists": True, "path": str(store.path)}
        state = "unlocked" if self.unlocked else "locked"
        return VaultDescribeResult.model_validate({**header, "vault": state})

    def public_file_view(self) -> PublicFileState | None:
        """The state of vault.pub.json beside the vault, when the store can tell."""
        try:
            vault, _ = self.current()
        except Error:
            return None
        state = getattr(vault, "public_file_state", None)
        return cast("PublicFileState", state()) if callable(state) else None

    def touch(self) -> None:
        """A human acted on control.sock (proved the passphrase); resets the idle clock."""
        self.last_human_activity = self._clock()

    def idle_for(self) -> float:
        return self._clock() - self.last_human_activity

    def _prove(self, vault: UnlockedVault, passphrase: SecretBytes) -> None:
        try:
            vault.verify_passphrase(passphrase)
        except Denied as exc:
            raise PassphraseRejected() from exc


def should_auto_lock(unlocked: bool, idle_s: float, auto_lock_minutes: int) -> bool:
    """Idle counts only human activity (passphrase proofs); 0 minutes means never."""
    return unlocked and auto_lock_minutes > 0 and idle_s > auto_lock_minutes * 60


def unlock_name(run_id: str, epoch: int) -> str:
    """What an approver names to unlock on registering: the gateway's run and the vault's
    epoch in it, so a name read before the last lock (or an earlier run) never unlocks."""
    return f"{run_id}.{epoch}"
