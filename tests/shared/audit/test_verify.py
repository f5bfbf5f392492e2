"""The verifier names the first bad sequence for every kind of tampering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from safeport.errors import AuditError
from safeport.shared.audit import JournalWriter, verify_journal
from safeport.shared.audit.record import JournalHead, format_record
from tests.shared.audit.journal_factory import write_journal


def _rewrite(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


def test_an_intact_journal_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    write_journal(path, 10)
    report = verify_journal(path)
    assert report.lines() == [
        "records: 10",
        "first sequence: 1",
        "last sequence: 10",
        "chain: valid",
    ]


def test_an_empty_journal_is_empty_not_broken(tmp_path: Path) -> None:
    path = tmp_path / "reads.jsonl"
    path.write_bytes(b"")
    report = verify_journal(path)
    assert report.ok
    assert report.lines() == ["records: 0", "first sequence: -", "last sequence: -", "chain: empty"]


def test_a_missing_journal_is_an_error_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(AuditError, match=r"nope\.jsonl: no such file"):
        verify_journal(tmp_path / "nope.jsonl")


def test_an_edited_record_breaks_with_hash_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 10)
    lines[4] = lines[4].replace(b"record 4", b"record X")
    _rewrite(path, lines)
    report = verify_journal(path)
    assert (report.chain, report.broken_at, report.reason) == ("broken", 5, "hash mismatch")
    assert report.records == 4 and report.last_sequence == 4


def test_a_deleted_record_breaks_with_sequence_gap(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 10)
    del lines[6]
    _rewrite(path, lines)
    assert verify_journal(path).verdict() == "chain: broken at sequence 7 (sequence gap)"


def test_deleting_the_first_record_is_caught(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 3)
    _rewrite(path, lines[1:])
    assert verify_journal(path).verdict() == "chain: broken at sequence 1 (sequence gap)"


def test_reordered_records_break_at_the_first_swap(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 10)
    lines[2], lines[3] = lines[3], lines[2]
    _rewrite(path, lines)
    assert verify_journal(path).verdict() == "chain: broken at sequence 3 (sequence gap)"


def test_a_duplicated_record_breaks(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 10)
    lines.insert(5, lines[4])
    _rewrite(path, lines)
    report = verify_journal(path)
    assert report.verdict() == "chain: broken at sequence 6 (sequence gap)"
    assert report.records == 5


def test_a_record_spliced_from_another_journal_breaks_with_prev_mismatch(tmp_path: Path) -> None:
    ours = tmp_path / "a.jsonl"
    theirs = tmp_path / "b.jsonl"
    lines = write_journal(ours, 10)
    foreign = write_journal(theirs, 10)
    lines[5] = foreign[5]  # same sequence number, valid hash of its own, wrong predecessor
    _rewrite(ours, lines)
    assert verify_journal(ours).verdict() == "chain: broken at sequence 6 (prev mismatch)"


def test_a_rechained_edit_is_caught_at_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 5)
    record = json.loads(lines[1])
    forged, _ = format_record(
        JournalHead(1, record["prev"]), record["ts"], record["kind"], {"body": {"forged": True}}
    )
    lines[1] = forged
    _rewrite(path, lines)
    assert verify_journal(path).verdict() == "chain: broken at sequence 3 (prev mismatch)"


def test_a_non_json_line_is_not_a_record(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 5)
    lines.insert(3, b"this is not json\n")
    _rewrite(path, lines)
    report = verify_journal(path)
    assert report.verdict() == "chain: broken at sequence 4 (not a record)"
    assert report.records == 3


@pytest.mark.parametrize(
    "line",
    [b"\n", b"{}\n", b'{"hash":"' + b"0" * 64 + b'","seq":4}\n', b"\xff\xfe\n"],
    ids=["blank", "empty-object", "truncated-layout", "binary"],
)
def test_malformed_lines_are_not_records(tmp_path: Path, line: bytes) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 3)
    _rewrite(path, [*lines, line])
    assert verify_journal(path).verdict() == "chain: broken at sequence 4 (not a record)"


def test_a_record_cut_mid_line_is_incomplete_not_tampered(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 4)
    _rewrite(path, [*lines[:3], lines[3][:37]])
    report = verify_journal(path)
    assert report.chain == "incomplete"
    assert report.verdict() == "chain: incomplete final record after sequence 3 (37 bytes)"
    assert not report.ok


def test_a_cut_in_the_middle_of_the_file_is_not_a_record(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 4)
    lines[1] = lines[1][:50] + b"\n"
    _rewrite(path, lines)
    assert verify_journal(path).verdict() == "chain: broken at sequence 2 (not a record)"


def test_uppercase_hex_or_leading_zero_sequence_is_not_accepted(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 2)
    lines[1] = lines[1].replace(b'"seq":2', b'"seq":02')
    _rewrite(path, lines)
    assert verify_journal(path).reason == "hash mismatch"


def test_a_symlinked_journal_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    write_journal(real, 2)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with pytest.raises(AuditError, match="symbolic link"):
        verify_journal(link)


def test_rotated_segments_are_verified_in_order_as_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    with JournalWriter(path, segment_bytes=4096) as writer:
        for index in range(100):
            writer.append("test.event", {"index": index, "pad": "x" * 100})
    segments = sorted(tmp_path.glob("actions.0*.jsonl"))
    assert len(segments) >= 3
    report = verify_journal(path)
    assert (report.chain, report.records, report.first_sequence, report.last_sequence) == (
        "valid",
        100,
        1,
        100,
    )
    # A lone later segment verifies on its own, anchored at its first record.
    lone = verify_journal(segments[1])
    assert lone.chain == "valid" and lone.first_sequence is not None and lone.first_sequence > 1


def test_a_deleted_middle_segment_breaks_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    with JournalWriter(path, segment_bytes=4096) as writer:
        for index in range(100):
            writer.append("test.event", {"index": index, "pad": "x" * 100})
    segments = sorted(tmp_path.glob("actions.0*.jsonl"))
    segments[1].unlink()
    report = verify_journal(path)
    assert report.chain == "broken" and report.reason == "sequence gap"


def test_capture_returns_the_hash_at_a_sequence(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 5)
    report = verify_journal(path, capture_seq=3)
    assert report.captured_hash == json.loads(lines[2])["hash"]
