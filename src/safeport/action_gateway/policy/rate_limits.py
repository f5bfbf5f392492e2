"""Rate caps per credential (``rate_per_minute``), the last check of rung 4.

A credential's cap is shared by every human the gateway serves; each uid may use its share of
it (:mod:`shares`), so one human's agent spending the whole cap never leaves another human's
proposals refused for the minute.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import TypeVar

from safeport.action_gateway.policy.shares import one_more
from safeport.errors import Denied

Key = TypeVar("Key", bound=Hashable)


class RateLimiter:
    """A sliding one-minute window per credential, and one per credential and uid."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, humans: int = 1) -> None:
        self._clock = clock
        self._humans = humans
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = {}
        self._seen_by_uid: dict[tuple[str, int], deque[float]] = {}

    def take(self, credential: str, per_minute: int | None, uid: int = -1) -> None:
        if per_minute is None:
            return
        now = self._clock()
        with self._lock:
            everyone = _window(self._seen, credential, now)
            mine = _window(self._seen_by_uid, (credential, uid), now)
            verdict = one_more(
                held_by_uid=len(mine),
                held_by_all=len(everyone),
                ceiling=per_minute,
                humans=self._humans,
            )
            if not verdict.fits:
                share = f"; {verdict.reason('uses this minute')}" if verdict.whose == "user" else ""
                raise Denied(
                    f"credential {credential} is over its cap of {per_minute} per minute{share}"
                )
            everyone.append(now)
            mine.append(now)


def _window(windows: dict[Key, deque[float]], key: Key, now: float) -> deque[float]:
    """The uses of the last minute under ``key`` (credentials and uids are the policy's and
    the install's, so the keys are few)."""
    window = windows.setdefault(key, deque())
    while window and now - window[0] >= 60.0:
        window.popleft()
    return window
