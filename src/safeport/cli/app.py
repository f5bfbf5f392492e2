"""The root `sp` group and the one place errors become exit codes."""

from __future__ import annotations

import os
import sys

import click

from safeport import __version__
from safeport.cli.approvals import approvals
from safeport.cli.audit import audit
from safeport.cli.client import client
from safeport.cli.context import context
from safeport.cli.demo import demo
from safeport.cli.gateway import checkpoint, gateway
from safeport.cli.gateway_install import install_command, uninstall_command
from safeport.cli.policy import policy
from safeport.cli.sessions import sessions
from safeport.cli.setup import init
from safeport.cli.ssh import ssh
from safeport.cli.vault import vault
from safeport.errors import Error
from safeport.shared.install_file import downgrade_notice


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sp")
def sp() -> None:
    """safeport: a read-only workspace for agents, and a gateway that holds the credentials."""


sp.add_command(init)
sp.add_command(audit)
sp.add_command(gateway)
gateway.add_command(install_command)
gateway.add_command(uninstall_command)
sp.add_command(approvals)
sp.add_command(sessions)
sp.add_command(policy)
audit.add_command(checkpoint)
sp.add_command(client)
sp.add_command(context)
sp.add_command(demo)
sp.add_command(ssh)
sp.add_command(vault)


def main(argv: list[str] | None = None) -> None:
    """Entry point: one `except Error` turns any known failure into its sentence and exit code."""
    notice = downgrade_notice(os.environ, os.geteuid())
    if notice:
        click.echo(f"sp: warning: {notice}", err=True)
    try:
        sp.main(args=argv, prog_name="sp", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("sp: aborted", err=True)
        sys.exit(2)
    except Error as exc:
        click.echo(f"sp: {exc.diagnostic()}", err=True)
        sys.exit(exc.exit_code)
    sys.exit(0)
