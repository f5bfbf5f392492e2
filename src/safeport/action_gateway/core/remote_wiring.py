"""The authorization server of remote clients, built from the gateway's own parts: its vault
(the signing key), its approvals (the cards), its journal and its accepted policy's ``[remote]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from safeport.action_gateway.approvals.broker import Approvals
from safeport.action_gateway.core.vault_state import VaultState
from safeport.action_gateway.policy.store import PolicyStore
from safeport.action_gateway.remote_clients.authorization import Asker
from safeport.action_gateway.remote_clients.authorization_server import AuthorizationServer
from safeport.action_gateway.remote_clients.issuer import Issuer, IssuerSettings
from safeport.action_gateway.remote_clients.metadata_documents import (
    FetchRules,
    MetadataDocuments,
)
from safeport.action_gateway.remote_clients.revocation_notice import RevocationNotice
from safeport.action_gateway.remote_clients.signing_key import ENTRY_NAME
from safeport.shared.audit import JournalBody
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.config import GatewaySettings
from safeport.vault.interface import UnlockedVault
from safeport.vault.secrets import SecretBytes, SecretKind


class _IssuerVault:
    def __init__(self, state: VaultState, add: Callable[[SecretBytes], None]) -> None:
        self._state = state
        self._add = add

    def current(self) -> tuple[UnlockedVault, int]:
        return self._state.current()

    def add_signing_key(self, seed: SecretBytes) -> None:
        self._add(seed)


class _Gateway(Protocol):
    def add_credential(
        self, name: str, kind: SecretKind, value: Mapping[str, SecretBytes | str]
    ) -> None: ...

    def record_session(self, kind: str, body: JournalBody) -> None: ...

    def settings(self) -> GatewaySettings: ...


def authorization_server(
    gateway: _Gateway,
    vault: VaultState,
    approvals: Approvals,
    policies: PolicyStore,
    paths: SafeportPaths,
    fetch: FetchRules,
) -> AuthorizationServer:
    def settings() -> IssuerSettings:
        served = policies.served
        if served is None:
            return IssuerSettings()
        remote = served.policy.remote
        return IssuerSettings(access_minutes=remote.access_token_minutes, actions=remote.actions)

    def add_key(seed: SecretBytes) -> None:
        gateway.add_credential(ENTRY_NAME, "token", {"token": seed})

    # A new value at every start: whatever a context server remembered from an earlier run
    # of the gateway is asked about again.
    notice = RevocationNotice(paths.revocation_notice)
    notice.publish()
    issuer = Issuer(
        _IssuerVault(vault, add_key),
        paths.data_dir,
        gateway.record_session,
        settings,
        ended=notice.publish,
    )
    timeout = lambda: float(gateway.settings().approval_timeout_s)  # noqa: E731
    asker = Asker(approvals.ask, timeout)
    server = AuthorizationServer(issuer, MetadataDocuments(fetch), asker, notice)
    vault.on_lock(lambda reason, unlocked: server.locked())
    return server
