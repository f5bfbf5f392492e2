"""Rate caps per credential (``rate_per_minute``), the last check of rung 4."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from safeport.errors import Denied


class RateLimiter:
    """A sliding one-minute window per credential (``rate_per_minute``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = {}

    def take(self, credential: str, per_minute: int | None) -> None:
        if per_minute is None:
            return
        now = self._clock()
        with self._lock:
            window = self._seen.setdefault(credential, deque())
            while window and now - window[0] >= 60.0:
                window.popleft()
            if len(window) >= per_minute:
                raise Denied(f"credential {credential} is over its cap of {per_minute} per minute")
            window.append(now)
