"""How much a requester can make the gateway write: a per-uid budget of whole records.

A refused proposal costs its requester nothing, and each one used to cost the gateway a whole
journal record and an fsync; an agent looping on a refused request could fill the disk. So each
uid may have ``full_per_window`` records journaled whole per window (its first ones, the ones
worth reading), and at most ``bytes_per_window`` bytes of them: a record holds the requester's
chain, which the requester can pad (its own environment, its command line), so a count alone
would let 20 records weigh megabytes. Past either, that uid's records are counted per
(uid, category) and journaled as one aggregate record when the window ends, with the count and
the first and last time seen. The journal still proves every one happened; what a requester can
make the gateway write is at most ``bytes_per_window`` plus one small record per category per
window. The same budget serves whatever any admitted uid can make the gateway journal without
the passphrase (refusals, junk, failed passphrase proofs, reloads).

Pure bookkeeping over an injected clock; the core writes what :meth:`RefusalBudget.due` hands
it and gives back what it could not write (:meth:`RefusalBudget.put_back`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from safeport.shared.audit import JournalBody

FULL_PER_WINDOW = 20
BYTES_PER_WINDOW = 256 * 1024
WINDOW_S = 60.0


def record_size(body: JournalBody) -> int:
    """About what ``body`` takes in a journal line (before sealing, which adds a fixed amount)."""
    return len(json.dumps(body, separators=(",", ":"), default=str, ensure_ascii=False).encode())


@dataclass
class Tally:
    """Refusals of one uid and category not journaled whole."""

    uid: int
    category: str
    count: int
    first_at: float  # wall clock, for the record
    last_at: float
    opened: float  # the monotonic clock, for the window

    def body(self) -> JournalBody:
        return {
            "uid": self.uid,
            "category": self.category,
            "count": self.count,
            "first_at": round(self.first_at, 3),
            "last_at": round(self.last_at, 3),
        }


class RefusalBudget:
    def __init__(
        self,
        *,
        full_per_window: int = FULL_PER_WINDOW,
        bytes_per_window: int = BYTES_PER_WINDOW,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.full_per_window = full_per_window
        self.bytes_per_window = bytes_per_window
        self.window_s = window_s
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        # uid → (window start, whole records, their bytes)
        self._spent: dict[int, tuple[float, int, int]] = {}
        self._tallies: dict[tuple[int, str], Tally] = {}

    def admit(self, uid: int, category: str, size: int = 0) -> bool:
        """True: journal this record (of about ``size`` bytes) whole. False: it was counted for
        an aggregate record."""
        now = self._clock()
        with self._lock:
            start, spent, spent_bytes = self._spent.get(uid, (now, 0, 0))
            if now - start >= self.window_s:
                start, spent, spent_bytes = now, 0, 0
            if spent < self.full_per_window and spent_bytes + size <= self.bytes_per_window:
                self._spent[uid] = (start, spent + 1, spent_bytes + size)
                return True
            self._spent[uid] = (start, spent, spent_bytes)
            self._count(uid, category, now)
            return False

    def count(self, uid: int, category: str) -> None:
        """Count a refusal that is never journaled whole (the disk is low: nothing is)."""
        with self._lock:
            self._count(uid, category, self._clock())

    def due(self, *, everything: bool = False) -> list[Tally]:
        """The tallies whose window has ended (all of them at stop); they leave the budget."""
        now = self._clock()
        with self._lock:
            ready = [
                key
                for key, tally in self._tallies.items()
                if everything or now - tally.opened >= self.window_s
            ]
            return [self._tallies.pop(key) for key in ready]

    def put_back(self, tallies: list[Tally]) -> None:
        """Tallies that could not be journaled: kept, and merged with any counted since."""
        with self._lock:
            for tally in tallies:
                newer = self._tallies.get((tally.uid, tally.category))
                if newer is not None:
                    tally.count += newer.count
                    tally.last_at = newer.last_at
                self._tallies[(tally.uid, tally.category)] = tally

    @property
    def counted(self) -> int:
        """Refusals counted and not journaled yet (for `sp status`)."""
        with self._lock:
            return sum(tally.count for tally in self._tallies.values())

    def _count(self, uid: int, category: str, now: float) -> None:
        wall = self._wall()
        tally = self._tallies.get((uid, category))
        if tally is None:
            self._tallies[(uid, category)] = Tally(uid, category, 1, wall, wall, now)
        else:
            tally.count += 1
            tally.last_at = wall
