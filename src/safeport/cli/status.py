"""`sp status` and `sp doctor`: the whole installation at a glance, and what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import click

from safeport.shared.paths import locate
from safeport.shared.visible_text import inert

_MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the overview as JSON.")
def status(as_json: bool) -> None:
    """Gateway, vault, served and pending policy, sessions, cards, journals and clients."""
    from safeport.cli.status_text import overview_lines
    from safeport.context_server import redaction_findings
    from safeport.context_server.mcp_clients.checks import client_overview
    from safeport.gateway_client.status_overview import overview

    paths = locate()
    secrets = [{"check": f.check, "state": f.state, "detail": f.detail, "fix": f.fix}
               for f in redaction_findings(paths)]  # fmt: skip
    view = overview(paths, clients=client_overview(Path.cwd().resolve()), secrets=secrets)
    if as_json:
        click.echo(json.dumps(view.as_json(), indent=2, sort_keys=True))
        return
    click.echo("\n".join(inert(line) for line in overview_lines(view)))


@click.command()
@click.option(
    "--offline", is_flag=True, help="Skip the checks that connect to declared hosts and services."
)
def doctor(offline: bool) -> None:
    """Check permissions, sockets, keyring, clients, policy and declared hosts; exit 1 on a
    problem, with the fix for each."""
    from safeport.context_server import redaction_findings
    from safeport.context_server.mcp_clients.checks import client_findings
    from safeport.gateway_client.doctor import diagnose

    paths = locate()
    context = [*client_findings(Path.cwd().resolve()), *redaction_findings(paths)]
    findings = diagnose(paths, clients=context, network=not offline)
    for finding in findings:
        click.echo(inert(f"{_MARKS[finding.state]}  {finding.check}: {finding.detail}"))
        if finding.fix and finding.state != "ok":
            click.echo(inert(f"      fix: {finding.fix}"))
    failed = sum(1 for finding in findings if finding.state == "fail")
    click.echo(f"\n{failed} problem(s)" if failed else "\nno problems found")
    if failed:
        raise click.exceptions.Exit(1)
