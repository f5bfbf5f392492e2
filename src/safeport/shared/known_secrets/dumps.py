"""Dumps read back into the bytes they show, across their lines: ``xxd`` (any ``-c``/``-g``),
``hexdump`` and ``hexdump -C``, ``od -x``/``-tx1``/``-tx2``/``-tx4``, ``od -b`` and ``od -c``.

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
# (Matched against the line without its trailing blanks, and with no pattern that can retry
# a run of blanks at each of its characters: a hostile line must cost its length, not its
# square.)
_DUMP_LINE = re.compile(r"(?:[0-9A-Fa-f]{4,16}:?[ \t]|[ \t])[ \t]*(\S.*)")
_COLUMN_GAP = re.compile(r"[ \t]{2,}")
# Hex groups of whole bytes (xxd -g, od -tx2), or one byte in octal (od -b).
_GROUP = re.compile(r"(?:[0-9A-Fa-f]{2})+|[0-3][0-7]{2}")
# od -c: an optional offset, then 4-character fields (`   C`, `  \n`, ` 377`, four blanks).
_CHAR_FIELD = r"(?: {3}\S| {2}\\[0abfnrtv]| [0-3][0-7]{2}| {4})"
_CHAR_LINE = re.compile(rf"(?:[0-9A-Fa-f]{{7,16}})?({_CHAR_FIELD}+) *")
_C_ESCAPES = {"0": 0, "a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_BREAK = b"\xff"  # never in UTF-8 text, so no credential's bytes run across it


def dump_views(text: str) -> Iterator[bytes]:
    """Five readings of every dump in ``text`` (with and without each line's last column, each
    in the bytes' printed order and with every group reversed; and ``od -c``'s characters),
    or nothing when it has none."""
    readings = [bytearray() for _ in range(5)]
    found = False
    for line in text.splitlines():
        characters = _characters(line)
        if characters is not None:
            found = True
            readings[4] += characters
            continue
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


def _characters(line: str) -> bytes | None:
    """An ``od -c`` or ``hexdump -c`` line's bytes (each in a 4-character field: ``   C``,
    ``  \\n``, `` 377``, four spaces for a space), or None for a line that is not one."""
    match = _CHAR_LINE.fullmatch(line)
    if match is None:
        return None
    fields = match.group(1)
    data = bytearray()
    for start in range(0, len(fields), 4):
        field = fields[start : start + 4].strip()
        if not field:
            data.append(0x20)
        elif len(field) == 1:
            data += field.encode("utf-8")
        elif field.startswith("\\"):
            data.append(_C_ESCAPES.get(field[1], 0))
        else:
            data.append(int(field, 8))
    return bytes(data)


def _columns(line: str) -> list[list[str]]:
    """The line's columns of byte groups, up to the first column that is not all groups; empty
    for a line that is not a dump's."""
    match = _DUMP_LINE.fullmatch(line.rstrip())
    if match is None:
        return []
    body = match.group(1)
    if body.endswith("|") and "|" in body[:-1]:
        body = body[: body.index("|")]  # hexdump -C's characters: |CANARY-S|
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
