"""Reading records for display (``sp audit show``, the reads trail). Verification never goes
through here: it checks the fixed byte layout itself. What is shown is held to the record model
the exported schema (``audit_record.json``) describes, so a line that parses as JSON but is not a
record in that shape is shown as damaged, never as a record."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from safeport.errors import AuditError
from safeport.shared.audit.verify import journal_segments
from safeport.shared.schemas.audit import AuditRecord


def read_records(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The last ``limit`` records of a journal (all segments), parsed; damaged lines are marked."""
    keep: collections.deque[tuple[int, object]] = collections.deque(maxlen=limit)
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
                    keep.append((len(raw), INCOMPLETE))
                    continue
                try:
                    keep.append((len(raw), json.loads(raw)))
                except ValueError:
                    keep.append((len(raw), None))
    # Only the records kept are held to the model: a long journal costs one parse per line.
    return [_as_shown(size, parsed) for size, parsed in keep]


INCOMPLETE = object()


def _as_shown(size: int, parsed: object) -> dict[str, Any]:
    if parsed is INCOMPLETE:
        return {"kind": "<incomplete final record>", "bytes": size}
    if isinstance(parsed, dict):
        try:
            AuditRecord.model_validate(parsed)
        except ValidationError:
            pass
        else:
            return parsed
    return {"kind": "<not a record>", "bytes": size}
