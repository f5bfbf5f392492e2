"""`sp demo`: a self-contained end-to-end run on an embedded default."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from safeport.cli.options import confirm, refuse_unanswerable


@click.command()
@click.option("--yes", is_flag=True, help="Approve the demo's card without asking.")
@click.option("--keep", is_flag=True, help="Keep the demo's files (home, workspace, journals).")
def demo(yes: bool, keep: bool) -> None:
    """Run workspace, vault, gateway, approval and audit end to end in a throwaway folder."""
    from safeport.demo.scenario import run_demo

    # Its card is a question like any other: with nobody at a terminal to answer it, the demo
    # stops before it starts, naming the flag, instead of approving on its own.
    refuse_unanswerable([] if yes else [("a yes or no to the demo's card", "--yes")])
    console = Console(highlight=False, soft_wrap=True)

    def ask(card: dict[str, Any]) -> bool:
        # No default: an action runs only on an answer a person typed.
        return confirm("approve this card?", flag="--yes", default=None)

    run_demo(ask=None if yes else ask, keep=keep, console=console)
