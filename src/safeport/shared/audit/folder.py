"""Verifying the journals of an audit folder, each against its signed heads when given.

`sp audit verify` with no file checks every journal it finds (rotated segments in order), and
with a checkpoint file it also checks the journals that file names but the folder no longer
holds: a signed journal that vanished entirely is the ultimate truncation. Each journal's chain
is verified here; whether it reaches and matches its signed head is the checkpoint check's
judgement, passed in (signatures need the vault's keys, which this package never holds).
Heads signed before the latest one stay in a checkpoint file only after the gateway found the
journal cut or rewritten, so the journal must hold each of those too.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from safeport.errors import Error
from safeport.shared.audit.verify import (
    ChainReport,
    discover_journals,
    journal_name,
    verify_journal,
)


class Verdict(Protocol):
    @property
    def ok(self) -> bool: ...


V = TypeVar("V", bound=Verdict)
V_co = TypeVar("V_co", bound=Verdict, covariant=True)


class CheckpointCheck(Protocol[V_co]):
    """Signed heads to compare journals with (their signatures already checked)."""

    def journals(self) -> Collection[str]:
        """The journals with a signed head."""
        ...

    def sequences(self, journal: str) -> Sequence[int]:
        """The sequences signed for ``journal``: the latest first, then the earlier heads."""
        ...

    def judge(self, report: ChainReport, journal: str, index: int) -> V_co:
        """How ``report`` (captured at ``sequences(journal)[index]``) compares with that head;
        index 0 is also asked for a journal with no signed head."""
        ...


@dataclass(frozen=True)
class JournalResult(Generic[V]):
    """One journal's chain, and its verdict against the checkpoint when one was given."""

    path: Path
    report: ChainReport
    checkpoint: V | None

    @property
    def ok(self) -> bool:
        return self.report.ok and (self.checkpoint is None or self.checkpoint.ok)


def verify_folder(
    folders: Sequence[Path], audit_dir: Path, check: CheckpointCheck[V] | None = None
) -> list[JournalResult[V]]:
    """Every journal in ``folders``, plus (with a check) the signed ones missing from
    ``audit_dir``, the folder the gateway writes."""
    files = [path for folder in folders for path in discover_journals(folder)]
    if not files:
        raise Error(f"no journals in {audit_dir}", hint="nothing has been recorded yet")
    if check is not None:
        present = {journal_name(path) for path in files}
        files += [
            audit_dir / f"{name}.jsonl" for name in sorted(check.journals()) if name not in present
        ]
    return verify_files(files, check)


def verify_files(
    files: Sequence[Path], check: CheckpointCheck[V] | None = None
) -> list[JournalResult[V]]:
    """Each journal's chain, and with a check its verdict against every head signed for it."""
    results = []
    for path in files:
        name = journal_name(path)
        sequences = check.sequences(name) if check is not None else ()
        if sequences and not path.exists() and not path.is_symlink():
            report = _empty(name)  # a signed journal that vanished: judged as empty
        else:
            report = verify_journal(path, capture_seq=sequences[0] if sequences else None)
        verdict = None
        if check is not None:
            verdict = check.judge(report, name, 0)
            for index, seq in enumerate(sequences[1:], start=1):
                if not verdict.ok:
                    break
                earlier = verify_journal(path, capture_seq=seq) if path.exists() else _empty(name)
                verdict = check.judge(earlier, name, index)
        results.append(JournalResult(path, report, verdict))
    return results


def _empty(name: str) -> ChainReport:
    return ChainReport(name, 0, None, None, None, "empty")
