"""Reading passphrases and values: from a TTY prompt or a file (``-`` = stdin), never argv/env.

Everything read here becomes a :class:`SecretBytes` at once. The prompt path goes through
``click.prompt``, whose ``str`` result cannot be zeroed (docs/security/vault.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, cast

import click

from safeport.errors import EnvironmentProblem, UsageError
from safeport.vault.secrets import SecretBytes

MAX_INPUT_BYTES = 64 * 1024


class _ReadsInto(Protocol):
    def readinto(self, buffer: memoryview, /) -> int | None: ...


def read_secret_file(
    path: Path, *, what: str, strip_newline: bool = True, one_line: bool = False
) -> SecretBytes:
    """The bytes of ``path`` (or stdin for ``-``), minus one trailing newline if asked.

    With ``one_line``, stdin is read up to its first newline and no further, straight from the
    descriptor: what follows (an approver's answers) stays for whoever reads next.

    The bytes go into one mutable buffer that is zeroed before this returns or raises, so no
    immutable copy of the secret is left in a frame a traceback could show.
    """
    buffer = bytearray(MAX_INPUT_BYTES + 1)
    try:
        try:
            if str(path) == "-" and one_line:
                size = _fill_line(sys.stdin.fileno(), buffer)
            elif str(path) == "-":
                size = _fill(cast(_ReadsInto, sys.stdin.buffer), buffer)
            else:
                with path.open("rb") as stream:
                    size = _fill(stream, buffer)
        except OSError as exc:
            raise EnvironmentProblem(f"cannot read the {what} file {path}: {exc.strerror}") from exc
        if size > MAX_INPUT_BYTES:
            raise UsageError(f"the {what} file {path} is larger than {MAX_INPUT_BYTES} bytes")
        if strip_newline and buffer[:size].endswith(b"\r\n"):
            size -= 2
        elif strip_newline and buffer[:size].endswith(b"\n"):
            size -= 1
        return SecretBytes(memoryview(buffer)[:size])
    finally:
        buffer[:] = bytes(len(buffer))


def _fill(stream: _ReadsInto, buffer: bytearray) -> int:
    """Read until the buffer is full or the stream ends (stdin may deliver in pieces)."""
    view = memoryview(buffer)
    size = 0
    while size < len(buffer):
        count = stream.readinto(view[size:])
        if not count:
            break
        size += count
    return size


def _fill_line(fd: int, buffer: bytearray) -> int:
    """Read one byte at a time until a newline (kept) or the end, so nothing after it is taken."""
    size = 0
    while size < len(buffer):
        byte = os.read(fd, 1)
        if not byte:
            break
        buffer[size] = byte[0]
        size += 1
        if byte == b"\n":
            break
    return size


def ask_secret(
    file: Path | None, *, what: str, option: str, confirm: bool = False, one_line: bool = False
) -> SecretBytes:
    """From ``file`` if given, else a hidden prompt at a terminal; refuse when neither exists."""
    if file is not None:
        return read_secret_file(file, what=what, one_line=one_line)
    if not sys.stdin.isatty():
        raise UsageError(
            f"no terminal to ask for the {what}",
            hint=f"pass {option} FILE (- reads stdin)",
        )
    text = click.prompt(
        what[0].upper() + what[1:],
        hide_input=True,
        confirmation_prompt=confirm,
        default="",
        show_default=False,  # an empty default would show as `[]`
    )
    return SecretBytes(text.encode("utf-8"))


def vault_passphrase(file: Path | None, *, one_line: bool = False) -> Callable[[], SecretBytes]:
    """Asks for the vault passphrase when called (``--passphrase-file`` or a prompt)."""
    return lambda: ask_secret(
        file, what="vault passphrase", option="--passphrase-file", one_line=one_line
    )


def one_stdin(*files: Path | None) -> None:
    """Only one input may come from stdin."""
    if sum(1 for f in files if f is not None and str(f) == "-") > 1:
        raise UsageError("only one of the --*-file options can read stdin (-)")
