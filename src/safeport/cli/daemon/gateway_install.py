"""`sp gateway install|uninstall`: run the gateway as its own OS account (as root)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

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
_verbose = click.option(
    "--verbose", is_flag=True, help="Show the content of every file a step writes."
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
@click.option(
    "--init",
    type=click.Choice(["systemd", "script"]),
    default=None,
    help="What starts the gateway on Linux: a systemd unit, or a start script for any other "
    "init system (default: systemd when it runs this machine).",
)
@_prefix
@_print
@_verbose
def install_command(
    account: str,
    humans: tuple[str, ...],
    init: str | None,
    prefix: Path,
    dry_run: bool,
    verbose: bool,
) -> None:
    """Create the gateway's account, folders, install file and service.

    Run it as root (sudo) from a root-owned installation, such as /opt/safeport/bin/sp.
    """
    if not humans and os.environ.get("SUDO_USER"):
        humans = (os.environ["SUDO_USER"],)
    started_by: Literal["systemd", "script"] = (
        "systemd" if (init or _running_init()) == "systemd" else "script"
    )
    options = InstallOptions(
        account=account, humans=humans, prefix=prefix.resolve(), init=started_by
    )
    steps = install(options, dry_run=dry_run)
    _show(steps, dry_run, verbose)
    later = (
        f"as each human: `sp vault init` (log in again first, so the group {account} that "
        "reads the journals applies)"
    )
    if dry_run:
        click.echo(f"\nthe gateway would run as the account {account}; nothing was changed")
    elif started_by == "systemd":
        click.echo(
            "\nnext: `sudo systemctl daemon-reload && sudo systemctl enable --now "
            f"safeport-gateway`, then, {later}"
        )
    else:
        click.echo(
            f"\nnext: have your init system run `{options.service_file}` as root in the "
            "foreground and restart it when it exits (docs/guides/dedicated-account.md has "
            f"OpenRC, runit and supervisord entries), then, {later}"
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


def _running_init() -> str:
    """``systemd`` when systemd runs this machine (its documented test), else ``script``."""
    return "systemd" if Path("/run/systemd/system").is_dir() else "script"


def _show(steps: list[Step], dry_run: bool, verbose: bool = True) -> None:
    verb = "would do" if dry_run else "done"
    for number, step in enumerate(steps, start=1):
        # Only the rendering's own "\n" breaks a line; any other break character inside a
        # file's content is shown escaped, so the step read is the step run.
        lines = split_lines(step.render(verbose=verbose))
        click.echo("\n".join([f"{number}. [{verb}] {inert(lines[0])}", *map(inert, lines[1:])]))
