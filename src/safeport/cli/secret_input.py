"""Reading passphrases and values: from a TTY prompt or a file (``-`` = stdin), never argv/env.

Everything read here becomes a :class:`SecretBytes` at once. The prompt path goes through
``click.prompt``, whose ``str`` result cannot be zeroed (docs/security/vault.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from safeport.errors import EnvironmentProblem, UsageError
from safeport.vault.secrets import SecretBytes

MAX_INPUT_BYTES = 64 * 1024


def read_secret_file(path: Path, *, what: str, strip_newline: bool = True) -> SecretBytes:
    """The bytes of ``path`` (or stdin for ``-``), minus one trailing newline if asked."""
    try:
        if str(path) == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with path.open("rb") as stream:
                data = stream.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read the {what} file {path}: {exc.strerror}") from exc
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"the {what} file {path} is larger than {MAX_INPUT_BYTES} bytes")
    if strip_newline:
        if data.endswith(b"\r\n"):
            data = data[:-2]
        elif data.endswith(b"\n"):
            data = data[:-1]
    return SecretBytes(data)


def ask_secret(file: Path | None, *, what: str, option: str, confirm: bool = False) -> SecretBytes:
    """From ``file`` if given, else a hidden prompt at a terminal; refuse when neither exists."""
    if file is not None:
        return read_secret_file(file, what=what)
    if not sys.stdin.isatty():
        raise UsageError(
            f"no terminal to ask for the {what}",
            hint=f"pass {option} FILE (- reads stdin)",
        )
    text = click.prompt(
        what[0].upper() + what[1:], hide_input=True, confirmation_prompt=confirm, default=""
    )
    return SecretBytes(text.encode("utf-8"))


def one_stdin(*files: Path | None) -> None:
    """Only one input may come from stdin."""
    if sum(1 for f in files if f is not None and str(f) == "-") > 1:
        raise UsageError("only one of the --*-file options can read stdin (-)")
