"""One path for every workspace tool call: run the operation, journal it, scrub what fails.

:class:`JournaledCalls` runs an operation and appends its record (served or refused);
:class:`JournaledServer` is the MCP server whose every call leaves a record, including calls the
SDK turns down before any tool body runs, and whose answers carry one serialisation of the
result (the structured content's JSON is also its text copy). The lean stdio transport answers
the bounded tools through :meth:`JournaledServer.call_direct`, the same guard without the SDK's
dispatch.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote, urlparse

import anyio.to_thread
from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, ListRootsResult, TextContent

from safeport.context_server import sdk_seam
from safeport.context_server.operations.reads_journal import CALL_RECORDED, bounded_text
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.operations.tool_results import MultipleFiles, ToolResult
from safeport.context_server.policy.content_secrets import UNREDACTED_ROOTS
from safeport.context_server.policy.display_names import display_name
from safeport.context_server.policy.read_policy import Refused
from safeport.errors import EnvironmentProblem, Error, JournalUnavailable

log = logging.getLogger(__name__)

ResultT = TypeVar("ResultT", bound=ToolResult)
T = TypeVar("T")

UNAVAILABLE = (
    "unavailable: the reads journal cannot be written, so nothing is served; check the audit folder"
)
INTERNAL = "internal error while reading the workspace; nothing was served"

# Tools whose work is bounded by one file or one page of one folder: they run on the event
# loop (a worker-thread hop costs more than the work). Walks, searches and anything that
# queries the index (which a refresh may hold for a moment) run on a worker thread, so the
# loop keeps reading (cancellations, other calls).
BOUNDED_TOOLS = frozenset(
    {"list_roots", "list_directory", "read_file", "read_file_excerpt", "get_file_info", "fetch"}
)

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


def without_client_roots(server: MCPServer[Any]) -> None:
    """Never ask this server's clients for their roots: a remote client's ``file://`` roots
    name folders on its own machine, and what it may see is its token's to say."""
    _KNOWN_ROOTS[server] = _NO_ROOTS


def known_roots(server: MCPServer[Any]) -> ListRootsResult | None:
    """The client's roots once a call has applied them; None before that."""
    return _KNOWN_ROOTS.get(server)


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
        # Tasks that run beside the session (a profile's watch), started by whoever serves it.
        self.background: list[Callable[[], Coroutine[Any, Any, None]]] = []

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        async def run() -> Any:
            # The raw return value: a result of ours is converted below, serialised once.
            return await sdk_seam.call_tool_raw(self, name, arguments, context)

        result = await self._guarded(name, arguments, run)
        if isinstance(result, ToolResult):
            return CallToolResult(
                content=[TextContent(type="text", text=result.wire_json())],
                structured_content=result.model_dump(mode="json"),
            )
        tool = sdk_seam.find_tool(self, name)
        if tool is None or isinstance(result, CallToolResult):
            return result
        return sdk_seam.convert_result(tool, result)  # another profile's tools, as the SDK does

    async def call_direct(
        self, name: str, arguments: dict[str, Any], run: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        """Run a tool body the transport called itself, under the same guard as
        :meth:`call_tool`; a ``ToolError`` carries the text the SDK would have sent."""
        return await self._guarded(name, arguments, sdk_seam.as_sdk_tool_call(name, run))

    async def _guarded(
        self, name: str, arguments: dict[str, Any], run: Callable[[], Awaitable[T]]
    ) -> T:
        marker: list[bool] = []
        token = CALL_RECORDED.set(marker)
        try:
            with self.service.index.requests.serving():  # the index's walk waits meanwhile
                return await run()
        except UnexpectedToolError:
            log.warning("tool %s crashed", bounded_text(name))
            self._record_unrecorded(marker, name, arguments, "internal")
            raise ToolError(INTERNAL) from None
        except ToolError:
            reason = "unknown-tool" if sdk_seam.find_tool(self, name) is None else "invalid"
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
        if tool in BOUNDED_TOOLS:
            return self._run(tool, dict(args), op)
        return await anyio.to_thread.run_sync(self._run, tool, dict(args), op)

    def _narrow(self, roots: ListRootsResult) -> None:
        """Apply the client's roots once. No file roots offered means no narrowing."""
        if self._narrowed:
            return
        self._narrowed = True
        paths = root_paths(roots)
        if paths:
            scope = self.service.workspace.narrow(paths)
            log.info("client roots narrow the workspace to %d folder(s)", len(scope))
        _KNOWN_ROOTS[self.server] = roots  # only now: a direct call must see the narrowed scope

    def _run(self, tool: str, args: Mapping[str, Any], op: Callable[[], ResultT]) -> ResultT:
        unredacted: set[str] = set()
        token = UNREDACTED_ROOTS.set(unredacted)
        try:
            return self._run_noted(tool, args, op, unredacted)
        finally:
            UNREDACTED_ROOTS.reset(token)

    def _run_noted(
        self, tool: str, args: Mapping[str, Any], op: Callable[[], ResultT], unredacted: set[str]
    ) -> ResultT:
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
            size = len(result.wire_json())  # what is sent must serialise; sent as serialised here
        except Exception as exc:
            log.warning("tool %s result failed to serialise: %s", tool, type(exc).__name__)
            self._record(tool, args, 0, "internal")
            raise ToolError(INTERNAL) from None
        extra: dict[str, object] = {}
        if isinstance(result, MultipleFiles):
            extra["refused_items"] = sum(1 for f in result.files if not f.ok)
        if unredacted:
            # Text from a root whose redaction the user turned off: said on every such record.
            extra["unredacted_roots"] = sorted(display_name(os.fsencode(r)) for r in unredacted)
        self._record(tool, args, size, None, extra or None)
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
