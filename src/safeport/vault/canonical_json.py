"""The JSON spelling both parts of ``vault.sp`` use (pure, no I/O).

One canonical form (sorted keys, no spaces, ASCII) so that the same header and the same payload
always encode to the same bytes, and strict readers: a field of the wrong type is a ``TypeError``
the caller turns into :class:`~safeport.vault.errors.CannotUnlock`, never a foreign exception.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode(
        "ascii"
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(value: Any) -> bytes:
    return base64.b64decode(as_str(value), validate=True)


def as_str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def as_count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError("not a count")
    return value
