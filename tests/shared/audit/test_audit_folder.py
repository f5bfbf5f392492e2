"""Folder verification: discovery, vanished signed journals, and the checkpoint judgement that
is passed in (here a small recorder: the real one, with signatures, is the vault's)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from safeport.errors import Error
from safeport.shared.audit import ChainReport
from safeport.shared.audit.folder import JournalResult, verify_files, verify_folder
from tests.shared.audit.journal_factory import write_journal


@dataclass(frozen=True)
class Judged:
    ok: bool
    journal: str
    index: int
    records: int
    captured: str | None


class SignedAt:
    """Heads signed at the given sequences (latest first); a head is met when the journal
    holds its sequence."""

    def __init__(self, signed: dict[str, list[int]]) -> None:
        self.signed = signed
        self.asked: list[tuple[str, int]] = []

    def journals(self) -> Collection[str]:
        return self.signed.keys()

    def sequences(self, journal: str) -> Sequence[int]:
        return self.signed.get(journal, [])

    def judge(self, report: ChainReport, journal: str, index: int) -> Judged:
        self.asked.append((journal, index))
        wanted = self.signed.get(journal, [0])[index]
        ok = (report.last_sequence or 0) >= wanted
        return Judged(ok, journal, index, report.records, report.captured_hash)


def test_every_journal_of_every_folder_is_verified_in_order(tmp_path: Path) -> None:
    gateway, own = tmp_path / "gateway", tmp_path / "own"
    gateway.mkdir()
    own.mkdir()
    write_journal(gateway / "actions.jsonl", 3)
    write_journal(own / "reads.jsonl", 2)
    results: list[JournalResult[Judged]] = verify_folder([gateway, own], gateway)
    assert [(r.report.journal, r.report.records, r.checkpoint) for r in results] == [
        ("actions", 3, None),
        ("reads", 2, None),
    ]
    assert all(result.ok for result in results)


def test_an_empty_folder_is_an_error_not_a_pass(tmp_path: Path) -> None:
    with pytest.raises(Error, match="no journals"):
        verify_folder([tmp_path], tmp_path, SignedAt({"actions": [3]}))


def test_a_signed_journal_that_vanished_is_checked_as_empty_and_fails(tmp_path: Path) -> None:
    write_journal(tmp_path / "actions.jsonl", 3)
    check = SignedAt({"actions": [3], "sessions": [5]})
    results = verify_folder([tmp_path], tmp_path, check)
    vanished = results[-1]
    assert vanished.path == tmp_path / "sessions.jsonl" and vanished.report.chain == "empty"
    assert vanished.checkpoint is not None and not vanished.checkpoint.ok and not vanished.ok
    assert results[0].ok


def test_without_a_checkpoint_a_missing_journal_is_not_invented(tmp_path: Path) -> None:
    write_journal(tmp_path / "actions.jsonl", 1)
    results: list[JournalResult[Judged]] = verify_folder([tmp_path], tmp_path)
    assert [r.report.journal for r in results] == ["actions"]


def test_the_latest_head_is_captured_and_earlier_heads_are_judged_while_all_hold(
    tmp_path: Path,
) -> None:
    path = tmp_path / "actions.jsonl"
    write_journal(path, 5)
    check = SignedAt({"actions": [5, 2, 9, 1]})  # the third head was never reached
    (result,) = verify_files([path], check)
    assert result.report.captured_hash is not None  # at sequence 5, for the judgement
    assert check.asked == [("actions", 0), ("actions", 1), ("actions", 2)]  # stops at the miss
    assert result.checkpoint == Judged(False, "actions", 2, 5, None)
    assert not result.ok


def test_a_journal_with_no_signed_head_is_still_judged(tmp_path: Path) -> None:
    path = tmp_path / "reads.jsonl"
    write_journal(path, 2)
    check = SignedAt({})
    (result,) = verify_files([path], check)
    assert check.asked == [("reads", 0)] and result.checkpoint is not None
