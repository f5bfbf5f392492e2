"""The workspace operations behind the tools: each takes plain arguments and returns a result model.

Every path goes through :class:`Workspace` (one gate for every tool); every number is clamped
to a sane range; every cursor is parsed strictly. Refusals are :class:`Refused` with a stable
sentence; the tool layer turns them into ``ToolError`` and journals them.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import hashlib
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from urllib.parse import quote, unquote

from safeport.context_server.changes import ChangeFeed
from safeport.context_server.excerpt import Position, read_excerpt
from safeport.context_server.index import SearchIndex
from safeport.context_server.index_store import MAX_INDEXED_BYTES
from safeport.context_server.journal import ReadsJournal
from safeport.context_server.listing import Entry
from safeport.context_server.policy import InvalidInput, Refused, looks_binary, refusal
from safeport.context_server.private_names import normalise
from safeport.context_server.request_path import parse_request_path
from safeport.context_server.results import (
    AuditEntry,
    AuditTrail,
    ChangeFeedPage,
    ChangeItem,
    DeepResearchDocument,
    DeepResearchItem,
    DeepResearchResults,
    DirectoryEntry,
    DirectoryListing,
    DirectoryTree,
    FileContent,
    FileExcerpt,
    FileInfo,
    FileMatches,
    Health,
    MultiFileItem,
    MultipleFiles,
    RootInfo,
    RootsResult,
    SearchHit,
    SearchResults,
    TreeEntry,
)
from safeport.context_server.walk import WalkedFile
from safeport.context_server.workspace import Located, ServedRoot, Workspace

URL_PREFIX = "safeport://workspace/file/"
MAX_QUERY_CHARS = 500
HITS_PER_FILE = 5
SNIPPET_CHARS = 200
SCAN_BUDGET_S = 5.0
_OFFSET_CURSOR = re.compile(r"o1\.([0-9]{1,3})\.([0-9]{1,9})")
# Search cursors also name the method: index and scan walk files in different orders.
_SEARCH_CURSOR = re.compile(r"q2\.([is])\.([0-9]{1,3})\.([A-Za-z0-9_-]{0,8000})")
_EXCERPT_CURSOR = re.compile(
    r"e1\.([0-9a-f]{1,16})\.([0-9a-f]{1,16})\.([0-9a-f]{1,20})\.([0-9]{1,12})\.([0-9]{1,10})"
    r"\.([0-9]{1,10})"
)


def clamp(value: object, low: int, high: int, default: int) -> int:
    """Numbers from a model are suggestions: out-of-range values are pulled into range."""
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return max(low, min(high, value))


@dataclass(frozen=True)
class _Scope:
    """Where a listing or search runs: one root and a folder inside it."""

    root: ServedRoot
    parts: tuple[str, ...]
    index: int


class WorkspaceService:
    """The reader profile's operations over one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        index: SearchIndex,
        feed: ChangeFeed,
        journal: ReadsJournal,
    ) -> None:
        self.workspace = workspace
        self.index = index
        self.feed = feed
        self.journal = journal

    @property
    def policy(self) -> dict[str, object]:
        return self.workspace.policy.summary()

    # -- roots and folders --------------------------------------------------------------------

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

    def list_directory(self, path: str, limit: int, cursor: str | None) -> DirectoryListing:
        limit = clamp(limit, 1, 1000, 200)
        offset = _parse_offset(cursor)[1] if cursor else 0
        if self._is_virtual_top(path):
            every = [DirectoryEntry(name=r.name, type="directory") for r in self.workspace.roots]
            page, total = every[offset : offset + limit], len(every)
        else:
            located = self.workspace.locate(path)
            folder = self.workspace.list_folder(located, offset, limit)
            page = [_listed(e) for e in folder.entries]
            total = folder.total
        more = offset + limit < total
        return DirectoryListing(
            path=path,
            entries=page,
            next_cursor=f"o1.0.{offset + limit}" if more else None,
            total_entries=total,
        )

    def directory_tree(self, path: str, max_depth: int, max_entries: int) -> DirectoryTree:
        max_depth = clamp(max_depth, 1, 10, 3)
        max_entries = clamp(max_entries, 1, 5000, 500)
        out: list[TreeEntry] = []
        truncated = False
        stack: list[tuple[Located, int]] = [(loc, 1) for loc in reversed(self._folders(path))]
        while stack:
            folder, depth = stack.pop()
            children: list[tuple[Located, int]] = []
            # Only as many entries as the tree still has room for (plus one, to know).
            room = max_entries - len(out) + 1
            for e in self.workspace.list_folder(folder, 0, room).entries:
                if len(out) >= max_entries:
                    truncated = True
                    break
                child_path = self.workspace.display(folder.root, (*folder.parts, e.name))
                out.append(
                    TreeEntry(
                        path=child_path,
                        type=e.type,
                        depth=depth,
                        size=e.size or 0,
                        blocked=e.blocked or "",
                    )
                )
                if e.type == "directory" and e.blocked is None and depth < max_depth:
                    try:
                        children.append((self.workspace.locate(child_path), depth + 1))
                    except Refused:
                        continue
            if truncated:
                break
            stack.extend(reversed(children))
        return DirectoryTree(
            path=path,
            entries=out,
            truncated=truncated,
            max_depth=max_depth,
            max_entries=max_entries,
        )

    # -- files --------------------------------------------------------------------------------

    def read_file(self, path: str) -> FileContent:
        located = self.workspace.readable_file(path)
        cap = self.workspace.policy.max_read_bytes
        read = self.workspace.read_head(located, cap + 1)
        data = read.data
        truncated = len(data) > cap
        if truncated:
            data = data[:cap]
            cut = data.rfind(b"\n")
            if cut >= cap // 2:
                data = data[: cut + 1]  # whole lines read better than a torn one
        text = data.decode("utf-8", "replace")
        next_line = data.count(b"\n") + 1 if truncated else None
        hint = (
            f"the file is {read.total_bytes} bytes; this is the first {len(data)}. "
            f"Continue with read_file_excerpt(path, start_line={next_line})."
            if truncated
            else None
        )
        return FileContent(
            path=path,
            text=text,
            truncated=truncated,
            total_bytes=read.total_bytes,
            served_bytes=len(data),
            next_line=next_line,
            hint=hint,
        )

    def read_file_excerpt(
        self,
        path: str,
        start_line: int,
        max_lines: int,
        start_column: int,
        cursor: str | None = None,
    ) -> FileExcerpt:
        start_line = clamp(start_line, 1, 10**9, 1)
        max_lines = clamp(max_lines, 1, 2000, 200)
        start_column = clamp(start_column, 1, 10**9, 1)
        located = self.workspace.readable_file(path)
        origin = Position(0, 1, 1)
        if cursor:
            origin = _parse_excerpt_cursor(cursor, located, start_line, start_column)
        with contextlib.closing(self.workspace.iter_chunks(located, start=origin.offset)) as chunks:
            found = read_excerpt(
                chunks,
                size=located.st.st_size,
                origin=origin,
                line=start_line,
                column=start_column,
                max_lines=max_lines,
                max_chars=self.workspace.policy.max_read_bytes,
            )
        nxt = found.next
        hint = None
        if not found.reached:
            hint = (
                f"scanned up to line {nxt.line if nxt else start_line} without reaching line "
                f"{start_line}, column {start_column}; call again with the same arguments and "
                "cursor=next_cursor to continue from there"
            )
        return FileExcerpt(
            path=path,
            start_line=start_line,
            start_column=start_column,
            lines=found.lines,
            end_of_file=found.end_of_file,
            next_line=(nxt.line if found.reached else start_line) if nxt else None,
            next_column=(
                (nxt.column if found.reached else start_column)
                if nxt and (nxt.column > 1 or not found.reached)
                else None
            ),
            next_cursor=_excerpt_cursor(located, nxt) if nxt else None,
            hint=hint,
        )

    def read_multiple_files(self, paths: Sequence[str]) -> MultipleFiles:
        if not isinstance(paths, list) or not paths:
            raise InvalidInput("invalid paths: give a non-empty list of paths")
        if len(paths) > 50:
            raise InvalidInput("invalid paths: at most 50 paths per call")
        items = []
        for path in paths:
            try:
                items.append(MultiFileItem(path=path, ok=True, content=self.read_file(path)))
            except Refused as exc:
                shown = "<private>" if exc.reason == "private" else path[:300]
                items.append(MultiFileItem(path=shown, ok=False, error=str(exc)))
        return MultipleFiles(files=items)

    def get_file_info(self, path: str, sha256: bool) -> FileInfo:
        located = self.workspace.locate(path)
        st = located.st
        if located.kind == "other" or (located.kind == "file" and st.st_nlink != 1):
            raise refusal("unreadable-type")
        blocked = None
        if located.kind == "file":
            blocked = self.workspace.policy.type_verdict(located.parts[-1])
            request = parse_request_path(path, self.workspace.root_names)
            if blocked is None and request.parts:
                blocked = self.workspace.policy.type_verdict(request.parts[-1])
        digest = None
        if sha256 and located.kind == "file":
            if blocked is not None:
                raise refusal(blocked)
            digest = self._sha256(located)
        return FileInfo(
            path=path,
            type=located.kind,
            size=st.st_size,
            modified=_iso(st.st_mtime_ns) or "",
            changed=_iso(st.st_ctime_ns) or "",
            created=_iso(getattr(st, "st_birthtime_ns", None)),
            readable=located.kind == "file" and blocked is None,
            blocked=blocked,
            sha256=digest,
        )

    def _sha256(self, located: Located) -> str:
        h = hashlib.sha256()
        with self.workspace.open_checked(located) as (fd, size):
            if size > self.workspace.policy.max_file_bytes:
                raise refusal("too-large")
            offset = 0
            while offset < size and (block := os.pread(fd, min(1 << 20, size - offset), offset)):
                h.update(block)  # never past the size at open: a growing file is not chased
                offset += len(block)
        return h.hexdigest()

    # -- search -------------------------------------------------------------------------------

    def search_files(self, pattern: str, path: str, limit: int) -> FileMatches:
        limit = clamp(limit, 1, 1000, 200)
        if not isinstance(pattern, str) or not pattern or len(pattern) > 300 or "\x00" in pattern:
            raise InvalidInput("invalid pattern: give a glob such as '*.py' or 'src/**/test_*.py'")
        folded = normalise(pattern)
        by_path = "/" in pattern
        matches: list[str] = []
        truncated = False
        for scope in self._scopes(path):
            for found in self.workspace.walk_files(scope.root, scope.parts):
                rel = "/".join(found.parts[len(scope.parts) :])
                subject = normalise(rel if by_path else found.parts[-1])
                if fnmatch.fnmatchcase(subject, folded) or (
                    by_path and fnmatch.fnmatchcase(subject, folded.replace("**/", ""))
                ):
                    if len(matches) >= limit:
                        truncated = True
                        break
                    matches.append(self.workspace.display(scope.root, found.parts))
            if truncated:
                break
        return FileMatches(pattern=pattern, matches=matches, truncated=truncated)

    def search_project(
        self, query: str, path: str, limit: int, cursor: str | None
    ) -> SearchResults:
        limit = clamp(limit, 1, 200, 20)
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("invalid query: give the text to search for")
        if len(query) > MAX_QUERY_CHARS or "\x00" in query or "\n" in query:
            raise InvalidInput(f"invalid query: one line of at most {MAX_QUERY_CHARS} characters")
        scopes = self._scopes(path)
        use_index = len(query) >= 3 and self.index.ready
        start_scope, after = 0, ""
        if cursor:
            use_index, start_scope, after = _parse_search_cursor(cursor)
            if use_index and (len(query) < 3 or not self.index.ready):
                raise InvalidInput("invalid cursor: it belongs to another query; start over")
            if start_scope >= len(scopes):
                raise InvalidInput("invalid cursor: it belongs to another search; start over")
        self.index.refresh_in_background()
        hits: list[SearchHit] = []
        next_cursor = None
        method = "i" if use_index else "s"
        deadline = time.monotonic() + SCAN_BUDGET_S
        progressed = False
        for number in range(start_scope, len(scopes)):
            scope = scopes[number]
            resume = after if number == start_scope else ""
            last = resume
            for rel, found in self._candidates(scope, query, resume, use_index):
                # Checked before each candidate, and only once one was handled: every call
                # moves the cursor forward, however slow the disk or short the budget.
                if progressed and (len(hits) >= limit or time.monotonic() > deadline):
                    next_cursor = _search_cursor(method, number, last)
                    break
                progressed = True
                last = rel
                if found is not None:
                    hits.extend(found)
            if next_cursor:
                break
        return SearchResults(
            query=query,
            hits=hits,
            next_cursor=next_cursor,
            method="index" if use_index else "scan",
            index_state=self.index.state,
        )

    def _candidates(
        self, scope: _Scope, query: str, after: str, use_index: bool
    ) -> Iterator[tuple[str, list[SearchHit] | None]]:
        """(position, hits) per candidate in path order after ``after``; folders count as
        positions too (no hits), so a walk through empty folders still advances the cursor."""
        if use_index:
            prefix = "/".join(scope.parts)
            for c in self.index.candidates(query, scope.root.name, prefix, after):
                yield c.rel, self._hits_in(scope.root, tuple(c.rel.split("/")), query)
            return
        walked = self.workspace.walk(
            scope.root,
            scope.parts,
            max_bytes=MAX_INDEXED_BYTES,
            after=tuple(after.split("/")) if after else None,
            folders=True,
            head_for=lambda _found: MAX_INDEXED_BYTES,
        )
        for item in walked:
            rel = "/".join(item.parts)
            if isinstance(item, WalkedFile):
                shown = self.workspace.display(scope.root, item.parts)
                yield rel, _hits_in_text(shown, item.head, query)
            else:
                yield rel, None

    def _hits_in(self, root: ServedRoot, parts: tuple[str, ...], query: str) -> list[SearchHit]:
        """Re-check a candidate through the full gate, then find the query in its current text."""
        shown = self.workspace.display(root, parts)
        try:
            located = self.workspace.readable_file(shown)
            data = self.workspace.read_head(located, MAX_INDEXED_BYTES)
        except Refused:
            return []
        return _hits_in_text(shown, data.data, query)

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
            },
        )

    # -- feed, audit, health ------------------------------------------------------------------

    def get_recent_changes(self, cursor: str | None, limit: int) -> ChangeFeedPage:
        limit = clamp(limit, 1, 500, 50)
        page = self.feed.page(cursor, limit)
        changes = [
            ChangeItem(seq=c.seq, kind=c.kind, path=c.path, modified=_iso(c.mtime_ns), size=c.size)
            for c in page.changes
            if not self.path_is_private(c.path)  # re-checked when served
        ]
        return ChangeFeedPage(changes=changes, cursor=page.cursor, more=page.more, reset=page.reset)

    def get_audit_trail(
        self, limit: int, origin: str | None, tool: str | None, only_denied: bool
    ) -> AuditTrail:
        limit = clamp(limit, 1, 1000, 50)
        records = self.journal.trail(10_000)
        entries = []
        for rec in reversed(records):
            body = rec.get("body")
            if not isinstance(body, dict):
                continue
            if not self.journal.is_ours(body):
                continue  # another workspace's reads: its paths and queries are not ours to show
            if origin is not None and body.get("origin") != origin:
                continue
            if tool is not None and body.get("tool") != tool:
                continue
            if only_denied and not body.get("denied"):
                continue
            args = body.get("args")
            entries.append(
                AuditEntry(
                    seq=rec.get("seq"),
                    time=rec.get("ts"),
                    origin=body.get("origin"),
                    tool=body.get("tool"),
                    args=args if isinstance(args, dict) else None,
                    bytes=body.get("bytes"),
                    denied=body.get("denied"),
                    reason=body.get("reason"),
                )
            )
            if len(entries) >= limit:
                break
        return AuditTrail(entries=entries)

    def get_health(self) -> Health:
        counts = self.index.counts()
        return Health(
            status="ok" if self.index.last_error is None else "degraded",
            roots=len(self.workspace.roots),
            index_state=self.index.state,
            index_files=counts["files"],
            index_bytes=counts["bytes"],
            index_last_refresh=(
                datetime.fromtimestamp(self.index.last_refresh, UTC).isoformat()
                if self.index.last_refresh
                else None
            ),
            index_error=self.index.last_error,
            journal_records_written=self.journal.head_seq,
            policy=self.policy,
            instance=self.feed.instance,
        )

    # -- privacy of names (for the journal) ---------------------------------------------------

    def path_is_private(self, text: str) -> bool:
        """Whether a requested path names, or leads to, something private. Never raises."""
        policy = self.workspace.policy
        raw = [p for p in re.split(r"[/\\]", text[:5000]) if p]
        if any(policy.is_private_name(p) for p in raw):
            return True
        try:
            request = parse_request_path(text, self.workspace.root_names)
        except Refused:
            return False
        roots = [r for r in self.workspace.roots if r.name == request.root]
        if not roots:
            return False
        literal = "/".join((str(roots[0].path), *request.parts))
        if policy.is_private(request.parts, literal):
            return True
        try:
            home, parts, _ = self.workspace.resolve(roots[0], request.parts)
        except Refused as exc:
            return exc.reason == "private"
        except OSError:
            return True  # unknown: say less rather than more
        return policy.is_private(parts, "/".join((str(home.path), *parts)))

    # -- helpers ------------------------------------------------------------------------------

    def _is_virtual_top(self, path: str) -> bool:
        if len(self.workspace.roots) == 1:
            return False
        request = parse_request_path(path, self.workspace.root_names)
        return not request.root

    def _folders(self, path: str) -> list[Located]:
        if self._is_virtual_top(path):
            return [self.workspace.locate(r.name) for r in self.workspace.roots]
        located = self.workspace.locate(path)
        if located.kind != "directory":
            raise refusal("not-a-folder")
        return [located]

    def _scopes(self, path: str) -> list[_Scope]:
        folders = self._folders(path)
        by_root = {r.name: i for i, r in enumerate(self.workspace.roots)}
        return [_Scope(f.root, f.parts, by_root[f.root.name]) for f in folders]


def _listed(e: Entry) -> DirectoryEntry:
    return DirectoryEntry(name=e.name, type=e.type, size=e.size or 0, blocked=e.blocked or "")


def _hits_in_text(shown: str, data: bytes | None, query: str) -> list[SearchHit]:
    if data is None or looks_binary(data):
        return []
    needle = query.casefold()
    hits = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        at = line.casefold().find(needle)
        if at < 0:
            continue
        hits.append(SearchHit(path=shown, line=number, snippet=_snippet(line, at, len(query))))
        if len(hits) >= HITS_PER_FILE:
            break
    return hits


def _search_cursor(method: str, scope: int, after: str) -> str:
    position = base64.urlsafe_b64encode(after.encode("utf-8")).decode("ascii").rstrip("=")
    return f"q2.{method}.{scope}.{position}"


def _parse_search_cursor(cursor: object) -> tuple[bool, int, str]:
    bad = InvalidInput(
        "invalid cursor: pass back a next_cursor value exactly, or omit it to start over"
    )
    if not isinstance(cursor, str) or not (m := _SEARCH_CURSOR.fullmatch(cursor)):
        raise bad
    encoded = m.group(3)
    try:
        after = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise bad from None
    return m.group(1) == "i", int(m.group(2)), after


def _excerpt_cursor(located: Located, at: Position) -> str:
    st = located.st
    return f"e1.{st.st_dev:x}.{st.st_ino:x}.{st.st_mtime_ns:x}.{at.offset}.{at.line}.{at.column}"


def _parse_excerpt_cursor(
    cursor: object, located: Located, start_line: int, start_column: int
) -> Position:
    if not isinstance(cursor, str) or not (m := _EXCERPT_CURSOR.fullmatch(cursor)):
        raise InvalidInput(
            "invalid cursor: pass back a next_cursor value exactly, or omit it to start over"
        )
    st = located.st
    if (int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16)) != (
        st.st_dev,
        st.st_ino,
        st.st_mtime_ns,
    ):
        raise InvalidInput("invalid cursor: the file changed since; start over without a cursor")
    at = Position(int(m.group(4)), int(m.group(5)), int(m.group(6)))
    if at.offset > st.st_size or (at.line, at.column) > (start_line, start_column):
        raise InvalidInput("invalid cursor: it points past the requested line and column")
    return at


def _parse_offset(cursor: object) -> tuple[int, int]:
    if not isinstance(cursor, str) or not (m := _OFFSET_CURSOR.fullmatch(cursor)):
        raise InvalidInput(
            "invalid cursor: pass back a next_cursor value exactly, or omit it to start over"
        )
    return int(m.group(1)), int(m.group(2))


def _snippet(line: str, at: int, length: int) -> str:
    line = line.rstrip("\r")
    if len(line) <= SNIPPET_CHARS:
        return line.strip()
    start = max(0, min(at - (SNIPPET_CHARS - length) // 2, len(line) - SNIPPET_CHARS))
    piece = line[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(line) else "")


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="seconds")
