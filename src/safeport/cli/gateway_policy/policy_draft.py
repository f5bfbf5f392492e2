"""`sp policy add|edit|remove`: change gateway.toml, the draft a human accepts later, in an
editor or one entry at a time; the file is only a proposal until `sp policy accept`."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

import click

from safeport.authoring.oauth_scaffold import OAuthDraft, preset_named
from safeport.authoring.removal import ENTRY_KINDS, EntryKind, remove_entry
from safeport.authoring.scaffold import (
    HttpServiceDraft,
    SshHostDraft,
    add_http_service,
    add_ssh_host,
)
from safeport.cli.options import refuse_unanswerable, stdin_is_terminal
from safeport.errors import EnvironmentProblem, Error, UsageError
from safeport.shared.paths import locate
from safeport.shared.visible_text import inert


@click.group()
def add() -> None:
    """Append an HTTPS service or an SSH host to gateway.toml, to narrow before accepting."""


@add.command("http")
@click.argument("name")
@click.option("--base-url", metavar="URL", help="The API's https:// URL (asked when omitted).")
@click.option(
    "--credential", metavar="NAME",
    help="The credential's name (NAME-token; with --oauth, NAME-oauth).",
)  # fmt: skip
@click.option(
    "--operation", "operations", multiple=True, metavar="SPEC",
    help='One operation as ID="METHOD /path/{param}"; repeat for more (asked when omitted).',
)  # fmt: skip
@click.option(
    "--oauth", "preset", metavar="PRESET",
    help="Act with an OAuth grant from this preset (github, google, ...), not a token.",
)  # fmt: skip
@click.option(
    "--client-id", metavar="ID",
    help="With --oauth: your OAuth client's id at the provider (asked when omitted).",
)  # fmt: skip
@click.option(
    "--scope", "scopes", multiple=True, metavar="SCOPE",
    help="With --oauth: a scope to ask for instead of the preset's defaults; repeat for more.",
)  # fmt: skip
def add_http(
    name: str, base_url: str | None, credential: str | None, operations: tuple[str, ...],
    preset: str | None, client_id: str | None, scopes: tuple[str, ...],
) -> None:  # fmt: skip
    """Scaffold an HTTPS service: reads approved once per session, writes per call.

    With --oauth PRESET the service acts with an OAuth grant instead of a pasted token: its
    `oauth` credential is written beside it from the preset, to connect with
    `sp oauth connect NAME` once the policy is accepted.
    """
    if preset is None and (client_id or scopes):
        raise UsageError("--client-id and --scope go with --oauth PRESET")
    if preset is not None:
        preset_named(preset)  # an unknown preset is refused before anything is asked
    refuse_unanswerable(
        _missing((base_url, "the base URL", "--base-url URL"),
                 (operations, "the operations", "--operation SPEC"),
                 (client_id or preset is None, "the OAuth client id", "--client-id ID"))
    )  # fmt: skip
    oauth = None
    if preset is not None:
        oauth = OAuthDraft(preset, client_id or _ask("OAuth client id"), scopes)
    draft = HttpServiceDraft(
        name,
        base_url or _ask("base URL (https://…)"),
        credential or f"{name}-{'token' if oauth is None else 'oauth'}",
        operations or _ask_many("operation as ID=METHOD /path"),
        oauth,
    )
    _write(lambda text: add_http_service(text, draft), f"http service {name}")
    if oauth is not None:
        click.echo(f"once accepted, connect the grant: `sp oauth connect {draft.credential}`")


@add.command("ssh")
@click.argument("name")
@click.option("--address", metavar="HOST", help="The host name or address (asked when omitted).")
@click.option("--user", metavar="USER", help="The remote account (asked when omitted).")
@click.option("--host-key", metavar="KEY", help="The pinned key, from `sp ssh scan HOST`.")
@click.option("--port", type=int, default=22, show_default=True, metavar="N", help="The SSH port.")
@click.option("--credential", metavar="NAME", help="The key's vault name (NAME-key).")
@click.option(
    "--command", "commands", multiple=True, metavar="SPEC",
    help='One command as ID="argv words {param}"; repeat for more (asked when omitted).',
)  # fmt: skip
def add_ssh(
    name: str, address: str | None, user: str | None, host_key: str | None, port: int,
    credential: str | None, commands: tuple[str, ...],
) -> None:  # fmt: skip
    """Scaffold an SSH host with its pinned key; every command approved per call."""
    refuse_unanswerable(
        _missing((address, "the address", "--address HOST"), (user, "the user", "--user USER"),
                 (host_key, "the host key", "--host-key KEY"),
                 (commands, "the commands", "--command SPEC"))
    )  # fmt: skip
    draft = SshHostDraft(
        name,
        address or _ask("address"),
        user or _ask("remote user"),
        host_key or _ask("host key (from `sp ssh scan HOST`)"),
        credential or f"{name}-key",
        port,
        commands or _ask_many("command as ID=argv words"),
    )
    _write(lambda text: add_ssh_host(text, draft), f"ssh host {name}")


def _missing(*given: tuple[object, str, str]) -> list[tuple[str, str]]:
    """(what is asked, the flag) for each value left out: each would be asked at a prompt."""
    return [(what, flag) for value, what, flag in given if not value]


def _ask(what: str) -> str:
    return str(click.prompt(what))


def _ask_many(what: str) -> tuple[str, ...]:
    found: list[str] = []
    while answer := str(click.prompt(f"{what} (empty to finish)", default="", show_default=False)):
        found.append(answer)
    return tuple(found)


def _write(change: Callable[[str], str], what: str) -> None:
    path = draft_path()
    updated = change(path.read_text(encoding="utf-8"))  # parsed before anything is written
    path.write_text(updated, encoding="utf-8")
    click.echo(f"added {what} to {path}; narrow its params, then `sp policy check`")


@click.command()
@click.argument("kind", type=click.Choice(ENTRY_KINDS), metavar="KIND")
@click.argument("name")
def remove(kind: EntryKind, name: str) -> None:
    """Take one entry out of gateway.toml, every other line left as it was.

    KIND is credential, ssh (a host and its commands), http (a service and its operations),
    sql (a database and its queries), or one action: command HOST/COMMAND, operation
    SERVICE/OPERATION, query DATABASE/QUERY. Nothing is served before `sp policy accept`.
    """
    path = draft_path()
    removal = remove_entry(path.read_text(encoding="utf-8"), kind, name)
    path.write_text(removal.text, encoding="utf-8")
    click.echo(inert(f"removed {removal.what} from {path}; `sp policy diff` shows what changes"))
    if removal.unused_credential is not None:
        unused = removal.unused_credential
        hint = f"`sp policy remove credential {unused}` removes it too"
        click.echo(inert(f"credential {unused} is used by nothing now: {hint}"))


@click.command()
def edit() -> None:
    """Open gateway.toml in $VISUAL or $EDITOR, then check it as `sp policy check` does.

    Exit as `check` does: 0 valid, 1 a problem found (each with its line and fix).
    """
    path = draft_path()
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        if not stdin_is_terminal():
            raise UsageError(
                "no editor to open: $VISUAL and $EDITOR are unset and there is no terminal",
                hint="set one, e.g. `EDITOR=nano sp policy edit`; nothing was changed",
            )
        editor = "vi"  # the editor POSIX promises, as git falls back to
    before = path.read_bytes()
    try:
        # Split as a shell would, but run without one: the path is an argument, never code.
        argv = shlex.split(editor)
    except ValueError as exc:
        raise UsageError(f"cannot read the editor {editor!r}: {exc}") from None
    if not argv or not argv[0].strip():
        raise UsageError(f"the editor {editor!r} names no program", hint="nothing was changed")
    program = _editor_program(argv[0])
    try:
        # The path is absolute, so no editor takes it for an option (a HOME of "-c…" would
        # make it one), and the editor starts in the file's folder, not in a project whose
        # own editor settings (.exrc, .nvim.lua, .helix/) an agent may have written.
        done = subprocess.run(
            [program, *argv[1:], str(path.absolute())], cwd=path.parent, check=False
        )
    except OSError as exc:
        raise EnvironmentProblem(f"cannot run the editor {editor!r}: {exc.strerror}") from None
    if done.returncode != 0:
        raise EnvironmentProblem(
            f"the editor {editor!r} exited with status {done.returncode}",
            hint=f"{path} is as it left it; `sp policy check` checks it",
        )
    changed = path.read_bytes() != before
    click.echo(f"{path} {'saved' if changed else 'unchanged'}; checking it:")
    # `sp policy check` itself, found through the group that holds both commands (the module
    # that defines it imports this one, and no import goes back).
    context = click.get_current_context()
    assert context.parent is not None and isinstance(context.parent.command, click.Group)
    check = context.parent.command.get_command(context.parent, "check")
    assert check is not None
    context.invoke(check, as_json=False)


def _editor_program(name: str) -> str:
    """The editor's program: a path as given, or a bare name found on the absolute folders of
    PATH only (``.`` or an empty entry would run one planted in the current folder)."""
    if os.sep in name:
        return name
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder and Path(folder).is_absolute():
            candidate = Path(folder) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    raise EnvironmentProblem(
        f"the editor {name!r} is not on PATH (absolute folders only)",
        hint="give its full path in $VISUAL or $EDITOR; nothing was changed",
    )


def draft_path() -> Path:
    """gateway.toml, the draft policy; a missing one says how to make it."""
    path = locate().gateway_config
    if not path.exists():
        raise Error(f"{path} does not exist", hint="run `sp init` first")
    return path
