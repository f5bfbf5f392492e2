"""What the journals on disk say about earlier runs: read at start (vault locked) and at unlock.

A restarted gateway must not take the files it finds on trust. Three questions, answered from
what is already on disk (the chain, the cleartext ``kind``/``seq`` and ``ref`` members; never a
sealed body, so no key is needed):

- Does each journal still hold the head this gateway signed last (from ``checkpoint.json``, or
  from the copy kept inside the vault)? Shorter is ``journal.truncated``; a different record at
  the signed sequence, or a chain that breaks before it, is ``journal.rewritten``.
- What is the highest vault generation the gateway recorded (``ref.generation`` in
  ``sessions.jsonl``, written after unlocks and after the gateway's own saves)? The vault file
  can be put back; these records can only go with a cut, which the signed heads show.
- Which ``action.intent`` records were never closed (no record with ``ref.intent`` naming their
  sequence)? Each is closed at start by ``action.interrupted``: the outcome is unknown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from safeport.errors import AuditError
from safeport.shared.audit import JournalBody, JournalHead, journal_segments, verify_journal
from safeport.vault import CheckpointVerdict, compare_head

INTENT = "action.intent"
INTERRUPTED = "action.interrupted"
_KIND_TAG = b',"kind":"'
_REF_TAG = b',"ref":{'
_SEQ_START = 81  # after '{"hash":"<64 hex>","seq":'
_CHUNK = 1024 * 1024
_STABLE_TRIES = 5


@dataclass(frozen=True)
class HeadFinding:
    """A journal that no longer holds a head the gateway signed."""

    journal: str
    status: str  # "truncated" | "rewritten"
    signed: JournalHead
    last_seq: int
    detail: str

    @property
    def alarm(self) -> str:
        return f"journal.{self.status}"

    def as_record(self, source: str) -> JournalBody:
        return {
            "alarm": True,
            "journal": self.journal,
            "signed_seq": self.signed.seq,
            "signed_hash": self.signed.hash,
            "last_seq": self.last_seq,
            "detail": self.detail,
            "source": source,
        }


@dataclass(frozen=True)
class OpenIntent:
    """An intent record with nothing after it that names it."""

    seq: int
    hash: str


@dataclass(frozen=True)
class JournalRefs:
    """The cleartext references one pass over a journal found."""

    highest_generation: int
    open_intents: tuple[OpenIntent, ...]


def check_head(path: Path, journal: str, signed: JournalHead) -> HeadFinding | None:
    """None if ``path`` (all its segments) still holds ``signed``; the finding otherwise.

    The running gateway checks while its own writer appends and rotates: a segment renamed
    between listing the files and reading them would look like a missing or rewritten file.
    A finding counts only if the set of files was the same before and after the check."""
    if signed.seq == 0:
        return None
    finding: HeadFinding | None = None
    for _ in range(_STABLE_TRIES):
        before = _files_of(path)
        finding = _check_once(path, journal, signed)
        if finding is None or _files_of(path) == before:
            return finding
    return finding  # rotating on every try: report what the last one found


def _files_of(path: Path) -> list[tuple[str, int]]:
    """Names and inodes of the journal's files: a rotation changes them, an append does not."""
    files = []
    for file in journal_segments(path):
        try:
            files.append((file.name, os.lstat(file).st_ino))
        except FileNotFoundError:
            continue
    return files


def _check_once(path: Path, journal: str, signed: JournalHead) -> HeadFinding | None:
    try:
        report = verify_journal(path, capture_seq=signed.seq)
    except AuditError:
        # No file at all: every signed record is gone.
        return HeadFinding(journal, "truncated", signed, 0, f"{path.name} is missing")
    verdict: CheckpointVerdict = compare_head(report, signed)
    if verdict.ok:
        return None
    return HeadFinding(journal, verdict.status, signed, report.last_sequence or 0, verdict.detail)


def scan_refs(path: Path) -> JournalRefs:
    """One pass over every segment: the highest ``ref.generation`` and the unclosed intents."""
    highest = -1
    intents: dict[int, str] = {}
    for line in _lines(path):
        found = _kind_of(line)
        if found is None:
            continue
        kind, after = found
        if kind == INTENT:
            head = _fixed_head(line)
            if head is not None:
                intents[head.seq] = head.hash
            continue
        ref = _ref_of(line, after)
        if ref is None:
            continue
        closes = ref.get("intent")
        if isinstance(closes, int):
            intents.pop(closes, None)
        generation = ref.get("generation")
        if isinstance(generation, int) and not isinstance(generation, bool):
            highest = max(highest, generation)
    open_intents = tuple(OpenIntent(seq, digest) for seq, digest in sorted(intents.items()))
    return JournalRefs(highest_generation=highest, open_intents=open_intents)


def _kind_of(line: bytes) -> tuple[str, int] | None:
    """The record's own kind and where it ends: the first ``"kind":`` member, which the fixed
    layout puts before anything a body could hold (hash, seq, prev and ts cannot contain it)."""
    start = line.find(_KIND_TAG)
    if start < 0:
        return None
    start += len(_KIND_TAG)
    end = line.find(b'"', start)
    if end < 0:
        return None
    return line[start:end].decode("ascii", "replace"), end + 1


def _fixed_head(line: bytes) -> JournalHead | None:
    """(seq, hash) from the fixed layout, without parsing the line."""
    seq_end = line.find(b",", _SEQ_START)
    digits = line[_SEQ_START:seq_end]
    if line[:9] != b'{"hash":"' or not digits.isdigit():
        return None
    return JournalHead(seq=int(digits), hash=line[9:73].decode("ascii", "replace"))


def _ref_of(line: bytes, after_kind: int) -> dict[str, object] | None:
    """The top-level ``ref`` member. Members are sorted, so beside a sealed body it comes right
    after ``kind`` (``"ref"`` < ``"sealed"``) and is read without parsing the line; beside a
    cleartext body (no sealer) the whole line is parsed, as a nested "ref" could look alike."""
    rest = line[after_kind:]
    if rest.startswith(_REF_TAG):
        end = rest.find(b"}")
        try:
            ref = json.loads(rest[len(_REF_TAG) - 1 : end + 1])
        except ValueError:
            return None
        return ref if isinstance(ref, dict) else None
    if not rest.startswith(b',"body":') or b'"ref":{' not in rest:
        return None
    record = _parse(line)
    ref = record.get("ref") if record is not None else None
    return ref if isinstance(ref, dict) else None


def _parse(line: bytes) -> dict[str, object] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _lines(path: Path) -> Iterator[bytes]:
    """Complete lines of every segment, oldest first (a torn last line is left out)."""
    for file in journal_segments(path):
        try:
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        carry = b""
        with os.fdopen(fd, "rb", buffering=0) as stream:
            while chunk := stream.read(_CHUNK):
                lines = (carry + chunk).split(b"\n")
                carry = lines.pop()
                yield from lines
