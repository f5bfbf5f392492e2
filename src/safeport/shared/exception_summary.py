"""What a catch-all may log about the exception it caught: its type and where it was raised.

Never its message or arguments: an exception raised while a secret is in hand (a KeyError on a
credential's field, a ValueError quoting a header) may carry that secret in its text.
"""

from __future__ import annotations

import traceback
from pathlib import PurePath


def summarize(exc: BaseException) -> str:
    """``TypeName at module.py:123 in function`` (the innermost frame), or only the type name
    when there is no traceback."""
    name = type(exc).__qualname__
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if not frames:
        return name
    last = frames[-1]
    return f"{name} at {PurePath(last.filename).name}:{last.lineno} in {last.name}"
