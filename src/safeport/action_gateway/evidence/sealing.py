"""Which public key the journals' bodies are sealed to, and the check that it is the vault's.

vault.pub.json lies outside the vault and could be swapped so that records are sealed to
someone else's key. Until the vault is unlocked it is all there is; at each unlock the keys
inside the vault are compared with it, a difference is an alarm, and sealing follows the vault.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from safeport.action_gateway.evidence.journals import GatewayJournals
from safeport.errors import Error
from safeport.shared.audit import BodySealer
from safeport.vault.interface import UnlockedVault, VaultPublicKeys, VaultStore

log = logging.getLogger("safeport.gateway")

SealerFor = Callable[[VaultPublicKeys], BodySealer]


class JournalSealing:
    def __init__(self, sealer_for: SealerFor | None) -> None:
        self._sealer_for = sealer_for
        self._sealed_to: VaultPublicKeys | None = None

    def at_start(self, store: VaultStore) -> BodySealer | None:
        """The sealer for the keys in vault.pub.json (none without sealing or without a file)."""
        if self._sealer_for is None:
            return None
        try:
            keys = store.public_keys()
        except Error:
            return None
        self._sealed_to = keys
        return self._sealer_for(keys)

    def created(self, journals: GatewayJournals, keys: VaultPublicKeys) -> None:
        """A vault was just created: seal to its keys from now on."""
        if self._sealer_for is not None:
            journals.set_sealer(self._sealer_for(keys))
            self._sealed_to = keys

    def unlocked(
        self, journals: GatewayJournals, vault: UnlockedVault, alarm: Callable[[], None]
    ) -> None:
        """Compare the keys inside the vault with those sealed to; seal to the vault's."""
        if self._sealer_for is None:
            return
        inner = vault.public_keys()
        if self._sealed_to is not None and inner != self._sealed_to:
            log.error(
                "vault.pub.json does not hold this vault's public keys; sealing to the vault's"
            )
            alarm()
        if inner != self._sealed_to:
            journals.set_sealer(self._sealer_for(inner))
            self._sealed_to = inner
