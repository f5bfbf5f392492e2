"""Turn a JSON response body into the declared fields, and nothing else (pure).

Only the operation's ``response_fields`` leave the gateway, each addressed by a dotted path
(``deployment.state``, ``items.0.id``). Response headers are never read into a result. If the
returned text holds the credential in any form the checker can name, the whole result is
refused, never redacted, so a leak can never be silently partial: a service that echoes the
request headers back must not turn the agent into a reader of the credential.

What is searched: every string of every returned field (keys and scalars too), joined end to
end, so a credential split across two fields is still whole; how it is searched (decoded views,
any 16-byte run of the credential, linear time) is in ``shared/known_secrets/views.py``. An encoding
nobody could list (a server that encrypts the echo) cannot be caught here: the policy author
decides which services get a credential. Bodies are read by the strict decoder every outside
input goes through (``shared/outside_json.py``): a repeated key, NaN or Infinity, a number
longer than 64 characters or out of a double's range, a lone surrogate, or a nesting deeper
than 64 anywhere in the body is refused as malformed rather than passed on or crashing the
caller; a returned field is further bounded at 32 levels.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.known_secrets import KnownSecrets
from safeport.shared.outside_json import JsonRefused, loads_outside

# Deeper values cannot be serialised into a reply (pydantic stops well before Python's stack
# does) and no declared field needs them.
MAX_FIELD_DEPTH = 32


def credential_forms(secret: str) -> list[str]:
    """The texts of a credential that returned text must not hold, in any encoding
    :class:`~safeport.shared.known_secrets.KnownSecrets` decodes."""
    return [secret] if secret else []


def contains_credential(text: str, forms: Iterable[str]) -> bool:
    return KnownSecrets(forms).found_in(text)


def extract_fields(body: bytes, fields: list[str], *, service_id: str) -> dict[str, Any]:
    """The declared fields of a JSON body; raise ``bad_response`` on anything else."""
    try:
        # The strict decoder, as for every other outside input (its size is bounded as it is
        # read): a repeated key, NaN or a number out of range could not be passed on to the agent
        # as the one value the service meant (a non-finite number cannot even be written into
        # the reply), and a nesting past the bound is refused before the parser recurses.
        document = loads_outside(body, max_bytes=len(body))
    except JsonRefused:
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
    joined = "".join(text for value in fields.values() for text in _strings(value))
    if KnownSecrets(credential_forms).found_in(joined):
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
