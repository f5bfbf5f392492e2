"""`sp policy check|accept`: review gateway.toml, and make it the policy the gateway serves."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from safeport.action_gateway.inventory import inventory, inventory_lines
from safeport.action_gateway.policy_store import PolicyStore, policy_diff_lines
from safeport.cli.gateway_client import GatewayClient, read_passphrase
from safeport.cli.render import diff_text, inert
from safeport.errors import ConfigError, Error
from safeport.shared.paths import locate
from safeport.shared.schemas.config import parse_gateway_policy


@click.group()
def policy() -> None:
    """Check and accept the gateway policy (gateway.toml)."""


@policy.command()
@click.option("--json", "as_json", is_flag=True, help="Print the inventory as JSON.")
def check(as_json: bool) -> None:
    """Validate gateway.toml and print everything an agent could ask the gateway to do."""
    path = locate().gateway_config
    current = PolicyStore(path).read_file()
    if current.text is None:
        raise Error(current.error or f"cannot read {path}", hint="run `sp init` to create one")
    parsed, digest = parse_gateway_policy(current.text)
    data = inventory(parsed, digest)
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    click.echo("\n".join(inert(line) for line in inventory_lines(data)))
    click.echo(_served_state(digest))


def _served_state(digest: str) -> str:
    """Whether a running gateway serves this text (asking costs no secret)."""
    try:
        with GatewayClient(locate(), timeout=5) as client:
            served = client.call("policy.status").get("served")
    except Error:
        return "gateway.toml is valid; it is served only after `sp policy accept`"
    if served == digest:
        return "gateway.toml is valid and is the policy the running gateway serves"
    return (
        "gateway.toml is valid but NOT served: the running gateway serves the last accepted policy"
    )


@policy.command()
@click.option(
    "--passphrase-file",
    type=click.Path(path_type=Path, allow_dash=True),
    default=None,
    help="Read the vault passphrase from FILE (- for stdin) instead of a prompt.",
)
@click.option("--yes", is_flag=True, help="Accept without asking after showing the diff.")
def accept(passphrase_file: Path | None, yes: bool) -> None:
    """Show the diff against the accepted policy, prove the passphrase, serve the new one."""
    with GatewayClient(locate()) as client:
        status = client.call("policy.status")
        if status.get("file_error"):
            raise ConfigError(str(status["file_error"]))
        text = status.get("file_text")
        if not isinstance(text, str):
            raise Error("gateway.toml cannot be read by the gateway")
        if not status.get("pending"):
            click.echo("no changes: gateway.toml is already the accepted policy")
            return
        served = status.get("served_text")
        if not isinstance(served, str):
            click.echo("no policy is accepted yet: every line below is new")
        diff = policy_diff_lines(served if isinstance(served, str) else None, text)
        click.echo(diff_text(diff, colour=sys.stdout.isatty()))
        if not yes and not click.confirm("serve this policy?", default=False):
            raise Error("not accepted", hint="nothing changed")
        secret = read_passphrase(passphrase_file)
        try:
            result = client.call_with_passphrase("policy.accept", secret, digest=status["file"])
        finally:
            secret.wipe()
    click.echo(f"accepted policy {str(result.get('policy'))[:16]}; the gateway serves it now")
