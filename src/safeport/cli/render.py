"""Terminal rendering shared by commands: text that came from outside is shown inert."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from safeport.shared.visible_text import visible

if TYPE_CHECKING:
    from safeport.action_gateway.policy_store import DiffLine


def inert(text: str) -> str:
    """Escape control, ANSI, bidi, zero-width and blank look-alike characters, so hostile text
    can neither restyle a terminal nor look like other text (``shared/visible_text.py``)."""
    return visible(text)


_DIFF_STYLES = {
    "file": {"bold": True},
    "hunk": {"fg": "cyan"},
    "added": {"fg": "green"},
    "removed": {"fg": "red"},
    "same": {},
}


def diff_text(lines: Iterable[DiffLine], *, colour: bool) -> str:
    """A unified diff for the terminal, one line per line, coloured when ``colour``."""
    import click

    rendered = [
        click.style(line.text, **_DIFF_STYLES[line.kind]) if colour else line.text  # type: ignore[arg-type]
        for line in lines
    ]
    return "\n".join(rendered) if rendered else "no changes"
