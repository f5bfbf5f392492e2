"""control.sock's vault operations: init, unlock, lock, and the credentials' entries.

Only operations that prove the passphrase count as human activity for auto-lock, so an agent
polling `vault.status` cannot keep the vault open.
"""

from __future__ import annotations

import base64
import binascii

from safeport.action_gateway.handlers.control_context import ControlContext
from safeport.action_gateway.handlers.passphrase_proof import secret_of
from safeport.action_gateway.sockets.connection import Connection
from safeport.errors import Error
from safeport.shared.schemas.control import (
    EntryValue,
    SecretField,
    VaultAddRequest,
    VaultDescribeRequest,
    VaultEntriesRequest,
    VaultInitRequest,
    VaultLockRequest,
    VaultRemoveRequest,
    VaultRotateRequest,
    VaultStatusRequest,
    VaultUnlockKeyringRequest,
    VaultUnlockRequest,
)
from safeport.shared.schemas.results import VaultState
from safeport.shared.schemas.results_vault import (
    EntryAddedResult,
    EntryRemovedResult,
    EntryRotatedResult,
    VaultCreatedResult,
    VaultDescribeResult,
    VaultEntriesResult,
    VaultKeyringUnlockedResult,
    VaultLockedResult,
    VaultStateResult,
    VaultUnlockedResult,
)
from safeport.vault.secrets import SecretBytes


async def vault_status(
    ctx: ControlContext, conn: Connection, request: VaultStatusRequest
) -> VaultStateResult:
    return VaultStateResult(vault=_state(ctx))


async def vault_describe(
    ctx: ControlContext, conn: Connection, request: VaultDescribeRequest
) -> VaultDescribeResult:
    return await ctx.in_thread(ctx.core.describe_vault)


async def vault_init(
    ctx: ControlContext, conn: Connection, request: VaultInitRequest
) -> VaultCreatedResult:
    """Create the vault: the first human to set a passphrase owns it, so the request is
    refused from an agent's process tree, like every other passphrase-carrying one."""
    ctx.core.approvals.check_approver(conn.peer)
    secret = secret_of(request.params.passphrase)
    try:
        keys = await ctx.in_thread(lambda: ctx.core.create_vault(secret))
    finally:
        secret.wipe()
    return VaultCreatedResult(
        audit_x25519=base64.b64encode(keys.audit_x25519).decode("ascii"),
        checkpoint_ed25519=base64.b64encode(keys.checkpoint_ed25519).decode("ascii"),
    )


async def vault_unlock(
    ctx: ControlContext, conn: Connection, request: VaultUnlockRequest
) -> VaultUnlockedResult:
    await ctx.prove(conn, request.op, request.params.passphrase)
    return VaultUnlockedResult(
        vault="unlocked", policy=ctx.core.policy_status(), public_file=ctx.core.public_file_view()
    )


async def vault_unlock_keyring(
    ctx: ControlContext, conn: Connection, request: VaultUnlockKeyringRequest
) -> VaultKeyringUnlockedResult:
    by = {"op": request.op, "peer": conn.peer.as_record()}
    changed = await ctx.in_thread(lambda: ctx.core.unlock_with_keyring(by))
    return VaultKeyringUnlockedResult(
        vault="unlocked", changed=bool(changed), public_file=ctx.core.public_file_view()
    )


async def vault_lock(
    ctx: ControlContext, conn: Connection, request: VaultLockRequest
) -> VaultLockedResult:
    await ctx.for_everyone(conn, request.op, request.params.passphrase)
    locked = await ctx.in_thread(lambda: ctx.core.lock("sp vault lock"))
    return VaultLockedResult(vault="locked", changed=bool(locked))


async def vault_entries(
    ctx: ControlContext, conn: Connection, request: VaultEntriesRequest
) -> VaultEntriesResult:
    entries = [entry.as_json() for entry in ctx.core.entries()]
    return VaultEntriesResult.model_validate({"entries": entries})


async def vault_add(
    ctx: ControlContext, conn: Connection, request: VaultAddRequest
) -> EntryAddedResult:
    params = request.params
    value = credential_value(params.value)
    await ctx.prove(conn, request.op, params.passphrase)
    await ctx.in_thread(lambda: ctx.core.add_credential(params.name, params.kind, value))
    return EntryAddedResult(added=params.name)


async def vault_rotate(
    ctx: ControlContext, conn: Connection, request: VaultRotateRequest
) -> EntryRotatedResult:
    params = request.params
    value = credential_value(params.value)
    await ctx.prove(conn, request.op, params.passphrase)
    await ctx.in_thread(lambda: ctx.core.rotate_credential(params.name, value))
    return EntryRotatedResult(rotated=params.name)


async def vault_remove(
    ctx: ControlContext, conn: Connection, request: VaultRemoveRequest
) -> EntryRemovedResult:
    params = request.params
    await ctx.prove(conn, request.op, params.passphrase)
    # An OAuth grant is revoked at its provider first (RFC 7009); a failure is reported and
    # the entry removed all the same.
    problem = await ctx.in_thread(lambda: ctx.core.grants.revoke(params.name))
    await ctx.in_thread(lambda: ctx.core.remove_credential(params.name))
    return EntryRemovedResult(removed=params.name, revoke_problem=problem)


def credential_value(raw: EntryValue) -> dict[str, SecretBytes | str]:
    """A credential value as sent by `sp vault add/rotate`: secret fields base64, text plain."""
    value: dict[str, SecretBytes | str] = {}
    for name, item in raw.items():
        if isinstance(item, SecretField):
            try:
                decoded = base64.b64decode(item.secret_b64.get_secret_value(), validate=True)
            except (ValueError, binascii.Error):
                raise Error("the credential value is malformed") from None
            value[name] = SecretBytes(decoded)
        else:
            value[name] = item.text
    return value


def _state(ctx: ControlContext) -> VaultState:
    return "unlocked" if ctx.core.vault_unlocked else "locked"
