"""One strict decoder for JSON that comes from outside: HTTP bodies, socket frames, fetched
client metadata documents and the parts of a JWT.

The standard library's parser takes anything the grammar allows and more: it recurses once per
nesting level (100,000 ``[`` raise ``RecursionError``, which nobody catches), reads ``NaN`` and
``Infinity``, turns ``1e999999`` into ``inf``, keeps the last of two equal keys, and passes a lone
``\\ud800`` escape through as a string that later fails to encode. Every one of these is refused
here, before or while parsing, with one error type whose text is fixed:

* the size is checked first (:data:`max_bytes`), so everything below is bounded by it;
* before the parser sees the text, strings are cut out of it and what remains is measured in
  linear time without recursion: a run of number characters longer than
  :data:`MAX_NUMBER_CHARS` is refused (the integer conversion limit is never reached), and so
  is a nesting depth over the bound (each bracket a step up or down, summed in C);
* floats that are not finite (``1e999`` is ``inf`` to the standard parser) are refused as they
  are parsed;
* ``NaN``, ``Infinity`` and ``-Infinity`` are refused, and so is an object with a repeated key:
  two readers of the same document could otherwise each take a different one of its values;
* bytes must be UTF-8, and no string or key may hold a lone surrogate.

Callers translate :class:`JsonRefused` into their own answer once: a 400 on HTTP, an ``invalid``
reply on the sockets, a refused metadata document, a token that is no token.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from itertools import accumulate
from typing import Any

# Deeper than any document safeport reads (client metadata is three levels, a socket request
# four or five) and far below the interpreter's recursion limit.
MAX_DEPTH = 64
# A JSON number no legitimate field needs: a 64-bit integer is 20 characters, a double 24.
MAX_NUMBER_CHARS = 64
# A token is carried in a header that is bounded at 16 KiB; ours are well under 2 KiB.
MAX_JWT_CHARS = 8 * 1024

# A string runs to its closing quote or, unterminated, to the end of the text (the parser stops
# at its opening quote, so nothing after it is structure). Matching to the end keeps the cut
# linear: were an unterminated string not to match, the search would start again at each of its
# escaped quotes and read the rest of the text from each, 64 KiB of \\" taking minutes.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_LONG_NUMBER = re.compile(rf"[-+0-9.eE]{{{MAX_NUMBER_CHARS + 1},}}")
# Outside strings, an opening bracket is a step up (1) and a closing one a step down (-1 as a
# signed byte); every other byte is dropped.
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


class JsonRefused(ValueError):
    """Outside JSON this decoder does not take. The reason is fixed text, never the input."""


def loads_outside(data: bytes | str, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """The value ``data`` holds, if it is JSON within every bound above."""
    if len(data) > max_bytes:
        raise JsonRefused("the JSON document is too large")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise JsonRefused("the JSON document is not UTF-8") from None
    else:
        text = data
        try:  # a raw surrogate: bytes never decode to one, but a string may hold one
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise JsonRefused("the JSON document holds a lone surrogate") from None
    _prescan(text, max_depth)
    try:
        value = _DECODER.decode(text)
    except JsonRefused:
        raise
    except (ValueError, RecursionError):  # RecursionError: kept as a second line, never reached
        raise JsonRefused("the document is not valid JSON") from None
    if _SURROGATE_ESCAPE.search(text):  # only an escape can make one now: look closer
        _refuse_lone_surrogates(value)
    return value


def loads_object(
    data: bytes | str, *, max_bytes: int, max_depth: int = MAX_DEPTH
) -> dict[str, Any]:
    """Like :func:`loads_outside`, and the value must be an object."""
    value = loads_outside(data, max_bytes=max_bytes, max_depth=max_depth)
    if not isinstance(value, dict):
        raise JsonRefused("the JSON document is not an object")
    return value


def jwt_parts(token: str, *, max_chars: int = MAX_JWT_CHARS) -> tuple[dict[str, Any], bytes]:
    """A compact JWS's header and its payload's bytes, the header read by this decoder.

    The JWT library parses both with the standard library's parser, which a nested header
    would crash; running the same bytes through here first leaves it nothing it cannot parse.
    Nothing is verified: the caller still checks the signature and the claims.
    """
    if len(token) > max_chars or token.count(".") != 2:
        raise JsonRefused("the token is not a compact JWS")
    header_part, payload_part, signature_part = token.split(".")
    header = loads_object(_base64url(header_part), max_bytes=max_chars)
    payload = _base64url(payload_part)
    loads_object(payload, max_bytes=max_chars)
    _base64url(signature_part)
    return header, payload


def _base64url(part: str) -> bytes:
    if not _BASE64URL.fullmatch(part):
        raise JsonRefused("the token is not a compact JWS")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (ValueError, binascii.Error):
        raise JsonRefused("the token is not a compact JWS") from None


def _prescan(text: str, max_depth: int) -> None:
    # The strings are cut out first: a bracket or a digit inside one is text, not structure.
    outside = _STRING.sub('""', text)
    if _LONG_NUMBER.search(outside):
        raise JsonRefused("a JSON number is too long")
    steps = outside.encode("utf-8", "surrogatepass").translate(_STEPS, _NOT_BRACKETS)
    # A mismatched pair counts as a pair: the parser stops at it having gone no deeper than the
    # brackets before it, which are counted all the same.
    if steps and max(accumulate(memoryview(steps).cast("b"))) > max_depth:
        raise JsonRefused("the JSON document is nested too deeply")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise JsonRefused("a key is repeated in a JSON object")
    return found


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonRefused("a JSON number is out of range")
    return value


def _constant(name: str) -> Any:
    raise JsonRefused("NaN and Infinity are not JSON")


# Built once: ``json.loads`` with any hook builds a new decoder and scanner on every call. The
# standard library shares its own default decoder between threads the same way.
_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_float=_float, parse_constant=_constant)


def _refuse_lone_surrogates(value: Any) -> None:
    """Walk the parsed value (its depth is already bounded) without recursion."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            _check_text(item)
        elif isinstance(item, dict):
            for key, inner in item.items():
                _check_text(key)
                pending.append(inner)
        elif isinstance(item, list):
            pending.extend(item)


def _check_text(text: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonRefused("a JSON string holds a lone surrogate") from None
