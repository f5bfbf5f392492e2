"""Whether text or a value holds a known secret (the credential an action was run with), in any
form we can name.

Rather than list every encoding of every piece of the credential (which grows with its length
and made the search cost grow with both), the returned text is *decoded* into a few views and
each view is searched for the credential's own bytes:

- as it is; percent-decoded once and twice (``+`` as a space too); HTML entities decoded; JSON
  string escapes (``\\"``, ``\\n``, ``\\/``, ``\\uXXXX`` with surrogate pairs) decoded;
- every hex run (in any case, with ``:``, ``-``, ``.``, ``,``, ``;``, ``_``, spaces or ``\\x``
  between the bytes) decoded at both alignments;
- every base64 or base64url run, with white space (MIME line breaks) and ``.,;:`` separators
  removed, decoded at each of its four alignments, so the credential inside any longer encoded
  text is found whatever its offset.

A view holds the credential when it holds the whole credential or any 16-byte run of it
(comparison ignores ASCII case). The search is linear: the view is cut into 8-byte blocks and
each is looked up among the credential's 8-byte substrings (any 16-byte match contains one whole
block), and only a hit is extended byte by byte. So a 1 MiB answer costs about the same for a
16-byte token and a 2 KiB one, and no hostile answer can stall the gateway.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Iterable, Iterator
from urllib.parse import unquote_to_bytes

PIECE = 16  # any run of this many bytes of the credential counts as the credential
_BLOCK = 8
_HEX_RUN = re.compile(r"(?:\\x|%)?[0-9A-Fa-f]{2}(?:(?:[\s:.,;_-]|\\x|%)?[0-9A-Fa-f]{2}){7,}")
_HEX_NOISE = re.compile(r"\\x|[^0-9A-Fa-f]")
_B64_SEPARATORS = re.compile(r"[\s.,;:]+")
_B64_RUN = re.compile(r"[A-Za-z0-9+/]{6,}")
_JSON_ESCAPE = re.compile(r'\\(?:u([0-9A-Fa-f]{4})|(["\\/bfnrt]))')
_ESCAPES = re.compile(r"[\\%&]")
_JSON_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class KnownSecrets:
    """Built once per request from the credential's texts (token, password, ``user:pass``,
    private key body)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._needles = [s.encode("utf-8").lower() for s in secrets if s]
        self._blocks: dict[bytes, list[tuple[bytes, int]]] = {}
        for needle in self._needles:
            for offset in range(len(needle) - _BLOCK + 1):
                self._blocks.setdefault(needle[offset : offset + _BLOCK], []).append(
                    (needle, offset)
                )

    def found_in(self, text: str) -> bool:
        if not self._needles:
            return False
        return any(self._holds(view.lower()) for view in _views(text))

    def found_in_bytes(self, data: bytes) -> bool:
        """Raw bytes (a ``bytea`` value, a binary stream): searched as they are, then as text
        (UTF-8 where it decodes, Latin-1 otherwise) with every decoded view of that text."""
        if not self._needles:
            return False
        if self._holds(data.lower()):
            return True
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        return self.found_in(text)

    def found_in_value(self, value: object) -> bool:
        """Any JSON-like value (text, bytes, numbers, lists, maps with their keys): each piece
        on its own, and every piece's text joined end to end, so a credential split across two
        neighbouring values is still whole."""
        if not self._needles:
            return False
        pieces: list[str] = []
        for piece in _pieces(value):
            if isinstance(piece, bytes):
                # Its bytes as they are here; as text (any encoding inside it) with the rest.
                if self._holds(piece.lower()):
                    return True
                pieces.append(piece.decode("utf-8", "replace"))
            else:
                pieces.append(piece)
        # Joined, a piece's escapes could be read from its neighbour's last character (a `\\`
        # ending one value swallows the `\\u0043` starting the next): those pieces also alone.
        return self.found_in("".join(pieces)) or any(
            self.found_in(piece) for piece in pieces if _ESCAPES.search(piece)
        )

    def _holds(self, view: bytes) -> bool:
        for needle in self._needles:
            if len(needle) < PIECE and needle in view:
                return True
        if not self._blocks:
            return False
        for start in range(0, len(view) - _BLOCK + 1, _BLOCK):
            for needle, offset in self._blocks.get(view[start : start + _BLOCK], ()):
                if _run_length(view, start, needle, offset) >= min(PIECE, len(needle)):
                    return True
        return False


def _run_length(view: bytes, start: int, needle: bytes, offset: int) -> int:
    """How long the match around ``view[start:start+8] == needle[offset:offset+8]`` runs
    (counted up to PIECE on each side; that is all a decision needs)."""
    left = 0
    while left < PIECE and start - left > 0 and offset - left > 0:
        if view[start - left - 1] != needle[offset - left - 1]:
            break
        left += 1
    right = 0
    end, needle_end = start + _BLOCK, offset + _BLOCK
    while right < PIECE and end + right < len(view) and needle_end + right < len(needle):
        if view[end + right] != needle[needle_end + right]:
            break
        right += 1
    return left + _BLOCK + right


def _pieces(value: object) -> Iterator[str | bytes]:
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            yield current
        elif isinstance(current, bytes | bytearray | memoryview):
            yield bytes(current)
        elif isinstance(current, dict):
            for key, item in reversed(list(current.items())):
                pending.extend((item, key))
        elif isinstance(current, list | tuple):
            pending.extend(reversed(current))
        elif current is not None:
            yield str(current)


def _views(text: str) -> Iterator[bytes]:
    raw = text.encode("utf-8", "surrogatepass")
    yield raw
    if "%" in text or "+" in text:
        once = unquote_to_bytes(text)
        yield once
        yield unquote_to_bytes(once)
        yield unquote_to_bytes(text.replace("+", " "))
    if "&" in text:
        yield html.unescape(text).encode("utf-8", "surrogatepass")
    if "\\" in text:
        yield _json_unescaped(text)
    yield b"\0".join(_hex_runs(text))
    yield b"\0".join(_base64_runs(text))


def _json_unescaped(text: str) -> bytes:
    """Every JSON string escape decoded in one pass, left to right (so an escaped backslash is
    never read again as the start of another escape); a surrogate pair becomes its character."""

    def one(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return chr(int(match.group(1), 16))
        return _JSON_SIMPLE.get(match.group(2), match.group(2))

    unescaped = _JSON_ESCAPE.sub(one, text)
    paired = unescaped.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return paired.encode("utf-8", "surrogatepass")


def _hex_runs(text: str) -> Iterator[bytes]:
    for match in _HEX_RUN.finditer(text):
        digits = _HEX_NOISE.sub("", match.group())
        for shift in (0, 1):
            chunk = digits[shift:]
            yield bytes.fromhex(chunk[: len(chunk) // 2 * 2])


def _base64_runs(text: str) -> Iterator[bytes]:
    joined = _B64_SEPARATORS.sub("", text).replace("-", "+").replace("_", "/")
    for match in _B64_RUN.finditer(joined):
        run = match.group()
        for shift in range(4):
            chunk = run[shift:]
            if len(chunk) % 4 == 1:
                chunk = chunk[:-1]  # a lone last character carries no whole byte
            try:
                yield base64.b64decode(chunk + "=" * (-len(chunk) % 4))
            except (binascii.Error, ValueError):
                continue
