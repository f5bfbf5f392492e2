"""Display names: every file name on disk as a string a client can show, send back and that JSON
can carry, reversibly.

A POSIX name is bytes. Most are UTF-8 and display as themselves; the rest would break every
layer above (JSON cannot carry a lone surrogate, SQLite refuses one). Bytes that are not valid
UTF-8, control characters, backslashes (refused in request paths), bidirectional controls
(which make a listing lie about a name) and a ``%`` that reads as an escape are written ``%XX``.
The mapping is a bijection between names and canonical display strings, so a display name is
turned back into exactly one name, and a non-canonical spelling (``.%65nv`` for ``.env``) is
refused instead of resolved: the privacy check only ever sees the one canonical spelling.
"""

from __future__ import annotations

import os
import re

_HEX = "0123456789ABCDEFabcdef"
_ESCAPE = re.compile(r"%([0-9A-F]{2})")
# Characters that are written escaped even though they are valid UTF-8.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


class UndisplayableName(ValueError):
    """A display string that is not the canonical form of any file name."""


def display_name(raw: bytes | str) -> str:
    """The canonical display form of a file name (bytes, or a surrogate-escaped ``str``)."""
    if isinstance(raw, str) and raw.isascii() and raw.isprintable() and _plain(raw):
        return raw  # the common case as ``scandir`` gives it: no bytes to decode
    data = os.fsencode(raw) if isinstance(raw, str) else raw
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _escape_mixed(data)
    if text.isprintable() and "\\" not in text and "%" not in text:
        return text  # the common case, with no scan below
    return _escape_mixed(data)


def _plain(text: str) -> bool:
    return "\\" not in text and "%" not in text


def _one_name(text: str) -> bool:
    return bool(text) and "/" not in text


def raw_name(display: str) -> bytes:
    """The file name a canonical display string stands for; raises :class:`UndisplayableName`."""
    if display.isascii() and display.isprintable() and _plain(display) and _one_name(display):
        return display.encode("ascii")  # its own display form: no round trip to check
    if "%" not in display and display.isprintable() and "\\" not in display:
        data = display.encode("utf-8", "surrogatepass")
    else:
        out = bytearray()
        pos = 0
        for m in _ESCAPE.finditer(display):
            out += display[pos : m.start()].encode("utf-8", "surrogatepass")
            out.append(int(m.group(1), 16))
            pos = m.end()
        out += display[pos:].encode("utf-8", "surrogatepass")
        data = bytes(out)
    if b"/" in data or b"\x00" in data or not data:
        raise UndisplayableName("a name cannot contain '/' or NUL")
    if display_name(data) != display:
        raise UndisplayableName("not the canonical spelling of a name")
    return data


def _escape_mixed(data: bytes) -> str:
    out: list[str] = []
    pos = 0
    size = len(data)
    while pos < size:
        char, width = _next_char(data, pos)
        if char is None:
            out.append(f"%{data[pos]:02X}")
            pos += 1
            continue
        if _needs_escape(char, data, pos + width):
            out.extend(f"%{b:02X}" for b in data[pos : pos + width])
        else:
            out.append(char)
        pos += width
    return "".join(out)


def _needs_escape(char: str, data: bytes, after: int) -> bool:
    if char == "%":
        # Only a `%` followed by two hex digits could be read as an escape.
        return len(data) >= after + 2 and all(chr(b) in _HEX for b in data[after : after + 2])
    return char == "\\" or not char.isprintable() or char in _BIDI


def _next_char(data: bytes, pos: int) -> tuple[str | None, int]:
    """The UTF-8 character starting at ``pos`` and its width, or (None, 1) for a bad byte."""
    first = data[pos]
    if first < 0x80:
        return chr(first), 1
    width = (
        2 if 0xC2 <= first <= 0xDF else 3 if 0xE0 <= first <= 0xEF else 4 if first <= 0xF4 else 0
    )
    if width == 0:
        return None, 1
    try:
        return data[pos : pos + width].decode("utf-8"), width
    except UnicodeDecodeError:
        return None, 1
