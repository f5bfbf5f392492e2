"""The root `sp` group and the one place errors become exit codes.

Subcommands are imported only when one is run: the context server, the gateway and the MCP SDK
cost most of a second to import, which `sp --version`, `sp --help` and shell completion should
never pay. The root's help lists each command from the table below (a test keeps the table's
lines equal to the commands' own).
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Iterable
from typing import NoReturn

import click

from safeport import __version__
from safeport.cli import help_text
from safeport.errors import Error
from safeport.shared.install_file import downgrade_notice

# name: (module, attribute, the first line of its help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": (
        "safeport.cli.setup", "init",
        "Write gateway.toml and context.toml templates and create the vault (first setup).",
    ),
    "status": (
        "safeport.cli.health.status", "status",
        "Gateway, vault, served and pending policy, sessions, cards, journals and clients.",
    ),
    "doctor": (
        "safeport.cli.health.status", "doctor",
        "Check permissions, sockets, keyring, clients, policy and declared hosts, with the fix for "
        "each; exit 1 on a problem, 2 while the gateway is down or the vault locked.",
    ),
    "vault": (
        "safeport.cli.credentials.vault", "vault",
        "The encrypted credential store the gateway unlocks.",
    ),
    "oauth": (
        "safeport.cli.credentials.oauth", "oauth",
        "OAuth grants the gateway holds (it refreshes their tokens; agents never see them).",
    ),
    "policy": (
        "safeport.cli.gateway_policy.policy", "policy",
        "Check and accept the gateway policy (gateway.toml).",
    ),
    "gateway": (
        "safeport.cli.daemon.gateway", "gateway",
        "Run and manage the action gateway (the only process that holds credentials).",
    ),
    "client": (
        "safeport.cli.client", "client",
        "Connect MCP clients (Claude Code, Claude Desktop, Codex, Cursor, VS Code).",
    ),
    "approvals": (
        "safeport.cli.cards.approvals", "approvals", "Answer the gateway's approval cards."
    ),
    "approver": (
        "safeport.cli.cards.approvals", "approver", "Enrol the security keys that sign approvals."
    ),
    "sessions": ("safeport.cli.cards.sessions", "sessions", "List and revoke session grants."),
    "audit": ("safeport.cli.audit", "audit", "Verify and read the hash-chained audit journals."),
    "context": (
        "safeport.cli.context", "context", "The read-only workspace server for MCP clients."
    ),
    "ssh": (
        "safeport.cli.gateway_policy.ssh", "ssh", "SSH helpers for writing the gateway policy."
    ),
    "demo": (
        "safeport.cli.demo", "demo",
        "Run workspace, vault, gateway, approval and audit end to end in a throwaway folder.",
    ),
    "help": (
        "safeport.cli.help_text", "help_command",
        "Help on a topic (environment: every variable safeport reads) or on a command.",
    ),
    "completion": (
        "safeport.cli.completion", "completion",
        "Print the completion script for SHELL; load it from your shell's start-up file.",
    ),
}  # fmt: skip


class LazyGroup(click.Group):
    """A group whose subcommands are imported when they are looked up, not before."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        help_text.apply(command, f"sp {cmd_name}")
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0]
        if name not in COMMANDS and not name.startswith("-") and not ctx.resilient_parsing:
            raise click.UsageError(unknown_command(name, COMMANDS), ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, _, short) in COMMANDS.items()])


def unknown_command(name: str, known: Iterable[str]) -> str:
    """click's sentence for a mistyped command, with the close names it would suggest."""
    close = difflib.get_close_matches(name, list(known))
    if not close:
        return f"No such command {name!r}."
    if len(close) == 1:
        return f"No such command {name!r}. Did you mean {close[0]!r}?"
    return f"No such command {name!r}. (Did you mean one of: {', '.join(map(repr, close))}?)"


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sp")
def sp() -> None:
    """safeport: a read-only workspace for agents, and a gateway that holds the credentials."""


help_text.apply(sp)


def main(argv: list[str] | None = None) -> None:
    """Entry point: one `except Error` turns any known failure into its sentence and exit code.

    A command asked for ``--json`` answers in JSON also when it fails (``{"error": …}`` on
    stdout, the same exit code), so a script never has to parse a sentence. (The platform is
    checked before this runs: :func:`safeport.cli.main`.)
    """
    notice = downgrade_notice(os.environ, os.geteuid())
    if notice:
        click.echo(f"sp: warning: {notice}", err=True)
    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    try:
        code = sp.main(args=args, prog_name="sp", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as exc:
        if as_json:
            _json_error(exc.format_message(), exc.exit_code)
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("sp: aborted", err=True)
        sys.exit(2)
    except Error as exc:
        if as_json:
            _json_error(exc.diagnostic(), exc.exit_code)
        click.echo(f"sp: {exc.diagnostic()}", err=True)
        sys.exit(exc.exit_code)
    # Without standalone mode, click returns the code of a `click.exceptions.Exit` raised by a
    # command (a verdict such as "problems found") instead of exiting with it.
    sys.exit(code if isinstance(code, int) else 0)


def _json_error(message: str, exit_code: int) -> NoReturn:
    import json

    click.echo(json.dumps({"error": message, "exit_code": exit_code}))
    sys.exit(exit_code)
