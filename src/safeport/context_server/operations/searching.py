"""Searching: file names by glob, and contents through the index or a bounded scan."""

from __future__ import annotations

import base64
import fnmatch
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

from safeport.context_server.index.sqlite_store import MAX_INDEXED_BYTES
from safeport.context_server.operations.base import Operations, clamp
from safeport.context_server.operations.tool_results import FileMatches, SearchHit, SearchResults
from safeport.context_server.policy.content_secrets import SecretFinder
from safeport.context_server.policy.display_names import masked_path
from safeport.context_server.policy.private_names import normalise
from safeport.context_server.policy.read_policy import InvalidInput, Refused, looks_binary
from safeport.context_server.workspace.model import ServedRoot
from safeport.context_server.workspace.walk import WalkedFile
from safeport.shared.secret_scan import find_secrets, redact_spans
from safeport.shared.text_lines import split_lines

MAX_QUERY_CHARS = 500
HITS_PER_FILE = 5
SNIPPET_CHARS = 200
# How long a search waits for the start-up check before it scans instead.
CATCH_UP_WAIT_S = 20.0
# Search cursors also name the method: index and scan walk files in different orders (the
# index in its own, a scan in path order), and resume after a position of that order.
_SEARCH_CURSOR = re.compile(r"q3\.([is])\.([0-9]{1,3})\.([A-Za-z0-9_-]{0,8000})")
_INDEX_POSITION = re.compile(r"[0-9]{1,19}")


@dataclass(frozen=True)
class Scope:
    """Where a listing or search runs: one root and a folder inside it."""

    root: ServedRoot
    parts: tuple[str, ...]
    index: int


class SearchOperations(Operations):
    """``search_files`` and ``search_project``."""

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
        return FileMatches(pattern=echoed(pattern), matches=matches, truncated=truncated)

    def search_project(
        self, query: str, path: str, limit: int, cursor: str | None
    ) -> SearchResults:
        limit = clamp(limit, 1, 200, 20)
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("invalid query: give the text to search for")
        if len(query) > MAX_QUERY_CHARS or "\x00" in query or "\n" in query:
            raise InvalidInput(f"invalid query: one line of at most {MAX_QUERY_CHARS} characters")
        if not query.isascii():
            try:
                query.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: no text holds it
                raise InvalidInput("invalid query: it holds a character no text can") from None
        scopes = self._scopes(path)
        self.index.refresh_in_background()
        # Rows from before this process speak for files as they were then: the index answers
        # once the start-up check has brought them up to date, a scan until then.
        use_index = len(query) >= 3 and self.index.ready and self.index.caught_up(CATCH_UP_WAIT_S)
        start_scope, after = 0, ""
        if cursor:
            use_index, start_scope, after = _parse_search_cursor(cursor)
            if use_index and (len(query) < 3 or not self.index.ready):
                raise InvalidInput("invalid cursor: it belongs to another query; start over")
            if start_scope >= len(scopes):
                raise InvalidInput("invalid cursor: it belongs to another search; start over")
        hits: list[SearchHit] = []
        next_cursor = None
        method = "i" if use_index else "s"
        deadline = time.monotonic() + self.scan_budget_s
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
            query=echoed(query),
            hits=hits,
            next_cursor=next_cursor,
            method="index" if use_index else "scan",
            index_state=self.index.state,
        )

    def _candidates(
        self, scope: Scope, query: str, after: str, use_index: bool
    ) -> Iterator[tuple[str, list[SearchHit] | None]]:
        """(position, hits) per candidate after the position ``after``: the index's candidates
        in its own order, a scan's files in path order; a scan's folders count as positions
        too (no hits), so a walk through empty folders still advances the cursor."""
        if use_index:
            prefix = "/".join(scope.parts)
            resume = int(after) if after else None
            for c in self.index.candidates(query, scope.root.name, prefix, resume):
                yield str(c.position), self._hits_in(scope.root, tuple(c.rel.split("/")), query)
            return
        walked = self.workspace.walk(
            scope.root,
            scope.parts,
            max_bytes=MAX_INDEXED_BYTES,
            after=tuple(after.split("/")) if after else None,
            folders=True,
            head_for=lambda _found: MAX_INDEXED_BYTES + 1,
        )
        for item in walked:
            rel = "/".join(item.parts)
            if isinstance(item, WalkedFile):
                shown = self.workspace.display(scope.root, item.parts)
                find = self.workspace.secrets.finder(scope.root.path)
                yield rel, _hits_in_text(shown, item.head, query, find)
            else:
                yield rel, None

    def _hits_in(self, root: ServedRoot, parts: tuple[str, ...], query: str) -> list[SearchHit]:
        """Re-check a candidate through the full gate, then find the query in its current text."""
        shown = self.workspace.display(root, parts)
        try:
            located = self.workspace.readable_file(shown)
            data = self.workspace.read_head(located, MAX_INDEXED_BYTES + 1)
        except Refused:
            return []
        return _hits_in_text(shown, data.data, query, self.workspace.secrets.finder(root.path))

    def _scopes(self, path: str) -> list[Scope]:
        folders = self._folders(path)
        by_root = {r.name: i for i, r in enumerate(self.workspace.roots)}
        return [Scope(f.root, f.parts, by_root[f.root.name]) for f in folders]


def _hits_in_text(
    shown: str, data: bytes | None, query: str, find: SecretFinder
) -> list[SearchHit]:
    # Only a file read whole is searched, as only such a file is indexed: the head of one grown
    # past the limit since (or while) it was walked ends where it was cut, and a secret torn
    # there is no longer whole enough to be recognised, though its first part would show.
    if data is None or len(data) > MAX_INDEXED_BYTES or looks_binary(data):
        return []
    needle = query.casefold()
    # Numbered as read_file's excerpts number them (only "\n" ends a line), so a hit's line is
    # the line an excerpt from that number starts with. Searched in the redacted text (the
    # marker keeps every line): no query confirms any part of a secret, whether the candidate
    # came from the index (which holds redacted text too) or from a scan of the files. A file
    # where the query is nowhere (as written, or as a marker's "[REDACTED") has no hit either
    # way and is not redacted: a scan looks at every file.
    text = data.decode("utf-8", "replace")
    folded = text.casefold()
    if needle not in folded and "redacted" not in needle and needle not in "[redacted:":
        return []
    spans = find(text)
    if spans:
        text, _ = redact_spans(text, spans)
        folded = text.casefold()
    if len(folded) == len(text):
        # Each character folds alone (``casefold`` looks at no neighbour) to at least one: a
        # folded text as long as the text folded every character to one and keeps every
        # index, so its matches are found in one pass, without folding each line apart.
        return _hits_at_same_indexes(shown, text, folded, needle, len(query))
    hits = []
    for number, line in enumerate(split_lines(text), 1):
        at = line.casefold().find(needle)
        if at < 0:
            continue
        hits.append(SearchHit(path=shown, line=number, snippet=_snippet(line, at, len(query))))
        if len(hits) >= HITS_PER_FILE:
            break
    return hits


def _hits_at_same_indexes(
    shown: str, text: str, folded: str, needle: str, length: int
) -> list[SearchHit]:
    """The lines of ``text`` whose ``folded`` copy (index for index) holds ``needle``, as the
    loop over each line finds them: the first match of a line, numbered as ``split_lines``
    counts (the needle holds no line break, and folding makes none)."""
    hits: list[SearchHit] = []
    number, counted = 1, 0
    at = folded.find(needle)
    while at >= 0 and len(hits) < HITS_PER_FILE:
        number += text.count("\n", counted, at)
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[start:end]
        hits.append(SearchHit(path=shown, line=number, snippet=_snippet(line, at - start, length)))
        counted = end
        at = folded.find(needle, end + 1)
    return hits


def _search_cursor(method: str, scope: int, after: str) -> str:
    position = base64.urlsafe_b64encode(after.encode("utf-8")).decode("ascii").rstrip("=")
    return f"q3.{method}.{scope}.{position}"


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
    use_index = m.group(1) == "i"
    if use_index and after and not _INDEX_POSITION.fullmatch(after):
        raise bad
    return use_index, int(m.group(2)), after


def _snippet(line: str, at: int, length: int) -> str:
    line = line.rstrip("\r")
    if len(line) <= SNIPPET_CHARS:
        return line.strip()
    start = max(0, min(at - (SNIPPET_CHARS - length) // 2, len(line) - SNIPPET_CHARS))
    piece = line[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(line) else "")


def echoed(text: str) -> str:
    """A client's pattern or query as a result repeats it: with each secret it spells (an agent
    searching for a token it saw elsewhere) replaced by its marker, as the journal keeps it."""
    return masked_path(redact_spans(text, find_secrets(text))[0])
