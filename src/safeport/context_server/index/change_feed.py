"""The change feed: what was added, modified or removed since a cursor, for this server instance.

A cursor names the instance that issued it (a random id chosen at start-up) and a sequence
number in that instance's event log. A cursor from another instance cannot be honoured (its
numbers mean nothing here), so it gets a fresh-instance answer: ``reset`` and the most recently
modified files. Only files the walker may see are tracked, so a private name can never appear.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Literal

from safeport.context_server.policy.read_policy import InvalidInput
from safeport.context_server.workspace.gate import Workspace

ChangeKind = Literal["added", "modified", "removed", "recent"]

MAX_EVENTS = 10_000
RESCAN_AFTER_S = 1.0
_CURSOR = re.compile(r"c1\.([0-9a-f]{16})\.([0-9]{1,12})")


@dataclass(frozen=True)
class Change:
    seq: int
    kind: ChangeKind
    path: str
    mtime_ns: int | None
    size: int | None


@dataclass(frozen=True)
class ChangePage:
    changes: list[Change]
    cursor: str
    more: bool
    reset: bool


class ChangeFeed:
    """Snapshots of (mtime, size) per readable file, and the events between them."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.instance = secrets.token_hex(8)
        self._lock = threading.Lock()
        self._events: deque[Change] = deque(maxlen=MAX_EVENTS)
        self._seq = 0
        self._snapshot: dict[str, tuple[int, int]] | None = None
        self._scanned_at = 0.0

    def page(self, cursor: str | None, limit: int) -> ChangePage:
        with self._lock:
            self._rescan()
            if cursor is None or cursor == "":
                return self._recent(limit, reset=False)
            if not isinstance(cursor, str) or not (match := _CURSOR.fullmatch(cursor)):
                raise InvalidInput(
                    "invalid cursor: not one this server issued; call without a cursor to start"
                )
            if match.group(1) != self.instance:
                return self._recent(limit, reset=True)
            after = int(match.group(2))
            if after > self._seq:
                raise InvalidInput(
                    "invalid cursor: it is ahead of this server's feed; call without a cursor"
                )
            pending = [e for e in self._events if e.seq > after]
            served = pending[:limit]
            last = served[-1].seq if served else max(after, self._oldest_seq() - 1)
            return ChangePage(served, self._cursor(last), len(pending) > limit, False)

    def _recent(self, limit: int, *, reset: bool) -> ChangePage:
        assert self._snapshot is not None
        newest = sorted(self._snapshot.items(), key=lambda kv: (-kv[1][0], kv[0]))[:limit]
        changes = [Change(0, "recent", path, m, s) for path, (m, s) in newest]
        return ChangePage(changes, self._cursor(self._seq), False, reset)

    def _cursor(self, seq: int) -> str:
        return f"c1.{self.instance}.{seq}"

    def _oldest_seq(self) -> int:
        return self._events[0].seq if self._events else self._seq + 1

    def _rescan(self) -> None:
        now = time.monotonic()
        if self._snapshot is not None and now - self._scanned_at < RESCAN_AFTER_S:
            return
        current: dict[str, tuple[int, int]] = {}
        for root in self.workspace.roots:
            for found in self.workspace.walk_files(root):
                current[self.workspace.display(root, found.parts)] = (found.mtime_ns, found.size)
        previous, self._snapshot, self._scanned_at = self._snapshot, current, now
        if previous is None:
            return
        for path in sorted(current.keys() - previous.keys()):
            self._emit("added", path, current[path])
        for path in sorted(previous.keys() - current.keys()):
            self._emit("removed", path, None)
        for path in sorted(current.keys() & previous.keys()):
            if current[path] != previous[path]:
                self._emit("modified", path, current[path])

    def _emit(self, kind: ChangeKind, path: str, state: tuple[int, int] | None) -> None:
        self._seq += 1
        mtime, size = state if state is not None else (None, None)
        self._events.append(Change(self._seq, kind, path, mtime, size))
