"""Terminal rendering shared by commands: text that came from outside is shown inert."""

from __future__ import annotations

from safeport.shared.visible_text import escape_code, needs_escape


def inert(text: str) -> str:
    """Escape control, ANSI, bidi, zero-width and blank look-alike characters, so hostile text
    can neither restyle a terminal nor look like other text (``shared/visible_text.py``)."""
    if text.isascii() and text.isprintable():
        return text  # the common case, at no cost
    return "".join(escape_code(char) if needs_escape(char) else char for char in text)
