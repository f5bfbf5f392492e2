"""`sp audit verify` prints exactly its contract, with its exit codes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

from tests.shared.audit.journal_factory import write_journal


def sp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "safeport", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def test_verify_prints_exactly_four_lines_for_a_valid_journal(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    write_journal(path, 184)
    done = sp("audit", "verify", str(path))
    assert done.returncode == 0
    assert done.stdout == "records: 184\nfirst sequence: 1\nlast sequence: 184\nchain: valid\n"
    assert done.stderr == ""


def test_verify_of_an_empty_journal(tmp_path: Path) -> None:
    path = tmp_path / "reads.jsonl"
    path.write_bytes(b"")
    done = sp("audit", "verify", str(path))
    assert (done.returncode, done.stdout) == (
        0,
        "records: 0\nfirst sequence: -\nlast sequence: -\nchain: empty\n",
    )


def test_verify_of_a_broken_journal_exits_1_naming_the_sequence(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    lines = write_journal(path, 100)
    lines[56] = lines[56].replace(b"record 56", b"record 99")
    path.write_bytes(b"".join(lines))
    done = sp("audit", "verify", str(path))
    assert done.returncode == 1
    assert done.stdout == (
        "records: 56\nfirst sequence: 1\nlast sequence: 56\n"
        "chain: broken at sequence 57 (hash mismatch)\n"
    )


def test_verify_of_a_torn_journal_exits_1_with_the_incomplete_verdict(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    lines = write_journal(path, 3)
    path.write_bytes(b"".join(lines[:2]) + lines[2][:37])
    done = sp("audit", "verify", str(path))
    assert done.returncode == 1
    assert (
        done.stdout.splitlines()[-1] == "chain: incomplete final record after sequence 2 (37 bytes)"
    )


def test_verify_of_a_missing_file_exits_2_with_path_and_reason(tmp_path: Path) -> None:
    done = sp("audit", "verify", str(tmp_path / "gone.jsonl"))
    assert done.returncode == 2
    assert "gone.jsonl" in done.stderr and "no such file" in done.stderr
    assert "Traceback" not in done.stderr


def test_verify_of_an_unreadable_file_exits_2(tmp_path: Path) -> None:
    done = sp("audit", "verify", str(tmp_path))
    assert done.returncode == 2
    assert "cannot read" in done.stderr and "Traceback" not in done.stderr


def test_verify_without_a_file_checks_every_journal_in_the_audit_folder(tmp_path: Path) -> None:
    audit = tmp_path / "home" / "audit"
    audit.mkdir(parents=True)
    write_journal(audit / "actions.jsonl", 3)
    write_journal(audit / "reads.jsonl", 2)
    done = sp("audit", "verify", env={"SAFEPORT_HOME": str(tmp_path / "home")})
    assert done.returncode == 0
    assert done.stdout == (
        "journal: actions\nrecords: 3\nfirst sequence: 1\nlast sequence: 3\nchain: valid\n\n"
        "journal: reads\nrecords: 2\nfirst sequence: 1\nlast sequence: 2\nchain: valid\n"
    )


def test_verify_json_output(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    lines = write_journal(path, 5)
    del lines[2]
    path.write_bytes(b"".join(lines))
    done = sp("audit", "verify", str(path), "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "journal": "actions",
        "records": 2,
        "first_sequence": 1,
        "last_sequence": 2,
        "chain": "broken",
        "broken_at": 3,
        "reason": "sequence gap",
    }


def test_show_renders_records_as_json_lines_and_tables(tmp_path: Path) -> None:
    audit = tmp_path / "home" / "audit"
    audit.mkdir(parents=True)
    write_journal(audit / "sessions.jsonl", 4)
    env = {"SAFEPORT_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    done = sp("audit", "show", "--journal", "sessions", "--limit", "2", "--json", env=env)
    assert done.returncode == 0
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["seq"] for r in records] == [3, 4]
    table = sp("audit", "show", "--journal", "sessions", env=env)
    assert table.returncode == 0 and "test.event" in table.stdout and "record 3" in table.stdout


def test_show_escapes_terminal_control_sequences(tmp_path: Path) -> None:
    from safeport.shared.audit import JournalWriter

    audit = tmp_path / "home" / "audit"
    audit.mkdir(parents=True)
    with JournalWriter(audit / "reads.jsonl") as writer:
        writer.append("read", {"path": "\x1b[2J\u202eevil"})
    done = sp("audit", "show", env={"SAFEPORT_HOME": str(tmp_path / "home"), "COLUMNS": "200"})
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout


def test_unknown_journal_name_is_a_clear_error(tmp_path: Path) -> None:
    done = sp("audit", "show", "--journal", "nope", env={"SAFEPORT_HOME": str(tmp_path)})
    assert done.returncode == 2 and "no journal named 'nope'" in done.stderr


def _saved_checkpoint(home: Path) -> str:
    (home / "audit").mkdir(parents=True)
    text = json.dumps({"format": "safeport-checkpoint", "version": 1, "checkpoints": []})
    (home / "audit" / "checkpoint.json").write_text(text)
    return text


def test_checkpoint_with_no_gateway_shows_the_last_saved_one_and_says_so(tmp_path: Path) -> None:
    saved = _saved_checkpoint(tmp_path)
    done = sp("audit", "checkpoint", env={"SAFEPORT_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == saved
    assert "no gateway is listening" in done.stderr and "last saved checkpoint" in done.stderr


def test_checkpoint_from_a_listener_that_does_not_speak_the_protocol_is_an_error(
    tmp_path: Path,
) -> None:
    _saved_checkpoint(tmp_path)
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(run / "control.sock"))
    server.listen()

    def answer_garbage() -> None:
        conn, _ = server.accept()
        conn.recv(65536)
        conn.sendall(b"\x00\x00\x00\x05hello")  # a frame, but not JSON
        conn.recv(1)

    thread = threading.Thread(target=answer_garbage, daemon=True)
    thread.start()
    try:
        done = sp("audit", "checkpoint", env={"SAFEPORT_HOME": str(tmp_path)})
    finally:
        server.close()
    assert done.returncode == 2, done.stdout
    assert "not valid JSON" in done.stderr
    assert "last saved checkpoint" not in done.stderr and done.stdout == ""
