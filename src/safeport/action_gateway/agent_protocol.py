"""agent.sock: hello, catalog, propose and cancel from the context server (DESIGN.md §5).

Each proposal runs the ladder in a worker thread while the connection keeps reading, so a
``cancel`` for a waiting proposal is seen at once; the proposal then ends ``denied`` and nothing
runs after the cancel. Closing the connection cancels whatever it still has pending.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import TypeAdapter

from safeport.action_gateway.approvals import Approvals
from safeport.action_gateway.identity import PeerIdentity
from safeport.action_gateway.ladder import Ladder, Refusal
from safeport.action_gateway.policy_store import PolicyStore
from safeport.action_gateway.server import Connection, Handler, ok_reply, readable_id, schema_error
from safeport.action_gateway.vault_state import VaultState
from safeport.shared.schemas.config import GatewayPolicy, ParamSpec
from safeport.shared.schemas.wire import (
    PROTOCOL_VERSION,
    AgentRequest,
    Cancel,
    CatalogRequest,
    ErrorCode,
    Hello,
    ProposeHttp,
    ProposeSsh,
)

_AGENT = TypeAdapter(AgentRequest)


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

    async def opened(self, conn: Connection) -> None:
        self._inflight[id(conn)] = {}
        self._peers[id(conn)] = conn.peer

    async def closed(self, conn: Connection) -> None:
        self._peers.pop(id(conn), None)
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
                await conn.send_error(request.id, refusal.code, refusal.message)
            except Exception:  # the ladder journals what it can; never kill the connection
                await conn.send_error(request.id, "internal", "the gateway failed on this request")
            else:
                await conn.send(ok_reply(request.id, result))
            finally:
                inflight.pop(request.id, None)

        task = asyncio.create_task(run())
        conn.tasks.add(task)
        task.add_done_callback(conn.tasks.discard)

    async def _catalog(self, conn: Connection, request: CatalogRequest) -> None:
        served = self._policies.served
        if served is None:
            code: ErrorCode = "locked" if not self._vault.unlocked else "denied"
            await conn.send_error(request.id, code, "no accepted policy is being served")
            return
        await conn.send(ok_reply(request.id, catalog(served.policy, served.digest)))


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
