"""`sp completion bash|zsh|fish`: the shell completion script click generates for `sp`."""

from __future__ import annotations

import click


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the completion script for SHELL; load it from your shell's start-up file."""
    from click.shell_completion import get_completion_class

    root = ctx.find_root().command
    script_class = get_completion_class(shell)
    assert script_class is not None  # the three choices are click's own
    click.echo(script_class(root, {}, "sp", "_SP_COMPLETE").source())
