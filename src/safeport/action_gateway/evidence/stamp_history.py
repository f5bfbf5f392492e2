"""What the stamper made before a restart, read back from the tail of ``checkpoint.stamps``.

The stamper asks an authority for a journal's note only when that journal's head moved since
the authority's last stamp of it; after a restart, the last note each authority stamped for
each journal comes from the stamps file, so nothing already stamped is asked again, and
`sp doctor` shows the time of the last stamp instead of the process's start.

Only the file's tail is read (a bounded cost at every start, whatever the file's size): a
journal whose last stamp lies before it is stamped once more, which is harmless.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rfc3161_client import decode_timestamp_response

from safeport.vault.signed_note import note_head
from safeport.vault.timestamp_check import load_stamps

TAIL_BYTES = 4 * 1024 * 1024  # a stamp is a few KiB: hundreds of the last ones


@dataclass(frozen=True)
class LastStamps:
    """The last note each authority stamped for each journal, and the newest stamp's time."""

    notes: dict[tuple[str, str], str]  # (authority url, journal) -> note
    at: datetime | None


def read_last_stamps(path: Path) -> LastStamps:
    """The stamps at the end of ``path``; nothing when it is absent or unreadable (the
    stamper then starts afresh, as on a new installation)."""
    try:
        data = _tail(path)
    except OSError:
        return LastStamps({}, None)
    stamps, _ = load_stamps(data)
    notes: dict[tuple[str, str], str] = {}
    responses: dict[tuple[str, str], bytes] = {}
    for stamp in stamps:  # in the order they were appended: the last one wins
        head = note_head(stamp.note)
        if head is not None:
            notes[(stamp.tsa, head[0])] = stamp.note
            responses[(stamp.tsa, head[0])] = stamp.response
    times = [moment for r in responses.values() if (moment := _gen_time(r)) is not None]
    return LastStamps(notes, max(times, default=None))


def _tail(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as stream:
        size = os.fstat(fd)
        if not stat.S_ISREG(size.st_mode):
            return b""
        start = max(0, size.st_size - TAIL_BYTES)
        stream.seek(start)
        data = stream.read(TAIL_BYTES)
    # Started mid-file: the first line is a piece of a stamp.
    return data.partition(b"\n")[2] if start else data


def _gen_time(response: bytes) -> datetime | None:
    """The time a stored stamp names, for display only: `sp audit verify` judges stamps."""
    try:
        return decode_timestamp_response(response).tst_info.gen_time
    except Exception:  # a damaged line: no time from it, never a stamper that fails to start
        return None
