"""The root `sp` group and the one place errors become exit codes."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from safeport import __version__
from safeport.cli import help_text
from safeport.cli.approvals import approvals
from safeport.cli.audit import audit
from safeport.cli.client import client
from safeport.cli.completion import completion
from safeport.cli.context import context
from safeport.cli.demo import demo
from safeport.cli.gateway import checkpoint, gateway
from safeport.cli.policy import policy
from safeport.cli.sessions import sessions
from safeport.cli.setup import init
from safeport.cli.ssh import ssh
from safeport.cli.status import doctor, status
from safeport.cli.vault import vault
from safeport.errors import Error


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sp")
def sp() -> None:
    """safeport: a read-only workspace for agents, and a gateway that holds the credentials."""


sp.add_command(init)
sp.add_command(audit)
sp.add_command(gateway)
sp.add_command(approvals)
sp.add_command(sessions)
sp.add_command(policy)
audit.add_command(checkpoint)
sp.add_command(client)
sp.add_command(context)
sp.add_command(demo)
sp.add_command(ssh)
sp.add_command(vault)
sp.add_command(completion)
sp.add_command(status)
sp.add_command(doctor)
help_text.apply(sp)


def main(argv: list[str] | None = None) -> None:
    """Entry point: one `except Error` turns any known failure into its sentence and exit code.

    A command asked for ``--json`` answers in JSON also when it fails (``{"error": …}`` on
    stdout, the same exit code), so a script never has to parse a sentence.
    """
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
