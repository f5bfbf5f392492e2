"""Options several commands take, declared once so that their meaning cannot drift apart, and
the check that a question those options replace can be asked at all."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from safeport.errors import UsageError

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


def stdin_is_terminal() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def refuse_unanswerable(asks: Sequence[tuple[str, str]]) -> None:
    """Refuse, before anything is read, shown or written, a command that would stop half-way
    at a question nobody can answer: stdin is not a terminal. Each ask is (what would be asked,
    the flag that answers it instead); every missing flag is named at once, so one more run
    does the whole job."""
    if not asks or stdin_is_terminal():
        return
    raise UsageError(
        "no terminal to ask for " + _listed([what for what, _ in asks], "or"),
        hint=f"pass {_listed([flag for _, flag in asks], 'and')}; nothing was changed",
    )


def _listed(items: Sequence[str], last: str) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def confirm(question: str, *, flag: str, default: bool | None = False) -> bool:
    """A yes/no at the terminal (``default`` None: Enter alone is no answer); no answer at all
    (end of input, Ctrl-C) is refused naming the flag that answers it, not a bare "aborted"."""
    try:
        return click.confirm(question, default=default)
    except click.exceptions.Abort:
        click.echo("", err=True)
        raise UsageError(
            f"no answer to {question!r}", hint=f"nothing was changed; {flag} answers yes"
        ) from None
