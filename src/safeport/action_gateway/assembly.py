"""The real parts `sp gateway run` is built from: the vault file, the executors, this OS's probe."""

from __future__ import annotations

import importlib
from typing import Any

from safeport.action_gateway.core import GatewayParts
from safeport.action_gateway.identity import default_probe
from safeport.errors import EnvironmentProblem
from safeport.shared.paths import SafeportPaths


def default_parts(paths: SafeportPaths) -> GatewayParts:
    store = _load("safeport.vault.store", "VaultFile").at(paths)
    sealer = _load("safeport.vault.sealing", "AuditSealer")
    executor = _load("safeport.action_gateway.executors.gateway_executor", "GatewayExecutor")()
    return GatewayParts(
        vault_store=store, executor=executor, probe=default_probe(), sealer_for=sealer
    )


def _load(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise EnvironmentProblem(
            f"this installation lacks {module}.{name}",
            hint="reinstall safeport; the gateway needs its vault and executors",
        ) from exc
