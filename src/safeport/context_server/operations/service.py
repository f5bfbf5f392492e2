"""The reader profile's operations over one workspace, put together from their groups.

Each operation takes plain arguments and returns a result model; every number is clamped and
every cursor parsed strictly (see :mod:`operations`). Listings are in :mod:`folders`, reads in
:mod:`reading`, searches in :mod:`searching`, the feed, trail and health in :mod:`feeds`; the
roots and the Deep Research pair (``search``/``fetch``, over a search and a read) are here.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import quote, unquote

from safeport.context_server.operations.activity import FeedOperations
from safeport.context_server.operations.folders import FolderOperations
from safeport.context_server.operations.reading import ReadingOperations
from safeport.context_server.operations.searching import SearchOperations
from safeport.context_server.operations.tool_results import (
    DeepResearchDocument,
    DeepResearchItem,
    DeepResearchResults,
    RootInfo,
    RootsResult,
)

URL_PREFIX = "safeport://workspace/file/"


class WorkspaceService(FolderOperations, ReadingOperations, SearchOperations, FeedOperations):
    """The reader profile's operations over one workspace."""

    def close(self) -> None:
        """The index first: its walk is stopped and joined before the watch it uses closes;
        then the journal, which writes and fsyncs the records still queued."""
        self.index.close()
        self.journal.close()

    def list_roots(self) -> RootsResult:
        many = len(self.workspace.roots) > 1
        rules = (
            "Paths are relative; start each path with a root name from this list."
            if many
            else 'Paths are relative to the root ("." is the root itself).'
        )
        rules += " Absolute paths, '..', backslashes and control characters are refused."
        return RootsResult(
            roots=[RootInfo(name=r.name) for r in self.workspace.roots],
            path_rules=rules,
            policy=self.policy,
        )

    def search(self, query: str) -> DeepResearchResults:
        found = self.search_project(query, ".", 50, None)
        seen: dict[str, DeepResearchItem] = {}
        for hit in found.hits:
            if hit.path not in seen:
                seen[hit.path] = DeepResearchItem(
                    id=hit.path,
                    title=f"{hit.path} (line {hit.line}): {hit.snippet[:80]}",
                    url=URL_PREFIX + quote(hit.path),
                )
        return DeepResearchResults(results=list(seen.values())[:20])

    def fetch(self, id: str) -> DeepResearchDocument:
        if isinstance(id, str) and id.startswith(URL_PREFIX):
            id = unquote(id[len(URL_PREFIX) :])
        content = self.read_file(id)
        return DeepResearchDocument(
            id=id,
            title=PurePosixPath(id).name or id,
            text=content.text,
            url=URL_PREFIX + quote(id),
            metadata={
                "total_bytes": content.total_bytes,
                "served_bytes": content.served_bytes,
                "truncated": content.truncated,
                "redacted": content.redacted,
                "redacted_lines": sorted({r.line for r in content.redactions}),
            },
        )
