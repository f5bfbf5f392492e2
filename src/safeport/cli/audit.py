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

from safeport.cli.audit_stamps import check_stamps, echo_stamps, stamp_json, stamps_folder
from safeport.cli.secret_input import ask_secret
from safeport.errors import Error, UsageError
from safeport.gateway_client.vault_route import vault_backend_for
from safeport.shared.audit import (
    JournalResult,
    discover_journals,
    journal_name,
    read_records,
    verify_files,
    verify_folder,
)
from safeport.shared.paths import locate
from safeport.shared.visible_text import inert
from safeport.vault import (
    Authority,
    CheckpointVerdict,
    NoteCheckpoints,
    SignedCheckpoints,
    trusted_public_keys,
)
from safeport.vault.checkpoint_stamps import StampsReport


@click.group()
def audit() -> None:
    """Verify and read the hash-chained audit journals."""


@audit.command()
@click.argument("journal_file", required=False, type=click.Path(path_type=Path))
@click.option(
    "--checkpoint",
    "checkpoint_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A signed checkpoint (`sp audit checkpoint`): also catch truncation and rollback.",
)
@click.option(
    "--public-keys",
    "public_keys_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The vault.pub.json whose checkpoint key must have signed (default: this vault's).",
)
@click.option(
    "--tsa-ca",
    "tsa_ca",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="PEM roots the stored time stamps must chain to (default: [audit.timestamp]'s).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per journal.")
def verify(
    journal_file: Path | None,
    checkpoint_file: Path | None,
    public_keys_file: Path | None,
    tsa_ca: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Check a journal's hash chain (every journal in the audit folder when FILE is omitted),
    and the stored time stamps of its checkpoints.

    Exit 0: valid or empty. Exit 1: broken, an incomplete final record, a journal that does
    not reach or match its signed checkpoint, one rewritten after a time stamp, or one with
    records but no time stamp where stamps are expected (--tsa-ca, or [audit.timestamp] for
    the gateway's own folder). Exit 2: unreadable.
    """
    paths = locate()
    stamped = stamps_folder(journal_file, paths.gateway_audit_dir)
    check = None
    if checkpoint_file is not None:
        keys = trusted_public_keys(paths, public_keys_file)
        check = SignedCheckpoints.read(checkpoint_file, keys)
    elif public_keys_file is not None and stamped is None:
        raise UsageError("--public-keys only applies with --checkpoint or stored time stamps")
    if journal_file is not None:
        results = verify_files([journal_file], check)
    else:
        results = verify_folder(paths.journal_dirs, paths.gateway_audit_dir, check)
    folder = journal_file.parent if journal_file is not None else paths.gateway_audit_dir
    stamps, heading = check_stamps(folder, results, tsa_ca, public_keys_file)
    _print_reports(results, check, headed=journal_file is None, as_json=as_json, stamps=stamps)
    if not as_json:
        echo_stamps(stamps, heading)
    if not all(result.ok for result in results) or (stamps is not None and not stamps.ok):
        sys.exit(1)


@audit.command()
@click.option("--journal", "journal", default=None, help="Journal name (actions, sessions, reads).")
@click.option(
    "--limit",
    type=click.IntRange(1, 100_000),
    default=50,
    show_default=True,
    help="Show at most N records (the latest).",
)
@click.option("--json", "as_json", is_flag=True, help="Print records as JSON Lines.")
@click.option("--unseal", is_flag=True, help="Ask for the vault passphrase and show sealed bodies.")
@click.option(
    "--passphrase-file",
    type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
    help="Unseal bodies with the passphrase read from FILE (- for stdin).",
)
def show(
    journal: str | None,
    limit: int,
    as_json: bool,
    unseal: bool,
    passphrase_file: Path | None,
) -> None:
    """Show the most recent records of one journal, or of every journal.

    Sealed bodies (actions, sessions) show as <sealed> unless the vault's passphrase is given.
    """
    paths = locate()
    found = [path for folder in paths.journal_dirs for path in discover_journals(folder)]
    if journal is not None:
        if not journal.isidentifier():
            raise UsageError(f"{journal!r} is not a journal name")
        files = [path for path in found if path.name == f"{journal}.jsonl"][:1]
        if not files:
            raise Error(f"no journal named {journal!r} in {paths.gateway_audit_dir}")
    else:
        files = found
    authority = None
    if unseal or passphrase_file is not None:
        authority = Authority(
            passphrase=lambda: ask_secret(
                passphrase_file, what="vault passphrase", option="--passphrase-file"
            )
        )
    shown = [(path, read_records(path, limit)) for path in files]
    if authority is not None:
        backend = vault_backend_for(paths)
        # One unlock (one KDF) for every journal shown.
        flat = [record for _, records in shown for record in records]
        opened = iter(backend.unseal(authority, flat))
        shown = [(path, [next(opened) for _ in records]) for path, records in shown]
    for path, records in shown:
        if as_json:
            for record in records:
                click.echo(json.dumps({"journal": journal_name(path), **record}, sort_keys=True))
        else:
            _render_table(journal_name(path), records)


def _print_reports(
    results: list[JournalResult[CheckpointVerdict]],
    check: SignedCheckpoints | NoteCheckpoints | None,
    *,
    headed: bool,
    as_json: bool,
    stamps: StampsReport | None = None,
) -> None:
    if as_json:
        objects = []
        for result in results:
            item = result.report.as_json()
            verdict = result.checkpoint
            if verdict is not None and check is not None:
                item["checkpoint"] = {
                    "status": verdict.status,
                    "ok": verdict.ok,
                    "detail": verdict.detail,
                    "signer": check.signer(result.report.journal)
                    if verdict.status != "unsigned"
                    else None,
                }
            stamped = stamp_json(stamps, result.report.journal)
            if stamped is not None:
                item["timestamps"] = stamped
            objects.append(item)
        payload: Any = objects if headed else objects[0]
        click.echo(json.dumps(payload, indent=2))
        return
    blocks = []
    for result in results:
        report, verdict = result.report, result.checkpoint
        # Journal names are file names in the audit folder: shown inert, like record fields.
        lines = ([f"journal: {inert(report.journal)}"] if headed else []) + report.lines()
        if verdict is not None and check is not None:
            lines.append(f"checkpoint: {inert(verdict.detail)}")
            signer = check.signer(report.journal)
            if signer is not None and verdict.status != "unsigned":
                lines.append(f"signer: {signer}")
        blocks.append("\n".join(lines))
    click.echo("\n\n".join(blocks))


def _render_table(name: str, records: list[dict[str, Any]]) -> None:
    table = Table(title=Text(f"journal: {inert(name)}"), title_justify="left")
    for column in ("seq", "time", "kind", "details"):
        table.add_column(column, overflow="fold")
    for record in records:
        details = record.get("body")
        if details is None and "sealed" in record:
            details = "<sealed>"
        text = details if isinstance(details, str) else json.dumps(details, sort_keys=True)
        table.add_row(
            Text(inert(str(record.get("seq", "?")))),
            Text(inert(str(record.get("ts", "")))),
            Text(inert(str(record.get("kind", "")))),
            Text(inert(text if len(text) <= 400 else text[:400] + "…")),
        )
    Console(highlight=False).print(table)


def _add_checkpoint() -> None:
    # `sp audit checkpoint` asks the gateway, so it lives with the gateway commands.
    from safeport.cli.daemon.gateway import checkpoint

    audit.add_command(checkpoint)


_add_checkpoint()
