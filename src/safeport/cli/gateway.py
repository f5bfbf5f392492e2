"""`sp gateway run|status|stop|reload` and `sp audit checkpoint`."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from safeport.action_gateway.service_files import launchd_plist, systemd_unit
from safeport.cli.gateway_client import GatewayClient, GatewayNotRunning
from safeport.cli.render import inert
from safeport.errors import Error
from safeport.shared.launch import sp_command
from safeport.shared.paths import ensure_private_dir, locate, location_settings
from safeport.shared.setup_state import missing_setup


@click.group()
def gateway() -> None:
    """Run and manage the action gateway (the only process that holds credentials)."""


@gateway.command()
@click.option(
    "--print-service",
    type=click.Choice(["systemd", "launchd"]),
    default=None,
    help="Print a systemd user unit or a launchd plist that runs the gateway, and exit.",
)
def run(print_service: str | None) -> None:
    """Run the gateway in the foreground (logs to stderr and gateway.log)."""
    paths = locate()
    argv = sp_command(["gateway", "run"])
    env = location_settings()
    log_path = paths.data_dir / "gateway.log"
    if print_service == "systemd":
        click.echo(systemd_unit(argv, env), nl=False)
        return
    if print_service == "launchd":
        click.echo(launchd_plist(argv, env, str(log_path)), nl=False)
        return
    from safeport.action_gateway.assembly import default_parts
    from safeport.action_gateway.daemon import run_gateway

    ensure_private_dir(paths.data_dir)
    for advice in missing_setup(paths):
        click.echo(f"sp: {advice}", err=True)
    _configure_logging(log_path)
    run_gateway(paths, default_parts(paths))


@gateway.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(as_json: bool) -> None:
    """Show whether the gateway runs, the vault state, the served policy and open sessions."""
    with GatewayClient(locate()) as client:
        result = client.call("status")
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
        return
    policy: dict[str, Any] = result.get("policy", {})
    served = policy.get("served")
    lines = [
        f"gateway: running (pid {result.get('pid')}, up {result.get('uptime_s')} s)",
        f"vault: {result.get('vault')}",
        f"policy: {served[:16] if served else 'none accepted'}",
    ]
    if policy.get("pending"):
        lines.append("policy: gateway.toml has changes that are NOT served; run `sp policy accept`")
    lines += [
        f"sessions: {result.get('sessions')}",
        f"pending approvals: {result.get('pending_cards')}",
    ]
    from safeport.cli.overview import policy_problems

    problems = policy_problems(locate())
    if problems:
        lines.append(f"policy: gateway.toml has {len(problems)} problem(s); see `sp policy check`")
        lines += [f"  {problem}" for problem in problems]
    click.echo("\n".join(inert(line) for line in lines))


@gateway.command()
def stop() -> None:
    """Stop the gateway cleanly (it journals the stop and locks the vault)."""
    try:
        with GatewayClient(locate()) as client:
            client.call("gateway.stop")
    except GatewayNotRunning:
        click.echo("gateway: not running")  # the state asked for already holds
        return
    click.echo("gateway: stopping")


@gateway.command()
def reload() -> None:
    """Re-read gateway.toml; changes are served only once accepted with `sp policy accept`."""
    with GatewayClient(locate()) as client:
        result = client.call("gateway.reload")
    if result.get("pending"):
        click.echo("policy: gateway.toml differs from the accepted policy; run `sp policy accept`")
    else:
        click.echo("policy: gateway.toml is the accepted policy")


@click.command("checkpoint")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write to FILE.")
def checkpoint(out: Path | None) -> None:
    """Export the latest signed checkpoint of the gateway's journals."""
    paths = locate()
    try:
        with GatewayClient(paths) as client:
            result = client.call("audit.checkpoint")
        text = json.dumps(result, indent=2, sort_keys=True)
    except Error as exc:
        # No gateway to ask (or it refused): the last checkpoint it saved is still evidence.
        saved = paths.audit_dir / "checkpoint.json"
        if not saved.exists():
            raise
        click.echo(f"{inert(exc.diagnostic())}; showing the last saved checkpoint", err=True)
        text = saved.read_text()
    if out is None:
        click.echo(text)
    else:
        out.write_text(text + "\n")
        click.echo(f"checkpoint written to {out}")


def _configure_logging(log_path: Path) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    handlers: list[logging.Handler] = [
        logging.StreamHandler(sys.stderr),
        logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8")),
    ]
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers
    )
