"""`sp gateway run|status|stop|reload` and `sp audit checkpoint`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from safeport.action_gateway.install.service_files import launchd_plist, systemd_unit
from safeport.cli.health.status_text import alarm_lines
from safeport.cli.options import several_humans_passphrase_option
from safeport.cli.replies import GatewayReloadReply, GatewayStopReply, echo_json
from safeport.cli.secret_input import vault_passphrase
from safeport.errors import Error
from safeport.gateway_client.control_socket import (
    GatewayClient,
    GatewayNotRunning,
    call_for_everyone,
)
from safeport.gateway_client.gateway_exit import STOP_WAIT_S, GatewayDidNotStop, wait_for_exit
from safeport.shared.launch import sp_command
from safeport.shared.paths import ensure_private_dir, locate, location_settings
from safeport.shared.schemas import operations as ops
from safeport.shared.setup_state import missing_setup
from safeport.shared.visible_text import inert


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
    from safeport.action_gateway.daemon.assembly import default_parts
    from safeport.action_gateway.daemon.run import configure_logging, run_gateway
    from safeport.action_gateway.install.start_checks import require_account

    if paths.dedicated:  # the install made the account's folders; the daemon checks them
        require_account(paths)
    else:
        ensure_private_dir(paths.data_dir)
    for advice in missing_setup(paths):
        click.echo(f"sp: {advice}", err=True)
    configure_logging(log_path)
    run_gateway(paths, default_parts(paths))


@gateway.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(as_json: bool) -> None:
    """Show whether the gateway runs, the vault state, the served policy and open sessions."""
    with GatewayClient(locate()) as client:
        result = client.call(ops.STATUS)
    if as_json:
        click.echo(json.dumps(result.model_dump(), indent=2, sort_keys=True))
        return
    served = result.policy.served
    lines = [
        f"gateway: running (pid {result.pid}, up {result.uptime_s} s"
        + (f", as its own account {result.account})" if result.account else ")"),
        f"vault: {result.vault}",
        f"policy: {served[:16] if served else 'none accepted'}",
    ]
    if result.policy.pending:
        lines.append("policy: gateway.toml has changes that are NOT served; run `sp policy accept`")
    lines += [
        f"sessions: {result.sessions}",
        f"pending approvals: {result.pending_cards}",
    ]
    lines += alarm_lines([alarm.model_dump() for alarm in result.alarms])
    from safeport.gateway_client.status_overview import policy_problems

    problems = policy_problems(locate())
    if problems:
        lines.append(f"policy: gateway.toml has {len(problems)} problem(s); see `sp policy check`")
        lines += [f"  {problem}" for problem in problems]
    click.echo("\n".join(inert(line) for line in lines))


@gateway.command()
@several_humans_passphrase_option
@click.option(
    "--wait",
    "wait_s",
    metavar="SECONDS",
    type=click.FloatRange(min=0),
    default=STOP_WAIT_S,
    show_default=True,
    help="Wait up to SECONDS for the process to exit and its sockets to go; exit 1 past them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
def stop(passphrase_file: Path | None, wait_s: float, as_json: bool) -> None:
    """Stop the gateway cleanly (it journals the stop and locks the vault) and wait until its
    process has exited and its sockets are gone."""
    paths = locate()
    try:
        with GatewayClient(paths) as client:
            pid = client.call(ops.STATUS).pid
            call_for_everyone(client, ops.GATEWAY_STOP, vault_passphrase(passphrase_file))
    except GatewayNotRunning:
        # The state asked for already holds.
        if as_json:
            echo_json(GatewayStopReply(was_running=False, stopped=True, pid=None))
        else:
            click.echo("gateway: not running")
        return
    left = wait_for_exit(paths, pid, wait_s)
    if as_json and left.done:
        echo_json(GatewayStopReply(was_running=True, stopped=True, pid=pid))
        return
    if not left.done:
        raise GatewayDidNotStop(
            f"the gateway (pid {pid}) was asked to stop, but after {wait_s:g} s {left.remaining()}",
            hint="see gateway.log; rerun `sp gateway stop` or end the process",
        )
    click.echo(f"gateway: stopped (pid {pid} exited, sockets removed)")


@gateway.command()
@click.option("--json", "as_json", is_flag=True, help="Print whether changes wait, as JSON.")
def reload(as_json: bool) -> None:
    """Re-read gateway.toml; changes are served only once accepted with `sp policy accept`."""
    with GatewayClient(locate()) as client:
        result = client.call(ops.GATEWAY_RELOAD)
    if as_json:
        echo_json(GatewayReloadReply(pending=result.pending))
    elif result.pending:
        click.echo("policy: gateway.toml differs from the accepted policy; run `sp policy accept`")
    else:
        click.echo("policy: gateway.toml is the accepted policy")


@click.command("checkpoint")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write to FILE.")
@click.option(
    "--note",
    "as_note",
    is_flag=True,
    help="Print the C2SP signed-note form (tlog-checkpoint), one note per journal.",
)
def checkpoint(out: Path | None, as_note: bool) -> None:
    """Export the latest signed checkpoint of the gateway's journals."""
    from safeport.gateway_client.saved_checkpoint import latest_checkpoint

    found = latest_checkpoint(locate())
    if found.unanswered is not None:
        why = found.unanswered.diagnostic()
        click.echo(f"{inert(why)}; showing the last saved checkpoint", err=True)
    text = found.text
    if as_note:
        from safeport.vault import SignedCheckpoints, load_checkpoints

        loaded = load_checkpoints(text.encode(), source="the checkpoint")
        notes = SignedCheckpoints(loaded).notes()
        if not notes:
            raise Error("the checkpoint holds no signed note (signed before notes were kept)")
        text = "\n".join(notes).rstrip("\n")
    if out is None:
        click.echo(text)
    else:
        out.write_text(text + "\n")
        click.echo(f"checkpoint written to {out}")


def _add_install() -> None:
    # Installing the dedicated account is a gateway command, written apart from the rest.
    from safeport.cli.daemon.gateway_install import install_command, uninstall_command

    gateway.add_command(install_command)
    gateway.add_command(uninstall_command)


_add_install()
