"""The `sp` command: each command parses, makes one library call, and renders.

:func:`main` asks :mod:`safeport.shared.platform_support` before it imports click or any
command, so on a platform safeport does not run on nothing but the refusal is loaded (click
itself imports Windows console modules on Windows).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from safeport.shared.platform_support import refuse_unsupported_platform

if TYPE_CHECKING:
    from safeport.cli.app import sp

__all__ = ["main", "sp"]


def main(argv: list[str] | None = None) -> None:
    """`sp` and `python -m safeport`: refuse any platform but Linux, then run the command."""
    words = sys.argv[1:] if argv is None else argv
    refuse_unsupported_platform("sp", json_reply="--json" in words)
    from safeport.cli.app import main as run

    run(argv)


def __getattr__(name: str) -> object:
    # The click group, loaded when it is asked for: importing this package stays light.
    if name == "sp":
        from safeport.cli.app import sp

        return sp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
