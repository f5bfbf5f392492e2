"""control.sock: what `sp` asks of the gateway (vault, policy, approvals, sessions, lifecycle).

Each request is parsed into its operation's model (:mod:`safeport.shared.schemas.control`),
handed to one operation, and its result or error rendered as the shared reply. The operations
call the core's use cases; the vault's are in :mod:`vault_ops`, the approvers' in
:mod:`approval_ops`, the gateway's and the policy's below.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.handlers import approval_ops, grant_ops, key_ops, vault_ops
from safeport.action_gateway.handlers.control_context import ControlContext
from safeport.action_gateway.handlers.passphrase_attempts import PassphraseAttempts
from safeport.action_gateway.sockets.connection import Connection, Handler, parse_request
from safeport.errors import Error
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.control import (
    CONTROL_REQUEST,
    AuditCheckpointRequest,
    GatewayReloadRequest,
    GatewayStopRequest,
    PolicyAcceptRequest,
    PolicyStatusRequest,
    SourcesCheckRequest,
    StatusRequest,
)
from safeport.shared.schemas.operations import ControlOp
from safeport.shared.schemas.replies import ok_reply, readable_id
from safeport.shared.schemas.results import (
    CheckpointResult,
    PolicyAcceptedResult,
    PolicySnapshot,
    PolicyState,
    SourcesCheckResult,
    StatusResult,
    StoppingResult,
)
from safeport.shared.schemas.wire import Envelope

log = logging.getLogger("safeport.gateway")
Req = TypeVar("Req", bound=Envelope)
Res = TypeVar("Res", bound=BaseModel)
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
            result = await OPERATIONS[request.op].handler(self._ctx, conn, request)
        except Error as exc:
            await conn.send_error(request.id, exc.wire_code, exc.diagnostic())
            return
        except ValidationError as exc:
            # What the core returned is not what the operation promises: the gateway's own
            # failure, answered as such rather than sent half-right or closing the connection.
            where = sorted({".".join(map(str, error["loc"])) for error in exc.errors()})
            log.error("%s: the result does not match its model at %s", request.op, where)
            await conn.send_error(request.id, "internal", "the gateway failed on this request")
            return
        await conn.send(ok_reply(request.id, result))


async def status(ctx: ControlContext, conn: Connection, request: StatusRequest) -> StatusResult:
    return ctx.core.status()


async def gateway_stop(
    ctx: ControlContext, conn: Connection, request: GatewayStopRequest
) -> StoppingResult:
    await ctx.for_everyone(conn, request.op, request.params.passphrase)
    ctx.request_stop()
    return StoppingResult(stopping=True)


async def gateway_reload(
    ctx: ControlContext, conn: Connection, request: GatewayReloadRequest
) -> PolicyState:
    uid = conn.peer.uid  # any admitted uid may reload: its records come from its budget
    return await ctx.in_thread(lambda: ctx.core.reload(uid))


async def policy_status(
    ctx: ControlContext, conn: Connection, request: PolicyStatusRequest
) -> PolicySnapshot:
    return ctx.core.policy_snapshot()


async def policy_accept(
    ctx: ControlContext, conn: Connection, request: PolicyAcceptRequest
) -> PolicyAcceptedResult:
    params = request.params
    await ctx.prove(conn, request.op, params.passphrase)
    # One acceptance at a time: the key check judges the new text against the policy served
    # now, so none may be served between that check and this acceptance.
    async with ctx.policy_accepting:
        await key_ops.check_policy(ctx, params)
        digest = await ctx.in_thread(lambda: ctx.core.accept_policy(params.digest, params.text))
    return PolicyAcceptedResult(policy=digest)


async def audit_checkpoint(
    ctx: ControlContext, conn: Connection, request: AuditCheckpointRequest
) -> CheckpointResult:
    # Signs only when a journal moved since the last signature: any admitted uid may ask, and
    # each signature is a syslog message and a file write, so asking again adds nothing.
    await ctx.in_thread(lambda: ctx.core.checkpoint(if_moved=True))
    return ctx.core.checkpoint_view()


@dataclass(frozen=True)
class Registered(Generic[Req, Res]):
    """One operation's models and the handler that takes its request and returns its result."""

    op: ControlOp[Req, Res]
    handler: Callable[[ControlContext, Connection, Req], Awaitable[Res]]


async def sources_check(
    ctx: ControlContext, conn: Connection, request: SourcesCheckRequest
) -> SourcesCheckResult:
    return await ctx.in_thread(ctx.core.check_sources)  # network: off the event loop


def register(
    op: ControlOp[Req, Res], handler: Callable[[ControlContext, Connection, Req], Awaitable[Res]]
) -> tuple[str, Registered[Any, Any]]:
    """One entry of :data:`OPERATIONS`; mypy checks that ``handler`` takes the operation's
    request and returns its result."""
    return op.name, Registered(op, handler)


# Every operation of the request union, by its ``op`` (a test checks the two name the same set).
OPERATIONS: dict[str, Registered[Any, Any]] = dict(
    [
        register(ops.STATUS, status),
        register(ops.GATEWAY_STOP, gateway_stop),
        register(ops.GATEWAY_RELOAD, gateway_reload),
        register(ops.VAULT_STATUS, vault_ops.vault_status),
        register(ops.VAULT_DESCRIBE, vault_ops.vault_describe),
        register(ops.VAULT_INIT, vault_ops.vault_init),
        register(ops.VAULT_UNLOCK, vault_ops.vault_unlock),
        register(ops.VAULT_LOCK, vault_ops.vault_lock),
        register(ops.VAULT_UNLOCK_KEYRING, vault_ops.vault_unlock_keyring),
        register(ops.VAULT_ENTRIES, vault_ops.vault_entries),
        register(ops.VAULT_ADD, vault_ops.vault_add),
        register(ops.VAULT_ROTATE, vault_ops.vault_rotate),
        register(ops.VAULT_REMOVE, vault_ops.vault_remove),
        register(ops.OAUTH_BEGIN, grant_ops.oauth_begin),
        register(ops.OAUTH_FINISH, grant_ops.oauth_finish),
        register(ops.OAUTH_DEVICE_WAIT, grant_ops.oauth_device_wait),
        register(ops.POLICY_STATUS, policy_status),
        register(ops.POLICY_ACCEPT, policy_accept),
        register(ops.APPROVER_REGISTER, approval_ops.approver_register),
        register(ops.APPROVER_KEYS, key_ops.approver_keys),
        register(ops.APPROVER_KEY_CHALLENGE, key_ops.approver_key_challenge),
        register(ops.APPROVER_ENROLL, key_ops.approver_enroll),
        register(ops.APPROVER_REMOVE, key_ops.approver_remove),
        register(ops.APPROVALS_LIST, approval_ops.approvals_list),
        register(ops.APPROVALS_DECIDE, approval_ops.approvals_decide),
        register(ops.APPROVALS_WATCH, approval_ops.approvals_watch),
        register(ops.SESSIONS_LIST, approval_ops.sessions_list),
        register(ops.SESSIONS_REVOKE, approval_ops.sessions_revoke),
        register(ops.CLIENTS_LIST, approval_ops.clients_list),
        register(ops.CLIENTS_REVOKE, approval_ops.clients_revoke),
        register(ops.AUDIT_CHECKPOINT, audit_checkpoint),
        register(ops.SOURCES_CHECK, sources_check),
    ]
)
