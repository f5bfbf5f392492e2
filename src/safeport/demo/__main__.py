"""A self-contained run of what exists: write a journal, verify it, tamper with it, verify again."""

from __future__ import annotations

import tempfile
from pathlib import Path

from safeport.shared.audit import JournalWriter, verify_journal


def run(folder: Path) -> int:
    journal = folder / "actions.jsonl"
    with JournalWriter(journal) as writer:
        for step in ("gateway.started", "vault.unlocked", "action.intent", "action.outcome"):
            writer.append(step, {"demo": True})
    report = verify_journal(journal)
    lines = [f"journal: {journal}", *report.lines()]
    data = journal.read_bytes().replace(b'"demo":true', b'"demo":false', 1)
    journal.write_bytes(data)
    lines += ["", "after flipping one byte of record 1:", *verify_journal(journal).lines()]
    print("\n".join(lines))
    return 0


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="safeport-demo-") as folder:
        return run(Path(folder))


if __name__ == "__main__":
    raise SystemExit(main())
