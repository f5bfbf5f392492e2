"""The fixed line layout of a journal record, and the pure chain check over raw lines.

A record is one line::

    {"hash":"<64 hex>","seq":<n>,"prev":"<64 hex>","ts":"…","kind":"…",<rest, canonical>}

``hash`` is the SHA-256 of the line with its leading ``"hash":"<64 hex>",`` member removed,
i.e. of ``{"seq":…}`` exactly as stored. Because the layout is fixed, the verifier checks a
record with byte slices and one hash: it never parses or re-serialises JSON, so a JSON library's
quirks (duplicate keys, number formats, escapes) cannot make two readers disagree on what was
signed, and verification runs near the speed of SHA-256 itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

ZERO_HASH = "0" * 64

_PREFIX = b'{"hash":"'  # 9 bytes; the stored hash is line[9:73]
_SEQ_TAG = b'","seq":'  # line[73:81]; the hashed body starts at line[75] ('"seq":…')
_PREV_TAG = b',"prev":"'
_BODY_START = 75
_SEQ_START = 81


class RecordLayoutError(ValueError):
    """A line is not a record in the fixed layout."""


@dataclass(frozen=True)
class JournalHead:
    """The last record a writer appended: what a checkpoint signs."""

    seq: int
    hash: str


GENESIS = JournalHead(seq=0, hash=ZERO_HASH)

JournalBody: TypeAlias = dict[str, object]
"""A record's members after ``hash``, ``seq``, ``prev``, ``ts`` and ``kind``: the journal's own
on-disk format, a wire format like a frame. It is written as canonical JSON and read back only by
``sp audit verify`` and the restart scan, never as a value between the gateway's rooms; each kind
of record keeps the members it has always had, so the name says what the dict is, not its keys."""


# Built once: ``json.dumps`` with any non-default option builds a new encoder on every call.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
)


def canonical_json(value: object) -> bytes:
    """Sorted keys, no spaces, ASCII escapes (so lone surrogates and bidi marks are inert)."""
    return _CANONICAL.encode(value).encode("ascii")


def format_record(
    head: JournalHead, ts: str, kind: str, members: Mapping[str, object]
) -> tuple[bytes, JournalHead]:
    """Build the line (with its newline) that follows ``head``, and the new head."""
    return format_record_json(
        head, canonical_json(ts), canonical_json(kind), canonical_json(members)
    )


def format_record_json(
    head: JournalHead, ts_json: bytes, kind_json: bytes, rest: bytes
) -> tuple[bytes, JournalHead]:
    """:func:`format_record` with every member already canonical JSON (the writer's hot path)."""
    seq = head.seq + 1
    body = b"".join(
        (
            b'{"seq":%d,"prev":"%s","ts":' % (seq, head.hash.encode("ascii")),
            ts_json,
            b',"kind":',
            kind_json,
            b"," + rest[1:] if len(rest) > 2 else b"}",
        )
    )
    digest = hashlib.sha256(body).hexdigest()
    line = b'{"hash":"%s",%s\n' % (digest.encode("ascii"), body[1:])
    return line, JournalHead(seq=seq, hash=digest)


def parse_head(line: bytes) -> JournalHead:
    """Read (seq, hash) from one stored line (no newline) and check its own hash.

    Used by a writer to continue a chain another process extended; raises
    :class:`RecordLayoutError` for anything that is not an intact record.
    """
    seq_end = _check_layout(line)
    stored = line[9:73]
    if hashlib.sha256(b"{" + line[_BODY_START:]).hexdigest().encode("ascii") != stored:
        raise RecordLayoutError("hash mismatch")
    try:
        seq = int(line[_SEQ_START:seq_end])
    except ValueError as exc:
        raise RecordLayoutError("bad sequence") from exc
    return JournalHead(seq=seq, hash=stored.decode("ascii"))


def _check_layout(line: bytes) -> int:
    if line[:9] != _PREFIX or line[73:81] != _SEQ_TAG or line[-1:] != b"}":
        raise RecordLayoutError("not a record")
    seq_end = line.find(b",", _SEQ_START)
    if seq_end < 0 or line[seq_end : seq_end + 9] != _PREV_TAG:
        raise RecordLayoutError("not a record")
    return seq_end


@dataclass
class ChainState:
    """Where a chain check stands between batches of lines (mutable, owned by one verifier)."""

    expected_seq: int = 1
    prev_hash: bytes = ZERO_HASH.encode("ascii")
    records: int = 0
    first_seq: int | None = None
    anchored: bool = True  # False: accept the first record's seq/prev as they are (a lone segment)
    broken_reason: str | None = None
    capture_seq: int | None = None  # the one sequence a ChainReport's captured_hash is of
    captures: frozenset[int] = frozenset()  # every sequence whose stored hash is wanted
    captured: dict[int, str] = field(default_factory=dict)

    @property
    def last_seq(self) -> int | None:
        return None if self.records == 0 else self.expected_seq - 1

    @property
    def last_hash(self) -> str:
        return self.prev_hash.decode("ascii")


def check_lines(state: ChainState, lines: Iterable[bytes]) -> bool:
    """Check complete lines (without newlines) in order; False at the first bad record.

    On failure ``state.broken_reason`` names the check and ``state.expected_seq`` is the
    sequence at which the chain broke; everything counted before it is intact.
    """
    sha256 = hashlib.sha256
    expected = state.expected_seq
    prev = state.prev_hash
    records = state.records
    captures = state.captures
    reason: str | None = None
    for line in lines:
        if line[:9] != _PREFIX or line[73:81] != _SEQ_TAG or line[-1:] != b"}":
            reason = "not a record"
            break
        seq_end = line.find(b",", _SEQ_START)
        if seq_end < 0 or line[seq_end : seq_end + 9] != _PREV_TAG:
            reason = "not a record"
            break
        stored = line[9:73]
        if sha256(b"{" + line[_BODY_START:]).hexdigest().encode("ascii") != stored:
            reason = "hash mismatch"
            break
        if not state.anchored:
            if not _adopt_anchor(state, line[_SEQ_START:seq_end], line[seq_end + 9 : seq_end + 73]):
                reason = "sequence gap"
                break
            expected, prev = state.expected_seq, state.prev_hash
        if line[_SEQ_START:seq_end] != b"%d" % expected:
            reason = "sequence gap"
            break
        if line[seq_end + 9 : seq_end + 73] != prev or line[seq_end + 73 : seq_end + 74] != b'"':
            reason = "prev mismatch"
            break
        if records == 0 and state.first_seq is None:
            state.first_seq = expected
        if captures and expected in captures:
            state.captured[expected] = stored.decode("ascii")
        prev = stored
        expected += 1
        records += 1
    state.expected_seq = expected
    state.prev_hash = prev
    state.records = records
    state.broken_reason = reason
    return reason is None


def _adopt_anchor(state: ChainState, seq_bytes: bytes, prev: bytes) -> bool:
    """For a lone later segment: start the chain at its first record, which must be well formed."""
    state.anchored = True
    if not seq_bytes.isdigit() or seq_bytes.startswith(b"0"):
        return False
    seq = int(seq_bytes)
    if seq == 1 and prev != ZERO_HASH.encode("ascii"):
        return True  # keep the genesis expectation; the prev check will name the mismatch
    state.expected_seq = seq
    state.prev_hash = prev
    return True
