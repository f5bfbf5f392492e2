"""Turn a JSON response body into the declared fields, and nothing else (pure).

Only the operation's ``response_fields`` leave the gateway, each addressed by a dotted path
(``deployment.state``, ``items.0.id``). Response headers are never read into a result. A field
whose value contains the credential, in any of the forms the executor sent it (raw token, the
whole header value, base64 of ``user:password``, percent-encoded), is refused outright: a
service that echoes the request headers back must not turn the agent into a reader of the
credential. The rule is
"refuse the whole result", not "redact the field", so a leak can never be silently partial.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from safeport.action_gateway.executors.interface import ActionError


def extract_fields(body: bytes, fields: list[str], *, service_id: str) -> dict[str, Any]:
    """The declared fields of a JSON body; raise ``bad_response`` on anything else."""
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
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
        result[path] = value
    return result


def refuse_credential_echo(
    fields: dict[str, Any], credential_forms: Iterable[str], *, service_id: str
) -> None:
    """Raise ``bad_response`` if any string inside any field contains a credential form."""
    forms = [form for form in credential_forms if form]
    for path, value in fields.items():
        for text in _strings(value):
            if any(form in text for form in forms):
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
