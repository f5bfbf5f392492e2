"""The reads journal: one hash-chained record per tool call, never any served content.

Records carry the declared origin (a label the client chose; it never changes a decision), the
tool, its arguments bounded and with ``<private>`` in place of any private path, the bytes
served, and the refusal reason. Several server processes append safely (the writer serialises
under flock); records are written at once and fsynced in small batches (DESIGN.md §10).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from safeport.shared.audit import JournalWriter, read_records
from safeport.shared.paths import ensure_private_dir

PRIVATE = "<private>"
MAX_STRING = 200
MAX_ITEMS = 20
PATH_KEYS = frozenset({"path", "paths", "id"})

IsPrivate = Callable[[str], bool]

# Set per tool call by the server: whether some record was written for it, so a call that
# failed before any tool code ran (unknown tool, arguments of the wrong type) is still journaled.
CALL_RECORDED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "call_recorded", default=None
)


class ReadsJournal:
    """Append-only record of what was asked and what was served."""

    def __init__(self, audit_dir: Path, origin: str, roots: Sequence[str] = ()) -> None:
        ensure_private_dir(audit_dir)
        self.path = audit_dir / "reads.jsonl"
        self.origin = bounded_text(origin) or "unknown"
        # The served roots' real paths: every record names them, and the trail shows a record
        # only to a server that serves every root it names (several workspaces share a home).
        self.roots = tuple(sorted(roots))
        self._writer = JournalWriter(self.path, durability="batched")

    def record(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        is_private: IsPrivate,
        served_bytes: int,
        refused: str | None,
        extra: Mapping[str, object] | None = None,
    ) -> None:
        """One record; a path refused as private is replaced even if its name looks innocent."""
        body: dict[str, object] = {
            "origin": self.origin,
            "roots": list(self.roots),
            "tool": tool,
            "args": bounded_args(args, is_private, hide_paths=refused == "private"),
            "bytes": served_bytes,
            "denied": refused is not None,
            "reason": refused,
        }
        if extra:
            body.update(extra)
        self._writer.append("read", body)
        marker = CALL_RECORDED.get()
        if marker is not None:
            marker.append(True)

    def is_ours(self, body: Mapping[str, Any]) -> bool:
        """Whether a record belongs to the roots this server serves (all of them)."""
        roots = body.get("roots")
        if not isinstance(roots, list) or not roots:
            return False  # older records name no root: they cannot be attributed
        return set(roots) <= set(self.roots)

    @property
    def head_seq(self) -> int:
        return self._writer.head.seq

    def trail(self, limit: int) -> list[dict[str, Any]]:
        self._writer.flush()
        return read_records(self.path, limit)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def bounded_args(
    args: Mapping[str, Any], is_private: IsPrivate, *, hide_paths: bool
) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in list(args.items())[:MAX_ITEMS]:
        if key in PATH_KEYS:
            out[key] = _path_value(value, is_private, hide_paths)
        else:
            out[key] = _bounded(value)
    return out


def _path_value(value: object, is_private: IsPrivate, hide: bool) -> object:
    if isinstance(value, list):
        return [_path_value(v, is_private, hide) for v in value[:MAX_ITEMS]]
    if not isinstance(value, str):
        return _bounded(value)
    if hide or is_private(value):
        return PRIVATE
    return bounded_text(value)


def _bounded(value: object) -> object:
    if isinstance(value, str):
        return bounded_text(value)
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, list):
        return [_bounded(v) for v in value[:MAX_ITEMS]]
    return f"<{type(value).__name__}>"


def bounded_text(text: str) -> str:
    return text if len(text) <= MAX_STRING else text[:MAX_STRING] + "…"
