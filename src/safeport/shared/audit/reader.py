"""Reading records for display (``sp audit show``). Verification never goes through here."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path
from typing import Any

from safeport.errors import AuditError
from safeport.shared.audit.verify import journal_segments


def read_records(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The last ``limit`` records of a journal (all segments), parsed; damaged lines are marked."""
    keep: collections.deque[dict[str, Any]] = collections.deque(maxlen=limit)
    for file in journal_segments(path):
        try:
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise AuditError(f"{file}: cannot read ({exc.strerror})") from exc
        with os.fdopen(fd, "rb") as stream:
            for raw in stream:
                if not raw.endswith(b"\n"):
                    keep.append({"kind": "<incomplete final record>", "bytes": len(raw)})
                    continue
                try:
                    record = json.loads(raw)
                except ValueError:
                    record = None
                if not isinstance(record, dict):
                    keep.append({"kind": "<not a record>", "bytes": len(raw)})
                    continue
                keep.append(record)
    return list(keep)
