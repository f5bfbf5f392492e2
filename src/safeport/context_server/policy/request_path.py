"""A tool's ``path`` argument, parsed into components before anything is looked up.

The first step of every tool's path check: a request is refused for its shape alone (absolute,
``..``, Windows forms, URLs, control characters, over-long) before the read policy judges its
names or the workspace resolves it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from safeport.context_server.policy.display_names import (
    RedactedName,
    SecretInName,
    UndisplayableName,
    raw_name,
)
from safeport.context_server.policy.read_policy import InvalidInput

MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255


@dataclass(frozen=True)
class RequestPath:
    """A request path split into components, relative to one served root."""

    root: str  # the root's display name
    parts: tuple[str, ...]

    @property
    def display(self) -> str:
        return "/".join(self.parts) if self.parts else "."


def parse_request_path(text: object, root_names: Sequence[str]) -> RequestPath:
    """Turn a tool's ``path`` argument into components, or refuse it with a clear sentence.

    Paths are relative to the served root (with several roots, the first component names the
    root). Absolute paths, ``..``, Windows forms and control characters are refused outright:
    nothing a well-behaved client sends needs them, and each has been an escape elsewhere.
    """
    if not isinstance(text, str):
        raise InvalidInput("invalid path: expected a string")
    _check_shape(text)
    parts = tuple(p for p in text.split("/") if p not in ("", "."))
    if ".." in parts:
        raise InvalidInput("invalid path: '..' is not accepted; use a path inside the workspace")
    for part in parts:
        _check_component(part)
    if len(root_names) <= 1:
        return RequestPath(root_names[0] if root_names else "", parts)
    if not parts:
        return RequestPath("", ())  # the virtual top that lists the roots
    if parts[0] not in root_names:
        raise InvalidInput(
            "invalid path: with several roots, start the path with a root name (see list_roots)"
        )
    return RequestPath(parts[0], parts[1:])


def _check_shape(text: str) -> None:
    """Refuse the whole text for its form: empty, over-long, control characters, Windows
    paths, URLs and absolute paths, each with the sentence that says what to send instead."""
    if text == "":
        raise InvalidInput('invalid path: empty; use "." for the root')
    if len(text) > MAX_PATH_CHARS:
        raise InvalidInput(f"invalid path: longer than {MAX_PATH_CHARS} characters")
    if "\x00" in text:
        raise InvalidInput("invalid path: contains a NUL byte")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise InvalidInput("invalid path: contains a control character")
    if "\\" in text or re.match(r"^[A-Za-z]:", text):
        raise InvalidInput(
            "invalid path: Windows-style paths are not accepted; use forward slashes "
            "relative to the workspace root"
        )
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        raise InvalidInput(
            "invalid path: URLs are not accepted; use a path relative to the workspace root"
        )
    if text.startswith("/") or text.startswith("~"):
        raise InvalidInput(
            "invalid path: absolute paths are not accepted; use a path relative to the "
            "workspace root (see list_roots)"
        )


def _check_component(part: str) -> None:
    """Refuse one component for what its escapes and markers say, or for its length on disk."""
    try:
        raw = raw_name(part)
    except RedactedName:
        return  # looked up in its folder; what it stands for is a name that was listed
    except SecretInName:
        # The reply never repeats the name: it holds a secret the server withholds.
        raise InvalidInput(
            "invalid path: a name holding a secret is named as listings show it, with its "
            "[REDACTED:<kind>] marker"
        ) from None
    except UndisplayableName:
        raise InvalidInput(
            "invalid path: a %XX escape this server never writes; use names exactly as listed"
        ) from None
    if len(raw) > MAX_COMPONENT_BYTES:
        raise InvalidInput(f"invalid path: a component is longer than {MAX_COMPONENT_BYTES} bytes")
