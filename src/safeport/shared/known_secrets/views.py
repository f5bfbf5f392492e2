"""Whether text or a value holds a known secret (the credential an action was run with), in any
form we can name.

Rather than list every encoding of every piece of the credential (which grows with its length
and made the search cost grow with both), the returned text is *decoded* into a few views and
each view is searched for the credential's own bytes:

- as it is; percent-decoded once and twice (``+`` as a space too); HTML entities decoded; JSON
  string escapes (``\\"``, ``\\n``, ``\\/``, ``\\uXXXX`` with surrogate pairs) decoded;
  octal escapes (``\\303``: ``bytea``'s ``escape`` format) decoded;
- every hex run (in any case, with ``:``, ``-``, ``.``, ``,``, ``;``, ``_``, any white space,
  ``\\x`` or ``0x`` between the bytes) decoded at both alignments;
- every base64 or base64url run, with white space (MIME line breaks) and ``.,;:`` separators
  removed, decoded at each of its four alignments, so the credential inside any longer encoded
  text is found whatever its offset;
- every dump (``xxd``, ``hexdump``, ``od``) read across its lines (``dumps.py``);
- the hex, base64 and dump readings of the JSON-unescaped text too (a base64 value whose line
  breaks a JSON text wrote as ``\\n``).

Each view is also searched without its NUL bytes, which is how UTF-16 writes ASCII text.

A view holds the credential when it holds the whole credential or any 16-byte run of it
(comparison ignores ASCII case). The search is linear: the view is cut into 8-byte blocks and
each is looked up among the credential's 8-byte substrings (any 16-byte match contains one whole
block), and only a hit is extended byte by byte. So a 1 MiB answer costs about the same for a
16-byte token and a 2 KiB one, and no hostile answer can stall the gateway.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import html
import re
from collections.abc import Iterable, Iterator
from urllib.parse import unquote_to_bytes

from safeport.shared.known_secrets.dumps import dump_views

PIECE = 16  # any run of this many bytes of the credential counts as the credential
_BLOCK = 8
# A byte's prefix (`\\x`, `%`, `0x` as `xxd -i` prints), or white space of any length, or one
# separator between the bytes.
_HEX_PREFIX = r"(?:\\x|%|0[xX])"
_HEX_SEPARATOR = rf"(?:[\s,]*{_HEX_PREFIX}|\s+|[:.,;_-])?"
_HEX_RUN = re.compile(rf"{_HEX_PREFIX}?[0-9A-Fa-f]{{2}}(?:{_HEX_SEPARATOR}[0-9A-Fa-f]{{2}}){{7,}}")
_HEX_NOISE = re.compile(r"\\x|0[xX]|[^0-9A-Fa-f]")
_OCTAL_ESCAPE = re.compile(rb"\\([0-3][0-7]{2}|\\)")
_B64_SEPARATORS = re.compile(r"[\s.,;:]+")
_B64_RUN = re.compile(r"[A-Za-z0-9+/]{6,}")
_JSON_ESCAPE = re.compile(r'\\(?:u([0-9A-Fa-f]{4})|(["\\/bfnrt]))')
_ESCAPES = re.compile(r"[\\%&]")
_JSON_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_BREAK = b"\xff"  # between decoded runs: never in UTF-8 text, so no match runs across it


class KnownSecrets:
    """Built once per request from the credential's texts (token, password, ``user:pass``,
    private key body) and binary forms (the key body decoded)."""

    def __init__(self, secrets: Iterable[str], blobs: Iterable[bytes] = ()) -> None:
        """``blobs``: the credential's binary form where its text is an encoding of one (a
        private key's body decoded), looked for as bytes in every view like the texts."""
        self._needles = [n.lower() for s in secrets if s for n in _encodings(s)]
        self._needles += [blob.lower() for blob in blobs if blob]
        self._least = min((min(len(n), PIECE) for n in self._needles), default=0)
        self._blocks: dict[bytes, list[tuple[bytes, int]]] = {}
        for needle in self._needles:
            for offset in range(len(needle) - _BLOCK + 1):
                self._blocks.setdefault(needle[offset : offset + _BLOCK], []).append(
                    (needle, offset)
                )

    def found_in(self, text: str) -> bool:
        # No reading of a text has twice its bytes (a few HTML entities grow by a byte, every
        # other decoding shrinks): one too short to hold the shortest match even so is not read
        # at all, and a result of many tiny values stays cheap.
        if not self._needles or 2 * len(text.encode("utf-8", "surrogatepass")) < self._least:
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
        # UTF-16 text (a Windows file, `iconv -t UTF-16`) is ASCII with a NUL after or before
        # each character: read without them too.
        if b"\0" in view and self._holds_as_is(view.replace(b"\0", b"")):
            return True
        return self._holds_as_is(view)

    def _holds_as_is(self, view: bytes) -> bool:
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


def _encodings(secret: str) -> list[bytes]:
    """The secret's bytes in UTF-8 and, when it is not ASCII, in the other encodings a server
    converts text to (``convert_to(x, 'LATIN1')``, a Windows file in UTF-16). ASCII needs no
    more: Latin-1 writes it the same, and UTF-16 as it is between NULs, which views drop."""
    encoded = [secret.encode("utf-8")]
    if not secret.isascii():
        for name in ("latin-1", "utf-16-le", "utf-16-be"):
            with contextlib.suppress(UnicodeEncodeError):
                encoded.append(secret.encode(name))
    return encoded


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
    sources = [text]
    if "%" in text or "+" in text:
        once = unquote_to_bytes(text)
        twice = unquote_to_bytes(once)
        yield once
        yield twice
        yield unquote_to_bytes(text.replace("+", " "))
        if "%" in text:
            # Base64 or hex inside a URL or a form (`%2B`, `%2F`, `%3D`; a URL inside another's
            # query, encoded twice), read decoded.
            sources.append(once.decode("latin-1"))
            if twice != once:
                sources.append(twice.decode("latin-1"))
    if "&" in text:
        unescaped_html = html.unescape(text)
        yield unescaped_html.encode("utf-8", "surrogatepass")
        sources.append(unescaped_html)  # `&#x2F;` in base64, as HTML encoders write `/`
    if "\\" in text:
        unescaped = _json_unescaped(text)
        yield unescaped.encode("utf-8", "surrogatepass")
        # Octal escapes: `bytea` in PostgreSQL's `escape` format (`encode(x, 'escape')`), C.
        yield _OCTAL_ESCAPE.sub(_octal_byte, raw)
        # A JSON text can hold an encoded value with its line breaks escaped (`encode(x,
        # 'base64')` wraps at 76 characters; `to_json(...)::text` writes each break as `\\n`).
        sources.append(unescaped)
    if "\0" in text:
        sources.append(text.replace("\0", ""))  # UTF-16 text read as ASCII
    for source in sources:
        for decoded in _decoded(source):
            yield decoded
            # Once more: what was encoded may itself be an encoding (a PEM key's text in a hex
            # dump, base64 of base64); the key's own bytes are only two decodings away.
            # (Without NULs: UTF-16 text, hex-encoded.)
            if decoded:
                yield from _decoded(decoded.replace(b"\0", b"").decode("latin-1"), dumps=False)


def _decoded(text: str, *, dumps: bool = True) -> Iterator[bytes]:
    yield _BREAK.join(_hex_runs(text))
    yield _BREAK.join(_base64_runs(text))
    if dumps:
        yield from dump_views(text)


def _octal_byte(match: re.Match[bytes]) -> bytes:
    escaped = match.group(1)
    return escaped if escaped == b"\\" else bytes([int(escaped, 8)])


def _json_unescaped(text: str) -> str:
    """Every JSON string escape decoded in one pass, left to right (so an escaped backslash is
    never read again as the start of another escape); a surrogate pair becomes its character."""

    def one(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return chr(int(match.group(1), 16))
        return _JSON_SIMPLE.get(match.group(2), match.group(2))

    unescaped = _JSON_ESCAPE.sub(one, text)
    return unescaped.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


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
