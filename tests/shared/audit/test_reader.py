"""What ``sp audit show`` and the reads trail display is held to the exported record model."""

from __future__ import annotations

import json
from pathlib import Path

from safeport.shared.audit import JournalWriter, read_records
from safeport.shared.schemas.audit import AuditRecord
from safeport.vault import AuditSealer
from tests.vault.vault_factory import make_vault


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_every_record_the_writer_writes_is_an_audit_record(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    plain, sealed = tmp_path / "plain.jsonl", tmp_path / "sealed.jsonl"
    with JournalWriter(plain) as writer:
        writer.append("read.file", {"path": "src/app.py", "bytes": 10})
        writer.append("read.denied", {"reason": "private"})
    with JournalWriter(sealed, sealer=AuditSealer(store.public_keys())) as writer:
        writer.append("action.intent", {"request": {"command": "uptime"}})
        writer.append("action.outcome", {"status": "ok"}, ref={"intent": 1})
    records = _lines(plain) + _lines(sealed)
    for record in records:
        AuditRecord.model_validate(record)
    assert [r["kind"] for r in read_records(plain)] == ["read.file", "read.denied"]
    shown = read_records(sealed)
    assert [r["kind"] for r in shown] == ["action.intent", "action.outcome"]
    assert shown[1]["ref"] == {"intent": 1} and "sealed" in shown[1] and "body" not in shown[1]


def test_a_line_outside_the_record_model_is_shown_as_damaged_not_as_a_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "reads.jsonl"
    with JournalWriter(path) as writer:
        writer.append("read.file", {"path": "a"})
    good = path.read_bytes()
    forged = [
        {"kind": "read.file", "body": {"path": "b"}},  # no chain members at all
        {**json.loads(good), "seq": 0},  # a sequence the model forbids
        {**json.loads(good), "extra": "x"},  # a member no record has
        {**json.loads(good), "sealed": {"alg": "x", "epk": "k", "ct": "c"}},  # body and sealed
        ["not", "an", "object"],
    ]
    with path.open("ab") as stream:
        for line in forged:
            stream.write(json.dumps(line).encode() + b"\n")
        stream.write(b"{not json\n")
        stream.write(b'{"kind": "torn')
    shown = read_records(path)
    assert shown[0]["kind"] == "read.file"
    assert [r["kind"] for r in shown[1:]] == ["<not a record>"] * 6 + ["<incomplete final record>"]
    assert all(set(r) == {"kind", "bytes"} for r in shown[1:])


def test_a_limit_keeps_the_last_records_and_marks_only_what_it_keeps(tmp_path: Path) -> None:
    path = tmp_path / "reads.jsonl"
    with JournalWriter(path) as writer:
        for index in range(5):
            writer.append("read.file", {"index": index})
    path.write_bytes(b"[]\n" + path.read_bytes())  # damaged, but not among the last two
    shown = read_records(path, limit=2)
    assert [r["body"] for r in shown] == [{"index": 3}, {"index": 4}]
