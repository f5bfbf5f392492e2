"""`sp approvals watch|list|approve|deny`: a human answering the gateway's cards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click

from safeport.cli.approver_prompt import stdout_writer, watch_until_stopped
from safeport.cli.card_text import card_lines
from safeport.cli.gateway_client import GatewayClient, read_passphrase
from safeport.cli.render import inert
from safeport.shared.paths import locate

_PASSPHRASE_FILE = click.option(
    "--passphrase-file",
    type=click.Path(path_type=Path, allow_dash=True),
    default=None,
    help="Read the vault passphrase from FILE (- for stdin) instead of a prompt.",
)


@click.group()
def approvals() -> None:
    """Answer the gateway's approval cards."""


@approvals.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cards(as_json: bool) -> None:
    """Show the cards waiting for an answer."""
    with GatewayClient(locate()) as client:
        cards = client.call("approvals.list").get("cards", [])
    if as_json:
        click.echo(json.dumps(cards, indent=2, sort_keys=True))
        return
    if not cards:
        click.echo("no pending approvals")
        return
    width = min(shutil.get_terminal_size((80, 24)).columns, 120)
    for card in cards:
        click.echo("\n".join(card_lines(card, width=width)))


@approvals.command()
@click.argument("card_id")
@_PASSPHRASE_FILE
def approve(card_id: str, passphrase_file: Path | None) -> None:
    """Approve one card (proves the vault passphrase)."""
    _decide(card_id, True, passphrase_file)


@approvals.command()
@click.argument("card_id")
@_PASSPHRASE_FILE
def deny(card_id: str, passphrase_file: Path | None) -> None:
    """Deny one card (proves the vault passphrase)."""
    _decide(card_id, False, passphrase_file)


@approvals.command()
@_PASSPHRASE_FILE
def watch(passphrase_file: Path | None) -> None:
    """Prove the passphrase once, then answer each card as it arrives (y/n)."""
    from safeport.action_gateway.daemon import harden_process

    harden_process()  # this process holds the passphrase to register again after a restart
    secret = read_passphrase(passphrase_file)
    try:
        width = min(shutil.get_terminal_size((80, 24)).columns, 120)
        watch_until_stopped(locate(), secret, stdout_writer, width=width)
    finally:
        secret.wipe()


def _decide(card_id: str, approve: bool, passphrase_file: Path | None) -> None:
    with GatewayClient(locate()) as client:
        secret = read_passphrase(passphrase_file)
        try:
            client.call_with_passphrase("approvals.decide", secret, id=card_id, approve=approve)
        finally:
            secret.wipe()
    click.echo(f"{'approved' if approve else 'denied'} {inert(card_id)}")
