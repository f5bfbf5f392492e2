"""Build journals for tests with the real writer."""

from __future__ import annotations

from pathlib import Path

from safeport.shared.audit import JournalWriter


def write_journal(path: Path, count: int) -> list[bytes]:
    """Append ``count`` records and return the file's lines (with newlines)."""
    with JournalWriter(path) as writer:
        for index in range(count):
            writer.append("test.event", {"index": index, "note": f"record {index}"})
    return path.read_bytes().splitlines(keepends=True)
