"""Terminal rendering shared by commands: text that came from outside is shown inert."""

from __future__ import annotations

import re

# C0/C1 controls (ANSI), zero-width and bidi marks (incl. the Arabic letter mark), line and
# paragraph separators, and the BOM.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def inert(text: str) -> str:
    """Escape control, ANSI and bidi characters so hostile text cannot restyle a terminal."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
