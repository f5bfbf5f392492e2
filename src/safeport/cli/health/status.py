"""`sp status` and `sp doctor`: the whole installation at a glance, and what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import click

from safeport.shared.findings import Diagnosis
from safeport.shared.paths import locate
from safeport.shared.visible_text import inert

_MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the overview as JSON.")
def status(as_json: bool) -> None:
    """Gateway, vault, served and pending policy, sessions, cards, journals and clients.

    Exit 0 when all is well, 1 on a problem, 2 while the gateway is down or the vault locked."""
    from safeport.cli.health.status_text import overview_lines
    from safeport.context_server import redaction_findings
    from safeport.context_server.mcp_clients.checks import client_overview
    from safeport.gateway_client.status_overview import EXIT_CODES, overview

    paths = locate()
    secrets = [{"check": f.check, "state": f.state, "detail": f.detail, "fix": f.fix}
               for f in redaction_findings(paths)]  # fmt: skip
    view = overview(paths, clients=client_overview(Path.cwd().resolve()), secrets=secrets)
    if as_json:
        click.echo(json.dumps(view.as_json(), indent=2, sort_keys=True))
    else:
        click.echo("\n".join(inert(line) for line in overview_lines(view)))
    code = EXIT_CODES[view.state]
    if code:
        raise click.exceptions.Exit(code)


@click.command()
@click.option(
    "--offline", is_flag=True, help="Skip the checks that connect to declared hosts and services."
)
@click.option("--json", "as_json", is_flag=True, help="Print the checks and the verdict as JSON.")
def doctor(offline: bool, as_json: bool) -> None:
    """Check permissions, sockets, keyring, clients, policy and declared hosts, with the fix for
    each; exit 1 on a problem, 2 while the gateway is down or the vault locked."""
    from safeport.context_server import redaction_findings
    from safeport.context_server.mcp_clients.checks import client_findings
    from safeport.gateway_client.doctor import diagnose

    paths = locate()
    context = [*client_findings(Path.cwd().resolve()), *redaction_findings(paths)]
    report = Diagnosis(tuple(diagnose(paths, clients=context, network=not offline)))
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2, sort_keys=True))
    else:
        for finding in report.findings:
            click.echo(inert(f"{_MARKS[finding.state]}  {finding.check}: {finding.detail}"))
            if finding.fix and finding.state != "ok":
                click.echo(inert(f"      fix: {finding.fix}"))
        click.echo(_verdict_line(report))
    if report.exit_code:
        raise click.exceptions.Exit(report.exit_code)


def _verdict_line(report: Diagnosis) -> str:
    if report.verdict == "problem":
        return f"\n{report.problems} problem(s)"
    if report.verdict == "down":
        return "\nno problems found; the gateway is not running or its vault is locked (exit 2)"
    return "\nno problems found"
