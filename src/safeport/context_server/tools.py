"""The reader profile's MCP tools: thin typed wrappers that journal every call.

Each tool's docstring is what the model reads. Every call, served or refused, appends one record
to the reads journal before its answer leaves the server; if that record cannot be written the
answer is withheld. Other profiles add their tools with their own ``register_*`` function on the
same server; nothing here knows about them.
"""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote, urlparse

import anyio.to_thread
from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import ListRootsResult, ToolAnnotations
from pydantic import BaseModel

from safeport.context_server.journal import CALL_RECORDED, bounded_text
from safeport.context_server.policy import Refused
from safeport.context_server.results import (
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
from safeport.context_server.service import WorkspaceService
from safeport.errors import EnvironmentProblem, Error, JournalUnavailable

log = logging.getLogger(__name__)

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)

ResultT = TypeVar("ResultT", bound=BaseModel)
FnT = TypeVar("FnT", bound=Callable[..., Any])

UNAVAILABLE = (
    "unavailable: the reads journal cannot be written, so nothing is served; check the audit folder"
)
INTERNAL = "internal error while reading the workspace; nothing was served"


# The client's MCP roots, asked once per server (one stdio client per process) and then reused.
_KNOWN_ROOTS: weakref.WeakKeyDictionary[Any, ListRootsResult] = weakref.WeakKeyDictionary()
_NO_ROOTS = ListRootsResult(roots=[])


async def client_roots(ctx: Context[Any, Any]) -> ListRootsResult | ListRoots:
    """Resolver: the roots the client declared (asked once), or none if it has no roots."""
    known = _KNOWN_ROOTS.get(ctx.mcp_server)
    if known is not None:
        return known
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return _NO_ROOTS
    return ListRoots()


# Every tool takes this hidden parameter, so the first call learns the client's roots.
ClientRoots = Annotated[ListRootsResult, Resolve(client_roots)]


def root_paths(result: ListRootsResult) -> list[str]:
    """Local paths of the client's file:// roots; other schemes name nothing on this disk."""
    paths = []
    for root in result.roots:
        url = urlparse(str(root.uri))
        if url.scheme == "file" and url.netloc in ("", "localhost") and url.path:
            paths.append(unquote(url.path))
    return paths


class JournaledServer(MCPServer[Any]):
    """The MCP server whose every tool call leaves a journal record.

    Tool bodies journal their own calls (with their arguments' privacy checks). A call the SDK
    turns down before a body runs (an unknown tool, arguments of the wrong type) is journaled
    here, and a crash anywhere becomes the fixed ``internal`` sentence, never SDK text."""

    def __init__(self, service: WorkspaceService, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.service = service

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        marker: list[bool] = []
        token = CALL_RECORDED.set(marker)
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            log.warning("tool %s crashed", bounded_text(name))
            self._record_unrecorded(marker, name, arguments, "internal")
            raise ToolError(INTERNAL) from None
        except ToolError:
            reason = "unknown-tool" if self._tool_manager.get_tool(name) is None else "invalid"
            self._record_unrecorded(marker, name, arguments, reason)
            raise
        finally:
            CALL_RECORDED.reset(token)

    def _record_unrecorded(
        self, marker: list[bool], name: str, arguments: Mapping[str, Any], reason: str
    ) -> None:
        if marker:
            return
        args = arguments if isinstance(arguments, Mapping) else {}
        try:
            self.service.journal.record(
                bounded_text(str(name)),
                {str(k): v for k, v in args.items() if k != "roots"},
                is_private=self.service.path_is_private,
                served_bytes=0,
                refused=reason,
            )
        except JournalUnavailable:
            raise ToolError(UNAVAILABLE) from None


class JournaledCalls:
    """Runs an operation, journals it (served or refused), and shapes failures as ToolError."""

    def __init__(self, server: MCPServer[Any], service: WorkspaceService) -> None:
        self.server = server
        self.service = service
        self._narrowed = False

    async def run(
        self,
        roots: ListRootsResult,
        tool: str,
        args: Mapping[str, Any],
        op: Callable[[], ResultT],
    ) -> ResultT:
        self._narrow(roots)
        return await anyio.to_thread.run_sync(self._run, tool, dict(args), op)

    def _narrow(self, roots: ListRootsResult) -> None:
        """Apply the client's roots once. No file roots offered means no narrowing."""
        if self._narrowed:
            return
        self._narrowed = True
        _KNOWN_ROOTS[self.server] = roots
        paths = root_paths(roots)
        if paths:
            scope = self.service.workspace.narrow(paths)
            log.info("client roots narrow the workspace to %d folder(s)", len(scope))

    def _run(self, tool: str, args: Mapping[str, Any], op: Callable[[], ResultT]) -> ResultT:
        try:
            result = op()
        except Refused as exc:
            self._record(tool, args, 0, exc.reason)
            raise ToolError(str(exc)) from None
        except JournalUnavailable:
            log.error("reads journal unavailable; refusing to serve")
            self._record(tool, args, 0, "unavailable")
            raise ToolError(UNAVAILABLE) from None
        except Error as exc:
            log.warning("tool %s failed: %s", tool, type(exc).__name__)
            self._record(tool, args, 0, "error")
            # Our own sentences name categories, but an audit or config error may name one of
            # safeport's folders: only environment problems (the index) are passed on.
            text = exc.message if isinstance(exc, EnvironmentProblem) else INTERNAL
            raise ToolError(text) from None
        except Exception as exc:  # every failure is journaled and scrubbed
            # No exception text reaches the model or the log: it may name a path outside the
            # root, or a private name inside it.
            log.warning("tool %s failed: %s", tool, type(exc).__name__)
            self._record(tool, args, 0, "internal")
            raise ToolError(INTERNAL) from None
        try:
            size = len(result.model_dump_json())  # what the SDK will send must serialise
        except Exception as exc:
            log.warning("tool %s result failed to serialise: %s", tool, type(exc).__name__)
            self._record(tool, args, 0, "internal")
            raise ToolError(INTERNAL) from None
        extra = None
        if isinstance(result, MultipleFiles):
            extra = {"refused_items": sum(1 for f in result.files if not f.ok)}
        self._record(tool, args, size, None, extra)
        return result

    def _record(
        self,
        tool: str,
        args: Mapping[str, Any],
        served: int,
        refused: str | None,
        extra: Mapping[str, object] | None = None,
    ) -> None:
        try:
            self.service.journal.record(
                tool,
                args,
                is_private=self.service.path_is_private,
                served_bytes=served,
                refused=refused,
                extra=extra,
            )
        except JournalUnavailable:
            log.error("reads journal unavailable; refusing to serve")
            raise ToolError(UNAVAILABLE) from None


def read_only(server: MCPServer[Any]) -> Callable[[FnT], FnT]:
    """Register a read-only, closed-world tool; its docstring (dedented) is its description."""

    def add(fn: FnT) -> FnT:
        description = inspect.cleandoc(fn.__doc__ or "")
        server.add_tool(fn, description=description, annotations=READ_ONLY)
        return fn

    return add


def register_reader_tools(server: MCPServer[Any], service: WorkspaceService) -> None:
    """The workspace tools: read-only, closed-world, every path through one read policy."""
    calls = JournaledCalls(server, service)

    @read_only(server)
    async def list_roots(roots: ClientRoots) -> RootsResult:
        """List the served workspace roots (by name) and a summary of the read policy.

        Call this first: it says how to write paths for every other tool."""
        return await calls.run(roots, "list_roots", {}, service.list_roots)

    @read_only(server)
    async def list_directory(
        roots: ClientRoots, path: str = ".", limit: int = 200, cursor: str | None = None
    ) -> DirectoryListing:
        """List one folder: each entry's name, type and size.

        Entries the policy blocks are still listed, with `blocked` set to private, ignored,
        out-of-scope, binary or unreadable-type. Paginated: pass `next_cursor` back as `cursor`."""
        args = {"path": path, "limit": limit, "cursor": cursor}
        return await calls.run(
            roots, "list_directory", args, lambda: service.list_directory(path, limit, cursor)
        )

    @read_only(server)
    async def directory_tree(
        roots: ClientRoots, path: str = ".", max_depth: int = 3, max_entries: int = 500
    ) -> DirectoryTree:
        """A bounded recursive listing (depth 1-10, up to 5000 entries).

        Blocked folders are listed but not entered."""
        args = {"path": path, "max_depth": max_depth, "max_entries": max_entries}
        return await calls.run(
            roots,
            "directory_tree",
            args,
            lambda: service.directory_tree(path, max_depth, max_entries),
        )

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
