"""Terminal rendering shared by commands (outside text itself is shown through
:func:`safeport.shared.visible_text.inert`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from safeport.action_gateway.policy.store import DiffLine


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
