"""`sp demo`: a self-contained end-to-end run on an embedded default."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console


@click.command()
@click.option("--yes", is_flag=True, help="Approve the demo's card without asking.")
@click.option("--keep", is_flag=True, help="Keep the demo's files (home, workspace, journals).")
def demo(yes: bool, keep: bool) -> None:
    """Run workspace, vault, gateway, approval and audit end to end in a throwaway folder."""
    from safeport.demo.scenario import run_demo

    console = Console(highlight=False, soft_wrap=True)
    interactive = not yes and sys.stdin.isatty()

    def ask(card: dict[str, Any]) -> bool:
        # No default: an action runs only on an answer a person typed.
        return click.confirm("approve this card?", default=None)

    run_demo(ask=ask if interactive else None, keep=keep, console=console)
