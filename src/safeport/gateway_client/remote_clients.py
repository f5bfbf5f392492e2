"""`sp context clients`: the remote MCP clients the gateway knows, and revoking one."""

from __future__ import annotations

from collections.abc import Callable

from safeport.gateway_client.control_socket import GatewayClient, call_for_everyone
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.results import RemoteClientView
from safeport.vault.secrets import SecretBytes


def list_clients(paths: SafeportPaths) -> list[RemoteClientView]:
    with GatewayClient(paths) as client:
        return list(client.call(ops.CLIENTS_LIST).clients)


def revoke_client(
    paths: SafeportPaths, client_id: str, passphrase: Callable[[], SecretBytes]
) -> str:
    """Revoke ``client_id``: its tokens fail the gateway's check from its next request on."""
    with GatewayClient(paths) as client:
        revoked = call_for_everyone(client, ops.CLIENTS_REVOKE, passphrase, id=client_id)
    return revoked.revoked
