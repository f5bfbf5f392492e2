"""The agent profile's tools: propose actions to the gateway; never hold or see a credential.

``list_actions`` shows what the accepted policy lets the agent propose; ``ssh_exec`` and
``http_request`` forward a proposal; and, when the gateway answers at start-up, one typed tool
per declared operation makes the same proposal with the params as named, schema-described
arguments. Nothing here validates or decides: the gateway runs the whole decision ladder (and
journals it), so every refusal has one source. Schema details given to the model (patterns,
lengths) are hints; the gateway enforces them.

Each call also appends one record to the reads journal: which tool, which target, the argument
names with their sizes (not their values), and the gateway's verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from safeport.context_server.gateway_link import GatewayLink, GatewayRefusal, GatewayUnavailable
from safeport.context_server.operations.service import WorkspaceService
from safeport.errors import JournalUnavailable
from safeport.shared.exception_summary import summarize
from safeport.shared.gateway_socket import check_listener as check_listener_uid
from safeport.shared.gateway_socket import check_socket_folder
from safeport.shared.paths import locate
from safeport.shared.schemas.catalog import Catalog, CatalogEntry, HttpCatalogEntry
from safeport.shared.schemas.wire import HttpResult, PendingBody, SshExecResult

log = logging.getLogger(__name__)

CATALOG_TIMEOUT_S = 3.0
PROGRESS_EVERY_S = 5.0
ACTS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)
LISTS = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)
ArgValue = str | int
Args = dict[Annotated[str, Field(max_length=64)], ArgValue]


class ActionInfo(BaseModel):
    action: Literal["ssh_exec", "http_request"]
    target: str = Field(description="host_id for ssh_exec, service_id for http_request")
    operation: str = Field(description="command_id for ssh_exec, operation_id for http_request")
    method: str | None = None
    description: str
    read_only: bool
    approval: str = Field(description="session: one approval per session; per-call: every call")
    params: dict[str, dict[str, Any]]
    tool: str | None = Field(default=None, description="the typed tool for this action, if any")


class ActionCatalog(BaseModel):
    policy: str = Field(description="digest of the accepted policy these actions come from")
    actions: list[ActionInfo]


def register_agent_tools(server: MCPServer[Any], service: WorkspaceService) -> None:
    """Add the proposal tools; typed ones only if the gateway serves a catalog right now."""
    paths = locate()

    def check_listener(sock: socket.socket) -> None:
        check_socket_folder(paths)
        check_listener_uid(sock, paths)

    link = GatewayLink(paths.agent_socket, check_listener=check_listener)
    forward = _Forwarder(link, service)

    @server.tool(annotations=LISTS)
    async def list_actions() -> ActionCatalog:
        """List the actions you may propose (from the human-accepted gateway policy).

        Each has a target (host or service), an operation, its params with their constraints,
        and its approval scope. Proposing never gives you a credential; a human may be asked."""
        return await forward.catalog(typed_names)

    @server.tool(annotations=ACTS)
    async def ssh_exec(
        host_id: str, command_id: str, ctx: Context, args: Args | None = None
    ) -> SshExecResult:
        """Propose running one declared command on one declared SSH host.

        Only commands from list_actions exist; args fill the command's declared params. The
        gateway checks the policy, may ask a human, runs it, and returns exit status and output."""
        return await forward.ssh(host_id, command_id, args or {}, Progress(ctx))

    @server.tool(annotations=ACTS)
    async def http_request(
        service_id: str, operation_id: str, ctx: Context, args: Args | None = None
    ) -> HttpResult:
        """Propose calling one declared operation of one declared HTTPS service.

        Only operations from list_actions exist; args fill its declared params. The gateway
        adds the credential, may ask a human, and returns the status and the declared fields."""
        return await forward.http(service_id, operation_id, args or {}, Progress(ctx))

    typed_names = _register_typed_tools(server, forward, _initial_catalog(link))


class _Forwarder:
    def __init__(self, link: GatewayLink, service: WorkspaceService) -> None:
        self.link = link
        self.service = service

    async def catalog(self, typed: Mapping[tuple[str, str, str], str]) -> ActionCatalog:
        raw = await self._relay("list_actions", {}, self.link.catalog())
        try:
            catalog = parse_catalog(raw)
        except GatewayRefusal as refusal:
            raise ToolError(f"{refusal.code}: {refusal.reason}") from None
        actions = [_action_info(entry, typed) for entry in catalog.actions]
        return ActionCatalog(policy=catalog.policy, actions=actions)

    async def ssh(
        self, host_id: str, command_id: str, args: Mapping[str, ArgValue], progress: Progress
    ) -> SshExecResult:
        target = {"host_id": host_id, "command_id": command_id, "args": _shape(args)}
        call = self.link.propose_ssh(host_id, command_id, args, progress.card_opened)
        raw = await self._relay("ssh_exec", target, progress.around(call))
        return SshExecResult.model_validate(raw)

    async def http(
        self, service_id: str, operation_id: str, args: Mapping[str, ArgValue], progress: Progress
    ) -> HttpResult:
        target = {"service_id": service_id, "operation_id": operation_id, "args": _shape(args)}
        call = self.link.propose_http(service_id, operation_id, args, progress.card_opened)
        return HttpResult.model_validate(
            await self._relay("http_request", target, progress.around(call))
        )

    async def _relay(
        self, tool: str, journal_args: Mapping[str, Any], call: Awaitable[dict[str, Any]]
    ) -> dict[str, Any]:
        try:
            result = await call
        except GatewayRefusal as refusal:
            self._record(tool, journal_args, 0, refusal.code)
            raise ToolError(f"{refusal.code}: {refusal.reason}") from None
        except GatewayUnavailable as exc:
            self._record(tool, journal_args, 0, "unavailable")
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


def _initial_catalog(link: GatewayLink) -> Catalog | None:
    """The catalog at start-up, if a gateway is running, unlocked and serving a policy."""

    async def fetch() -> Catalog:
        async with asyncio.timeout(CATALOG_TIMEOUT_S):
            return parse_catalog(await link.catalog())

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:  # assembled inside a running loop (an embedding host): typed tools need a restart
        log.warning("no typed action tools: the server was assembled inside an event loop")
        return None
    try:
        return asyncio.run(fetch())
    except (GatewayRefusal, GatewayUnavailable, TimeoutError) as exc:
        log.warning("no typed action tools: the gateway's catalog is not available (%s)", exc)
        return None


def _register_typed_tools(
    server: MCPServer[Any], forward: _Forwarder, catalog: Catalog | None
) -> dict[tuple[str, str, str], str]:
    names: dict[tuple[str, str, str], str] = {}
    taken: set[str] = set()
    for entry in catalog.actions if catalog is not None else []:
        info = _action_info(entry, {})
        name = _tool_name(info)
        if name in taken:
            log.warning("skipping typed tool %s: the name is ambiguous", name)
            continue
        try:
            fn = _typed_tool(forward, info, name)
            server.add_tool(fn, name=name, description=_describe(info), annotations=ACTS)
        except Exception as exc:  # a param schema we cannot express: the generic tool remains
            log.warning("skipping typed tool %s: %s", name, summarize(exc))
            continue
        taken.add(name)
        names[(info.action, info.target, info.operation)] = name
    return names


def _typed_tool(forward: _Forwarder, info: ActionInfo, name: str) -> Callable[..., Any]:
    parameters = [
        inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, annotation=_annotation(schema))
        for param, schema in info.params.items()
    ]

    async def propose(ctx: Context, **kwargs: ArgValue) -> SshExecResult | HttpResult:
        if info.action == "ssh_exec":
            return await forward.ssh(info.target, info.operation, kwargs, Progress(ctx))
        return await forward.http(info.target, info.operation, kwargs, Progress(ctx))

    result_type = SshExecResult if info.action == "ssh_exec" else HttpResult
    context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    propose.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*parameters, context], return_annotation=result_type
    )
    propose.__annotations__ = {"ctx": Context, "return": result_type}
    propose.__name__ = name
    return propose


def _annotation(schema: Mapping[str, Any]) -> Any:
    """A Python type for one param: the base type is checked here, the rest is a schema hint."""
    hints = {k: v for k, v in schema.items() if k in ("pattern", "maxLength", "minimum", "maximum")}
    if schema.get("type") == "integer":
        return Annotated[int, Field(json_schema_extra=hints)]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return Literal[tuple(str(value) for value in schema["enum"])]
    return Annotated[str, Field(json_schema_extra=hints)]


def parse_catalog(raw: Mapping[str, Any]) -> Catalog:
    """The gateway's catalog, parsed with the model the gateway built it with."""
    try:
        return Catalog.model_validate(raw)
    except ValidationError:
        raise GatewayRefusal(
            "internal", "the gateway sent a catalog outside the protocol"
        ) from None


def _action_info(entry: CatalogEntry, typed: Mapping[tuple[str, str, str], str]) -> ActionInfo:
    return ActionInfo(
        action=entry.action,
        target=entry.target,
        operation=entry.operation,
        method=entry.method if isinstance(entry, HttpCatalogEntry) else None,
        description=entry.description,
        read_only=entry.read_only,
        approval=entry.approval,
        params={
            name: param.model_dump(mode="json", exclude_none=True)
            for name, param in entry.params.items()
        },
        tool=typed.get((entry.action, entry.target, entry.operation)),
    )


def _tool_name(info: ActionInfo) -> str:
    prefix = "ssh" if info.action == "ssh_exec" else "http"
    raw = f"{prefix}_{info.target}_{info.operation}"
    return re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:64]


def _describe(info: ActionInfo) -> str:
    kind = "SSH command" if info.action == "ssh_exec" else f"HTTPS {info.method or ''} operation"
    text = info.description.strip() or f"{info.operation} on {info.target}"
    approval = "every call" if info.approval == "per-call" else "once per session"
    return (
        f"Propose the declared {kind} `{info.operation}` on `{info.target}`: {text}\n"
        f"A human approves {approval}; read-only: {info.read_only}. The gateway holds the "
        "credential and enforces every param constraint."
    )


def _shape(args: Mapping[str, ArgValue]) -> dict[str, str]:
    """Argument names with their type and size: what the journal may keep of agent input."""
    return {
        str(name)[:64]: f"<{type(value).__name__}:{len(str(value))}>"
        for name, value in list(args.items())[:32]
    }
