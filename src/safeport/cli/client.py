"""`sp client install`: register the context server with an MCP client."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from safeport.cli.client_setup import (
    CLIENTS,
    entry_for,
    imports_project_code,
    installed_entry,
    merged_text,
    server_command,
    target_for,
    unsafe_project_entries,
)
from safeport.errors import Denied, EnvironmentProblem
from safeport.shared.provenance import verify_outside_served_roots


@click.group()
def client() -> None:
    """Connect MCP clients (Claude Code, Claude Desktop, Codex, Cursor, VS Code)."""


@client.command("install")
@click.argument("client_name", metavar="CLIENT", type=click.Choice(CLIENTS))
@click.option(
    "--profile", type=click.Choice(["reader", "agent"]), default="reader", show_default=True
)
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder to serve (repeatable; default: the current folder).",
)
@click.option(
    "--check", is_flag=True, help="Only report whether the client is set up (exit 1 if not)."
)
@click.option("--print", "print_only", is_flag=True, help="Print the entry; change nothing.")
@click.option("--replace", is_flag=True, help="Overwrite a different existing `safeport` entry.")
def install(
    client_name: str,
    profile: str,
    roots: tuple[Path, ...],
    check: bool,
    print_only: bool,
    replace: bool,
) -> None:
    """Add safeport's context server to CLIENT's MCP configuration."""
    served = [root.resolve() for root in roots] or [Path.cwd().resolve()]
    verify_outside_served_roots(served)
    target = target_for(
        client_name, home=Path.home(), platform=sys.platform, root=served[0], env=os.environ
    )
    command, args = server_command(sys.executable, served, profile, client_name)
    entry = entry_for(target, command, args)
    existing = target.path.read_text(encoding="utf-8") if target.path.exists() else None
    legacy = unsafe_project_entries(client_name, root=served[0])
    if check:
        current = installed_entry(target, existing)
        unsafe = [target.path] if current is not None and imports_project_code(current) else []
        unsafe += [old.path for old, _ in legacy]
        if unsafe:
            raise Denied(
                f"the `safeport` entry in {unsafe[0]} imports code from the project folder "
                "(written by an older version)",
                hint=f"run `sp client install {client_name}` to rewrite it",
            )
        if current != entry:
            raise Denied(f"{client_name} is not set up with this safeport in {target.path}")
        click.echo(f"{client_name}: set up in {target.path}")
        return
    text = merged_text(target, existing, entry, replace=replace)
    if print_only:
        click.echo(f"# {target.path}")
        click.echo(text, nl=False)
        return
    for old, cleaned in legacy:
        _write_atomically(old.path, cleaned)
        click.echo(f"{client_name}: removed an older, unsafe `safeport` entry from {old.path}")
    if text == existing:
        click.echo(f"{client_name}: already set up in {target.path}")
        return
    _write_atomically(target.path, text)
    click.echo(f"{client_name}: added `safeport` to {target.path}; restart the client to load it")


def _write_atomically(path: Path, text: str) -> None:
    # Through a symlink (dotfiles managers link these files): update the file it points at,
    # rather than replace the link with a copy that the dotfiles no longer track.
    path = Path(os.path.realpath(path))
    temp: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        temp = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        temp.chmod(mode)
        temp.replace(path)
    except OSError as exc:
        if temp is not None:
            temp.unlink(missing_ok=True)
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror}") from exc
