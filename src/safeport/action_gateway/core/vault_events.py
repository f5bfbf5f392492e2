"""What the gateway does as its vault opens and closes, and how it journals one of its saves.

Unlock journals who unlocked, judges the journals' evidence and sealing against the vault's
keys, loads the accepted policy and settles the credential sources; lock voids every grant,
drops pooled connections (they hold credentials) and signs the journal heads. Apart from
:class:`~safeport.action_gateway.core.gateway_core.GatewayCore`'s use cases so that each side
of a lock reads as one short method.
"""

from __future__ import annotations

import logging

from safeport.action_gateway.approvals.broker import Approvals
from safeport.action_gateway.core.journal_wiring import GatewayRecords
from safeport.action_gateway.core.vault_state import Unlocker, VaultState
from safeport.action_gateway.executors.interface import Executor
from safeport.action_gateway.ladder.credentials import CredentialSupply
from safeport.action_gateway.policy.store import PolicyStore
from safeport.errors import Error
from safeport.shared.audit import JournalBody
from safeport.shared.exception_summary import summarize
from safeport.shared.known_secrets import shorten
from safeport.vault.interface import UnlockedVault

log = logging.getLogger("safeport.gateway")


class VaultEvents:
    def __init__(
        self,
        vault: VaultState,
        records: GatewayRecords,
        policies: PolicyStore,
        credentials: CredentialSupply,
        approvals: Approvals,
        executor: Executor,
    ) -> None:
        self._vault = vault
        self._journals = records.journals
        self._sealing = records.sealing
        self._checkpoints = records.checkpoints
        self._policies = policies
        self._credentials = credentials
        self._approvals = approvals
        self._executor = executor
        vault.on_unlock(self.unlocked)
        vault.on_lock(self.locked)

    def unlocked(self, vault: UnlockedVault, by: Unlocker) -> None:
        generation = vault.generation
        self._journals.sessions.record(
            "vault.unlocked",
            {"epoch": self._vault.epoch, "vault_generation": generation, "by": dict(by)},
            ref={"generation": generation},
        )
        self._checkpoints.judge_unlocked(vault)
        self._sealing.unlocked(
            self._journals,
            vault,
            alarm=lambda: self._record("vault.public_keys_mismatch", {"alarm": True}),
        )
        try:
            served = self._policies.load_accepted(vault)
        except Error as exc:
            log.error("the accepted policy could not be loaded: %s", exc.diagnostic())
            self._record("policy.invalid", {"reason": shorten(exc.message, 300)})
            return
        if served is not None:
            self._record("policy.served", {"policy": served.digest})
        self._credentials.settle(served, vault)

    def locked(self, reason: str, vault: UnlockedVault) -> None:
        ended = self._approvals.void_all("vault locked")
        self.close_pooled("on lock")
        self._record("vault.locked", {"reason": reason, "sessions_ended": ended})
        self.checkpoint(vault)

    def close_pooled(self, when: str) -> None:
        try:
            self._executor.close_all()
            self._credentials.sources.forget()
            self._credentials.grants.forget()  # every OAuth access token, wiped
            self._credentials.flows.clear()  # and every connect under way
        except Exception as exc:  # the lock stands; pooled connections die with their keys
            log.warning("closing pooled connections failed %s: %s", when, summarize(exc))

    def record_save(self, kind: str, body: JournalBody, vault: UnlockedVault) -> None:
        """Journal one of the gateway's saves with the generation it reached (a rollback shows)."""
        generation = self._checkpoints.saved(vault)
        self._journals.sessions.record(kind, body, ref={"generation": generation})
        # Signed at once: until a head covers it, a kill and a cut could remove the file's trace.
        self.checkpoint(vault)

    def checkpoint(self, vault: UnlockedVault | None = None, *, if_moved: bool = False) -> None:
        """Sign the heads (``if_moved``: if one moved since); nothing to sign with while locked."""
        if if_moved and not self._checkpoints.moved():
            return
        if vault is None:
            try:
                vault, _ = self._vault.current()
            except Error:
                return
        self._checkpoints.sign(vault)

    def _record(self, kind: str, body: JournalBody) -> None:
        self._journals.sessions.record(kind, body)
