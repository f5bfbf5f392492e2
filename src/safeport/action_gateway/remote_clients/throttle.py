"""A budget of events per window for what strangers can make the gateway do: register clients,
fetch metadata documents. Past the budget the event is refused, and said once per window (so a
flood costs neither the disk nor the journal)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Literal

Verdict = Literal["ok", "refused", "refused_first"]


class Throttle:
    def __init__(self, limit: int, window_s: float, clock: Callable[[], float]) -> None:
        self._limit = limit
        self._window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._times: list[float] = []
        self._told_at: float | None = None

    def take(self) -> Verdict:
        """``ok`` (counted), or ``refused``; ``refused_first`` the first time in a window."""
        now = self._clock()
        with self._lock:
            self._times = [t for t in self._times if now - t < self._window_s]
            if len(self._times) < self._limit:
                self._times.append(now)
                return "ok"
            if self._told_at is not None and now - self._told_at < self._window_s:
                return "refused"
            self._told_at = now
            return "refused_first"
