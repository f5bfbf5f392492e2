"""`sp approvals watch|list|approve|deny`: a human answering the gateway's cards."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from safeport.action_gateway.daemon.hardening import harden_process
from safeport.cli.cards.approver_prompt import InputEnded, stdout_writer, watch_until_stopped
from safeport.cli.cards.card_text import card_lines
from safeport.cli.options import passphrase_file_option
from safeport.cli.secret_input import vault_passphrase
from safeport.errors import Denied, Error
from safeport.gateway_client.approver_keys import enroll_key, list_keys, remove_key, sign_card
from safeport.gateway_client.control_socket import GatewayClient
from safeport.shared.paths import locate
from safeport.shared.schemas import operations as ops
from safeport.shared.visible_text import inert
from safeport.vault.secrets import SecretBytes


@click.group()
def approvals() -> None:
    """Answer the gateway's approval cards."""


_FULL_HELP = "Show the requester's whole process chain (digests, scripts), not folded."


@approvals.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (always the whole chain).")
@click.option("--full", is_flag=True, help=_FULL_HELP)
@passphrase_file_option
def list_cards(as_json: bool, full: bool, passphrase_file: Path | None) -> None:
    """Show the cards waiting for an answer (with several humans installed, only your own
    unless the passphrase is given)."""
    cards = _waiting_cards(passphrase_file)
    if as_json:
        click.echo(json.dumps(cards, indent=2, sort_keys=True))
        return
    if not cards:
        click.echo("no pending approvals")
        return
    for card in cards:
        _echo_card(card, full)


@approvals.command()
@click.argument("card_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (always the whole chain).")
@click.option("--full", is_flag=True, help=_FULL_HELP)
@passphrase_file_option
def show(card_id: str, as_json: bool, full: bool, passphrase_file: Path | None) -> None:
    """Show one waiting card (exit 1 if no such card waits)."""
    card = next((c for c in _waiting_cards(passphrase_file) if c.get("id") == card_id), None)
    if card is None:
        raise NoSuchCard(
            f"no card {inert(card_id)} is waiting", hint="`sp approvals list` shows them"
        )
    if as_json:
        click.echo(json.dumps(card, indent=2, sort_keys=True))
        return
    _echo_card(card, full)


class NoSuchCard(Denied):
    """The card asked for is not waiting (answered, expired, withdrawn, or never was)."""


def _waiting_cards(passphrase_file: Path | None) -> list[dict[str, Any]]:
    with GatewayClient(locate()) as client:
        if passphrase_file is not None:
            secret = vault_passphrase(passphrase_file)()
            try:
                client.call_with_passphrase(ops.APPROVER_REGISTER, secret)
            finally:
                secret.wipe()
        return [card.model_dump() for card in client.call(ops.APPROVALS_LIST).cards]


def _echo_card(card: dict[str, Any], full: bool) -> None:
    hint = "" if full else "--full shows them"
    lines = card_lines(card, width=_terminal_width(), whole_chain=full, unfold_hint=hint)
    click.echo("\n".join(lines))


@approvals.command()
@click.argument("card_id")
@passphrase_file_option
def approve(card_id: str, passphrase_file: Path | None) -> None:
    """Approve one card (proves the vault passphrase)."""
    _decide(card_id, True, passphrase_file)


@approvals.command()
@click.argument("card_id")
@passphrase_file_option
def deny(card_id: str, passphrase_file: Path | None) -> None:
    """Deny one card (proves the vault passphrase)."""
    _decide(card_id, False, passphrase_file)


@approvals.command()
@passphrase_file_option
@click.option("--plain", is_flag=True, help="Line by line, as on a pipe, even on a terminal.")
def watch(passphrase_file: Path | None, plain: bool) -> None:
    """Prove the passphrase once, then answer each card as it arrives (y/n).

    On a terminal: a live full-screen view with the card and its time left, the open sessions
    (r revokes one) and the latest outcomes. On a pipe, or with --plain: one line at a time,
    until the input ends (exit code 3). Either way it waits for the gateway through a restart
    and registers again, but it unlocks only the lock it found when it started: after a restart
    it waits for a human to run `sp vault unlock`.
    """
    if sys.stdin is None:
        # Started with no stdin at all (`<&-`): nobody can answer, and the first file or socket
        # opened would take descriptor 0 and be read as typed answers.
        raise InputEnded()
    # This process holds the passphrase to register again after a restart (never to unlock).
    harden_process()
    # One line from stdin: the answers typed after it are the prompt's.
    secret = vault_passphrase(passphrase_file, one_line=True)()
    try:
        if not plain and sys.stdin.isatty() and sys.stdout.isatty():
            _watch_screen(secret)
            return
        watch_until_stopped(locate(), secret, stdout_writer, width=_terminal_width)
    finally:
        secret.wipe()


def _terminal_width() -> int:
    return min(shutil.get_terminal_size((80, 24)).columns, 120)


def _watch_screen(secret: SecretBytes) -> None:
    from safeport.cli.cards.approvals_screen import ApprovalsApp
    from safeport.gateway_client.approver_thread import ApprovalLink

    paths = locate()
    app = ApprovalsApp(lambda tell: ApprovalLink(paths, secret, tell))
    app.run()
    if app.failure:
        raise Error(app.failure)


def _decide(card_id: str, approve: bool, passphrase_file: Path | None) -> None:
    with GatewayClient(locate()) as client:
        secret = vault_passphrase(passphrase_file)()
        try:
            client.call_with_passphrase(ops.APPROVER_REGISTER, secret)
        finally:
            secret.wipe()
        extra: dict[str, object] = {}
        cards = client.call(ops.APPROVALS_LIST).cards
        card = next((card for card in cards if card.id == card_id), None)
        if approve and card is not None and card.key is not None:
            click.echo(f"touch your security key now: it signs card {inert(card_id)} only")
            extra["assertion"] = sign_card(card.key.model_dump(), ask_pin=_key_pin)
        client.call(ops.APPROVALS_DECIDE, id=card_id, approve=approve, **extra)
    click.echo(f"{'approved' if approve else 'denied'} {inert(card_id)}")


def _key_pin() -> str | None:
    """A key that verifies its user with a PIN asks for it here (on a terminal only)."""
    if not sys.stdin.isatty():
        return None
    pin: str = click.prompt("security key PIN", hide_input=True)
    return pin


@click.group()
def approver() -> None:
    """Enrol the security keys that sign approvals."""


@approver.command()
@click.option("--name", default="security key", show_default=True, help="What cards call it.")
@passphrase_file_option
def enroll(name: str, passphrase_file: Path | None) -> None:
    """Register a security key (touch it). The first key is enrolled with the passphrase;
    once one is enrolled, a touch of an enrolled key approves each change."""
    with GatewayClient(locate()) as client:
        touch = lambda: click.echo("touch your security key")  # noqa: E731
        key_id = enroll_key(client, name, vault_passphrase(passphrase_file), on_touch=touch)
    click.echo(f"enrolled {inert(name)} ({inert(key_id)})")


@approver.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_keys_command(as_json: bool) -> None:
    """The enrolled security keys and whether any approval needs one."""
    with GatewayClient(locate()) as client:
        found = list_keys(client)
    if as_json:
        click.echo(json.dumps(found.model_dump(), indent=2, sort_keys=True))
        return
    for key in found.keys:
        click.echo(f"{inert(key.id)}  {inert(key.name)}  counter {key.counter}  {key.enrolled_at}")
    if not found.keys:
        click.echo("no security key is enrolled (`sp approver enroll`)")
    factor = "needs" if found.factor_in_use else "does not need"
    click.echo(f"the policy {factor} a key for approvals")


@approver.command()
@click.argument("key_id")
def remove(key_id: str) -> None:
    """Remove an enrolled key (a touch of an enrolled key approves it)."""
    with GatewayClient(locate()) as client:
        remove_key(client, key_id)
    click.echo(f"removed {inert(key_id)}")
