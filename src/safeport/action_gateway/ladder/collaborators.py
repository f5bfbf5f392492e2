"""What the ladder needs of the parts it is given: where it journals, what it reads of the
vault's state and of the served policy. The core injects its own (``GatewayJournals.actions``,
``VaultState``, ``PolicyStore``); tests inject small fakes with the same shape."""

from __future__ import annotations

from typing import Protocol

from safeport.action_gateway.policy.store import ServedPolicy
from safeport.shared.audit import JournalBody, JournalHead
from safeport.vault.interface import UnlockedVault


class ActionJournal(Protocol):
    def record(
        self, kind: str, body: JournalBody, *, ref: dict[str, int] | None = None
    ) -> JournalHead: ...


class VaultView(Protocol):
    """What the ladder reads of the vault's state (the core's ``VaultState`` is one): whether it
    is unlocked, and the unlocked vault with its epoch, raising ``VaultLocked`` once locked."""

    @property
    def unlocked(self) -> bool: ...

    def current(self) -> tuple[UnlockedVault, int]: ...


class PolicySource(Protocol):
    @property
    def served(self) -> ServedPolicy | None: ...

    def pending_declares(self, kind: str, target: str, action: str) -> bool:
        """Whether an edited, not yet accepted gateway.toml declares this action."""
        ...
