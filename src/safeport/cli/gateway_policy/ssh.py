"""`sp ssh scan`: show a server's host keys and fingerprints for a human to check and pin."""

from __future__ import annotations

import json
import re

import click

from safeport.action_gateway.executors import ActionError
from safeport.action_gateway.executors.ssh.host_key_scan import scan_host_keys
from safeport.action_gateway.policy.authorized_keys import FROM_PLACEHOLDER
from safeport.errors import EnvironmentProblem, UsageError
from safeport.shared.visible_text import inert

_TARGET = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:\[\]]+))(?::(?P<port>\d{1,5}))?$")


@click.group()
def ssh() -> None:
    """SSH helpers for writing the gateway policy."""


@ssh.command()
@click.argument("target", metavar="HOST[:PORT]")
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 120),
    default=10,
    show_default=True,
    help="Give up after SECONDS (connect and key exchange).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the keys as JSON.")
def scan(target: str, timeout: float, as_json: bool) -> None:
    """Fetch HOST's host keys and print each with its SHA256 fingerprint.

    Nothing is trusted or saved. Compare each fingerprint with one taken on the server
    (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`) before copying the key into the
    host's `host_keys` in gateway.toml. On the server, confine the gateway's key in
    authorized_keys with `restrict,from="…"` and, for a host with one fixed command,
    `command="…"` (`sp policy check` prints the exact line for each host).
    """
    address, port = _parse_target(target)
    try:
        keys = scan_host_keys(address, port, timeout_s=timeout)
    except ActionError as exc:
        if exc.failure == "invalid_target":
            raise UsageError(exc.message) from exc
        raise EnvironmentProblem(exc.message, hint="check the address and port") from exc
    if as_json:
        payload = [
            {"type": k.key_type, "base64": k.base64, "fingerprint": k.fingerprint} for k in keys
        ]
        click.echo(json.dumps({"host": address, "port": port, "keys": payload}, indent=2))
        return
    click.echo(f"host keys offered by {inert(address)} port {port} (not trusted, not saved):")
    for key in keys:
        click.echo(f"  {key.fingerprint}  {key.key_type}")
    click.echo("")
    click.echo("check each fingerprint on the server, out of band:")
    click.echo("  ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub")
    click.echo("then pin the matching key(s) in gateway.toml:")
    click.echo("  host_keys = [")
    for key in keys:
        click.echo(f'    "{key.pin}",')
    click.echo("  ]")
    click.echo("and confine the gateway's key in the server's authorized_keys:")
    click.echo(f'  restrict,from="{FROM_PLACEHOLDER}" <public key>')


def _parse_target(target: str) -> tuple[str, int]:
    match = _TARGET.match(target)
    if match is None:
        raise UsageError(f"{inert(target)!r} is not HOST or HOST:PORT")
    address = match.group("v6") or match.group("host")
    port = int(match.group("port") or 22)
    if not 1 <= port <= 65535:
        raise UsageError(f"port {port} is out of range")
    return address, port
