"""Keys written as bytes rather than text: an array or list of numbers, or an escaped byte
string, under a secret-like name.

C and C++ (``#define AES_KEY {0x35, 0x34, …}``, ``unsigned char key[] = {…}``), Go
(``Secret: []byte{…}``), Java and C# (``byte[] key = new byte[]{…}``), Rust
(``let key: [u8; 16] = […]``), Python (``key = bytes([…])``, ``salt = b"\\x23\\xae…"``) and
JavaScript (``new Uint8Array([…])``) all write a key this way. A list of at least eight numbers
(a 64-bit key is eight bytes; a table of flags or sizes under a key's name is rarely that long
and varied) or eight ``\\x`` escapes is withheld whole. Sequences (``0, 1, 2, …``) and a list of
one repeated value are what a test fills a buffer with, and stay served.

The check runs only at a keyword the prefilter found, and only when an opening bracket or an
escaped byte string follows the name closely on its line (``may_hold_bytes``).
"""

from __future__ import annotations

import itertools
import re

from safeport.shared.secret_scan.names import name_begins, name_words, secret_name, weak_secret_name
from safeport.shared.secret_scan.spans import SecretSpan

KIND = "secret-bytes"
MIN_ITEMS = 8
_MAX_ITEMS = 512
_LOOKAHEAD = 64
_NAME_CHARS = re.compile(r"[\w.\-]{0,64}")
# From the name's end to the list's opening: a declarator's brackets (``key[16]``), a separator,
# a type or constructor (``[]byte``, ``new byte[]``, ``bytes(``, ``[u8; 16] =``), the opening.
_OPENING = re.compile(
    r"""(?:\[[\w \t]{0,8}\])?["']?[ \t]{0,8}(?::=|=|:|)[ \t]{0,8}
    (?:\[[\w; \t]{0,16}\][ \t]{0,4}=[ \t]{0,4})?       # Rust: [u8; 16] = […]
    (?:new[ \t]+\w{1,16}[ \t]*\[\d{0,4}\][ \t]*       # Java, C#: new byte[]{…}
      |\[\]\w{1,8}[ \t]*                              # Go: []byte{…}
      |(?:new[ \t]+)?[\w.]{1,24}[ \t]*\([ \t]*         # bytes([…]), Uint8Array.from([…])
    )?
    (?:(?P<open>[{\[])|(?P<prefix>[bB])(?P<quote>["']))""",
    re.VERBOSE,
)
_ITEM = re.compile(
    r"""(?:[ \t\r\n]|\\\n|\\\r\n)*                      # spaces, newlines, C's line continuation
    (?:\((?:byte|u?int8_t|char|unsigned[ \t]char)\)[ \t]*)?   # Java's (byte) casts
    (?P<item>-?(?:0[xX][0-9A-Fa-f]{1,2}|0[bB][01]{1,8}|\d{1,3}))(?:[uU]?[lL]{0,2}|u8|i8)?
    [ \t]*(?P<comma>,)?""",
    re.VERBOSE,
)
_ESCAPE = re.compile(r"\\x[0-9A-Fa-f]{2}")


def may_hold_bytes(text: str, end: int, line_end: int) -> bool:
    """A cheap first look: an opening bracket or an escaped byte string near the keyword."""
    window = text[end : min(line_end, end + _LOOKAHEAD)]
    return "{" in window or "[" in window or "\\x" in window


def byte_array_at(
    text: str, start: int, end: int, line_start: int, line_end: int
) -> SecretSpan | None:
    """The bytes written under the secret-like name around the keyword at ``text[start:end]``."""
    name_end = _NAME_CHARS.match(text, end, line_end).end()  # type: ignore[union-attr]
    opening = _OPENING.match(text, name_end, line_end)
    if opening is None:
        return None
    name_start = name_begins(text, start, line_start)
    name = text[name_start:name_end].strip(".-")
    if not _secret_like(name):
        return None
    if opening.group("quote"):
        return _escaped(text, opening.end(), opening.group("quote"), line_end)
    return _numbers(text, opening.end())


def _secret_like(name: str) -> bool:
    words = name_words(name)
    if not words:
        return False
    # AESKEY, HMACSECRET: a constant's name run together still ends in what it holds.
    last = words[-1].rstrip("0123456789")
    return (
        secret_name(name, words)
        or weak_secret_name(words)
        or (last.endswith(("key", "secret", "salt")) and len(last) <= 16)
    )


def _numbers(text: str, at: int) -> SecretSpan | None:
    values: list[int] = []
    first = last = at
    position = at
    while len(values) < _MAX_ITEMS:
        item = _ITEM.match(text, position)
        if item is None:
            break
        if not values:
            first = item.start("item")
        last = item.end("item")
        values.append(_value(item.group("item")))
        position = item.end()
        if not item.group("comma"):
            break
    if len(values) < MIN_ITEMS or len(set(values)) < 4 or _stepped(values):
        return None
    return SecretSpan(first, last, KIND)


def _escaped(text: str, at: int, quote: str, line_end: int) -> SecretSpan | None:
    closing = text.find(quote, at, min(line_end, at + 4096))
    while closing > at and text[closing - 1] == "\\":  # an escaped quote inside the bytes
        closing = text.find(quote, closing + 1, min(line_end, at + 4096))
    if closing < 0:
        return None
    escapes = _ESCAPE.findall(text, at, closing)
    if len(escapes) < MIN_ITEMS or len(set(escapes)) < 4:
        return None
    return SecretSpan(at, closing, KIND)


def _value(item: str) -> int:
    sign = -1 if item.startswith("-") else 1
    digits = item.lstrip("-")
    if digits[:2] in ("0x", "0X"):
        return sign * int(digits[2:], 16)
    if digits[:2] in ("0b", "0B"):
        return sign * int(digits[2:], 2)
    return sign * int(digits, 10)


def _stepped(values: list[int]) -> bool:
    """An arithmetic run (``0, 1, 2, …``, ``0x10, 0x20, …``): a test pattern, not a key."""
    steps = {b - a for a, b in itertools.pairwise(values)}
    return len(steps) == 1
