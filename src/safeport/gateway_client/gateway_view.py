"""What a running gateway says about its vault and policy, asked without a secret.

`sp policy check`, `sp status` and `sp doctor` compare the policy on disk with what the gateway
serves and with the credentials its vault holds; none of them may need the passphrase, so they
ask only what the gateway answers to anyone it serves, and say why when it cannot be asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from safeport.errors import Error
from safeport.gateway_client.control_socket import GatewayClient, GatewayRefused
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas import operations as ops


@dataclass(frozen=True)
class GatewayView:
    """What a running gateway says about its vault and policy."""

    running: bool
    vault_kinds: dict[str, str] | None  # entry name → kind; None when it could not be asked
    vault_note: str  # why the vault's entries are unknown, when they are
    served_digest: str | None
    served_text: str | None


def gateway_view(paths: SafeportPaths, *, timeout: float = 5.0) -> GatewayView:
    try:
        with GatewayClient(paths, timeout=timeout) as client:
            status = client.call(ops.POLICY_STATUS)
            served, served_text = status.served, status.served_text
            try:
                entries = client.call(ops.VAULT_ENTRIES).entries
            except GatewayRefused as exc:
                return GatewayView(
                    True,
                    None,
                    f"the vault is locked ({exc.diagnostic()}); run `sp vault unlock` to check "
                    "the credentials too",
                    served,
                    served_text,
                )
    except Error:
        return GatewayView(
            False,
            None,
            "no gateway is running, so the credentials were not checked against the vault",
            None,
            None,
        )
    return GatewayView(True, {e.name: e.kind for e in entries}, "", served, served_text)
