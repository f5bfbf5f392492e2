"""Excerpts of a text file by line and column, in bounded memory and bounded work per call.

The scan moves through the file in chunks and keeps only the characters it will serve, so the
memory a call needs does not depend on ``start_column`` (a 60 MiB line costs one chunk). Lines
before ``start_line`` are skipped by counting newlines in C; columns before ``start_column`` by
decoding one chunk at a time. A call scans at most :data:`SCAN_BUDGET_BYTES` before the excerpt
starts; when that is not enough it returns no lines and a :class:`Position` to resume from, so
the next call continues where this one stopped instead of starting over. Columns count code
points; a byte that is not UTF-8 counts as one column and is served as U+FFFD.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MAX_LINE_CHARS = 2000
SCAN_BUDGET_BYTES = 8 << 20
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class Position:
    """Byte ``offset`` of the file is where column ``column`` of line ``line`` begins."""

    offset: int
    line: int
    column: int


@dataclass(frozen=True)
class Excerpt:
    lines: list[str]
    end_of_file: bool
    next: Position | None  # where the next excerpt starts; None at the end of the file
    reached: bool  # False: the scan budget ran out before the excerpt's start
    # The file's bytes [start, end) each line was decoded from: what redaction looks around.
    ranges: tuple[tuple[int, int], ...] = ()


def read_excerpt(
    chunks: Iterable[bytes],
    *,
    size: int,
    origin: Position,
    line: int,
    column: int,
    max_lines: int,
    max_chars: int,
    budget: int = SCAN_BUDGET_BYTES,
) -> Excerpt:
    """Lines from (``line``, ``column``), reading ``chunks`` (the file from ``origin.offset``)."""
    scan = _Scan(origin, line, column, max_lines, max_chars, size)
    scanned = 0
    offset = origin.offset
    for base, block in _whole_characters(chunks, origin.offset):
        stop = scan.block(base, block)
        if stop is not None:
            return stop
        offset = base + len(block)
        if not scan.collecting:
            scanned += len(block)
            if scanned >= budget and offset < size:
                return Excerpt([], False, Position(offset, scan.cur_line, scan.cur_col), False)
    return scan.finish(offset)


class _Scan:
    """One excerpt's scan: where it is in the file (line and column), and what it has kept.

    Before the excerpt starts it skips whole lines, then columns of the start line; from there
    it collects text, one served line at a time, until a line, character or length bound."""

    __slots__ = (
        "collecting",
        "column",
        "cur_col",
        "cur_line",
        "line",
        "lines",
        "max_chars",
        "max_lines",
        "piece",
        "piece_at",
        "piece_col",
        "piece_len",
        "ranges",
        "served",
        "size",
    )

    def __init__(
        self, origin: Position, line: int, column: int, max_lines: int, max_chars: int, size: int
    ) -> None:
        self.line, self.column = line, column
        self.max_lines, self.max_chars, self.size = max_lines, max_chars, size
        self.cur_line, self.cur_col = origin.line, origin.column
        self.lines: list[str] = []
        self.ranges: list[tuple[int, int]] = []
        # The line being collected: its text so far, where it starts and at which column.
        self.piece: list[str] = []
        self.piece_at = origin.offset
        self.piece_len = 0
        self.piece_col = column
        self.collecting = self.cur_line > line or (self.cur_line == line and self.cur_col >= column)
        self.served = 0

    def block(self, base: int, block: bytes) -> Excerpt | None:
        """Scan one block (at file offset ``base``); the excerpt if it ends inside it."""
        i = 0
        size_b = len(block)
        while i < size_b:
            if not self.collecting and self.cur_line < self.line:
                i = self._skip_lines(base, block, i)
                continue
            nl = block.find(b"\n", i)
            end = nl if nl >= 0 else size_b
            text = block[i:end].decode("utf-8", "surrogateescape")
            if not self.collecting:
                i, stop = self._skip_columns(base, i, text, nl, end)
            else:
                i, stop = self._collect(base, i, text, nl, end)
            if stop is not None:
                return stop
        return None

    def _skip_lines(self, base: int, block: bytes, i: int) -> int:
        """Past the lines before the excerpt's line, counting newlines in C."""
        missing = self.line - self.cur_line
        count = block.count(b"\n", i)
        if count < missing:
            self.cur_line += count
            return len(block)
        for _ in range(missing):
            i = block.index(b"\n", i) + 1
        self.cur_line, self.cur_col = self.line, 1
        self.collecting = self.column <= 1
        self.piece_at = base + i
        return i

    def _skip_columns(
        self, base: int, i: int, text: str, nl: int, end: int
    ) -> tuple[int, Excerpt | None]:
        """Past the columns before the excerpt's column, on its first line."""
        need = self.column - self.cur_col
        if len(text) < need or (len(text) == need and nl >= 0):
            self.cur_col += len(text)
            if nl < 0:
                return end, None
            # The line ends before the column: it shows as empty, and the excerpt goes on
            # with the next line.
            self.collecting = True
            self.piece_col = self.column
            self.lines.append("")
            self.ranges.append((base + nl, base + nl))
            self.cur_line, self.cur_col = self.cur_line + 1, 1
            i = nl + 1
            self.piece_at = base + i
            if len(self.lines) >= self.max_lines:
                return i, self._stopped(Position(base + i, self.cur_line, 1))
            return i, None
        i += len(text[:need].encode("utf-8", "surrogateescape"))
        self.cur_col = self.column
        self.collecting = True
        self.piece_col = self.column
        self.piece_at = base + i
        return i, None

    def _collect(
        self, base: int, i: int, text: str, nl: int, end: int
    ) -> tuple[int, Excerpt | None]:
        """Keep ``text`` (up to the next newline) for the line being served."""
        room = MAX_LINE_CHARS - self.piece_len
        if len(text) > room or (len(text) == room and nl < 0 and base + end < self.size):
            # The line is longer than one served line: cut it, and resume in it next time.
            taken = text[:room]
            self.piece.append(taken)
            self.lines.append(_served("".join(self.piece)))
            cut = i + len(taken.encode("utf-8", "surrogateescape"))
            self.ranges.append((self.piece_at, base + cut))
            at = Position(base + cut, self.cur_line, self.piece_col + MAX_LINE_CHARS)
            return i, Excerpt(self.lines, False, at, True, tuple(self.ranges))
        self.piece.append(text)
        self.piece_len += len(text)
        self.served += len(text)
        if nl < 0:
            return end, None
        self.lines.append(_served("".join(self.piece)))
        self.ranges.append((self.piece_at, base + nl))
        self.piece, self.piece_len = [], 0
        self.cur_line, self.cur_col, self.piece_col = self.cur_line + 1, 1, 1
        i = nl + 1
        self.piece_at = base + i
        if len(self.lines) >= self.max_lines or self.served >= self.max_chars:
            return i, self._stopped(Position(base + i, self.cur_line, 1))
        return i, None

    def _stopped(self, at: Position) -> Excerpt:
        return _stopped(self.lines, self.ranges, at, self.size)

    def finish(self, offset: int) -> Excerpt:
        """The excerpt when the file ended (at ``offset``) before any bound was reached."""
        if self.piece_len or (self.collecting and self.piece):
            self.lines.append(_served("".join(self.piece)))
            self.ranges.append((self.piece_at, offset))
        return Excerpt(self.lines, True, None, True, tuple(self.ranges))


def _stopped(lines: list[str], ranges: list[tuple[int, int]], at: Position, size: int) -> Excerpt:
    if at.offset >= size:
        return Excerpt(lines, True, None, True, tuple(ranges))
    return Excerpt(lines, False, at, True, tuple(ranges))


def _served(text: str) -> str:
    return _ESCAPED_BYTE.sub("\ufffd", text)


def _whole_characters(chunks: Iterable[bytes], start: int) -> Iterator[tuple[int, bytes]]:
    """(offset, block) with no UTF-8 character split between two blocks."""
    carry = b""
    base = start
    for chunk in chunks:
        block = carry + chunk
        cut = _incomplete_tail(block)
        carry = block[cut:]
        if cut:
            yield base, block[:cut]
            base += cut
    if carry:
        yield base, carry


def _incomplete_tail(block: bytes) -> int:
    """Where a trailing, unfinished UTF-8 sequence starts (len(block) when there is none)."""
    size = len(block)
    for back in range(1, min(4, size) + 1):
        byte = block[size - back]
        if byte < 0x80:
            return size
        if byte >= 0xC0:
            width = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return size - back if width > back else size
    return size
