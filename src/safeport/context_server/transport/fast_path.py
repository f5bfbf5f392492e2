"""`tools/call` for the bounded read-only tools, answered by the transport itself.

The MCP SDK spends several times a read's own cost on each call (task and context set-up,
middleware, three copies of the result through pydantic). Once a client has initialised a
session in a protocol version whose tool results the SDK seam writes exactly as the SDK does
(:mod:`safeport.context_server.sdk_seam`), and once the first call has applied the client's
roots, a plain ``tools/call`` of a bounded tool (:data:`BOUNDED_TOOLS`) is validated with the
tool's own argument model, run through :meth:`JournaledServer.call_direct` (the same journal,
scrubbing and error sentences) and written as one frame whose structured content and text copy
are the same serialised JSON.

Clients of the 2026-07-28 protocol have no handshake: each request carries its version, the
client's identity and its capabilities in ``_meta``, and the connection's first request
decides its era for good (the SDK's ``serve_dual_era_loop``). A call on such a connection is
answered here when the SDK's own classifier (``classify_inbound_request``) routes its envelope
to a version whose result these frames reproduce; the frame then carries the members the SDK
adds on that era (``resultType``, the server's identity in ``_meta``).

Anything else, or anything this module is unsure of (other protocol versions, extra request
members, arguments that do not validate, the first call, a request of the other era), goes to
the SDK unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.inbound import InboundModernRoute, classify_inbound_request
from mcp_types import PROTOCOL_VERSION_META_KEY

from safeport.context_server.operations.tool_results import ToolResult
from safeport.context_server.sdk_seam import (
    DIRECT_VERSIONS,
    MODERN_DIRECT_VERSIONS,
    call_body,
    error_frame,
    find_tool,
    is_valid_call,
    modern_stamp,
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
# The reserved ``_meta`` keys of a 2026-era request that the SDK only reads to route it (its
# version, the client's identity and capabilities); another reserved key (a log level, say)
# asks the SDK for something, so such a call stays with it.
_RESERVED = "io.modelcontextprotocol/"
_NONE = type(None)
_ENVELOPE_KEYS = frozenset(
    {
        PROTOCOL_VERSION_META_KEY,
        types.CLIENT_INFO_META_KEY,
        types.CLIENT_CAPABILITIES_META_KEY,
    }
)


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
        # The connection's era, decided by its first request as the SDK decides it: None until
        # then, True for the 2026 per-request envelope, False for the handshake.
        self._modern: bool | None = None
        self._stamp = modern_stamp(server)

    @property
    def version(self) -> str | None:
        """The negotiated protocol version, when this session's calls can be answered here."""
        return self._version

    def observe_request(self, message: types.JSONRPCMessage) -> None:
        """Note the connection's first request (its era) and an ``initialize`` request, to read
        the version from its answer. ``message`` is what the SDK is handed, as its parser read
        it: a line it does not take for a request (``jsonrpc`` 1.0, an id of another type)
        decides nothing for it, so nothing here either."""
        if not isinstance(message, types.JSONRPCRequest):
            return  # a notification or an answer decides nothing
        if self._modern is None:
            meta = (message.params or {}).get("_meta")
            self._modern = (
                message.method != "initialize"
                and isinstance(meta, Mapping)
                and PROTOCOL_VERSION_META_KEY in meta
            )
        if message.method == "initialize":
            self._initialize_id = _id_key(message.id)
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
        if self._modern is None:
            return None
        roots = known_roots(self._server)
        call = _plain_tool_call(message)
        if roots is None or call is None:
            return None
        assert isinstance(message, dict)  # a plain tool call is a dict
        if self._modern:
            version = _modern_version(message)
            stamp = self._stamp
        elif PROTOCOL_VERSION_META_KEY in _meta_of(message):
            return None  # an envelope on a handshake connection: the SDK refuses it
        else:
            version = self._version
            stamp = ""
        if version is None or not is_valid_call(version, message["params"]):
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
            return error_frame(request_id, str(exc), stamp)
        return result_frame(request_id, result.wire_json(), stamp)


def _meta_of(message: dict[str, Any]) -> Mapping[str, Any]:
    meta = message["params"].get("_meta")
    return meta if isinstance(meta, Mapping) else {}


def _modern_version(message: dict[str, Any]) -> str | None:
    """The version the SDK would serve this 2026-era call at, when it is one answered here
    and the envelope holds nothing but routing (the SDK's own ladder decides; a refusal is the
    SDK's to say); else None."""
    meta = _meta_of(message)
    if any(k.startswith(_RESERVED) and k not in _ENVELOPE_KEYS for k in meta):
        return None
    route = classify_inbound_request({"method": message["method"], "params": message["params"]})
    if not isinstance(route, InboundModernRoute):
        return None
    # The ladder checks that the envelope's members are there, not their shape: the version's
    # request schema types them (:func:`is_valid_call`), and this is the cheap first look.
    shaped = type(route.client_capabilities) is dict and type(route.client_info) in (dict, _NONE)
    version = route.protocol_version
    return version if shaped and version in MODERN_DIRECT_VERSIONS else None


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
