"""`tools/call` for the bounded read-only tools, answered by the transport itself.

The MCP SDK spends several times a read's own cost on each call (task and context set-up,
middleware, three copies of the result through pydantic). Once a client has initialised a
session in a protocol version whose tool results the SDK seam writes exactly as the SDK does
(:mod:`safeport.context_server.sdk_seam`), and once the first call has applied the client's
roots, a plain ``tools/call`` of a bounded tool (:data:`BOUNDED_TOOLS`) is validated with the
tool's own argument model, run through :meth:`JournaledServer.call_direct` (the same journal,
scrubbing and error sentences) and written as one frame whose structured content and text copy
are the same serialised JSON.

Anything else, or anything this module is unsure of (other protocol versions, extra request
members, arguments that do not validate, the first call), goes to the SDK unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool

from safeport.context_server.operations.tool_results import ToolResult
from safeport.context_server.sdk_seam import (
    DIRECT_VERSIONS,
    call_body,
    error_frame,
    find_tool,
    resolved_parameters,
    result_frame,
    validate_arguments,
)
from safeport.context_server.tools.journaled_calls import (
    BOUNDED_TOOLS,
    JournaledServer,
    known_roots,
)

_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_PARAM_KEYS = frozenset({"name", "arguments", "_meta"})


class DirectCalls:
    """Answers the bounded tools' calls for one stdio session."""

    def __init__(self, server: JournaledServer) -> None:
        self._server = server
        self._tools: dict[str, Tool] = {}
        for name in BOUNDED_TOOLS:
            tool = find_tool(server, name)
            # Only the reader tools' shape: every argument from the client, plus the roots.
            if tool is not None and resolved_parameters(tool) == {"roots"}:
                self._tools[name] = tool
        self._initialize_id: object = None
        self._version: str | None = None

    @property
    def version(self) -> str | None:
        """The negotiated protocol version, when this session's calls can be answered here."""
        return self._version

    def observe_request(self, message: object) -> None:
        """Note an ``initialize`` request, to read the version from its answer."""
        if isinstance(message, dict) and message.get("method") == "initialize":
            self._initialize_id = _id_key(message.get("id"))
            # Until its answer says which version the session is on now, the SDK answers.
            self._version = None

    def observe_answer(self, message: types.JSONRPCMessage) -> None:
        """Note the version the SDK negotiated, from its answer to ``initialize``."""
        if not isinstance(message, types.JSONRPCResponse) or self._initialize_id is None:
            return
        if _id_key(message.id) != self._initialize_id:
            return
        version = message.result.get("protocolVersion")
        self._version = version if version in DIRECT_VERSIONS else None

    async def answer(self, message: object) -> bytes | None:
        """The whole response frame for a call answered here, or None to hand it to the SDK."""
        if self._version is None:
            return None
        roots = known_roots(self._server)
        call = _plain_tool_call(message)
        if roots is None or call is None:
            return None
        request_id, name, arguments = call
        tool = self._tools.get(name)
        if tool is None:
            return None
        try:
            kwargs = validate_arguments(tool, arguments)
        except Exception:  # the SDK validates again and answers with its own sentence
            return None

        async def run() -> ToolResult:
            result = await call_body(tool, {**kwargs, "roots": roots})
            if not isinstance(result, ToolResult):
                raise TypeError("a bounded tool returned something other than a tool result")
            return result

        try:
            result = await self._server.call_direct(name, arguments, run)
        except ToolError as exc:
            return error_frame(request_id, str(exc))
        return result_frame(request_id, result.wire_json())


def _plain_tool_call(message: object) -> tuple[int | str, str, dict[str, Any]] | None:
    """(id, tool name, arguments) of a ``tools/call`` with nothing the SDK would treat
    differently (tasks, unknown members, an id that is not a plain number or string)."""
    if type(message) is not dict or message.keys() - _REQUEST_KEYS:
        return None
    if message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
        return None
    request_id = message.get("id")
    params = message.get("params")
    if type(request_id) not in (int, str) or type(params) is not dict:
        return None
    assert isinstance(request_id, int | str)
    if params.keys() - _PARAM_KEYS or not _plain_meta(params.get("_meta")):
        return None
    name = params.get("name")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if type(name) is not str or type(arguments) is not dict or "roots" in arguments:
        return None
    return request_id, name, arguments


def _plain_meta(meta: object) -> bool:
    """No ``_meta``, or one the SDK only passes along (a progress token, client labels)."""
    if meta is None:
        return True
    if not isinstance(meta, Mapping) or not all(isinstance(k, str) for k in meta):
        return False
    token = meta.get("progressToken")
    return token is None or type(token) in (int, str)


def _id_key(request_id: object) -> object:
    return (type(request_id).__name__, request_id) if type(request_id) in (int, str) else None
