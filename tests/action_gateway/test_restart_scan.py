"""The scan a restarted gateway runs over its journals: signed heads against the file, the
highest generation journaled, intents without an outcome (real journal files, no gateway)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from safeport.action_gateway.evidence.restart_scan import (
    HeadFinding,
    OpenIntent,
    check_head,
    scan_refs,
)
from safeport.errors import AuditError
from safeport.shared.audit import JournalHead, JournalWriter


def _journal(
    path: Path, records: list[tuple[str, dict[str, object], dict[str, int] | None]]
) -> list[JournalHead]:
    with JournalWriter(path) as writer:
        return [writer.append(kind, body, ref=ref) for kind, body, ref in records]


def test_an_intent_closed_by_its_outcome_or_a_denial_is_not_open(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    heads = _journal(
        path,
        [
            ("action.intent", {"request": {"kind": "ssh"}}, None),  # 1: closed by 2
            ("action.outcome", {"status": "ok"}, {"intent": 1}),
            ("action.intent", {}, None),  # 3: closed by a denial at rung 8
            ("action.denied", {"rung": 8}, {"intent": 3}),
            ("action.intent", {}, None),  # 5: open
            ("action.denied", {"rung": 4, "kind": "action.intent"}, None),
            ("action.intent", {}, None),  # 7: closed by an earlier restart
            ("action.interrupted", {}, {"intent": 7}),
        ],
    )
    refs = scan_refs(path)
    assert refs.open_intents == (OpenIntent(5, heads[4].hash),)


def test_a_body_that_mentions_a_kind_is_not_taken_for_one(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    _journal(path, [("action.denied", {"kind": "action.intent", "ref": {"intent": 1}}, None)])
    assert scan_refs(path).open_intents == ()


def test_the_highest_generation_is_the_largest_in_the_clear(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    _journal(
        path,
        [
            ("vault.unlocked", {"vault_generation": 99}, {"generation": 4}),
            ("policy.accepted", {}, {"generation": 6}),
            ("vault.unlocked", {}, {"generation": 5}),
            ("gateway.started", {"generation": 1000}, None),
        ],
    )
    assert scan_refs(path).highest_generation == 6
    assert scan_refs(tmp_path / "none.jsonl").highest_generation == -1


def test_a_journal_still_holding_the_signed_head_passes(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    heads = _journal(path, [("a", {}, None), ("b", {}, None), ("c", {}, None)])
    assert check_head(path, "actions", heads[2]) is None
    assert check_head(path, "actions", heads[1]) is None  # written on since: fine
    assert check_head(path, "actions", JournalHead(0, "0" * 64)) is None


def test_a_shorter_or_different_journal_is_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    heads = _journal(path, [("a", {}, None), ("b", {}, None), ("c", {}, None)])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))
    cut = check_head(path, "actions", heads[2])
    assert cut is not None and (cut.alarm, cut.last_seq) == ("journal.truncated", 2)
    other = check_head(path, "actions", JournalHead(2, "f" * 64))
    assert other is not None and other.alarm == "journal.rewritten"
    path.unlink()
    gone = check_head(path, "actions", heads[0])
    assert gone is not None and gone.alarm == "journal.truncated"


@pytest.mark.parametrize(
    "ref", [{"intent": "5"}, {"intent": -1}, {"Intent": 1}, {"intent": True}, {"a b": 1}]
)
def test_only_small_names_and_counts_go_in_the_clear(
    tmp_path: Path, ref: dict[str, object]
) -> None:
    with JournalWriter(tmp_path / "j.jsonl") as writer, pytest.raises(AuditError):
        writer.append("action.outcome", {}, ref=ref)  # type: ignore[arg-type]  # bad on purpose
    path = tmp_path / "j.jsonl"
    assert not path.exists() or path.read_bytes() == b""


class _Sealer:
    """Stands in for the audit sealer: the body becomes opaque members."""

    def seal(self, plaintext: bytes) -> dict[str, str]:
        return {"alg": "test", "key": "k", "ct": plaintext.hex()}


def test_sealed_records_are_scanned_from_their_cleartext_members(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    with JournalWriter(path, sealer=_Sealer()) as writer:
        first = writer.append("action.intent", {"request": {"args": "x"}})
        writer.append("action.outcome", {"status": "ok"}, ref={"intent": first.seq})
        second = writer.append("action.intent", {})
        writer.append("vault.unlocked", {"vault_generation": 50}, ref={"generation": 9})
    refs = scan_refs(path)
    assert refs.open_intents == (OpenIntent(second.seq, second.hash),)
    assert refs.highest_generation == 9
    assert b'"ref":{"intent":1},"sealed":' in path.read_bytes()


def test_a_journal_rotating_under_the_check_is_not_taken_for_a_cut(tmp_path: Path) -> None:
    """The running gateway compares heads (at unlock, before signing) while its own writer
    appends and rotates: a segment renamed between listing the files and reading them is the
    same chain, never ``journal.truncated`` or ``journal.rewritten``. (Found by the crash
    drill: unlock raised "actions.jsonl is missing" while actions rotated at 4 KiB.)"""
    import threading

    path = tmp_path / "actions.jsonl"
    stop = threading.Event()
    with JournalWriter(path, segment_bytes=4096) as writer:
        signed = writer.append("action.denied", {"n": 0})

        def append_forever() -> None:
            while not stop.is_set():
                writer.append("action.denied", {"pad": "x" * 300})

        appender = threading.Thread(target=append_forever)
        appender.start()
        # Check until the writer has rotated often (however slow the machine), so the test
        # proves the race was run rather than how many checks fit in a fixed count.
        findings: list[HeadFinding | None] = []
        deadline = time.monotonic() + 60
        try:
            while len(list(tmp_path.glob("actions.0*.jsonl"))) <= 10:
                assert time.monotonic() < deadline, "the writer never rotated ten times"
                findings.extend(check_head(path, "actions", signed) for _ in range(10))
        finally:
            stop.set()
            appender.join()
    assert len(findings) >= 10
    assert [f for f in findings if f is not None] == []
