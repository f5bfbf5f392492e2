"""The context server: a credential-free, read-only MCP view of a workspace.

Public surface: :func:`serve` runs it over stdio, :func:`build_server` assembles it (for tests
and other profiles), :func:`build_index` refreshes the search index ahead of time,
:func:`scan_roots` and :func:`allow_secret` show and allow back what it withholds, and
:class:`ReadPolicy` is the pure decision code every path goes through.

Each name is imported on first use: ``sp client …``, ``sp status`` and the other commands that
need only the client entries or the settings would otherwise load the MCP SDK the server is
built on, a second or more of start-up for every command.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from safeport.context_server import mcp_clients
    from safeport.context_server.http.endpoint import parse_endpoint
    from safeport.context_server.policy.read_policy import ReadPolicy, Refused
    from safeport.context_server.server import (
        PROFILES,
        ServeOptions,
        allow_secret,
        build_index,
        build_server,
        open_workspace,
        scan_roots,
        serve,
        serve_http,
    )
    from safeport.context_server.shell_call import ToolFailed, call_tool
    from safeport.context_server.workspace.serving_config import (
        redaction_findings,
        redaction_off,
    )

__all__ = [
    "PROFILES",
    "ReadPolicy",
    "Refused",
    "ServeOptions",
    "ToolFailed",
    "allow_secret",
    "build_index",
    "build_server",
    "call_tool",
    "mcp_clients",
    "open_workspace",
    "parse_endpoint",
    "redaction_findings",
    "redaction_off",
    "scan_roots",
    "serve",
    "serve_http",
]

_SERVER = "safeport.context_server.server"
_HOMES = {
    "PROFILES": _SERVER,
    "ServeOptions": _SERVER,
    "allow_secret": _SERVER,
    "build_index": _SERVER,
    "build_server": _SERVER,
    "open_workspace": _SERVER,
    "scan_roots": _SERVER,
    "serve": _SERVER,
    "serve_http": _SERVER,
    "parse_endpoint": "safeport.context_server.http.endpoint",
    "call_tool": "safeport.context_server.shell_call",
    "ToolFailed": "safeport.context_server.shell_call",
    "ReadPolicy": "safeport.context_server.policy.read_policy",
    "Refused": "safeport.context_server.policy.read_policy",
    "redaction_findings": "safeport.context_server.workspace.serving_config",
    "redaction_off": "safeport.context_server.workspace.serving_config",
}


def __getattr__(name: str) -> Any:
    if name == "mcp_clients":
        value: Any = importlib.import_module(f"{__name__}.mcp_clients")
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
