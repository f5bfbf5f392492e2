"""agent.sock: hello, catalog, propose and cancel from the context server (DESIGN.md §5).

Each proposal runs the ladder in a worker thread while the connection keeps reading, so a
``cancel`` for a waiting proposal is seen at once; the proposal then ends ``denied`` and nothing
runs after the cancel. Closing the connection cancels whatever it still has pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import TypeAdapter

from safeport.action_gateway.approvals import Approvals
from safeport.action_gateway.cards import ApprovalCard
from safeport.action_gateway.identity import PeerIdentity
from safeport.action_gateway.ladder import Ladder
from safeport.action_gateway.policy_store import PolicyStore
from safeport.action_gateway.refusal import Refusal
from safeport.action_gateway.server import (
    MAX_REPLY_BYTES,
    Connection,
    Handler,
    ok_reply,
    readable_id,
    schema_error,
)
from safeport.action_gateway.vault_state import VaultState
from safeport.shared.schemas.config import GatewayPolicy, ParamSpec
from safeport.shared.schemas.wire import (
    PROTOCOL_VERSION,
    AgentRequest,
    Cancel,
    CatalogRequest,
    ErrorCode,
    Hello,
    PendingBody,
    PendingNotice,
    ProposeHttp,
    ProposeSsh,
)

_AGENT = TypeAdapter(AgentRequest)
log = logging.getLogger("safeport.gateway")


class AgentHandler(Handler):
    def __init__(
        self,
        ladder: Ladder,
        approvals: Approvals,
        policies: PolicyStore,
        vault: VaultState,
        pool: ThreadPoolExecutor,
        peers: dict[int, PeerIdentity],
    ) -> None:
        self._peers = peers  # connected agents, for the approver tree check
        self._ladder = ladder
        self._approvals = approvals
        self._policies = policies
        self._vault = vault
        self._pool = pool
        # Per connection: request id → the event that cancels it.
        self._inflight: dict[int, dict[str, threading.Event]] = {}
        self._connections: dict[int, Connection] = {}
        self._hears_pending: set[int] = set()  # connections whose hello asked for notices
        self._loop: asyncio.AbstractEventLoop | None = None
        approvals.on_card_opened(self._tell_requester)

    async def opened(self, conn: Connection) -> None:
        self._loop = asyncio.get_running_loop()
        self._inflight[id(conn)] = {}
        self._peers[id(conn)] = conn.peer
        self._connections[id(conn)] = conn

    async def closed(self, conn: Connection) -> None:
        self._peers.pop(id(conn), None)
        self._connections.pop(id(conn), None)
        self._hears_pending.discard(id(conn))
        for request_id, event in self._inflight.pop(id(conn), {}).items():
            event.set()
            self._approvals.withdraw(conn.peer, request_id)

    async def message(self, conn: Connection, data: dict[str, Any]) -> None:
        request, problem = schema_error(_AGENT, data)
        if problem is not None:
            conn.junk["schema"] += 1
            await conn.send_error(readable_id(data), "invalid", problem)
            return
        if isinstance(request, Hello):
            if PROTOCOL_VERSION not in request.versions:
                await conn.send_error(request.id, "invalid", "no common protocol version")
                return
            if "pending" in request.features:
                self._hears_pending.add(id(conn))
            await conn.send(
                ok_reply(request.id, {"version": PROTOCOL_VERSION, "server": "safeport"})
            )
        elif isinstance(request, CatalogRequest):
            await self._catalog(conn, request)
        elif isinstance(request, Cancel):
            event = self._inflight.get(id(conn), {}).get(request.target)
            if event is not None:
                event.set()
            withdrawn = self._approvals.withdraw(conn.peer, request.target)
            await conn.send(ok_reply(request.id, {"cancelled": event is not None or withdrawn}))
        else:
            assert isinstance(request, ProposeSsh | ProposeHttp)
            await self._propose(conn, request)

    async def _propose(self, conn: Connection, request: ProposeSsh | ProposeHttp) -> None:
        inflight = self._inflight.setdefault(id(conn), {})
        if request.id in inflight:
            await conn.send_error(request.id, "invalid", "a request with this id is in progress")
            return
        if len(inflight) >= conn.limits.max_inflight_per_connection:
            await conn.send_error(request.id, "denied", "too many requests in progress")
            return
        cancel = threading.Event()
        inflight[request.id] = cancel

        async def run() -> None:
            loop = asyncio.get_running_loop()
            try:
                result = await loop.run_in_executor(
                    self._pool, self._ladder.propose, conn.peer, request, cancel
                )
            except Refusal as refusal:
                log.info(
                    "pid %d %s: %s (%s)",
                    conn.peer.pid,
                    _names(request),
                    refusal.code,
                    refusal.category,
                )
                await conn.send_error(request.id, refusal.code, refusal.message)
            except Exception as exc:  # the ladder journals what it can; never kill the connection
                log.error("pid %d %s: internal error %s", conn.peer.pid, _names(request),
                          type(exc).__name__)  # fmt: skip
                await conn.send_error(request.id, "internal", "the gateway failed on this request")
            else:
                log.info("pid %d %s: done", conn.peer.pid, _names(request))
                served = self._policies.served
                cap = reply_cap(served.policy) if served is not None else MAX_REPLY_BYTES
                await conn.send(ok_reply(request.id, result), limit=cap)
            finally:
                inflight.pop(request.id, None)

        task = asyncio.create_task(run())
        conn.tasks.add(task)
        task.add_done_callback(conn.tasks.discard)

    def _tell_requester(self, card: ApprovalCard) -> None:
        """A card opened (in a ladder worker): tell the connection whose proposal it is."""
        loop = self._loop
        if loop is None:
            return
        request_id = card.request.request_id
        for key, conn in list(self._connections.items()):
            if key not in self._hears_pending or conn.peer is not card.requester:
                continue
            if request_id in self._inflight.get(key, {}):
                notice = PendingNotice(
                    id=request_id,
                    pending=PendingBody(
                        card=card.id,
                        expires_in_s=max(0, round(card.expires_at - card.created_at)),
                        approve_with="sp approvals watch",
                    ),
                )
                message = notice.model_dump()
                with contextlib.suppress(RuntimeError):  # the loop is closing
                    loop.call_soon_threadsafe(_spawn_send, conn, message)
                return

    async def _catalog(self, conn: Connection, request: CatalogRequest) -> None:
        served = self._policies.served
        if served is None:
            code: ErrorCode = "locked" if not self._vault.unlocked else "denied"
            await conn.send_error(request.id, code, "no accepted policy is being served")
            return
        await conn.send(ok_reply(request.id, catalog(served.policy, served.digest)))


def _spawn_send(conn: Connection, message: dict[str, Any]) -> None:
    task = asyncio.get_running_loop().create_task(conn.send(message))
    conn.tasks.add(task)
    task.add_done_callback(conn.tasks.discard)


def _names(request: ProposeSsh | ProposeHttp) -> str:
    """Schema-checked identifiers only: argument values never reach the log."""
    if isinstance(request, ProposeSsh):
        return f"ssh_exec {request.host_id}/{request.command_id}"
    return f"http_request {request.service_id}/{request.operation_id}"


def reply_cap(policy: GatewayPolicy) -> int:
    """The largest reply the policy's output limits allow (DESIGN.md §5), JSON escaping included.

    Results are already cut to those limits on rung 9; this is the backstop on the wire.
    """
    # A byte of output can become up to 6 characters of JSON (\u00XX); stdout + stderr.
    outputs = [
        2 * command.max_output_bytes
        for host in policy.ssh.hosts.values()
        for command in host.commands.values()
    ]
    outputs += [service.max_response_bytes for service in policy.http.services.values()]
    return min(MAX_REPLY_BYTES, 6 * max(outputs, default=0) + 64 * 1024)


def catalog(policy: GatewayPolicy, digest: str) -> dict[str, Any]:
    """Names, descriptions, param schemas and approval scope; never addresses or secrets."""
    actions: list[dict[str, Any]] = []
    for host_id, host in sorted(policy.ssh.hosts.items()):
        scope = policy.credentials[host.credential].approval
        for command_id, command in sorted(host.commands.items()):
            actions.append(
                {
                    "action": "ssh_exec",
                    "host_id": host_id,
                    "command_id": command_id,
                    "description": command.description,
                    "read_only": command.read_only,
                    "approval": scope,
                    "params": {name: param_schema(spec) for name, spec in command.params.items()},
                }
            )
    for service_id, service in sorted(policy.http.services.items()):
        scope = policy.credentials[service.credential].approval
        for operation_id, operation in sorted(service.operations.items()):
            actions.append(
                {
                    "action": "http_request",
                    "service_id": service_id,
                    "operation_id": operation_id,
                    "method": operation.method,
                    "description": operation.description,
                    "read_only": operation.read_only,
                    "approval": scope,
                    "params": {name: param_schema(spec) for name, spec in operation.params.items()},
                }
            )
    return {"policy": digest, "actions": actions}


def param_schema(spec: ParamSpec) -> dict[str, Any]:
    """A JSON Schema fragment for one param."""
    if spec.type == "int":
        schema: dict[str, Any] = {"type": "integer"}
        if spec.min is not None:
            schema["minimum"] = spec.min
        if spec.max is not None:
            schema["maximum"] = spec.max
        return schema
    schema = {"type": "string", "maxLength": spec.max_length}
    if spec.enum is not None:
        schema["enum"] = list(spec.enum)
    if spec.pattern is not None:
        schema["pattern"] = spec.pattern
    return schema
