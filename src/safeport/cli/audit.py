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
from safeport.cli.secret_input import ask_secret
from safeport.cli.vault import backend_for
from safeport.errors import Error, UsageError
from safeport.shared.audit import (
    ChainReport,
    discover_journals,
    journal_name,
    read_records,
    verify_journal,
)
from safeport.shared.paths import locate
from safeport.vault import (
    Authority,
    CheckpointInvalid,
    CheckpointVerdict,
    VaultFile,
    VaultMissing,
    check_consistent,
    compare,
    decode_public_keys,
    load_checkpoints,
    read_public_keys,
    verify_checkpoint,
)
from safeport.vault.interface import Checkpoint, VaultPublicKeys


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
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per journal.")
def verify(
    journal_file: Path | None,
    checkpoint_file: Path | None,
    public_keys_file: Path | None,
    as_json: bool,
) -> None:
    """Check a journal's hash chain (every journal in the audit folder when FILE is omitted).

    Exit 0: valid or empty. Exit 1: broken, an incomplete final record, or a journal that does
    not reach or match its signed checkpoint. Exit 2: unreadable.
    """
    checkpoints = None
    earlier: dict[str, list[Checkpoint]] = {}
    if checkpoint_file is not None:
        checkpoints, earlier = _load_checkpoints(checkpoint_file, public_keys_file)
    elif public_keys_file is not None:
        raise UsageError("--public-keys only applies with --checkpoint")
    if journal_file is not None:
        files = [journal_file]
        headed = False
    else:
        paths = locate()
        audit_dir = paths.gateway_audit_dir
        files = [path for folder in paths.journal_dirs for path in discover_journals(folder)]
        if not files:
            raise Error(f"no journals in {audit_dir}", hint="nothing has been recorded yet")
        headed = True
        # A signed journal that vanished entirely is the ultimate truncation: check it too.
        present = {journal_name(path) for path in files}
        files += [
            audit_dir / f"{name}.jsonl" for name in sorted(checkpoints or {}) if name not in present
        ]
    reports = []
    verdicts: list[CheckpointVerdict | None] = []
    for path in files:
        name = journal_name(path)
        signed = None if checkpoints is None else checkpoints.get(name)
        if signed is not None and not path.exists() and not path.is_symlink():
            report = ChainReport(name, 0, None, None, None, "empty")
        else:
            report = verify_journal(path, capture_seq=signed.head.seq if signed else None)
        reports.append(report)
        verdict = None if checkpoints is None else compare(report, signed, name)
        # Heads signed before the latest one stay in the file only after the gateway found the
        # journal cut or rewritten: the journal must hold each of them too.
        for old in earlier.get(name, []):
            if verdict is None or not verdict.ok:
                break
            if path.exists():
                old_report = verify_journal(path, capture_seq=old.head.seq)
            else:
                old_report = ChainReport(name, 0, None, None, None, "empty")
            verdict = compare(old_report, old, name)
        verdicts.append(verdict)
    _print_reports(reports, verdicts, checkpoints, headed=headed, as_json=as_json)
    if not all(report.ok for report in reports) or not all(v.ok for v in verdicts if v):
        sys.exit(1)


def _load_checkpoints(
    path: Path, public_keys_file: Path | None
) -> tuple[dict[str, Checkpoint], dict[str, list[Checkpoint]]]:
    """The latest checkpoint of each journal in ``path`` and the earlier ones, every signature
    checked against the vault's public key."""
    if public_keys_file is None:
        keys = _this_vaults_public_keys()
    else:
        # A copy chosen on purpose (an auditor's, perhaps another user's): public, so no owner
        # or mode checks; the signature check is what matters.
        try:
            with public_keys_file.open("rb") as stream:
                text = stream.read(64 * 1024)
            keys = decode_public_keys(text, source=str(public_keys_file))
        except OSError as exc:
            raise Error(f"cannot read {public_keys_file}: {exc.strerror}") from exc
    try:
        with path.open("rb") as stream:
            data = stream.read(1024 * 1024 + 1)
    except OSError as exc:
        raise Error(f"cannot read the checkpoint file {path}: {exc.strerror}") from exc
    if len(data) > 1024 * 1024:
        raise UsageError(f"{path} is too large to be a checkpoint file")
    by_journal: dict[str, Checkpoint] = {}
    loaded = load_checkpoints(data, source=str(path))
    for checkpoint in loaded:
        verify_checkpoint(checkpoint, keys)
    check_consistent(loaded)
    for checkpoint in loaded:
        latest = by_journal.get(checkpoint.journal)
        if latest is None or checkpoint.head.seq >= latest.head.seq:
            by_journal[checkpoint.journal] = checkpoint
    earlier: dict[str, list[Checkpoint]] = {}
    for checkpoint in loaded:
        if checkpoint is not by_journal[checkpoint.journal]:
            earlier.setdefault(checkpoint.journal, []).append(checkpoint)
    return by_journal, earlier


def _this_vaults_public_keys() -> VaultPublicKeys:
    """vault.pub.json, if the vault file beside it records the same keys.

    Whoever can replace vault.pub.json could otherwise sign a rewritten journal's checkpoint with
    a key of their own. The header copy is not authenticated without the passphrase, but
    changing it too makes the next unlock fail, which is loud. With no vault here (an auditor's
    machine), the public file is all there is; --public-keys names a copy you trust.
    """
    paths = locate()
    if paths.install is not None:
        # The gateway account's own file, in a folder only it can write: your uid (and so an
        # agent) cannot replace it, and the vault beside it is not yours to read.
        public = paths.install.state_dir / "vault.pub.json"
        return read_public_keys(public, owner=paths.install.uid)
    keys = read_public_keys(paths.vault_public_file)
    try:
        header = VaultFile.at(paths).header()
    except VaultMissing:
        return keys
    except Error as exc:
        raise CheckpointInvalid(
            f"cannot check {paths.vault_public_file} against the vault file ({exc})",
            hint="pass --public-keys with a copy of vault.pub.json you trust",
        ) from exc
    if header.public != keys:
        raise CheckpointInvalid(
            f"{paths.vault_public_file} does not hold the keys recorded in {paths.vault_file}; "
            "it may have been replaced",
            hint="run `sp vault unlock --rewrite-public-keys`, or pass --public-keys with a copy "
            "you trust",
        )
    return keys


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
        backend = backend_for(paths)
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
    reports: list[ChainReport],
    verdicts: list[CheckpointVerdict | None],
    checkpoints: dict[str, Checkpoint] | None,
    *,
    headed: bool,
    as_json: bool,
) -> None:
    if as_json:
        objects = []
        for report, verdict in zip(reports, verdicts, strict=True):
            item = report.as_json()
            if verdict is not None:
                signed = (checkpoints or {}).get(report.journal)
                item["checkpoint"] = {
                    "status": verdict.status,
                    "ok": verdict.ok,
                    "detail": verdict.detail,
                    "signer": signed.signer_fingerprint
                    if signed and verdict.status != "unsigned"
                    else None,
                }
            objects.append(item)
        payload: Any = objects if headed else objects[0]
        click.echo(json.dumps(payload, indent=2))
        return
    blocks = []
    for report, verdict in zip(reports, verdicts, strict=True):
        # Journal names are file names in the audit folder: shown inert, like record fields.
        lines = ([f"journal: {inert(report.journal)}"] if headed else []) + report.lines()
        if verdict is not None:
            lines.append(f"checkpoint: {inert(verdict.detail)}")
            signed = (checkpoints or {}).get(report.journal)
            if signed is not None and verdict.status != "unsigned":
                lines.append(f"signer: {signed.signer_fingerprint}")
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
    from safeport.cli.gateway import checkpoint

    audit.add_command(checkpoint)


_add_checkpoint()
