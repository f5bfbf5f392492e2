"""`sp client install|list|uninstall`: register the context server with an MCP client."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from safeport.cli.options import profile_option
from safeport.cli.replies import ClientCheckReply, ClientEntry, ClientList, echo_json
from safeport.context_server.mcp_clients.config_files import CLAUDE_SCOPES, CLIENTS
from safeport.context_server.mcp_clients.install import (
    Listed,
    Setup,
    install,
    listing,
    printed_entry,
    uninstall,
)
from safeport.context_server.mcp_clients.verify import verify, verify_listed
from safeport.errors import Denied, UsageError
from safeport.shared.paths import ensure_private_dir, locate
from safeport.shared.provenance import verify_outside_served_roots
from safeport.shared.visible_text import inert

_SCOPE_HELP = (
    "Claude Code only: local (your ~/.claude.json, for this project; the default, as "
    "`claude mcp add`), project (.mcp.json in the project, shared with everyone who clones "
    "it), or user (~/.claude.json, every project)."
)


@click.group()
def client() -> None:
    """Connect MCP clients (Claude Code, Claude Desktop, Codex, Cursor, VS Code).

    \b
    Examples:
      sp client install claude-code --profile agent --root ~/src/app
      sp client list
      sp client uninstall vscode --root ~/src/app
    """


@client.command("install")
@click.argument("client_name", metavar="CLIENT", type=click.Choice(CLIENTS))
@profile_option
@click.option(
    "--root",
    "roots",
    multiple=True,
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder to serve (repeatable; default: the current folder).",
)
@click.option(
    "--scope", type=click.Choice(CLAUDE_SCOPES), default="local", show_default=True,
    help=_SCOPE_HELP,
)  # fmt: skip
@click.option(
    "--check", is_flag=True, help="Only report what differs from this install (exit 1 if any)."
)
@click.option("--print", "print_only", is_flag=True, help="Print the entry alone; change nothing.")
@click.option("--replace", is_flag=True, help="Overwrite a different existing `safeport` entry.")
@click.option("--json", "as_json", is_flag=True, help="With --check: print the verdict as JSON.")
def install_command(
    client_name: str,
    profile: str,
    roots: tuple[Path, ...],
    scope: str,
    check: bool,
    print_only: bool,
    replace: bool,
    as_json: bool,
) -> None:
    """Add safeport's context server to CLIENT's MCP configuration.

    The entry runs this installation's interpreter in isolated mode and carries SAFEPORT_HOME
    and SAFEPORT_GATEWAY when they are set, so the server finds the same home and gateway.

    \b
    Examples:
      sp client install claude-code --profile agent --root ~/src/app
      sp client install claude-code --scope user --root ~/src/app
      sp client install vscode --check
      sp client install claude-code --check --json
      sp client install codex --print
    """
    served = tuple(root.resolve() for root in roots) or (Path.cwd().resolve(),)
    verify_outside_served_roots(list(served))
    setup = Setup(client_name, served, profile=profile, scope=scope)  # type: ignore[arg-type]
    if print_only:
        click.echo(f"# {setup.target.path}, under {'.'.join(setup.target.key)}", err=True)
        click.echo(printed_entry(setup), nl=False)
        return
    if as_json and not check:
        raise UsageError("--json reports a check", hint="add --check, or leave out --json")
    if check:
        _report_check(client_name, setup, as_json)
        return
    if client_name == "claude-code" and scope == "project":
        click.echo(
            f"warning: {setup.target.path} is meant to be committed and is read by everyone "
            "who clones the project; this entry holds this machine's paths (interpreter, "
            "roots). `--scope local` keeps it to you.",
            err=True,
        )
    result = install(setup, replace=replace)
    for path in result.cleaned:
        click.echo(f"{client_name}: removed an older, unsafe `safeport` entry from {path}")
    if not result.changed:
        click.echo(f"{client_name}: already set up in {result.path}")
        return
    click.echo(f"{client_name}: added `safeport` to {result.path}; restart the client to load it")


def _report_check(client_name: str, setup: Setup, as_json: bool) -> None:
    verdict = verify(setup)  # the client's own CLI when installed, else its file
    if as_json:
        echo_json(
            ClientCheckReply(
                client_name,
                str(setup.target.path),
                not verdict.problems,
                verdict.problems,
                verdict.how,
            )
        )
        if verdict.problems:
            raise click.exceptions.Exit(1)
        return
    if verdict.problems:
        raise Denied(
            f"{client_name} ({setup.target.path}) differs from this install ({verdict.how}):\n"
            + "".join(f"  - {inert(problem)}\n" for problem in verdict.problems)
            + f"fix: run `sp client install {client_name}` (with --replace if asked)"
        )
    click.echo(inert(f"{client_name}: set up in {setup.target.path} ({verdict.how})"))


@client.command("list")
@click.option(
    "--root",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The project whose entries to show (default: the current folder).",
)
@click.option(
    "--check", is_flag=True,
    help="Also ask Claude Code and Codex themselves (their CLIs), exit 1 if any differs.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
def list_command(root: Path | None, check: bool, as_json: bool) -> None:
    """Show each client's `safeport` entry: profile, roots, home, and OK or what differs.

    \b
    Examples:
      sp client list
      sp client list --root ~/src/app --check
      sp client list --json
    """
    folder = (root or Path.cwd()).resolve()
    items = listing(folder)
    if as_json:
        echo_json(ClientList(str(folder), tuple(_entry(item) for item in items)))
        if check and any(verdict.problems for _, verdict in verify_listed(folder)):
            raise click.exceptions.Exit(1)
        return
    for item in items:
        click.echo(_listed_line(item))
    if not check:
        return
    failed = False
    for item, verdict in verify_listed(folder):
        state = "OK" if not verdict.problems else "DIFFERS"
        click.echo(inert(f"{item.client:<22} {state:<14} {verdict.how}"))
        for problem in verdict.problems:
            click.echo(inert(f"{'':<22} - {problem}"))
        failed = failed or bool(verdict.problems)
    if failed:
        raise click.exceptions.Exit(1)


def _entry(item: Listed) -> ClientEntry:
    summary = item.summary
    return ClientEntry(
        client=item.client,
        scope=item.scope,
        path=str(item.path),
        installed=summary is not None,
        ok=summary is not None and not item.problems,
        problems=item.problems,
        profile=summary.profile if summary else None,
        roots=summary.roots if summary else (),
        origin=summary.origin if summary else None,
        env=dict(summary.env) if summary else {},
    )


def _listed_line(item: Listed) -> str:
    name = f"{item.client} ({item.scope})" if item.scope else item.client
    if item.summary is None:
        state = "; ".join(item.problems) or "not installed"
        return inert(f"{name:<22} {state:<14} {item.path}")
    summary = item.summary
    home = summary.env.get("SAFEPORT_HOME", "default")
    lines = [
        f"{name:<22} {'OK' if not item.problems else 'DIFFERS':<14} {item.path}",
        f"{'':<22} profile {summary.profile}, roots {', '.join(summary.roots) or 'none'}, "
        f"home {home}",
        *(f"{'':<22} - {problem}" for problem in item.problems),
    ]
    return "\n".join(inert(line) for line in lines)


@client.command("uninstall")
@click.argument("client_name", metavar="CLIENT", type=click.Choice(CLIENTS))
@click.option(
    "--root",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The project the entry serves (default: the current folder).",
)
@click.option(
    "--scope", type=click.Choice(CLAUDE_SCOPES), default="local", show_default=True,
    help=_SCOPE_HELP,
)  # fmt: skip
def uninstall_command(client_name: str, root: Path | None, scope: str) -> None:
    """Remove only safeport's entry from CLIENT's configuration, keeping a backup of the file.

    \b
    Examples:
      sp client uninstall cursor
      sp client uninstall claude-code --scope project --root ~/src/app
    """
    served = ((root or Path.cwd()).resolve(),)
    setup = Setup(client_name, served, scope=scope)  # type: ignore[arg-type]
    backups = ensure_private_dir(locate().data_dir / "client-backups")
    result = uninstall(setup, now=datetime.now(UTC), backup_dir=backups)
    if result.backup is None:
        click.echo(f"{client_name}: no `safeport` entry in {result.path}; nothing changed")
        return
    click.echo(
        f"{client_name}: removed `safeport` from {result.path} (the file before: {result.backup})"
    )
