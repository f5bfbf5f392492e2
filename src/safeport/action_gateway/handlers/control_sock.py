"""control.sock: what `sp` asks of the gateway (vault, policy, approvals, sessions, lifecycle).

Each request is parsed into its operation's model (:mod:`safeport.shared.schemas.control`),
handed to one operation, and its result or error rendered as the shared reply. The operations
call the core's use cases; the vault's are in :mod:`vault_ops`, the approvers' in
:mod:`approval_ops`, the gateway's and the policy's below.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any

from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.handlers import approval_ops, vault_ops
from safeport.action_gateway.handlers.control_context import ControlContext
from safeport.action_gateway.handlers.passphrase_attempts import PassphraseAttempts
from safeport.action_gateway.sockets.connection import Connection, Handler, code_for, parse_request
from safeport.errors import Error
from safeport.shared.schemas.control import (
    CONTROL_REQUEST,
    AuditCheckpointRequest,
    GatewayReloadRequest,
    GatewayStopRequest,
    PolicyAcceptRequest,
    PolicyStatusRequest,
    StatusRequest,
)
from safeport.shared.schemas.replies import ok_reply, readable_id

Op = Callable[[ControlContext, Connection, Any], Awaitable[dict[str, Any]]]
# A well-formed name the gateway does not serve is told apart from schema junk.
_OP_NAME = re.compile(r"[a-z][a-z0-9_.]{0,63}")


class ControlHandler(Handler):
    def __init__(
        self,
        core: GatewayCore,
        pool: Executor,
        request_stop: Callable[[], None],
        attempts: PassphraseAttempts | None = None,
    ) -> None:
        self._ctx = ControlContext(core, pool, request_stop, attempts)

    async def closed(self, conn: Connection) -> None:
        self._ctx.forget(conn)

    async def message(self, conn: Connection, data: dict[str, Any]) -> None:
        request, problem = parse_request(CONTROL_REQUEST, data)
        if request is None:
            conn.junk["schema"] += 1
            op = data.get("op")
            if isinstance(op, str) and op not in OPERATIONS and _OP_NAME.fullmatch(op):
                problem = "unknown control operation"
            await conn.send_error(readable_id(data), "invalid", str(problem))
            return
        try:
            result = await OPERATIONS[request.op](self._ctx, conn, request)
        except Error as exc:
            await conn.send_error(request.id, code_for(exc), exc.diagnostic())
            return
        await conn.send(ok_reply(request.id, result))


async def status(ctx: ControlContext, conn: Connection, request: StatusRequest) -> dict[str, Any]:
    return ctx.core.status()


async def gateway_stop(
    ctx: ControlContext, conn: Connection, request: GatewayStopRequest
) -> dict[str, Any]:
    await ctx.for_everyone(conn, request.op, request.params.passphrase)
    ctx.request_stop()
    return {"stopping": True}


async def gateway_reload(
    ctx: ControlContext, conn: Connection, request: GatewayReloadRequest
) -> dict[str, Any]:
    uid = conn.peer.uid  # any admitted uid may reload: its records come from its budget
    return dict(await ctx.in_thread(lambda: ctx.core.reload(uid)))


async def policy_status(
    ctx: ControlContext, conn: Connection, request: PolicyStatusRequest
) -> dict[str, Any]:
    return ctx.core.policy_snapshot()


async def policy_accept(
    ctx: ControlContext, conn: Connection, request: PolicyAcceptRequest
) -> dict[str, Any]:
    params = request.params
    await ctx.prove(conn, request.op, params.passphrase)
    digest = await ctx.in_thread(lambda: ctx.core.accept_policy(params.digest, params.text))
    return {"policy": digest}


async def audit_checkpoint(
    ctx: ControlContext, conn: Connection, request: AuditCheckpointRequest
) -> dict[str, Any]:
    # Signs only when a journal moved since the last signature: any admitted uid may ask, and
    # each signature is a syslog message and a file write, so asking again adds nothing.
    await ctx.in_thread(lambda: ctx.core.checkpoint(if_moved=True))
    return ctx.core.checkpoint_view()


# Every operation of the request union, by its ``op`` (a test checks the two name the same set).
OPERATIONS: dict[str, Op] = {
    "status": status,
    "gateway.stop": gateway_stop,
    "gateway.reload": gateway_reload,
    "vault.status": vault_ops.vault_status,
    "vault.describe": vault_ops.vault_describe,
    "vault.init": vault_ops.vault_init,
    "vault.unlock": vault_ops.vault_unlock,
    "vault.lock": vault_ops.vault_lock,
    "vault.unlock_keyring": vault_ops.vault_unlock_keyring,
    "vault.entries": vault_ops.vault_entries,
    "vault.add": vault_ops.vault_add,
    "vault.rotate": vault_ops.vault_rotate,
    "vault.remove": vault_ops.vault_remove,
    "policy.status": policy_status,
    "policy.accept": policy_accept,
    "approver.register": approval_ops.approver_register,
    "approvals.list": approval_ops.approvals_list,
    "approvals.decide": approval_ops.approvals_decide,
    "approvals.watch": approval_ops.approvals_watch,
    "sessions.list": approval_ops.sessions_list,
    "sessions.revoke": approval_ops.sessions_revoke,
    "audit.checkpoint": audit_checkpoint,
}
