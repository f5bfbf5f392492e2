"""The real parts `sp gateway run` is built from: the vault file, the executors, this OS's probe."""

from __future__ import annotations

import sys

from safeport.action_gateway.core import GatewayParts
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.identity import IdentityProbe, default_probe
from safeport.shared.paths import SafeportPaths
from safeport.vault.sealing import AuditSealer
from safeport.vault.store import VaultFile


def default_parts(paths: SafeportPaths) -> GatewayParts:
    """Call before any thread starts: in dedicated-account mode on Linux the identity probe is
    a forked inspector process, and this process gives up its capabilities."""
    return GatewayParts(
        vault_store=VaultFile.at(paths),
        executor=GatewayExecutor(),
        probe=_probe(paths),
        sealer_for=AuditSealer,
    )


def _probe(paths: SafeportPaths) -> IdentityProbe:
    if paths.install is None or not sys.platform.startswith("linux"):
        return default_probe()
    from safeport.action_gateway.identity_linux import LinuxProbe
    from safeport.action_gateway.inspector import spawn_inspector

    return spawn_inspector(LinuxProbe)
