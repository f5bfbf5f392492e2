"""Files: the head of a file, an excerpt that continues by cursor, several files, file info."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Sequence

from safeport.context_server.operations.base import Operations, clamp, iso_time
from safeport.context_server.operations.excerpt import Position, read_excerpt
from safeport.context_server.operations.redacting import (
    LOOKAHEAD_BYTES,
    SecretWatch,
    redact_excerpt,
    redact_head,
    redactions,
)
from safeport.context_server.operations.tool_results import (
    FileContent,
    FileExcerpt,
    FileInfo,
    MultiFileItem,
    MultipleFiles,
)
from safeport.context_server.policy.display_names import masked_path
from safeport.context_server.policy.read_policy import InvalidInput, Refused, refusal
from safeport.context_server.policy.request_path import parse_request_path
from safeport.context_server.workspace.model import Located

_EXCERPT_CURSOR = re.compile(
    r"e1\.([0-9a-f]{1,16})\.([0-9a-f]{1,16})\.([0-9a-f]{1,20})\.([0-9]{1,12})\.([0-9]{1,10})"
    r"\.([0-9]{1,10})"
)


class ReadingOperations(Operations):
    """``read_file``, ``read_file_excerpt``, ``read_multiple_files`` and ``get_file_info``."""

    def read_file(self, path: str) -> FileContent:
        located = self.workspace.readable_file(path)
        cap = self.workspace.policy.max_read_bytes
        read = self.workspace.read_head(located, cap + 1 + LOOKAHEAD_BYTES)
        data = read.data
        truncated = len(data) > cap
        if truncated:
            data = data[:cap]
            cut = data.rfind(b"\n")
            if cut >= cap // 2:
                data = data[: cut + 1]  # whole lines read better than a torn one
        find = self.workspace.secrets.finder(located.root.path)
        text, findings = redact_head(read.data, data, find)
        self.secrets_redacted += len(findings)
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
            redacted=len(findings),
            redactions=redactions(findings),
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
        lines, withheld = redact_excerpt(
            found.lines,
            found.ranges,
            start_line,
            lambda a, b: self._window(located, a, b),
            self.workspace.secrets.finder(located.root.path),
        )
        self.secrets_redacted += len(withheld)
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
            lines=lines,
            end_of_file=found.end_of_file,
            next_line=(nxt.line if found.reached else start_line) if nxt else None,
            next_column=(
                (nxt.column if found.reached else start_column)
                if nxt and (nxt.column > 1 or not found.reached)
                else None
            ),
            next_cursor=_excerpt_cursor(located, nxt) if nxt else None,
            hint=hint,
            redacted=len(withheld),
            redactions=withheld,
        )

    def _window(self, located: Located, start: int, end: int) -> bytes:
        """The file's bytes [start, end) (fewer at its end): the context of an excerpt."""
        blocks: list[bytes] = []
        got = 0
        chunks = self.workspace.iter_chunks(located, 1 << 16, start=start)
        with contextlib.closing(chunks):
            for block in chunks:
                blocks.append(block[: end - start - got])
                got += len(blocks[-1])
                if got >= end - start:
                    break
        return b"".join(blocks)

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
                # A refused path is echoed as the server shows names: one spelled with a
                # secret (refused for that) comes back with the marker in its place.
                shown = "<private>" if exc.reason == "private" else masked_path(path[:4096])[:300]
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
            modified=iso_time(st.st_mtime_ns) or "",
            changed=iso_time(st.st_ctime_ns) or "",
            created=iso_time(getattr(st, "st_birthtime_ns", None)),
            readable=located.kind == "file" and blocked is None,
            blocked=blocked,
            sha256=digest,
        )

    def _sha256(self, located: Located) -> str:
        h = hashlib.sha256()
        # The hash of a file holding a secret confirms a guess of that secret (a short password
        # beside text the agent has read): it is refused, as the secret itself is withheld.
        watch = SecretWatch(self.workspace.secrets.finder(located.root.path))
        with self.workspace.open_checked(located) as (fd, size):
            if size > self.workspace.policy.max_file_bytes:
                raise refusal("too-large")
            offset = 0
            while offset < size and (block := os.pread(fd, min(1 << 20, size - offset), offset)):
                h.update(block)  # never past the size at open: a growing file is not chased
                watch.feed(block)
                offset += len(block)
        watch.feed(b"", last=True)
        if watch.found:
            raise refusal("holds-secret")
        return h.hexdigest()


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
