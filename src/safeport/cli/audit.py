"""`sp audit`: verify journals offline and show their records."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from safeport.cli.render import inert
from safeport.errors import Error, UsageError
from safeport.shared.audit import (
    ChainReport,
    discover_journals,
    journal_name,
    read_records,
    verify_journal,
)
from safeport.shared.paths import locate


@click.group()
def audit() -> None:
    """Verify and read the hash-chained audit journals."""


@audit.command()
@click.argument("journal_file", required=False, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per journal.")
def verify(journal_file: Path | None, as_json: bool) -> None:
    """Check a journal's hash chain (every journal in the audit folder when FILE is omitted).

    Exit 0: valid or empty. Exit 1: broken or an incomplete final record. Exit 2: unreadable.
    """
    if journal_file is not None:
        reports = [verify_journal(journal_file)]
        headed = False
    else:
        audit_dir = locate().audit_dir
        files = discover_journals(audit_dir)
        if not files:
            raise Error(f"no journals in {audit_dir}", hint="nothing has been recorded yet")
        reports = [verify_journal(path) for path in files]
        headed = True
    _print_reports(reports, headed=headed, as_json=as_json)
    if not all(report.ok for report in reports):
        sys.exit(1)


@audit.command()
@click.option("--journal", "journal", default=None, help="Journal name (actions, sessions, reads).")
@click.option("--limit", type=click.IntRange(1, 100_000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print records as JSON Lines.")
def show(journal: str | None, limit: int, as_json: bool) -> None:
    """Show the most recent records of one journal, or of every journal."""
    audit_dir = locate().audit_dir
    if journal is not None:
        if not journal.isidentifier():
            raise UsageError(f"{journal!r} is not a journal name")
        files = [audit_dir / f"{journal}.jsonl"]
        if not files[0].exists():
            raise Error(f"no journal named {journal!r} in {audit_dir}")
    else:
        files = discover_journals(audit_dir)
    for path in files:
        records = read_records(path, limit)
        if as_json:
            for record in records:
                click.echo(json.dumps({"journal": journal_name(path), **record}, sort_keys=True))
        else:
            _render_table(journal_name(path), records)


def _print_reports(reports: list[ChainReport], *, headed: bool, as_json: bool) -> None:
    if as_json:
        payload: Any = [r.as_json() for r in reports] if headed else reports[0].as_json()
        click.echo(json.dumps(payload, indent=2))
        return
    blocks = []
    for report in reports:
        lines = ([f"journal: {report.journal}"] if headed else []) + report.lines()
        blocks.append("\n".join(lines))
    click.echo("\n\n".join(blocks))


def _render_table(name: str, records: list[dict[str, Any]]) -> None:
    table = Table(title=f"journal: {name}", title_justify="left")
    for column in ("seq", "time", "kind", "details"):
        table.add_column(column, overflow="fold")
    for record in records:
        details = record.get("body")
        if details is None and "sealed" in record:
            details = "<sealed>"
        text = details if isinstance(details, str) else json.dumps(details, sort_keys=True)
        table.add_row(
            Text(str(record.get("seq", "?"))),
            Text(inert(str(record.get("ts", "")))),
            Text(inert(str(record.get("kind", "")))),
            Text(inert(text if len(text) <= 400 else text[:400] + "…")),
        )
    Console(highlight=False).print(table)
