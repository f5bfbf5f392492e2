"""The scan a restarted gateway runs over its journals: signed heads against the file, the
highest generation journaled, intents without an outcome (real journal files, no gateway)."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.action_gateway.evidence.restart_scan import (
    OpenIntent,
    check_head,
    scan_refs,
)
from safeport.errors import AuditError
from safeport.shared.audit import JournalHead, JournalWriter, journal_segments
from safeport.shared.audit import verify as verify_module


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


def _rotate(writer: JournalWriter, path: Path) -> None:
    """Append until the writer renames its active file to a new segment (a count, not a time),
    then once more: a listing from before the rename now misses the records in between."""
    segments = len(journal_segments(path))
    for _ in range(1000):
        writer.append("action.denied", {"pad": "x" * 300})
        if len(journal_segments(path)) > segments:
            writer.append("action.denied", {"after": "the rename"})
            return
    raise AssertionError("a thousand appends never rotated the journal")


def test_a_journal_rotating_under_the_check_is_not_taken_for_a_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The running gateway compares heads (at unlock, before signing) while its own writer
    appends and rotates: a segment renamed between listing the files and reading them is the
    same chain, never ``journal.truncated`` or ``journal.rewritten``. (Found by the crash
    drill: unlock raised "actions.jsonl is missing" while actions rotated at 4 KiB.) The
    rotation is made at that exact point: the signed head is in the active file when it is
    listed, and in a segment the listing does not name when it is read."""
    path = tmp_path / "actions.jsonl"
    listed = verify_module.journal_segments
    with JournalWriter(path, segment_bytes=4096) as writer:
        _rotate(writer, path)
        signed = writer.append("action.denied", {"n": 0})
        state = {"rotations": 0, "rotating": False}

        def listing_then_rotating(journal: Path) -> list[Path]:
            files = listed(journal)
            # Once, and not for the writer, which lists the segments as it rotates too.
            if not state["rotations"] and not state["rotating"]:
                state["rotating"] = True
                _rotate(writer, path)
                state["rotating"] = False
                state["rotations"] += 1
            return files

        monkeypatch.setattr(verify_module, "journal_segments", listing_then_rotating)
        assert check_head(path, "actions", signed) is None
        assert state["rotations"] == 1  # the rotation was made inside the check
        monkeypatch.undo()
        writer.append("action.denied", {"n": 1})
    assert check_head(path, "actions", signed) is None
