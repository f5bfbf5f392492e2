"""`sp sessions list|revoke`: session grants the gateway holds in memory."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from safeport.cli.cards.card_text import human_duration
from safeport.cli.options import several_humans_passphrase_option
from safeport.cli.secret_input import vault_passphrase
from safeport.gateway_client.control_socket import GatewayClient, call_for_everyone
from safeport.shared.paths import locate
from safeport.shared.schemas import operations as ops
from safeport.shared.visible_text import inert


@click.group()
def sessions() -> None:
    """List and revoke session grants."""


@sessions.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_sessions(as_json: bool) -> None:
    """Show every live session grant."""
    with GatewayClient(locate()) as client:
        grants = client.call(ops.SESSIONS_LIST).sessions
    if as_json:
        click.echo(json.dumps([g.model_dump() for g in grants], indent=2, sort_keys=True))
        return
    if not grants:
        click.echo("no sessions")
        return
    table = Table()
    for column in ("id", "credential", "requester", "age", "expires in"):
        table.add_column(column)
    for grant in grants:
        table.add_row(
            Text(inert(grant.id)),
            Text(inert(grant.credential)),
            Text(inert(f"pid {grant.requester_pid} {grant.requester_exe}")),
            Text(human_duration(grant.age_s)),
            Text(human_duration(grant.expires_in_s)),
        )
    Console(highlight=False).print(table)


@sessions.command()
@click.argument("session_id")
@several_humans_passphrase_option
def revoke(session_id: str, passphrase_file: Path | None) -> None:
    """End a session grant now; its requester needs a new approval."""
    with GatewayClient(locate()) as client:
        call_for_everyone(
            client, ops.SESSIONS_REVOKE, vault_passphrase(passphrase_file), id=session_id
        )
    click.echo(f"revoked {inert(session_id)}")
