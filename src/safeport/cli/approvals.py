"""`sp approvals watch|list|approve|deny`: a human answering the gateway's cards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from safeport.cli.gateway_client import GatewayClient, GatewayRefused, read_passphrase
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
    console = Console(highlight=False)
    for card in cards:
        console.print(render_card(card))


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

    harden_process()  # this process will hold a proven approver session
    console = Console(highlight=False)
    with GatewayClient(locate()) as client:
        secret = read_passphrase(passphrase_file)
        try:
            client.call_with_passphrase("approver.register", secret)
        finally:
            secret.wipe()
        first = client.call("approvals.watch")
        client.settimeout(None)
        console.print("watching for approval cards (Ctrl-C to stop)")
        queue: list[dict[str, Any]] = list(first.get("cards", []))
        while True:
            for card in queue:
                _ask(client, console, card)
            queue = []
            pushed = [*client.backlog, next(client.events(), {})]
            client.backlog = []
            for message in pushed:
                result = message.get("result") or {}
                if result.get("event") == "card":
                    queue.append(result)
                elif not message:
                    console.print("the gateway closed the connection")
                    return


def _ask(client: GatewayClient, console: Console, card: dict[str, Any]) -> None:
    console.print(render_card(card))
    if not card.get("showable", True):
        console.print("this card cannot be shown whole; it is denied")
        approve = False
    else:
        approve = click.confirm("approve?", default=False)
    try:
        client.call("approvals.decide", id=card["id"], approve=approve)
    except GatewayRefused as exc:
        console.print(Text(inert(f"not recorded: {exc.message}")))
        return
    console.print("approved" if approve else "denied")


def _decide(card_id: str, approve: bool, passphrase_file: Path | None) -> None:
    with GatewayClient(locate()) as client:
        secret = read_passphrase(passphrase_file)
        try:
            client.call_with_passphrase("approvals.decide", secret, id=card_id, approve=approve)
        finally:
            secret.wipe()
    click.echo(f"{'approved' if approve else 'denied'} {inert(card_id)}")


def render_card(card: dict[str, Any]) -> Panel:
    """The card as plain text: nothing the agent chose is interpreted as markup."""
    text = Text()

    def line(label: str, value: object) -> None:
        text.append(f"{label}: ", style="bold")
        text.append(inert(str(value)) + "\n")

    line("card", card.get("id"))
    line("scope", card.get("scope"))
    line("credential", card.get("credential"))
    line("action", f"{card.get('action')} {card.get('target')} / {card.get('operation')}")
    for label, value in card.get("fields", []):
        line(str(label), value)
    client = card.get("client")
    if client:
        line("client", f"pid {client.get('pid')} {client.get('exe')}")
    for index, proc in enumerate(card.get("requester", [])):
        label = "requester" if index == 0 else f"  parent {index}"
        line(label, process_text(proc))
    return Panel(text, title="approval requested", title_align="left")


def process_text(proc: dict[str, Any]) -> str:
    """One process line of a card: digest and what vouches for it once, the script only for an
    interpreter, then every variable that injects code into it (or that none could be read)."""
    digest = (proc.get("sha256") or "unreadable")[:16]
    verified = proc.get("verified") or f"signature {proc.get('signature')}"
    words = [f"pid {proc.get('pid')} {proc.get('exe')} sha256 {digest} ({verified})"]
    if proc.get("interpreter"):
        script_digest = (proc.get("script_sha256") or "-")[:16]
        script_verified = proc.get("script_verified")
        words.append(
            f"script {proc.get('script')} sha256 {script_digest}"
            + (f" ({script_verified})" if script_verified else "")
            + (" CHANGED after the process started" if proc.get("script_changed") else "")
        )
    if proc.get("environ") == "unreadable":
        words.append("ENVIRONMENT UNREADABLE")
    for name, value in proc.get("injected_env") or []:
        words.append(f"INJECTS CODE: {name}={value}")
    return "; ".join(words)
