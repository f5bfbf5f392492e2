"""The end of a journal: the last intact record a writer continues from, and a torn line's evidence.

A crash mid-write leaves at most one incomplete final line. A writer holding the journal's lock
trims it and appends a ``recovery`` record that keeps the trimmed bytes' length, digest and
(bounded) content, so a trim can never quietly erase evidence.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from safeport.errors import JournalUnavailable
from safeport.shared.audit.record import (
    GENESIS,
    JournalHead,
    RecordLayoutError,
    canonical_json,
    parse_head,
)

MAX_RECORD_BYTES = 1024 * 1024
RECOVERY_KEEP_BYTES = 64 * 1024
_TAIL_BLOCK = 64 * 1024


def read_tail(fd: int, size: int) -> tuple[bytes | None, bytes]:
    """Return (the last complete line without its newline, the torn bytes after it)."""
    end = size
    buf = b""
    while True:
        start = max(0, end - _TAIL_BLOCK)
        buf = os.pread(fd, end - start, start) + buf
        end = start
        last_nl = buf.rfind(b"\n")
        if last_nl < 0:
            if start == 0:
                return None, buf  # the whole file is one torn line
        else:
            prev_nl = buf.rfind(b"\n", 0, last_nl)
            if prev_nl >= 0 or start == 0:
                return buf[prev_nl + 1 : last_nl], buf[last_nl + 1 :]
        if len(buf) > 2 * MAX_RECORD_BYTES + _TAIL_BLOCK:
            raise JournalUnavailable("the journal's last line is longer than any record can be")


def head_of(line: bytes, path: Path) -> JournalHead:
    """The head a stored line ends the chain with; a damaged line stops the writer."""
    try:
        return parse_head(line)
    except RecordLayoutError as exc:
        # Appending after a damaged record would bless it; stop and let a person look.
        raise JournalUnavailable(
            f"the last record of journal {path.name} is damaged ({exc})",
            hint="run `sp audit verify` and move the journal aside before writing again",
        ) from exc


def head_of_previous_segment(path: Path) -> JournalHead:
    """An empty active file continues the chain of the newest rotated segment, if any."""
    from safeport.shared.audit.verify import journal_segments

    segments = journal_segments(path)[:-1]
    if not segments:
        return GENESIS
    fd = os.open(segments[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        seg_size = os.fstat(fd).st_size
        last_line, torn = read_tail(fd, seg_size) if seg_size else (None, b"")
    finally:
        os.close(fd)
    if last_line is None or torn:
        raise JournalUnavailable(
            f"the newest segment of journal {path.name} does not end with a record",
            hint="run `sp audit verify` and move the journal aside before writing again",
        )
    return head_of(last_line, path)


def recovery_members(torn: bytes) -> bytes:
    """The members of the ``recovery`` record that stands in for trimmed bytes."""
    body = {
        "trimmed_bytes": len(torn),
        "trimmed_sha256": hashlib.sha256(torn).hexdigest(),
        "trimmed_b64": base64.b64encode(torn[:RECOVERY_KEEP_BYTES]).decode("ascii"),
        "kept_bytes": min(len(torn), RECOVERY_KEEP_BYTES),
    }
    return canonical_json({"body": body})
