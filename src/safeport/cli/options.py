"""Options several commands take, declared once so that their meaning cannot drift apart."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

Command = TypeVar("Command", bound=Callable[..., Any])


def _passphrase_file(help_text: str) -> Callable[[Command], Command]:
    return click.option(
        "--passphrase-file",
        type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
        default=None,
        help=help_text,
    )


# Commands that always prove the passphrase.
passphrase_file_option = _passphrase_file(
    "Read the vault passphrase from FILE (- for stdin) instead of a prompt."
)
# Commands that ask for it only when several humans share one gateway.
several_humans_passphrase_option = _passphrase_file(
    "With several humans installed: read the vault passphrase from FILE (- for stdin)."
)

profile_option = click.option(
    "--profile",
    type=click.Choice(["reader", "agent"]),
    default="reader",
    show_default=True,
    help="reader: the workspace only; agent: also the gateway's actions.",
)
