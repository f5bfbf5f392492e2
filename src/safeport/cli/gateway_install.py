"""`sp gateway install|uninstall`: run the gateway as its own OS account (as root)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from safeport.action_gateway.install.plan import InstallOptions, install, uninstall
from safeport.action_gateway.install.steps import Step
from safeport.shared.text_lines import split_lines
from safeport.shared.visible_text import inert

_account = click.option(
    "--account",
    default="safeport",
    show_default=True,
    metavar="NAME",
    help="The system account the gateway runs as.",
)
_prefix = click.option(
    "--prefix",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("/"),
    show_default=True,
    metavar="DIR",
    help="Install under DIR instead of / (for trying it out; systemd will not find it).",
)
_print = click.option(
    "--print", "dry_run", is_flag=True, help="Show every step without doing anything."
)


@click.command("install")
@_account
@click.option(
    "--human",
    "humans",
    multiple=True,
    metavar="USER",
    help="A user allowed to propose and approve (repeat for more; default: the sudo user).",
)
@_prefix
@_print
def install_command(account: str, humans: tuple[str, ...], prefix: Path, dry_run: bool) -> None:
    """Create the gateway's account, folders, install file and service.

    Run it as root (sudo) from a root-owned installation, such as /opt/safeport/bin/sp.
    """
    if not humans and os.environ.get("SUDO_USER"):
        humans = (os.environ["SUDO_USER"],)
    options = InstallOptions(account=account, humans=humans, prefix=prefix.resolve())
    steps = install(options, dry_run=dry_run)
    _show(steps, dry_run)
    if not dry_run:
        click.echo(
            "\nnext: `sudo systemctl daemon-reload && sudo systemctl enable --now "
            "safeport-gateway`, then, as each human: `sp vault init` (log in again first, so "
            f"the group {account} that reads the journals applies)"
        )


@click.command("uninstall")
@_account
@_prefix
@click.option("--purge", is_flag=True, help="Also delete the vault, the journals and the account.")
@_print
def uninstall_command(account: str, prefix: Path, purge: bool, dry_run: bool) -> None:
    """Remove what `sp gateway install` made; the vault and journals stay unless --purge.

    Run it as root, after `systemctl disable --now safeport-gateway`.
    """
    options = InstallOptions(account=account, humans=(), prefix=prefix.resolve())
    steps = uninstall(options, purge=purge, dry_run=dry_run)
    _show(steps, dry_run)
    if not purge and not dry_run:
        click.echo(f"kept: {options.state_dir} and the account {account} (--purge removes them)")


def _show(steps: list[Step], dry_run: bool) -> None:
    verb = "would do" if dry_run else "done"
    for number, step in enumerate(steps, start=1):
        # Only the rendering's own "\n" breaks a line; any other break character inside a
        # file's content is shown escaped, so the step read is the step run.
        lines = split_lines(step.render())
        click.echo("\n".join([f"{number}. [{verb}] {inert(lines[0])}", *map(inert, lines[1:])]))
