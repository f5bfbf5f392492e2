"""Turn a JSON response body into the declared fields, and nothing else (pure).

Only the operation's ``response_fields`` leave the gateway, each addressed by a dotted path
(``deployment.state``, ``items.0.id``). Response headers are never read into a result. A field
whose value contains the credential, in any of the forms the executor sent it (raw token, the
whole header value, base64 of ``user:password``, percent-encoded), is refused outright: a
service that echoes the request headers back must not turn the agent into a reader of the
credential. The rule is
"refuse the whole result", not "redact the field", so a leak can never be silently partial.
The forms cover what echo endpoints and error pages actually do: raw, percent-encoded, hex, and
base64 (standard or URL-safe, padded or not) of any text the credential sits in, whatever its
offset; comparison ignores case. An encoding nobody could list (a server that encrypts the
echo) cannot be caught here: the policy author decides which services get a credential.
Bodies that cannot be represented safely (nesting past a fixed depth, numbers Python refuses to
parse) are refused as malformed rather than crashing the caller.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from safeport.action_gateway.executors.interface import ActionError

# Deeper values cannot be serialised into a reply (pydantic stops well before Python's stack
# does) and no declared field needs them.
MAX_FIELD_DEPTH = 32
# A base64 run shorter than this could occur by chance in ordinary text.
_MIN_ENCODED_FORM = 8


def credential_forms(secret: str) -> list[str]:
    """Every form of ``secret`` a response field must not contain (compared without case)."""
    data = secret.encode("utf-8")
    forms = {secret, quote(secret, safe=""), data.hex()}
    for offset in range(3):
        # Base64 of a longer text holding the secret at any offset: the characters of the
        # 3-byte groups made only of secret bytes do not depend on what surrounds them.
        encoded = base64.b64encode(bytes(offset) + data)
        core = encoded[4 if offset else 0 : 4 * ((offset + len(data)) // 3)].decode("ascii")
        if len(core) >= _MIN_ENCODED_FORM:
            forms.add(core)
            forms.add(core.replace("+", "-").replace("/", "_"))
    return sorted(form for form in forms if form)


def contains_credential(text: str, forms: Iterable[str]) -> bool:
    folded = text.casefold()
    return any(form.casefold() in folded for form in forms if form)


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
    """Raise ``bad_response`` if any string inside any field contains a credential form."""
    forms = [form for form in credential_forms if form]
    for path, value in fields.items():
        for text in _strings(value):
            if contains_credential(text, forms):
                raise ActionError(
                    "bad_response",
                    f"service {service_id!r} echoed the credential in field `{path}`; "
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
