"""Terminal rendering shared by commands: text that came from outside is shown inert."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def inert(text: str) -> str:
    """Escape control, ANSI and bidi characters so hostile text cannot restyle a terminal."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
