"""One typed tool per declared operation, kept in step with the catalog the gateway serves.

The gateway may come up, unlock or accept a new policy long after the client connected: the
typed tools are then added (or replaced) while the session runs, and the client hears
``notifications/tools/list_changed``. Until a catalog is served the generic ``ssh_exec`` and
``http_request`` stay the way to propose, and :meth:`TypedTools.why_missing` says what the
gateway is waiting for, so ``list_actions`` never leaves the model with a bare ``null``.

Tools are only replaced when a *different* policy is served: a gateway that restarts or locks
keeps the model's tool list as it was (a call in between answers "unavailable" or "locked").
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from mcp_types import InputRequiredResult
from pydantic import BaseModel, Field

from safeport.shared.exception_summary import summarize
from safeport.shared.schemas.catalog import Catalog, CatalogEntry, HttpCatalogEntry
from safeport.shared.schemas.wire import HttpResult, SqlResult, SshExecResult

log = logging.getLogger(__name__)

ACTS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)
# A declared read-only action (or query) changes nothing, but still reaches another machine.
READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True)
# Status lines ChatGPT shows while a tool runs and once it answered (the Apps SDK's tool
# descriptor keys, at most 64 characters each); other clients ignore them.
ASKS = {
    "openai/toolInvocation/invoking": "Asking the safeport gateway; a human may approve",
    "openai/toolInvocation/invoked": "The safeport gateway answered",
}
ArgValue = str | int
ActionKey = tuple[str, str, str]


class ActionInfo(BaseModel):
    action: Literal["ssh_exec", "http_request", "run_readonly_query"]
    target: str = Field(description="host_id / service_id / database of the action")
    operation: str = Field(description="command_id / operation_id / query of the action")
    method: str | None = None
    description: str
    read_only: bool
    approval: str = Field(description="session: one approval per session; per-call: every call")
    params: dict[str, dict[str, Any]]
    tool: str | None = Field(default=None, description="the typed tool for this action, if any")
    no_tool: str | None = Field(
        default=None, description="why there is no typed tool (use ssh_exec / http_request)"
    )


Result = SshExecResult | HttpResult | SqlResult
Propose = Callable[
    [ActionInfo, dict[str, ArgValue], Context], Awaitable[Result | InputRequiredResult]
]
_RESULTS: dict[str, type[Result]] = {
    "ssh_exec": SshExecResult,
    "http_request": HttpResult,
    "run_readonly_query": SqlResult,
}
_PREFIXES = {"ssh_exec": "ssh", "http_request": "http", "run_readonly_query": "sql"}
Announce = Callable[[], Coroutine[Any, Any, None]]

# What the gateway's refusal of the catalog means for the typed tools (its wire code → why).
WAITING_FOR = {
    "unavailable": "the action gateway is not running (the user starts it with `sp gateway run`)",
    "locked": "the gateway's vault is locked (the user unlocks it with `sp vault unlock`)",
    "denied": "the gateway serves no accepted policy (the user accepts one with "
    "`sp policy accept`)",
}
APPEAR = "; the typed tools appear by themselves once it does, no restart needed"


class TypedTools:
    """The typed tools registered on one server, and the policy digest they were built from."""

    def __init__(self, server: MCPServer[Any], propose: Propose, announce: Announce) -> None:
        self._server = server
        self._propose = propose
        self._announce = announce
        self._digest: str | None = None
        self._names: dict[ActionKey, str] = {}
        self._skipped: dict[ActionKey, str] = {}
        self._waiting = WAITING_FOR["unavailable"]

    @property
    def digest(self) -> str | None:
        """The digest of the policy the current typed tools come from (None: none yet)."""
        return self._digest

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._names.values())

    def waiting(self, code: str) -> None:
        """The gateway refused the catalog with ``code``: remember why typed tools are absent."""
        self._waiting = WAITING_FOR.get(code, f"the gateway does not serve a catalog ({code})")

    def why_unserved(self) -> str:
        """A sentence for the model: why the typed tools are absent (or cannot act) now."""
        if self._digest is None:
            return f"No typed tools yet: {self._waiting}{APPEAR}."
        return f"The typed tools stay listed, but their calls fail while {self._waiting}."

    async def follow(self, catalog: Catalog) -> bool:
        """Make the typed tools match ``catalog``; tell the client if the list changed."""
        if catalog.policy == self._digest:
            return False
        self._replace(catalog)
        try:
            await self._announce()
        except Exception as exc:  # a client that went away must not stop the tools changing
            log.debug("tools/list_changed not sent: %s", summarize(exc))
        return True

    def info(self, entry: CatalogEntry) -> ActionInfo:
        """An entry as the model sees it, with its typed tool or the reason it has none."""
        info = action_info(entry)
        key = (info.action, info.target, info.operation)
        if key in self._names:
            return info.model_copy(update={"tool": self._names[key]})
        reason = self._skipped.get(key, "the typed tools are being rebuilt for a new policy")
        return info.model_copy(update={"no_tool": reason})

    def _replace(self, catalog: Catalog) -> None:
        for name in self._names.values():
            self._server.remove_tool(name)
        self._names, self._skipped = {}, {}
        taken: set[str] = set()
        for entry in catalog.actions:
            info = action_info(entry)
            key = (info.action, info.target, info.operation)
            name = tool_name(info)
            if name in taken:
                log.warning("skipping typed tool %s: the name is ambiguous", name)
                self._skipped[key] = f"its tool name {name} is shared with another action"
                continue
            try:
                fn = self._typed_tool(info, name)
                hints = READS if info.read_only else ACTS
                self._server.add_tool(
                    fn, name=name, description=describe(info), annotations=hints, meta=ASKS
                )
            except Exception as exc:  # a param schema we cannot express: the generic tool remains
                log.warning("skipping typed tool %s: %s", name, summarize(exc))
                self._skipped[key] = "its params cannot be written as a tool schema"
                continue
            taken.add(name)
            self._names[key] = name
        self._digest = catalog.policy

    def _typed_tool(self, info: ActionInfo, name: str) -> Callable[..., Any]:
        parameters = [
            inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, annotation=_annotation(schema))
            for param, schema in info.params.items()
        ]
        propose_with = self._propose

        async def propose(ctx: Context, **kwargs: ArgValue) -> Result | InputRequiredResult:
            return await propose_with(info, kwargs, ctx)

        # The input_required arm is the waiting (2026-07-28); the SDK keeps it out of the schema.
        result_type = _RESULTS[info.action] | InputRequiredResult
        context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
        propose.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [*parameters, context], return_annotation=result_type
        )
        propose.__annotations__ = {"ctx": Context, "return": result_type}
        propose.__name__ = name
        return propose


def action_info(entry: CatalogEntry) -> ActionInfo:
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
    )


def tool_name(info: ActionInfo) -> str:
    raw = f"{_PREFIXES[info.action]}_{info.target}_{info.operation}"
    return re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:64]


def describe(info: ActionInfo) -> str:
    kind = {
        "ssh_exec": "SSH command",
        "run_readonly_query": "read-only SQL query (a READ ONLY transaction, always rolled back)",
    }.get(info.action, f"HTTPS {info.method or ''} operation")
    text = info.description.strip() or f"{info.operation} on {info.target}"
    approval = "every call" if info.approval == "per-call" else "once per session"
    return (
        f"Propose the declared {kind} `{info.operation}` on `{info.target}`: {text}\n"
        f"A human approves {approval}; read-only: {info.read_only}. The gateway holds the "
        "credential and enforces every param constraint."
    )


def _annotation(schema: Mapping[str, Any]) -> Any:
    """A Python type for one param: the base type is checked here, the rest is a schema hint."""
    hints = {k: v for k, v in schema.items() if k in ("pattern", "maxLength", "minimum", "maximum")}
    if schema.get("type") == "integer":
        return Annotated[int, Field(json_schema_extra=hints)]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return Literal[tuple(str(value) for value in schema["enum"])]
    return Annotated[str, Field(json_schema_extra=hints)]
