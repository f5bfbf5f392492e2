"""`sp audit verify`'s time-stamp part: the stored RFC 3161 stamps judged against the journals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from safeport.errors import UsageError
from safeport.shared.audit import JournalResult
from safeport.shared.paths import locate
from safeport.shared.visible_text import inert
from safeport.vault import UNSIGNED_JOURNALS, CheckpointVerdict, trusted_public_keys
from safeport.vault.checkpoint_stamps import (
    StampsReport,
    configured_roots,
    read_roots,
    require_stamps,
    verify_stamps,
)
from safeport.vault.timestamp_check import STAMPS_FILE


def stamps_folder(journal_file: Path | None, audit_dir: Path) -> Path | None:
    """Where the stamps of these journals are kept, if there are any."""
    folder = journal_file.parent if journal_file is not None else audit_dir
    return folder if (folder / STAMPS_FILE).exists() else None


def check_stamps(
    folder: Path,
    results: list[JournalResult[CheckpointVerdict]],
    tsa_ca: tuple[Path, ...],
    public_keys_file: Path | None,
) -> tuple[StampsReport | None, str]:
    """The stamps' report, and the line that says what they were checked with.

    Stamps are expected when the person names roots (--tsa-ca), or when the gateway's policy
    names authorities and these are the gateway's own journals: there, a signed journal with
    records and no stamp at all is reported. Whoever rewrote it could delete its stamps (or
    the whole file) as easily as the journal; a missing stamp must not read as "nothing to
    check"."""
    paths = locate()
    if tsa_ca:
        roots, expected = read_roots(tsa_ca), True
        if not roots:
            raise UsageError("--tsa-ca names no PEM certificate")
    else:
        roots, named = configured_roots(paths.gateway_config)
        expected = named and folder == paths.gateway_audit_dir
    report = None
    if (folder / STAMPS_FILE).exists():
        keys = trusted_public_keys(paths, public_keys_file)
        journals = {result.report.journal: result.path for result in results}
        report = verify_stamps(folder, journals, roots, keys.checkpoint_ed25519)
    where = "--tsa-ca" if tsa_ca else "[audit.timestamp] in gateway.toml"
    if report is not None and not roots:
        return None, (
            f"timestamps: {report.stored} stored, not checked: no TSA root "
            "(pass --tsa-ca FILE, or name the authorities in [audit.timestamp])"
        )
    if expected:
        signed = [
            result.report.journal
            for result in results
            if result.report.last_sequence is not None
            and result.report.journal not in UNSIGNED_JOURNALS
            and result.path.parent == folder
        ]
        report = require_stamps(report, signed)
    if report is None:
        return None, ""
    return report, f"timestamps: {report.stored} stored, checked against the roots of {where}"


def stamp_lines(report: StampsReport | None, heading: str) -> list[str]:
    if not heading:
        return []
    lines = [heading]
    if report is None:
        return lines
    for journal, verdict in report.verdicts.items():
        mark = "ok" if verdict.ok else "TAMPERED"
        lines.append(f"  {inert(journal)}: {mark}: {inert(verdict.detail)}")
    lines += [f"  invalid stamp: {inert(problem)}" for problem in report.invalid]
    return lines


def stamp_json(report: StampsReport | None, journal: str) -> dict[str, Any] | None:
    if report is None:
        return None
    verdict = report.verdicts.get(journal)
    item: dict[str, Any] = {"invalid": report.invalid}
    if verdict is not None:
        last_good = verdict.last_good.isoformat() if verdict.last_good else None
        item.update(
            ok=verdict.ok, status=verdict.status, detail=verdict.detail, last_good=last_good
        )
    else:
        item.update(ok=not report.invalid, status="none", detail="no time-stamped checkpoint")
    return item


def echo_stamps(report: StampsReport | None, heading: str) -> None:
    lines = stamp_lines(report, heading)
    if lines:
        click.echo("\n" + "\n".join(lines))
