"""A credential's value for `sp vault add|rotate`: from a prompt or files, never argv or env.

A token or password is asked at a hidden prompt or read from ``--value-file``; an SSH private
key only from a file, with its own passphrase from a prompt or ``--key-passphrase-file``. Every
secret part is a :class:`SecretBytes`, wiped by :func:`wipe_value` once the gateway or the file
has it.
"""

from __future__ import annotations

from pathlib import Path

import click

from safeport.cli.secret_input import ask_secret, read_secret_file
from safeport.errors import UsageError
from safeport.vault.secrets import SecretBytes, SecretKind


def value_options(function: click.decorators.FC) -> click.decorators.FC:
    """The options that say where the new value comes from."""
    for option in reversed(
        [
            click.option(
                "--value-file",
                type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
                help="Read the token, password or SSH private key from FILE (- for stdin).",
            ),
            click.option("--username", help="The user name of a basic credential (not secret)."),
            click.option(
                "--key-passphrase-file",
                type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
                help="The SSH key's own passphrase, from FILE (- for stdin).",
            ),
            click.option(
                "--key-passphrase",
                "ask_key_passphrase",
                is_flag=True,
                help="Prompt for the SSH key's own passphrase.",
            ),
        ]
    ):
        function = option(function)
    return function


def read_value(
    kind: SecretKind,
    value_file: Path | None,
    username: str | None,
    key_passphrase_file: Path | None,
    ask_key_passphrase: bool,
) -> dict[str, SecretBytes | str]:
    if kind != "basic" and username is not None:
        raise UsageError("--username applies only to a basic credential")
    if kind != "ssh-key" and (key_passphrase_file is not None or ask_key_passphrase):
        raise UsageError("a key passphrase applies only to an ssh-key credential")
    if kind == "token":
        return {"token": ask_secret(value_file, what="token", option="--value-file")}
    if kind == "basic":
        if username is None:
            raise UsageError("a basic credential needs --username")
        return {
            "username": username,
            "password": ask_secret(value_file, what="password", option="--value-file"),
        }
    if value_file is None:
        raise UsageError("an ssh-key credential needs --value-file FILE (the private key)")
    value: dict[str, SecretBytes | str] = {
        "private_key": read_secret_file(value_file, what="private key", strip_newline=False)
    }
    if key_passphrase_file is not None or ask_key_passphrase:
        value["passphrase"] = ask_secret(
            key_passphrase_file, what="SSH key passphrase", option="--key-passphrase-file"
        )
    return value


def wipe_value(value: dict[str, SecretBytes | str]) -> None:
    for item in value.values():
        if isinstance(item, SecretBytes):
            item.wipe()
