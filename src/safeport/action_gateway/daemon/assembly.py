"""The real parts `sp gateway run` is built from: the vault file, the executors, this OS's probe."""

from __future__ import annotations

import sys

from safeport.action_gateway.core.parts import GatewayParts, admitted_uids
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.https.trust_files import trusted_owners
from safeport.action_gateway.executors.openbao.sources import OpenBaoSources
from safeport.action_gateway.identity.model import IdentityProbe
from safeport.action_gateway.identity.platform import default_probe
from safeport.shared.paths import SafeportPaths
from safeport.vault import AuditSealer, VaultFile


def default_parts(paths: SafeportPaths) -> GatewayParts:
    """Call before any thread starts: in dedicated-account mode on Linux the identity probes
    are forked inspector processes, and this process gives up its capabilities."""
    agents, control = _probes(paths)
    return GatewayParts(
        vault_store=VaultFile.at(paths),
        executor=GatewayExecutor(served_uids=admitted_uids(paths)),
        probe=agents,
        sealer_for=AuditSealer,
        control_probe=control,
        sources=OpenBaoSources(trusted_owners(admitted_uids(paths))),
    )


def _probes(paths: SafeportPaths) -> tuple[IdentityProbe, IdentityProbe | None]:
    if paths.install is None or not sys.platform.startswith("linux"):
        return default_probe(), None
    from safeport.action_gateway.identity.inspector import spawn_inspectors
    from safeport.action_gateway.identity.linux import LinuxProbe

    agents, control = spawn_inspectors(LinuxProbe, 2)
    return agents, control
