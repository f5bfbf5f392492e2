"""agent.sock: hello, catalog, propose and cancel from the context server.

Each proposal runs the ladder in a worker thread while the connection keeps reading, so a
``cancel`` for a waiting proposal is seen at once; the proposal then ends ``denied`` and nothing
runs after the cancel. Closing the connection cancels whatever it still has pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from concurrent.futures import Executor
from typing import Any

from safeport.action_gateway.approvals.cards import ApprovalCard
from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.handlers.oauth_requests import answer_oauth
from safeport.action_gateway.ladder.outcome import ProposalOutcome, Refused
from safeport.action_gateway.sockets.connection import (
    Connection,
    Handler,
    parse_request,
)
from safeport.action_gateway.sockets.worker_call import in_worker
from safeport.errors import Error
from safeport.shared.exception_summary import summarize
from safeport.shared.schemas.replies import ok_reply, readable_id
from safeport.shared.schemas.wire import (
    AGENT_REQUEST,
    OAUTH_REQUESTS,
    PROTOCOL_VERSION,
    Cancel,
    CancelResult,
    CatalogRequest,
    Hello,
    HelloResult,
    HttpResult,
    PendingBody,
    PendingNotice,
    ProposeHttp,
    ProposeSql,
    ProposeSsh,
    SqlResult,
    SshExecResult,
)
from safeport.shared.wire import MAX_REPLY_BYTES

log = logging.getLogger("safeport.gateway")


class AgentHandler(Handler):
    def __init__(self, core: GatewayCore, pool: Executor) -> None:
        self._core = core
        self._pool = pool  # the agents' workers: a proposal may hold one for minutes
        # Per connection: request id → the event that cancels it.
        self._inflight: dict[int, dict[str, threading.Event]] = {}
        self._connections: dict[int, Connection] = {}
        self._hears_pending: set[int] = set()  # connections whose hello asked for notices
        self._loop: asyncio.AbstractEventLoop | None = None
        core.on_card_opened(self._tell_requester)

    async def opened(self, conn: Connection) -> None:
        self._loop = asyncio.get_running_loop()
        self._inflight[id(conn)] = {}
        self._core.agent_connected(id(conn), conn.peer)  # for the approver tree check
        self._connections[id(conn)] = conn

    async def closed(self, conn: Connection) -> None:
        self._core.agent_left(id(conn))
        self._connections.pop(id(conn), None)
        self._hears_pending.discard(id(conn))
        for request_id, event in self._inflight.pop(id(conn), {}).items():
            event.set()
            self._core.withdraw(conn.peer, request_id)

    async def message(self, conn: Connection, data: dict[str, Any]) -> None:
        request, problem = parse_request(AGENT_REQUEST, data)
        if request is None:
            conn.junk["schema"] += 1
            await conn.send_error(readable_id(data), "invalid", str(problem))
            return
        if isinstance(request, OAUTH_REQUESTS):  # a remote client's OAuth, relayed
            await answer_oauth(self._core.remote, self._pool, conn, request)
        elif isinstance(request, Hello):
            if PROTOCOL_VERSION not in request.versions:
                await conn.send_error(request.id, "invalid", "no common protocol version")
                return
            if "pending" in request.features:
                self._hears_pending.add(id(conn))
            await conn.send(
                ok_reply(request.id, HelloResult(version=PROTOCOL_VERSION, server="safeport"))
            )
        elif isinstance(request, CatalogRequest):
            await self._catalog(conn, request)
        elif isinstance(request, Cancel):
            event = self._inflight.get(id(conn), {}).get(request.target)
            if event is not None:
                event.set()
            withdrawn = self._core.withdraw(conn.peer, request.target)
            cancelled = CancelResult(cancelled=event is not None or withdrawn)
            await conn.send(ok_reply(request.id, cancelled))
        else:
            await self._propose(conn, request)

    async def _propose(self, conn: Connection, request: Proposal) -> None:
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
            try:
                outcome = await in_worker(
                    self._pool, lambda: self._core.propose(conn.peer, request, cancel)
                )
                _check_kind(request, outcome)
            except Exception as exc:  # the ladder journals what it can; never kill the connection
                log.error("pid %d %s: internal error %s", conn.peer.pid, _names(request),
                          summarize(exc))  # fmt: skip
                await conn.send_error(request.id, "internal", "the gateway failed on this request")
            else:
                await self._answer(conn, request, outcome)
            finally:
                inflight.pop(request.id, None)

        task = asyncio.create_task(run())
        conn.tasks.add(task)
        task.add_done_callback(conn.tasks.discard)

    async def _answer(self, conn: Connection, request: Proposal, outcome: ProposalOutcome) -> None:
        """The one place a proposal's outcome becomes its wire reply."""
        if isinstance(outcome, Refused):
            log.info("pid %d %s: %s (%s)", conn.peer.pid, _names(request), outcome.code,
                     outcome.category)  # fmt: skip
            await conn.send_error(request.id, outcome.code, outcome.reason)
            return
        log.info("pid %d %s: done", conn.peer.pid, _names(request))
        cap = self._core.reply_cap() or MAX_REPLY_BYTES
        await conn.send(ok_reply(request.id, outcome.result), limit=cap)

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
                with contextlib.suppress(RuntimeError):  # the loop is closing
                    loop.call_soon_threadsafe(conn.spawn_send, notice)
                return

    async def _catalog(self, conn: Connection, request: CatalogRequest) -> None:
        try:
            catalog = self._core.catalog()
        except Error as exc:
            await conn.send_error(request.id, exc.wire_code, exc.message)
            return
        await conn.send(ok_reply(request.id, catalog))


Proposal = ProposeSsh | ProposeHttp | ProposeSql


def _check_kind(request: Proposal, outcome: ProposalOutcome) -> None:
    """Raise unless a result is of the proposal's kind: rung 9 builds it as the wire model, and
    it is checked once more on its way out (a result of another kind is the gateway's failure,
    never sent)."""
    if isinstance(outcome, Refused):
        return
    if isinstance(request, ProposeSql):
        expected: type[SshExecResult | HttpResult | SqlResult] = SqlResult
    else:
        expected = SshExecResult if isinstance(request, ProposeSsh) else HttpResult
    if not isinstance(outcome.result, expected):
        raise TypeError("the result is not of the proposed action's kind")


def _names(request: Proposal) -> str:
    """Schema-checked identifiers only: argument values never reach the log."""
    if isinstance(request, ProposeSsh):
        return f"ssh_exec {request.host_id}/{request.command_id}"
    if isinstance(request, ProposeSql):
        return f"run_readonly_query {request.database}/{request.query}"
    return f"http_request {request.service_id}/{request.operation_id}"
