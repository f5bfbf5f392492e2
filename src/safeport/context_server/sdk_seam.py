"""Every use of the MCP SDK's private surface, in one module.

The SDK has no public hook for what the context server needs: a tool call that returns the raw
value (so a result of ours is serialised once), a tool looked up by name, the low-level server
to run over safeport's own stdio transport, and tool-call frames written without the SDK's
dispatch. Each of those reaches past the SDK's public API, and each is here, so the lines that
break on an SDK upgrade are in one place.

Importing this module checks, on a probe server and tool, that every attribute it relies on is
present in the installed SDK; when one is missing the import fails with :class:`SdkSeamBroken`,
which names the installed version and the version the seam was written against. ``mcp`` is
pinned in ``pyproject.toml`` to that minor version (:data:`WRITTEN_AGAINST`): an upgrade is a
deliberate edit of this module, its pin and ``tests/context_server/transport/test_direct.py``
(which holds the frames below equal to the SDK's answers).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.resolve import AcceptedElicitation
from mcp.server.mcpserver.tools import Tool
from mcp.server.session import ServerSession
from mcp_types import SERVER_INFO_META_KEY
from mcp_types.methods import validate_client_request

WRITTEN_AGAINST = "2.3"
_MAJOR, _MINOR = WRITTEN_AGAINST.split(".")
PIN = f"mcp>={WRITTEN_AGAINST},<{_MAJOR}.{int(_MINOR) + 1}"

T = TypeVar("T")

# What the seam reads on an MCPServer (attributes its __init__ sets, so checked on an instance).
SERVER_SURFACE = (
    "_tool_manager.get_tool",
    "_tool_manager.call_tool",
    "_subscriptions",
    "_lowlevel_server.run",
    "_lowlevel_server.create_initialization_options",
    "_lowlevel_server.middleware",
    "_lowlevel_server.server_info_stamp",
)
# What the seam reads on a registered tool.
TOOL_SURFACE = (
    "fn",
    "resolved_params",
    "fn_metadata.validate_arguments",
    "fn_metadata.convert_result",
)

# The protocol versions whose CallToolResult (content, structuredContent, isError and nothing
# else for a plain call) the frames below reproduce. Older versions have no structured
# content, and stay with the SDK.
DIRECT_VERSIONS = frozenset({"2025-06-18", "2025-11-25"})
# The per-request-envelope versions (no handshake: each request names its version in
# ``_meta``) whose CallToolResult adds exactly ``resultType`` and the ``serverInfo`` stamp in
# ``_meta``, both written by :func:`modern_result_frame`. A later version stays with the SDK.
MODERN_DIRECT_VERSIONS = frozenset({"2026-07-28"})

# The SDK wraps every resolved value in `AcceptedElicitation[Any]`; pydantic keeps parametrised
# models only weakly, so without this reference each call would build that class anew (about
# as long as the call itself).
ACCEPTED_ANY = AcceptedElicitation[Any]


class SdkSeamBroken(ImportError):
    """The installed MCP SDK lacks an attribute this module relies on."""


def missing_attributes(subject: object, paths: Iterable[str]) -> list[str]:
    """Each dotted attribute path that ``subject`` does not have, in order."""
    missing = []
    for path in paths:
        current: object = subject
        for name in path.split("."):
            if not hasattr(current, name):
                missing.append(path)
                break
            current = getattr(current, name)
    return missing


def require_surface(subject: object, paths: Iterable[str], installed: str) -> None:
    """Raise :class:`SdkSeamBroken` naming ``installed`` if ``subject`` lacks any of ``paths``."""
    missing = missing_attributes(subject, paths)
    if missing:
        owner = type(subject).__name__
        raise SdkSeamBroken(
            f"the installed mcp {installed} has no {', '.join(f'{owner}.{p}' for p in missing)};"
            f" safeport's MCP seam (safeport/context_server/sdk_seam.py) was written against"
            f" mcp {WRITTEN_AGAINST}.x: install {PIN}, or port the seam"
        )


def installed_sdk_version() -> str:
    try:
        return version("mcp")
    except PackageNotFoundError:
        return "(version unknown)"


def find_tool(server: MCPServer[Any], name: str) -> Tool | None:
    """The tool registered under ``name``, or None."""
    tool: Tool | None = server._tool_manager.get_tool(name)
    return tool


async def call_tool_raw(
    server: MCPServer[Any], name: str, arguments: dict[str, Any], context: Context[Any, Any] | None
) -> Any:
    """Run a tool as ``MCPServer.call_tool`` does, but return the body's value unconverted."""
    ctx = context or Context(mcp_server=server, subscriptions=server._subscriptions)
    return await server._tool_manager.call_tool(name, arguments, ctx)


def convert_result(tool: Tool, result: Any) -> Any:
    """A tool's value as the SDK sends it (the conversion ``MCPServer.call_tool`` applies)."""
    return tool.fn_metadata.convert_result(result)


def resolved_parameters(tool: Tool) -> frozenset[str]:
    """The parameters of a tool that resolvers fill, not the client."""
    return frozenset(tool.resolved_params)


def is_valid_call(version: str, params: dict[str, Any]) -> bool:
    """Whether a ``tools/call``'s params pass the check the SDK's runner makes at ``version``
    before any handler (the version's own request schema, which types the reserved ``_meta``
    members): a call that fails it gets the SDK's INVALID_PARAMS, never a tool result."""
    try:
        validate_client_request("tools/call", version, params)
    except Exception:  # ValidationError, or a version or method the surface does not know
        return False
    return True


def validate_arguments(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The client's arguments validated by the tool's own model (raises as the SDK's does)."""
    validated: dict[str, Any] = tool.fn_metadata.validate_arguments(arguments)
    return validated


async def call_body(tool: Tool, kwargs: dict[str, Any]) -> Any:
    """Await the tool's own function with ``kwargs`` (no resolvers, no conversion)."""
    return await tool.fn(**kwargs)


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The low-level server an ``MCPServer`` wraps, to run over safeport's own transport."""
    lowlevel: Server[Any] = server._lowlevel_server
    return lowlevel


def as_sdk_tool_call(name: str, run: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
    """Wrap a tool body's failures as the SDK's tool runner does (``Tool.run``'s sentences)."""

    async def call() -> T:
        try:
            return await run()
        except ToolError as exc:
            raise ToolError(f"Error executing tool {name}: {exc}") from exc
        except Exception as exc:
            raise UnexpectedToolError(f"Error executing tool {name}") from exc

    return call


def result_frame(request_id: int | str, result_json: str, stamp: str = "") -> bytes:
    """A successful ``tools/call`` response: the result's JSON is its text copy as well.
    ``stamp`` is :func:`modern_stamp`'s members on a per-request-envelope session, else empty."""
    rest = f',"structuredContent":{result_json},"isError":false{stamp}'
    return _frame(request_id, result_json, rest)


def error_frame(request_id: int | str, text: str, stamp: str = "") -> bytes:
    """A failed call: a tool result with ``isError``, as the SDK answers a ``ToolError``."""
    return _frame(request_id, text, f',"isError":true{stamp}')


def modern_stamp(server: MCPServer[Any]) -> str:
    """What the SDK adds to every result of a 2026-era request (``_serialize`` and
    ``_stamp_server_info`` in its runner): ``resultType`` and the server's identity in
    ``_meta``, as JSON members to append to a result object. The identity is fixed when the
    server is built, so it is written once."""
    identity: dict[str, Any] = lowlevel_server(server).server_info_stamp
    meta = json.dumps({SERVER_INFO_META_KEY: identity}, ensure_ascii=False, separators=(",", ":"))
    return f',"resultType":"complete","_meta":{meta}'


def _frame(request_id: int | str, text: str, rest: str) -> bytes:
    content = json.dumps(text, ensure_ascii=False)
    return (
        f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":'
        f'{{"content":[{{"type":"text","text":{content}}}]{rest}}}}}\n'
    ).encode()


class ClientSessions:
    """The sessions of the clients connected to one server, to tell them the tools changed.

    The SDK announces a changed tool list from inside a request (``ctx.session``); a tool list
    that changes because the gateway came up has no request to ride on. A middleware (the SDK's
    own hook on every inbound message) keeps each handshake session once the client said it is
    initialised; clients on the 2026 protocol hear the change on their listen stream instead.
    """

    def __init__(self, server: MCPServer[Any]) -> None:
        self._server = server
        self._sessions: list[ServerSession] = []

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            self._sessions = [ctx.session]  # stdio: one client per process, the latest counts
        return result

    async def tools_changed(self) -> None:
        """Send ``notifications/tools/list_changed`` to every initialised client."""
        for session in self._sessions:
            await session.send_tool_list_changed()
        context = Context(mcp_server=self._server, subscriptions=self._server._subscriptions)
        await context.notify_tools_changed()


def track_sessions(server: MCPServer[Any]) -> ClientSessions:
    """Keep ``server``'s client sessions from now on, to announce tool-list changes to them."""
    sessions = ClientSessions(server)
    lowlevel_server(server).middleware.append(sessions)
    return sessions


def _check_installed_sdk() -> None:
    """Fail the import now, not on the first call, if the installed SDK moved an attribute."""
    installed = installed_sdk_version()

    async def probe() -> str:
        return ""

    server: MCPServer[Any] = MCPServer(name="safeport-sdk-seam-check")
    require_surface(server, SERVER_SURFACE, installed)
    server.add_tool(probe, name="probe")
    require_surface(find_tool(server, "probe"), TOOL_SURFACE, installed)
    if "subscriptions" not in inspect.signature(Context).parameters:
        raise SdkSeamBroken(
            f"the installed mcp {installed} has no Context(subscriptions=...); safeport's MCP"
            f" seam (safeport/context_server/sdk_seam.py) was written against"
            f" mcp {WRITTEN_AGAINST}.x: install {PIN}, or port the seam"
        )


_check_installed_sdk()
