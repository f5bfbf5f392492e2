"""`sp init`: a first setup that writes commented templates and creates the vault.

Nothing existing is overwritten: each file that is already there is left alone and named.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click

from safeport.authoring.starter import STARTER_POLICY
from safeport.cli.credentials import vault as vault_cli
from safeport.cli.options import passphrase_file_option
from safeport.cli.replies import InitReply, echo_json
from safeport.shared.paths import ensure_private_dir, locate

GATEWAY_TEMPLATE = STARTER_POLICY

CONTEXT_TEMPLATE = """\
# safeport context server. `sp context serve --root DIR` overrides `roots`.
# roots = ["~/src/app"]
# projects = ["app"]             # optional: only these top-level folders of a root

[private]                        # can only add to the built-in private names
folders = []
patterns = []
"""


@click.command("init")
@passphrase_file_option
@click.option(
    "--json", "as_json", is_flag=True,
    help="Print what was written and kept as JSON (the words go to stderr).",
)  # fmt: skip
def init(passphrase_file: Path | None, as_json: bool) -> None:
    """Write gateway.toml and context.toml templates and create the vault (first setup)."""
    paths = locate()
    # What the command needs is asked before anything is written: a passphrase that cannot be
    # asked (no terminal, no --passphrase-file) must not leave the templates and no vault.
    passphrase = None if paths.vault_file.exists() else vault_cli.new_passphrase(passphrase_file)
    written: list[str] = []
    kept: list[str] = []
    # With --json, stdout carries the one JSON document; the words a person reads go to stderr.
    words = contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()
    with words:
        try:
            ensure_private_dir(paths.config_dir)
            ensure_private_dir(paths.data_dir)
            if passphrase is None:
                click.echo(f"kept existing vault {paths.vault_file}")
            else:
                # The vault first: it is what can still be refused (an empty passphrase).
                vault_cli.create_vault(passphrase)
        finally:
            if passphrase is not None:
                passphrase.wipe()
        for path, text in (
            (paths.gateway_config, GATEWAY_TEMPLATE),
            (paths.context_config, CONTEXT_TEMPLATE),
        ):
            try:
                # One open that creates the file or fails: never through a link (a dangling one
                # passes a check by name), never over a file that appeared since a check.
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except FileExistsError:
                click.echo(f"kept existing {path}")
                kept.append(str(path))
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            click.echo(f"wrote {path}")
            written.append(str(path))
        click.echo(
            "next: add credentials (`sp vault add`), declare them in gateway.toml "
            "(`sp policy edit`; its examples are commented out), `sp policy check`, "
            "`sp gateway run`, `sp vault unlock`, `sp policy accept`, `sp client install CLIENT`"
        )
    if as_json:
        echo_json(
            InitReply(tuple(written), tuple(kept), str(paths.vault_file), passphrase is not None)
        )
