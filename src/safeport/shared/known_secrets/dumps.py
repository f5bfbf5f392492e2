"""Dumps read back into the bytes they show, across their lines: ``xxd`` (any ``-c``/``-g``),
``hexdump`` and ``hexdump -C``, ``od -x``/``-tx1``/``-tx2``/``-tx4`` and ``od -b``.

A dump shows a few bytes per line between an offset and, for some tools, a column of the same
bytes as characters. Read line by line, a credential that does not start at a line's first
byte (a 20-byte password at offset 5 of a file) is cut into pieces shorter than the 16 bytes a
match needs, on every line. So each line's byte groups are read and the lines joined, with the
offsets and the character column left out. Which trailing column holds characters cannot always
be told from its text (``xxd`` prints ``cafe`` for the bytes ``cafe``), so a second reading
leaves the last column of every line out; ``hexdump`` and ``od -x`` print 16-bit words with the
low byte first, so each reading is also made with every group's bytes reversed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# An offset at the line's start (`00000000:`, `0000020`) or, for `od -An`, none but an indent;
# then the line's columns.
_DUMP_LINE = re.compile(r"(?:[0-9A-Fa-f]{4,16}:?[ \t]|[ \t])[ \t]*(\S.*?)[ \t]*")
_CHAR_COLUMN = re.compile(r"[ \t]*\|.*\|\Z")  # hexdump -C: |CANARY-S|
_COLUMN_GAP = re.compile(r"[ \t]{2,}")
# Hex groups of whole bytes (xxd -g, od -tx2), or one byte in octal (od -b).
_GROUP = re.compile(r"(?:[0-9A-Fa-f]{2})+|[0-3][0-7]{2}")
_BREAK = b"\xff"  # never in UTF-8 text, so no credential's bytes run across it


def dump_views(text: str) -> Iterator[bytes]:
    """Four readings of every dump in ``text`` (with and without each line's last column, each
    in the bytes' printed order and with every group reversed), or nothing when it has none."""
    readings = [bytearray() for _ in range(4)]
    found = False
    for line in text.splitlines():
        columns = _columns(line)
        if not columns:
            for reading in readings:
                if reading[-1:] != _BREAK:
                    reading += _BREAK
            continue
        found = True
        # The last column may be the bytes as characters; a reading without it is exact for
        # xxd, a reading with it for hexdump -C (whose characters are between bars) and od.
        without_last = columns[:-1] if len(columns) > 1 else columns
        for reading, kept, reverse in (
            (readings[0], columns, False),
            (readings[1], columns, True),
            (readings[2], without_last, False),
            (readings[3], without_last, True),
        ):
            reading += b"".join(_group_bytes(g, reverse) for column in kept for g in column)
    if found:
        yield from (bytes(reading) for reading in readings)


def _columns(line: str) -> list[list[str]]:
    """The line's columns of byte groups, up to the first column that is not all groups; empty
    for a line that is not a dump's."""
    match = _DUMP_LINE.fullmatch(line)
    if match is None:
        return []
    body = _CHAR_COLUMN.sub("", match.group(1))
    columns: list[list[str]] = []
    for column in _COLUMN_GAP.split(body):
        groups = column.split()
        if not groups or not all(_GROUP.fullmatch(group) for group in groups):
            break
        columns.append(groups)
    return columns


def _group_bytes(group: str, reverse: bool) -> bytes:
    if len(group) == 3:  # odd: an octal byte
        return bytes([int(group, 8)])
    data = bytes.fromhex(group)
    return data[::-1] if reverse else data
