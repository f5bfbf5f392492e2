"""Offline verification of a journal and its rotated segments (no key, no JSON parsing).

A journal ``NAME.jsonl`` rotates into ``NAME.000001.jsonl``, ``NAME.000002.jsonl``, …; the chain
runs through the segments in order and ends in the active file.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from safeport.errors import AuditError
from safeport.shared.audit.record import ChainState, check_lines

ChainStatus = Literal["valid", "empty", "broken", "incomplete"]

_CHUNK = 4 * 1024 * 1024
_SEGMENT_RE = re.compile(r"(?P<stem>[^.]+)\.(?P<n>\d{6})\.jsonl")


@dataclass(frozen=True)
class ChainReport:
    """The verdict on one journal; counts cover the intact records before any break."""

    journal: str
    records: int
    first_sequence: int | None
    last_sequence: int | None
    last_hash: str | None
    chain: ChainStatus
    broken_at: int | None = None
    reason: str | None = None
    incomplete_bytes: int | None = None
    captured_hash: str | None = None
    captured_hashes: Mapping[int, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.chain in ("valid", "empty")

    def verdict(self) -> str:
        if self.chain == "broken":
            return f"chain: broken at sequence {self.broken_at} ({self.reason})"
        if self.chain == "incomplete":
            return (
                f"chain: incomplete final record after sequence {self.last_sequence or 0} "
                f"({self.incomplete_bytes} bytes)"
            )
        return f"chain: {self.chain}"

    def lines(self) -> list[str]:
        return [
            f"records: {self.records}",
            f"first sequence: {_dash(self.first_sequence)}",
            f"last sequence: {_dash(self.last_sequence)}",
            self.verdict(),
        ]

    def as_json(self) -> dict[str, object]:
        return {
            "journal": self.journal,
            "records": self.records,
            "first_sequence": self.first_sequence,
            "last_sequence": self.last_sequence,
            "chain": self.chain,
            "broken_at": self.broken_at,
            "reason": self.reason if self.chain != "incomplete" else "incomplete final record",
        }


def journal_name(path: Path) -> str:
    """The journal a file belongs to: ``actions`` for actions.jsonl and its segments."""
    return path.name.split(".", 1)[0]


def journal_segments(path: Path) -> list[Path]:
    """The rotated segments of the journal at ``path`` in order, then ``path`` itself."""
    stem = path.name.removesuffix(".jsonl")
    segments: list[tuple[int, Path]] = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        names = []
    for name in names:
        match = _SEGMENT_RE.fullmatch(name)
        if match and match["stem"] == stem:
            segments.append((int(match["n"]), path.parent / name))
    return [p for _, p in sorted(segments)] + [path]


def discover_journals(audit_dir: Path) -> list[Path]:
    """The active file of every journal in the audit folder (one per journal name), sorted."""
    try:
        names = os.listdir(audit_dir)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise AuditError(f"cannot list {audit_dir}: {exc.strerror}") from exc
    stems = {name.split(".", 1)[0] for name in names if name.endswith(".jsonl")}
    return [audit_dir / f"{stem}.jsonl" for stem in sorted(stems)]


def verify_journal(
    path: Path, *, capture_seq: int | None = None, capture_seqs: Collection[int] = ()
) -> ChainReport:
    """Verify the chain of ``path``; raises :class:`AuditError` if it cannot be read at all.

    Given an active journal file, its rotated segments are verified first, in order. Given a
    single rotated segment, only that segment is checked, anchored at its own first record.
    ``capture_seq`` asks for the stored hash of that sequence (for checkpoint comparison),
    ``capture_seqs`` for those of several, all in the one pass (``captured_hashes``).
    """
    lone_segment = _SEGMENT_RE.fullmatch(path.name) is not None
    files = [path] if lone_segment else journal_segments(path)
    if not path.exists() and not path.is_symlink():
        if len(files) == 1:
            raise AuditError(f"{path}: no such file")
        files = files[:-1]  # rotated just now, or the active file was never recreated
    state = ChainState(anchored=not lone_segment or path.name.endswith(".000001.jsonl"))
    state.capture_seq = capture_seq
    wanted = {*capture_seqs, *([capture_seq] if capture_seq is not None else [])}
    state.captures = frozenset(wanted)
    name = journal_name(path)
    for index, file in enumerate(files):
        is_last = index == len(files) - 1
        torn = _check_file(state, file)
        if state.broken_reason is not None:
            return _report(name, state, "broken")
        if torn:
            if is_last:
                return _report(name, state, "incomplete", incomplete=torn)
            state.broken_reason = "not a record"  # a segment never ends mid-record
            return _report(name, state, "broken")
    return _report(name, state, "valid" if state.records else "empty")


def _check_file(state: ChainState, path: Path) -> int:
    """Feed the file's complete lines to the chain check; return the torn tail's length."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise AuditError(f"{path}: cannot read ({why})") from exc
    carry = b""
    try:
        with os.fdopen(fd, "rb", buffering=0) as stream:
            while True:
                try:
                    chunk = stream.read(_CHUNK)
                except OSError as exc:
                    raise AuditError(f"{path}: cannot read ({exc.strerror})") from exc
                if not chunk:
                    break
                lines = (carry + chunk).split(b"\n")
                carry = lines.pop()
                if not check_lines(state, lines):
                    return 0
    except IsADirectoryError as exc:
        raise AuditError(f"{path}: cannot read (it is a folder)") from exc
    return len(carry)


def _report(
    name: str, state: ChainState, chain: ChainStatus, incomplete: int | None = None
) -> ChainReport:
    return ChainReport(
        journal=name,
        records=state.records,
        first_sequence=state.first_seq,
        last_sequence=state.last_seq,
        last_hash=state.last_hash if state.records else None,
        chain=chain,
        broken_at=state.expected_seq if chain == "broken" else None,
        reason=state.broken_reason if chain == "broken" else None,
        incomplete_bytes=incomplete,
        captured_hash=state.captured.get(state.capture_seq)
        if state.capture_seq is not None
        else None,
        captured_hashes=state.captured,
    )


def _dash(value: int | None) -> str:
    return "-" if value is None else str(value)
