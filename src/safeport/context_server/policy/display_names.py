"""Display names: every file name on disk as a string a client can show, send back and that JSON
can carry, reversibly.

A POSIX name is bytes. Most are UTF-8 and display as themselves; the rest would break every
layer above (JSON cannot carry a lone surrogate, SQLite refuses one). Bytes that are not valid
UTF-8, control characters, backslashes (refused in request paths), bidirectional controls
(which make a listing lie about a name) and a ``%`` that reads as an escape are written ``%XX``.
The mapping is a bijection between names and canonical display strings, so a display name is
turned back into exactly one name, and a non-canonical spelling (``.%65nv`` for ``.env``) is
refused instead of resolved: the privacy check only ever sees the one canonical spelling.

A name can hold a credential (``backup-ghp_…/``, ``AKIA….csv``): every name leaves the server
through its display form (listings, search results, the index on disk, the reads journal), so
that form has each secret the detector finds replaced by its ``[REDACTED:<kind>]`` marker. That
part of the mapping is one-way: a display name holding a marker is turned back into a name only
by looking in its folder (:class:`RedactedName`, see ``workspace/named_entries.py``). A marker
spelled in a real name is written ``%5BREDACTED:``, so a marker in a display name always means
a redaction; and the name with its secret spelled out is not a canonical spelling, so it is
refused like any other (no reply can echo it back).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from safeport.shared.secret_scan import SecretSpan, find_secrets, redact_spans

_HEX = "0123456789ABCDEFabcdef"
_ESCAPE = re.compile(r"%([0-9A-F]{2})")
# Characters that are written escaped even though they are valid UTF-8.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")
# The start of the secret detector's marker (see shared/secret_scan/redaction.py `marker`).
MARK = "[REDACTED:"
_MARK_TAIL = MARK[1:].encode("ascii")
# Verdicts per name: a walk meets the same names in folder after folder, and one scan of a
# name is the cost of many dictionary hits.
_VERDICT_CACHE = 65_536
# Verdicts on the names of clients' requests, kept apart so that a client's inventions never
# push the walk's out: one call meets each name of its path several times (the path's parse,
# the lookup beneath the root, the open), and the next calls name the same folders again.
_REQUEST_CACHE = 1_024
# The longest display form of a name on Linux (255 bytes, each written %XX at worst).
_NAME_MAX = 3 * 255


class UndisplayableName(ValueError):
    """A display string that is not the canonical form of any file name."""


class RedactedName(UndisplayableName):
    """A display string holding a redaction marker: only its folder can say which name it is."""


class SecretInName(UndisplayableName):
    """A name with a secret spelled out: its canonical spelling carries the marker instead."""


def display_name(raw: bytes | str) -> str:
    """The canonical display form of a file name (bytes, or a surrogate-escaped ``str``), with
    every secret in it replaced by its marker."""
    written = written_name(raw)
    # Cached for names a folder can hold only (the walk's), never a client's inventions.
    hidden = _redacted_name(written) if len(written) <= _NAME_MAX else _redacted(written)
    return written if hidden is None else hidden


def written_name(raw: bytes | str) -> str:
    """The display form with secrets left in: for judging a name by the read policy only,
    never for a reply, an index or a journal."""
    if isinstance(raw, str) and raw.isascii() and raw.isprintable() and _plain(raw):
        return raw  # the common case as ``scandir`` gives it: no bytes to decode
    data = os.fsencode(raw) if isinstance(raw, str) else raw
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _escape_mixed(data)
    if text.isprintable() and _plain(text):
        return text  # the common case, with no scan below
    return _escape_mixed(data)


def is_redacted(display: str) -> bool:
    """Whether a canonical display name stands for a name holding a secret."""
    return MARK in display


def masked_path(text: str) -> str:
    """A path as a client sent it, each name with its secrets replaced by their markers: for
    echoing a request (refused, or journaled) without repeating a secret it spelled out."""
    return "/".join(_request_verdict(part) or part for part in text.split("/"))


@lru_cache(maxsize=_VERDICT_CACHE)
def _redacted_name(written: str) -> str | None:
    return _redacted(written)


@lru_cache(maxsize=_REQUEST_CACHE)
def _requested_name(display: str) -> str | None:
    return _redacted(display)


def _request_verdict(display: str) -> str | None:
    """:func:`_redacted` of one name a client wrote, cached when it can be a name at all."""
    return _requested_name(display) if len(display) <= _NAME_MAX else _redacted(display)


def _redacted(written: str) -> str | None:
    """``written`` with each secret replaced by its marker, or None if it holds none."""
    spans = find_secrets(written)
    if "_" in written:
        # `_` separates words in a name as `-` and `.` do (`backup_AKIA….csv`), but the detector
        # reads it as part of a word; the same name with `_` as spaces keeps every offset. Only
        # a token recognised by itself counts there: `bearer_auth.py` is not a bearer header.
        spaced = [s for s in find_secrets(written.replace("_", " ")) if _alone(written, s)]
        if spaced:
            spans = _joined([*spans, *spaced])
    if "%" in written:
        # An escape is not part of the name's text: `%FF` before `AKIA…` is one byte that is
        # not UTF-8, not the letters `FF` that would glue onto the key and hide it, and an
        # escaped invisible character (`%E2%80%8B`) inside a token does not split it.
        found = _through_escapes(written)
        if found:
            spans = _joined([*spans, *found])
    if not spans:
        return None
    return redact_spans(written, spans)[0]


def _through_escapes(written: str) -> list[SecretSpan]:
    """Secrets in ``written`` read with each escape as a space, left out, and decoded (an
    ASCII one: ``%41KIA…`` in a request is ``AKIA…``), as spans of ``written``."""
    found: list[SecretSpan] = []
    for text, at in (_read_escapes(written, how) for how in ("space", "out", "decoded")):
        for span in find_secrets(text):
            if span.end > span.start:
                found.append(SecretSpan(at[span.start], at[span.end - 1] + 1, span.kind))
    return found


def _read_escapes(written: str, how: str) -> tuple[str, list[int]]:
    """``written`` with each escape read as ``how`` says, and the offset in ``written`` of
    each character of the result."""
    out: list[str] = []
    at: list[int] = []
    pos = 0
    for m in _ESCAPE.finditer(written):
        out.append(written[pos : m.start()])
        at.extend(range(pos, m.start()))
        byte = int(m.group(1), 16)
        if how == "space" or (how == "decoded" and not 0x20 < byte < 0x7F):
            out.append(" ")
            at.append(m.start())
        elif how == "decoded":
            out.append(chr(byte))
            at.append(m.start())
        pos = m.end()
    out.append(written[pos:])
    at.extend(range(pos, len(written)))
    return "".join(out), at


def _alone(written: str, span: SecretSpan) -> bool:
    value = written[span.start : span.end]
    return any(s.start == 0 and s.end == len(value) for s in find_secrets(value))


def _joined(spans: list[SecretSpan]) -> list[SecretSpan]:
    """Overlapping spans as one, in text order (the kind of the first is kept)."""
    out: list[SecretSpan] = []
    for span in sorted(spans):
        if out and span.start < out[-1].end:
            out[-1] = SecretSpan(out[-1].start, max(out[-1].end, span.end), out[-1].kind)
        else:
            out.append(span)
    return out


def _plain(text: str) -> bool:
    return "\\" not in text and "%" not in text and MARK not in text


def _one_name(text: str) -> bool:
    return bool(text) and "/" not in text


def raw_name(display: str) -> bytes:
    """The file name a canonical display string stands for; raises :class:`UndisplayableName`
    (:class:`RedactedName` for a name only its folder can resolve, :class:`SecretInName` for a
    name spelled with its secret)."""
    if is_redacted(display):
        raise RedactedName("a redacted name is looked up in its folder")
    if display.isascii() and display.isprintable() and _plain(display) and _one_name(display):
        if _request_verdict(display) is not None:
            raise SecretInName("a name holding a secret is spelled with its marker")
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
    if written_name(data) != display:
        raise UndisplayableName("not the canonical spelling of a name")
    if _request_verdict(display) is not None:
        raise SecretInName("a name holding a secret is spelled with its marker")
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
    if char == "[":
        # A marker spelled in a real name, so a marker in a display name is always a redaction.
        return data[after : after + len(_MARK_TAIL)] == _MARK_TAIL
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
