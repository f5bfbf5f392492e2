"""`sp context`: serve a workspace read-only over MCP stdio, and build its search index."""

from __future__ import annotations

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from safeport.cli.options import profile_option
from safeport.context_server import ServeOptions, build_index, serve


@click.group()
def context() -> None:
    """The read-only workspace server for MCP clients."""


@context.command("serve")
@click.option(
    "--root", "roots", multiple=True, metavar="DIR", help="A folder to serve (repeatable)."
)
@profile_option
@click.option("--origin", default="unknown", show_default=True, help="A label for the journal.")
def serve_command(roots: tuple[str, ...], profile: str, origin: str) -> None:
    """Serve the roots over stdio (stdout carries only JSON-RPC).

    Without --root, the roots come from `roots = [...]` in context.toml."""
    serve(
        ServeOptions(
            roots=roots, profile="agent" if profile == "agent" else "reader", origin=origin
        )
    )


@context.command("index")
@click.option(
    "--root", "roots", multiple=True, metavar="DIR", help="A folder to index (repeatable)."
)
def index_command(roots: tuple[str, ...]) -> None:
    """Build or refresh the search index ahead of time (progress on stderr)."""
    console = Console(stderr=True)
    columns = (TextColumn("indexing"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("index", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        files, seconds = build_index(roots, progress)
    console.print(f"indexed {files} files in {seconds:.1f} s", highlight=False)
