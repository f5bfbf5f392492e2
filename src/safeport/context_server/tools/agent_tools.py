"""The agent profile's tools: propose actions to the gateway; never hold or see a credential.

``list_actions`` shows what the accepted policy lets the agent propose; ``ssh_exec`` and
``http_request`` forward a proposal; and one typed tool per declared operation makes the same
proposal with the params as named, schema-described arguments. The typed tools follow the
gateway (:mod:`.gateway_watch`): a client started before it sees them appear. Nothing here
validates or decides: the gateway runs the whole decision ladder (and journals it), so every
refusal has one source. Schema details given to the model (patterns, lengths) are hints; the
gateway enforces them.

Each call also appends one record to the reads journal: which tool, which target, the argument
names with their sizes (not their values), and the gateway's verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from mcp_types import InputRequiredResult
from pydantic import BaseModel, Field

from safeport.context_server import sdk_seam
from safeport.context_server.gateway_link import GatewayLink, GatewayRefusal, GatewayUnavailable
from safeport.context_server.operations.reads_journal import REMOTE_CLIENT
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.tools.gateway_watch import GatewayWatch, parse_catalog
from safeport.context_server.tools.held_proposals import (
    CardSignal,
    HeldProposals,
    waits_by_input_required,
)
from safeport.context_server.tools.typed_tools import (
    ACTS,
    ASKS,
    READS,
    ActionInfo,
    ArgValue,
    TypedTools,
)
from safeport.errors import JournalUnavailable
from safeport.shared.exception_summary import summarize
from safeport.shared.gateway_socket import check_listener as check_listener_uid
from safeport.shared.gateway_socket import check_socket_folder
from safeport.shared.paths import locate
from safeport.shared.schemas.wire import HttpResult, PendingBody, SqlResult, SshExecResult

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 5.0
# The longest a call without a progress token is held for a human. Such a client cannot be kept
# waiting by progress, and the common ones give up after 60 s: the MCP Inspector CLI (fixed),
# the TypeScript SDK's default, Codex's default tool_timeout_sec. The card expires 10 s before,
# so the refusal reaches the client rather than the client cancelling the proposal.
PLAIN_CLIENT_WAIT_S = 50
LISTS = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)
Background = Callable[[], Coroutine[Any, Any, None]]
Args = dict[Annotated[str, Field(max_length=64)], ArgValue]
R = TypeVar("R")
# Proposals waiting for a human under 2026-07-28, for every server of this process.
HELD = HeldProposals()


class ActionCatalog(BaseModel):
    policy: str = Field(description="digest of the accepted policy these actions come from")
    actions: list[ActionInfo]


def register_agent_tools(server: MCPServer[Any], service: WorkspaceService) -> Background:
    """Add the proposal tools, and the typed ones the gateway's catalog describes now; the
    returned task keeps the typed tools in step with the gateway while the session runs."""
    paths = locate()

    def check_listener(sock: socket.socket) -> None:
        check_socket_folder(paths)
        check_listener_uid(sock, paths)

    link = GatewayLink(paths.agent_socket, check_listener=check_listener)
    forward = _Forwarder(link, service)
    sessions = sdk_seam.track_sessions(server)

    async def propose(
        info: ActionInfo, args: dict[str, ArgValue], ctx: Context
    ) -> SshExecResult | HttpResult | SqlResult | InputRequiredResult:
        if info.action == "ssh_exec":
            return await wait(ctx, lambda p: forward.ssh(info.target, info.operation, args, p))
        if info.action == "run_readonly_query":
            return await wait(ctx, lambda p: forward.sql(info.target, info.operation, args, p))
        return await wait(ctx, lambda p: forward.http(info.target, info.operation, args, p))

    typed = TypedTools(server, propose, sessions.tools_changed)
    watch = GatewayWatch(link, typed)
    _add_proposal_tools(server, forward, typed)
    _first_look(watch)
    return watch.run


def _add_proposal_tools(server: MCPServer[Any], forward: _Forwarder, typed: TypedTools) -> None:
    """The tools every agent session has, whatever the gateway's catalog: the list of actions
    and one generic proposal tool per kind of action (the typed tools come from the catalog)."""

    @server.tool(annotations=LISTS)
    async def list_actions() -> ActionCatalog:
        """List the actions you may propose (from the human-accepted gateway policy).

        Each has a target (host or service), an operation, its params with their constraints,
        its approval scope, and the typed tool that proposes it. Proposing never gives you a
        credential; a human may be asked."""
        return await forward.catalog(typed)

    @server.tool(annotations=ACTS, meta=ASKS)
    async def ssh_exec(
        host_id: str, command_id: str, ctx: Context, args: Args | None = None
    ) -> SshExecResult | InputRequiredResult:
        """Propose running one declared command on one declared SSH host.

        Only commands from list_actions exist; args fill the command's declared params. The
        gateway checks the policy, may ask a human, runs it, and returns exit status and output."""
        return await wait(ctx, lambda p: forward.ssh(host_id, command_id, args or {}, p))

    @server.tool(annotations=ACTS, meta=ASKS)
    async def http_request(
        service_id: str, operation_id: str, ctx: Context, args: Args | None = None
    ) -> HttpResult | InputRequiredResult:
        """Propose calling one declared operation of one declared HTTPS service.

        Only operations from list_actions exist; args fill its declared params. The gateway
        adds the credential, may ask a human, and returns the status and the declared fields."""
        return await wait(ctx, lambda p: forward.http(service_id, operation_id, args or {}, p))

    @server.tool(annotations=READS, meta=ASKS)
    async def run_readonly_query(
        database: str, query: str, ctx: Context, params: Args | None = None
    ) -> SqlResult | InputRequiredResult:
        """Propose running one declared read-only query on one declared PostgreSQL database.

        Only queries from list_actions exist; params fill its declared parameters (bound by the
        driver, never spliced). The gateway may ask a human, runs it in a read-only transaction,
        and returns the declared columns of the rows, within the query's caps."""
        return await wait(ctx, lambda p: forward.sql(database, query, params or {}, p))


async def wait(
    ctx: Context, run: Callable[[Progress | CardSignal], Awaitable[R]]
) -> R | InputRequiredResult:
    """Run a proposal the way this client waits for a human: ``input_required`` and a retry
    under 2026-07-28 (:mod:`.held_proposals`), progress notifications before it."""
    if not waits_by_input_required(ctx):
        return await run(Progress(ctx))
    if ctx.request_state is not None:
        resumed: R | InputRequiredResult = await HELD.resume(ctx, ctx.request_state)
        return resumed
    return await HELD.start(ctx, run)


class _Forwarder:
    def __init__(self, link: GatewayLink, service: WorkspaceService) -> None:
        self.link = link
        self.service = service

    async def catalog(self, typed: TypedTools) -> ActionCatalog:
        try:
            raw = await self._relay(
                "list_actions", {}, self.link.catalog(), on_refused=typed.waiting
            )
            catalog = parse_catalog(raw)
        except ToolError as error:
            raise ToolError(f"{error}. {typed.why_unserved()}") from None
        except GatewayRefusal as refusal:
            raise ToolError(f"{refusal.code}: {refusal.reason}") from None
        await typed.follow(catalog)  # a policy the watch has not seen yet: tools first
        actions = [typed.info(entry) for entry in catalog.actions]
        return ActionCatalog(policy=catalog.policy, actions=actions)

    async def ssh(
        self, host_id: str, command_id: str, args: Mapping[str, ArgValue], progress: Waiter
    ) -> SshExecResult:
        target = {"host_id": host_id, "command_id": command_id, "args": _shape(args)}
        call = self.link.propose_ssh(
            host_id,
            command_id,
            args,
            progress.card_opened,
            remote_token=_remote_token(),
            wait_s=progress.wait_s,
        )
        raw = await self._relay("ssh_exec", target, progress.around(call))
        return SshExecResult.model_validate(raw)

    async def http(
        self, service_id: str, operation_id: str, args: Mapping[str, ArgValue], progress: Waiter
    ) -> HttpResult:
        target = {"service_id": service_id, "operation_id": operation_id, "args": _shape(args)}
        call = self.link.propose_http(
            service_id,
            operation_id,
            args,
            progress.card_opened,
            remote_token=_remote_token(),
            wait_s=progress.wait_s,
        )
        return HttpResult.model_validate(
            await self._relay("http_request", target, progress.around(call))
        )

    async def sql(
        self, database: str, query: str, params: Mapping[str, ArgValue], progress: Waiter
    ) -> SqlResult:
        target = {"database": database, "query": query, "params": _shape(params)}
        call = self.link.propose_sql(
            database,
            query,
            params,
            progress.card_opened,
            remote_token=_remote_token(),
            wait_s=progress.wait_s,
        )
        raw = await self._relay("run_readonly_query", target, progress.around(call))
        return SqlResult.model_validate(raw)

    async def _relay(
        self,
        tool: str,
        journal_args: Mapping[str, Any],
        call: Awaitable[dict[str, Any]],
        on_refused: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        try:
            result = await call
        except GatewayRefusal as refusal:
            self._record(tool, journal_args, 0, refusal.code)
            if on_refused is not None:
                on_refused(refusal.code)
            raise ToolError(f"{refusal.code}: {refusal.reason}") from None
        except GatewayUnavailable as exc:
            self._record(tool, journal_args, 0, "unavailable")
            if on_refused is not None:
                on_refused("unavailable")
            raise ToolError(f"unavailable: {exc.diagnostic()}") from None
        self._record(tool, journal_args, len(repr(result)), None)
        return result

    def _record(self, tool: str, args: Mapping[str, Any], served: int, refused: str | None) -> None:
        try:
            self.service.journal.record(
                tool,
                args,
                is_private=lambda _path: False,  # targets and arg names are policy names, not paths
                served_bytes=served,
                refused=refused,
            )
        except JournalUnavailable:
            raise ToolError("unavailable: the reads journal cannot be written") from None


class Progress:
    """MCP progress while a proposal waits, so a client that resets its request timeout on
    progress keeps waiting for a human who takes longer than that timeout.

    A notification goes out at once when the gateway names the card, then at least every
    ``PROGRESS_EVERY_S`` until the reply; each says which card and how the human answers it.
    Without a progress token from the client, reporting is a no-op (the SDK drops it).
    """

    def __init__(self, ctx: Context | None) -> None:
        self._ctx = ctx
        self._count = 0
        self._text = "waiting for the action gateway"
        # Without a token no progress reaches the client: wait no longer than it does.
        self.wait_s = None if asked_for_progress(ctx) else PLAIN_CLIENT_WAIT_S

    async def card_opened(self, pending: PendingBody) -> None:
        self._text = (
            f"waiting for a human to approve card {pending.card} "
            f"(up to {pending.expires_in_s} s); they answer with `{pending.approve_with}`"
        )
        await self._report()

    async def around(self, call: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        beat = asyncio.create_task(self._heartbeat())
        try:
            return await call
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(PROGRESS_EVERY_S)
            await self._report()

    async def _report(self) -> None:
        if self._ctx is None:
            return
        self._count += 1
        try:
            await self._ctx.report_progress(self._count, None, self._text)
        except Exception as exc:  # a client that went away must not fail the proposal itself
            log.debug("progress not sent: %s", summarize(exc))


Waiter = Progress | CardSignal


def asked_for_progress(ctx: Context | None) -> bool:
    """Whether this call's ``_meta`` carried a progress token (the client then hears the
    progress notifications, and one that resets its timeout on them keeps waiting)."""
    if ctx is None:
        return False
    meta = ctx.request_context.meta
    return meta is not None and meta.get("progressToken", meta.get("progress_token")) is not None


def _remote_token() -> str | None:
    """The access token of the remote client this call serves (HTTP), None for a local one."""
    client = REMOTE_CLIENT.get()
    return client.access_token if client is not None and client.access_token else None


def _first_look(watch: GatewayWatch) -> None:
    """Ask the gateway once before serving, so a client that lists its tools at once sees the
    typed ones when a gateway is already serving a policy; later changes come from the watch."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(watch.poll())
    # Assembled inside a running loop (an embedding host): the watch's first poll adds them.


def _shape(args: Mapping[str, ArgValue]) -> dict[str, str]:
    """Argument names with their type and size: what the journal may keep of agent input."""
    return {
        str(name)[:64]: f"<{type(value).__name__}:{len(str(value))}>"
        for name, value in list(args.items())[:32]
    }
