"""Turn a JSON response body into the declared fields, and nothing else (pure).

Only the operation's ``response_fields`` leave the gateway, each addressed by a dotted path
(``deployment.state``, ``items.0.id``). Response headers are never read into a result. If the
returned text holds the credential in any form the checker can name, the whole result is
refused, never redacted, so a leak can never be silently partial: a service that echoes the
request headers back must not turn the agent into a reader of the credential.

What is searched: every string of every returned field (keys and scalars too), joined end to
end, so a credential split across two fields is still whole. It is searched as it is, after
percent-decoding (twice: every byte encoded, or encoded again), and with white space removed
and the URL-safe base64 alphabet mapped to the standard one (MIME base64 breaks lines every
76 characters). What is searched for: the credential and every 16-character piece of it, each
raw, in hex and in base64 at each of the three alignments it can take inside a longer text;
comparison ignores case. An encoding nobody could list (a server that encrypts the echo)
cannot be caught here: the policy author decides which services get a credential. Bodies that
cannot be represented safely (nesting past a fixed depth, numbers Python refuses to parse) are
refused as malformed rather than crashing the caller.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from safeport.action_gateway.executors.interface import ActionError

# Deeper values cannot be serialised into a reply (pydantic stops well before Python's stack
# does) and no declared field needs them.
MAX_FIELD_DEPTH = 32
# A base64 run shorter than this could occur by chance in ordinary text.
_MIN_ENCODED_FORM = 8
# Any run of this many characters of the credential counts as the credential.
PIECE_CHARS = 16
_WHITESPACE = re.compile(r"\s+")


def credential_forms(secret: str) -> list[str]:
    """Every form of ``secret`` (and of each of its 16-character pieces) that returned text must
    not contain, compared without case in the views :func:`contains_credential` makes."""
    if not secret:
        return []
    span = min(len(secret), PIECE_CHARS)
    pieces = {secret} | {secret[i : i + span] for i in range(len(secret) - span + 1)}
    forms: set[str] = set()
    for text in pieces:
        data = text.encode("utf-8")
        forms.update({text, data.hex()})
        for offset in range(3):
            # Base64 of a longer text holding the piece at any offset: the characters of the
            # 3-byte groups made only of piece bytes do not depend on what surrounds them.
            encoded = base64.b64encode(bytes(offset) + data)
            core = encoded[4 if offset else 0 : 4 * ((offset + len(data)) // 3)].decode("ascii")
            if len(core) >= _MIN_ENCODED_FORM:
                forms.add(core)
    return sorted(form for form in forms if form)


def contains_credential(text: str, forms: Iterable[str]) -> bool:
    """Whether ``text`` holds one of ``forms`` as it is, percent-decoded, or as base64 with
    its line breaks and URL-safe alphabet undone."""
    pattern = _pattern(tuple(sorted({form for form in forms if form})))
    if pattern is None:
        return False
    once = unquote(text)
    views = (
        text,
        once,
        unquote(once),
        _WHITESPACE.sub("", text).replace("-", "+").replace("_", "/"),
    )
    return any(pattern.search(view) for view in views)


@lru_cache(maxsize=64)
def _pattern(forms: tuple[str, ...]) -> re.Pattern[str] | None:
    if not forms:
        return None
    # Longest first, so the alternation never stops at a shorter form's prefix needlessly.
    ordered = sorted(forms, key=len, reverse=True)
    return re.compile("|".join(re.escape(form) for form in ordered), re.IGNORECASE)


def extract_fields(body: bytes, fields: list[str], *, service_id: str) -> dict[str, Any]:
    """The declared fields of a JSON body; raise ``bad_response`` on anything else."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        # ValueError covers invalid JSON and UTF-8, and integers too long to convert;
        # RecursionError a document nested deeper than the parser's stack.
        raise ActionError(
            "bad_response", f"service {service_id!r} did not answer with JSON"
        ) from None
    result: dict[str, Any] = {}
    for path in fields:
        found, value = _lookup(document, path.split("."))
        if not found:
            raise ActionError(
                "bad_response", f"service {service_id!r} answered without the field `{path}`"
            )
        if _deeper_than(value, MAX_FIELD_DEPTH):
            raise ActionError(
                "bad_response", f"service {service_id!r} answered a field `{path}` nested too deep"
            )
        result[path] = value
    return result


def refuse_credential_echo(
    fields: dict[str, Any], credential_forms: Iterable[str], *, service_id: str
) -> None:
    """Raise ``bad_response`` if the returned text holds the credential, in one field or
    spread across several (their strings joined end to end)."""
    forms = [form for form in credential_forms if form]
    joined = "".join(text for value in fields.values() for text in _strings(value))
    if contains_credential(joined, forms):
        raise ActionError(
            "bad_response",
            f"service {service_id!r} echoed the credential in its answer; "
            "the whole result was withheld",
        )


def _lookup(document: object, steps: list[str]) -> tuple[bool, object]:
    current = document
    for step in steps:
        if isinstance(current, dict) and step in current:
            current = current[step]
        elif isinstance(current, list) and step.isdigit() and int(step) < len(current):
            current = current[int(step)]
        else:
            return False, None
    return True, current


def _deeper_than(value: object, limit: int) -> bool:
    """Whether containers nest more than ``limit`` levels (iterative: no stack to exhaust)."""
    pending = [(value, 0)]
    while pending:
        current, depth = pending.pop()
        if isinstance(current, dict | list):
            if depth >= limit:
                return True
            items = current.values() if isinstance(current, dict) else current
            pending.extend((item, depth + 1) for item in items)
    return False


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif value is not None:
        yield str(value)
