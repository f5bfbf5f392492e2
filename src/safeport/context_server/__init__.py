"""The context server: a credential-free, read-only MCP view of a workspace.

Public surface: :func:`serve` runs it over stdio, :func:`build_server` assembles it (for tests
and other profiles), :func:`build_index` refreshes the search index ahead of time,
:func:`scan_roots` and :func:`allow_secret` show and allow back what it withholds, and
:class:`ReadPolicy` is the pure decision code every path goes through.
"""

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
)
from safeport.context_server.workspace.serving_config import redaction_findings, redaction_off

__all__ = [
    "PROFILES",
    "ReadPolicy",
    "Refused",
    "ServeOptions",
    "allow_secret",
    "build_index",
    "build_server",
    "mcp_clients",
    "open_workspace",
    "redaction_findings",
    "redaction_off",
    "scan_roots",
    "serve",
]
