"""Reads-journal records leave the response path but stay durable: on disk within the window
without anyone flushing, at once on a clean stop (end of input, SIGTERM), everything older than
the window survives a SIGKILL, and once a write fails nothing more is served."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.mcp_raw import RawMcp
from safeport.context_server.operations.reads_journal import DURABILITY_WINDOW_S, ReadsJournal
from safeport.errors import JournalUnavailable
from safeport.shared.audit import verify_journal
from tests.context_server.test_server import small_workspace

# A loaded two-core machine can hold a thread off the CPU for seconds, far past the window;
# the window itself is what the writer aims for, this is how long a test waits before calling
# a record lost (a wait ends as soon as the record is there).
PATIENCE_S = 300 * DURABILITY_WINDOW_S


def journal_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def wait_for_lines(path: Path, count: int) -> float:
    """Seconds until the journal holds ``count`` records (fails after PATIENCE_S)."""
    start = time.monotonic()
    while len(journal_lines(path)) < count:
        assert time.monotonic() - start < PATIENCE_S, f"{count} records never reached the disk"
        time.sleep(0.005)
    return time.monotonic() - start


def record(journal: ReadsJournal, path: str) -> None:
    journal.record(
        "read_file", {"path": path}, is_private=lambda _: False, served_bytes=1, refused=None
    )


def test_records_reach_the_disk_by_themselves_in_batches(tmp_path: Path) -> None:
    journal = ReadsJournal(tmp_path / "audit", "tests", ["/srv/app"])
    started = time.monotonic()
    with journal._write_lock:  # the writer thread is held off: a call that wrote would hang
        for n in range(50):
            record(journal, f"f{n}.py")
        queued = time.monotonic() - started
        assert journal_lines(journal.path) == []  # nothing was written on the calls' path
    took = wait_for_lines(journal.path, 50)  # nobody flushes: the writer thread does it
    print(json.dumps({"queue_50_s": round(queued, 6), "on_disk_after_s": round(took, 4)}))
    bodies = [line["body"] for line in journal_lines(journal.path)]
    assert [b["args"] for b in bodies] == [{"path": f"f{n}.py"} for n in range(50)]
    journal.close()
    assert verify_journal(journal.path).ok


def test_a_clean_close_writes_what_is_queued_at_once(tmp_path: Path) -> None:
    journal = ReadsJournal(tmp_path / "audit", "tests", ["/srv/app"])
    for n in range(5):
        record(journal, f"f{n}.py")
    journal.close()  # immediately, well inside the window
    assert len(journal_lines(journal.path)) == 5
    with pytest.raises(JournalUnavailable):
        record(journal, "late.py")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[RawMcp, Path]]:
    root, home = small_workspace(tmp_path)
    client = RawMcp(root, home)
    try:
        yield client, home / "audit" / "reads.jsonl"
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait(10)


def test_a_crash_loses_nothing_older_than_the_window(served: tuple[RawMcp, Path]) -> None:
    server, journal = served
    for n in range(20):
        server.call("read_file", {"path": "src/app.py" if n % 2 else "notes.md"})
    wait_for_lines(journal, 20)  # written by the server itself: nobody closed or flushed it
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)
    assert len(journal_lines(journal)) == 20
    assert verify_journal(journal).ok


@pytest.mark.parametrize("stop", ["end of input", "SIGTERM"])
def test_a_clean_stop_writes_the_last_call_at_once(served: tuple[RawMcp, Path], stop: str) -> None:
    server, journal = served
    server.call("read_file", {"path": "notes.md"})
    server.call("list_directory", {"path": "."})
    if stop == "SIGTERM":
        server.proc.send_signal(signal.SIGTERM)
    else:
        assert server.proc.stdin is not None
        server.proc.stdin.close()
    assert server.proc.wait(10) == 0
    tools = [line["body"]["tool"] for line in journal_lines(journal)]
    assert tools == ["read_file", "list_directory"]
    assert verify_journal(journal).ok
