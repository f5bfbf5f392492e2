"""The reader profile's MCP tools: thin typed wrappers that journal every call.

Each tool's docstring is what the model reads. Every call, served or refused, goes through
:class:`JournaledCalls`, which queues its record in the reads journal before the answer leaves
the server; once the journal cannot be written, answers are withheld. Other profiles add their
tools with their own ``register_*`` function on the same server; nothing here knows about them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.operations.tool_results import (
    AuditTrail,
    ChangeFeedPage,
    DeepResearchDocument,
    DeepResearchResults,
    DirectoryListing,
    DirectoryTree,
    FileContent,
    FileExcerpt,
    FileInfo,
    FileMatches,
    Health,
    MultipleFiles,
    RootsResult,
    SearchResults,
)
from safeport.context_server.tools.journaled_calls import ClientRoots, JournaledCalls

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)

FnT = TypeVar("FnT", bound=Callable[..., Any])


def read_only(server: MCPServer[Any]) -> Callable[[FnT], FnT]:
    """Register a read-only, closed-world tool; its docstring (dedented) is its description."""

    def add(fn: FnT) -> FnT:
        description = inspect.cleandoc(fn.__doc__ or "")
        server.add_tool(fn, description=description, annotations=READ_ONLY)
        return fn

    return add


def register_reader_tools(server: MCPServer[Any], service: WorkspaceService) -> None:
    """The workspace tools: read-only, closed-world, every path through one read policy.

    Added in the order ``tools/list`` answers with: folders, files, search, records."""
    calls = JournaledCalls(server, service)
    _add_folder_tools(server, service, calls)
    _add_file_tools(server, service, calls)
    _add_search_tools(server, service, calls)
    _add_record_tools(server, service, calls)


def _add_folder_tools(
    server: MCPServer[Any], service: WorkspaceService, calls: JournaledCalls
) -> None:
    """Where things are: the roots, one folder, a bounded tree."""

    @read_only(server)
    async def list_roots(roots: ClientRoots) -> RootsResult:
        """List the served workspace roots (by name) and a summary of the read policy.

        Call this first: it says how to write paths for every other tool."""
        return await calls.run(roots, "list_roots", {}, service.list_roots)

    @read_only(server)
    async def list_directory(
        roots: ClientRoots, path: str = ".", limit: int = 200, cursor: str | None = None
    ) -> DirectoryListing:
        """List one folder, entries grouped by type: `files` (name: size in bytes),
        `directories`, `symlinks`, `others`.

        Entries the policy blocks are still listed, and named in `blocked` with why: private,
        ignored, out-of-scope, binary or unreadable-type. Paginated: pass `next_cursor` back as
        `cursor`."""
        args = {"path": path, "limit": limit, "cursor": cursor}
        return await calls.run(
            roots, "list_directory", args, lambda: service.list_directory(path, limit, cursor)
        )

    @read_only(server)
    async def directory_tree(
        roots: ClientRoots, path: str = ".", max_depth: int = 3, max_entries: int = 500
    ) -> DirectoryTree:
        """A bounded recursive listing (depth 1-10, up to 5000 entries), grouped by type as
        list_directory's, keyed by path.

        Blocked folders are listed but not entered."""
        args = {"path": path, "max_depth": max_depth, "max_entries": max_entries}
        return await calls.run(
            roots,
            "directory_tree",
            args,
            lambda: service.directory_tree(path, max_depth, max_entries),
        )


def _add_file_tools(
    server: MCPServer[Any], service: WorkspaceService, calls: JournaledCalls
) -> None:
    """What a file holds: whole, by lines, several at once, and its facts."""

    @read_only(server)
    async def read_file(roots: ClientRoots, path: str) -> FileContent:
        """Read a text file. Over the response cap, returns the head with `truncated`,
        `total_bytes`, `served_bytes` and `next_line` to continue with read_file_excerpt."""
        return await calls.run(roots, "read_file", {"path": path}, lambda: service.read_file(path))

    @read_only(server)
    async def read_file_excerpt(
        roots: ClientRoots,
        path: str,
        start_line: int = 1,
        max_lines: int = 200,
        start_column: int = 1,
        cursor: str | None = None,
    ) -> FileExcerpt:
        """Read lines from a text file, starting at `start_line` (1-based).

        A very long line is split: continue with `next_line` and `next_column`. Pass
        `next_cursor` back as `cursor` (with those) to continue without rescanning."""
        args = {
            "path": path,
            "start_line": start_line,
            "max_lines": max_lines,
            "start_column": start_column,
            "cursor": cursor,
        }
        return await calls.run(
            roots,
            "read_file_excerpt",
            args,
            lambda: service.read_file_excerpt(path, start_line, max_lines, start_column, cursor),
        )

    @read_only(server)
    async def read_multiple_files(roots: ClientRoots, paths: list[str]) -> MultipleFiles:
        """Read up to 50 text files; each result stands alone.

        One refusal does not fail the rest."""
        return await calls.run(
            roots,
            "read_multiple_files",
            {"paths": paths},
            lambda: service.read_multiple_files(paths),
        )

    @read_only(server)
    async def get_file_info(roots: ClientRoots, path: str, sha256: bool = False) -> FileInfo:
        """Size, times and type of a file or folder.

        `sha256=true` adds the digest of a text file."""
        args = {"path": path, "sha256": sha256}
        return await calls.run(
            roots, "get_file_info", args, lambda: service.get_file_info(path, sha256)
        )


def _add_search_tools(
    server: MCPServer[Any], service: WorkspaceService, calls: JournaledCalls
) -> None:
    """Finding files by name, text by content, what changed, and the Deep Research pair."""

    @read_only(server)
    async def search_files(
        roots: ClientRoots, pattern: str, path: str = ".", limit: int = 200
    ) -> FileMatches:
        """Find readable files by name with a glob (`*.py`), or by relative path when the
        pattern contains a slash (`src/*/test_*.py`). Case-insensitive."""
        args = {"pattern": pattern, "path": path, "limit": limit}
        return await calls.run(
            roots, "search_files", args, lambda: service.search_files(pattern, path, limit)
        )

    @read_only(server)
    async def search_project(
        roots: ClientRoots, query: str, path: str = ".", limit: int = 20, cursor: str | None = None
    ) -> SearchResults:
        """Search file contents for a literal text (case-insensitive); results carry path, line
        and snippet. Uses the index for 3+ characters; shorter queries scan. Paginated."""
        args = {"query": query, "path": path, "limit": limit, "cursor": cursor}
        return await calls.run(
            roots,
            "search_project",
            args,
            lambda: service.search_project(query, path, limit, cursor),
        )

    @read_only(server)
    async def get_recent_changes(
        roots: ClientRoots, cursor: str | None = None, limit: int = 50
    ) -> ChangeFeedPage:
        """Files added, modified or removed since `cursor`. Without a cursor: the most recently
        modified files and a cursor to follow from now on."""
        args = {"cursor": cursor, "limit": limit}
        return await calls.run(
            roots, "get_recent_changes", args, lambda: service.get_recent_changes(cursor, limit)
        )

    @read_only(server)
    async def search(roots: ClientRoots, query: str) -> DeepResearchResults:
        """Search the workspace; returns result ids to pass to `fetch` (Deep Research contract)."""
        return await calls.run(roots, "search", {"query": query}, lambda: service.search(query))

    @read_only(server)
    async def fetch(roots: ClientRoots, id: str) -> DeepResearchDocument:
        """Fetch one search result's full text by its id (Deep Research contract)."""
        return await calls.run(roots, "fetch", {"id": id}, lambda: service.fetch(id))


def _add_record_tools(
    server: MCPServer[Any], service: WorkspaceService, calls: JournaledCalls
) -> None:
    """What the server has done: its reads journal and its health."""

    @read_only(server)
    async def get_audit_trail(
        roots: ClientRoots,
        limit: int = 50,
        origin: str | None = None,
        tool: str | None = None,
        only_denied: bool = False,
    ) -> AuditTrail:
        """Recent records of this workspace's reads journal (newest first): tool, arguments
        (private paths shown as <private>), bytes served, and refusals."""
        args = {"limit": limit, "origin": origin, "tool": tool, "only_denied": only_denied}
        return await calls.run(
            roots,
            "get_audit_trail",
            args,
            lambda: service.get_audit_trail(limit, origin, tool, only_denied),
        )

    @read_only(server)
    async def get_health(roots: ClientRoots) -> Health:
        """Index state and counts, the policy summary and the journal state."""
        return await calls.run(roots, "get_health", {}, service.get_health)
