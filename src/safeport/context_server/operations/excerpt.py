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
    cur_line, cur_col = origin.line, origin.column
    lines: list[str] = []
    ranges: list[tuple[int, int]] = []
    piece: list[str] = []
    piece_at = origin.offset
    piece_len = 0
    piece_col = column
    collecting = cur_line > line or (cur_line == line and cur_col >= column)
    served = 0
    scanned = 0
    offset = origin.offset
    for base, block in _whole_characters(chunks, origin.offset):
        i = 0
        size_b = len(block)
        while i < size_b:
            if not collecting and cur_line < line:
                missing = line - cur_line
                count = block.count(b"\n", i)
                if count < missing:
                    cur_line += count
                    i = size_b
                    break
                for _ in range(missing):
                    i = block.index(b"\n", i) + 1
                cur_line, cur_col = line, 1
                collecting = column <= 1
                piece_at = base + i
                continue
            nl = block.find(b"\n", i)
            end = nl if nl >= 0 else size_b
            text = block[i:end].decode("utf-8", "surrogateescape")
            if not collecting:
                need = column - cur_col
                if len(text) < need or (len(text) == need and nl >= 0):
                    cur_col += len(text)
                    i = end
                    if nl >= 0:
                        # The line ends before the column: it shows as empty, and the
                        # excerpt goes on with the next line.
                        collecting = True
                        piece_col = column
                        lines.append("")
                        ranges.append((base + nl, base + nl))
                        cur_line, cur_col = cur_line + 1, 1
                        i = nl + 1
                        piece_at = base + i
                        if len(lines) >= max_lines:
                            return _stopped(lines, ranges, Position(base + i, cur_line, 1), size)
                    continue
                i += len(text[:need].encode("utf-8", "surrogateescape"))
                cur_col = column
                collecting = True
                piece_col = column
                piece_at = base + i
                continue
            room = MAX_LINE_CHARS - piece_len
            if len(text) > room or (len(text) == room and nl < 0 and base + end < size):
                taken = text[:room]
                piece.append(taken)
                lines.append(_served("".join(piece)))
                cut = i + len(taken.encode("utf-8", "surrogateescape"))
                ranges.append((piece_at, base + cut))
                return Excerpt(
                    lines,
                    False,
                    Position(base + cut, cur_line, piece_col + MAX_LINE_CHARS),
                    True,
                    tuple(ranges),
                )
            piece.append(text)
            piece_len += len(text)
            served += len(text)
            if nl < 0:
                i = end
                continue
            lines.append(_served("".join(piece)))
            ranges.append((piece_at, base + nl))
            piece, piece_len = [], 0
            cur_line, cur_col, piece_col = cur_line + 1, 1, 1
            i = nl + 1
            piece_at = base + i
            if len(lines) >= max_lines or served >= max_chars:
                return _stopped(lines, ranges, Position(base + i, cur_line, 1), size)
        offset = base + size_b
        if not collecting:
            scanned += size_b
            if scanned >= budget and offset < size:
                return Excerpt([], False, Position(offset, cur_line, cur_col), False)
    if piece_len or (collecting and piece):
        lines.append(_served("".join(piece)))
        ranges.append((piece_at, offset))
    return Excerpt(lines, True, None, True, tuple(ranges))


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
