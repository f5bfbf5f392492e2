"""The real parts `sp gateway run` is built from: the vault file, the executors, this OS's probe."""

from __future__ import annotations

from safeport.action_gateway.core import GatewayParts, admitted_uids
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.identity import default_probe
from safeport.shared.paths import SafeportPaths
from safeport.vault.sealing import AuditSealer
from safeport.vault.store import VaultFile


def default_parts(paths: SafeportPaths) -> GatewayParts:
    return GatewayParts(
        vault_store=VaultFile.at(paths),
        executor=GatewayExecutor(served_uids=admitted_uids(paths)),
        probe=default_probe(),
        sealer_for=AuditSealer,
    )
