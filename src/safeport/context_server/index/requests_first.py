"""Requests first: the index's walk waits while the agent's requests are being served.

The walk and the requests share one interpreter (and, on a small machine, the same cores): a
walk that ran beside a read would take the interpreter lock from it every few milliseconds.
So each request is counted in and out here, and the walk, between pieces of work, waits until
no request has run for a moment (an agent's calls come in bursts; the gap between two calls of
one burst is not idle time). Waits are bounded by the walk's own work: it waits at most
``WAIT_SHARE`` times as long as it has worked (beyond one first wait), so a client that never
stops calling slows the walk to a fraction of its pace, never stops it; and a request that is
itself waiting for the walk (a search waiting for the start-up check) is not made to wait on it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# How long after the last request the walk may go on: longer than the gap between the calls of
# one burst.
QUIET_S = 0.05
# The longest one wait lasts before the walk does one more piece of work regardless.
MOST_WAIT_S = 2.0
# Under requests that never pause, the walk waits four times as long as it works: it keeps a
# fifth of its pace, so a start-up check of a second's work ends within seconds, not the hours
# a fixed wait between each of its pieces would add up to.
WAIT_SHARE = 4.0


class RequestGate:
    """Counts the requests being served; the walk's :meth:`pause` waits for quiet."""

    def __init__(
        self,
        quiet_s: float = QUIET_S,
        most_wait_s: float = MOST_WAIT_S,
        wait_share: float = WAIT_SHARE,
    ) -> None:
        self._quiet_s = quiet_s
        self._most_wait_s = most_wait_s
        self._wait_share = wait_share
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)
        self._serving = 0
        self._waiters = 0
        self._last_end = 0.0
        # The walk's own account (only the walk's thread calls pause): time worked between
        # pauses, time waited in them, and when it last went back to work.
        self._worked = 0.0
        self._waited = 0.0
        self._resumed_at: float | None = None
        self.yielding = False

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Around one request."""
        with self._lock:
            self._serving += 1
        try:
            yield
        finally:
            with self._lock:
                self._serving -= 1
                self._last_end = time.monotonic()
                self._quiet.notify_all()

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Around a request's wait for the walk itself: the walk must not wait for it."""
        with self._lock:
            self._serving -= 1
            self._waiters += 1
            self._quiet.notify_all()
        try:
            yield
        finally:
            with self._lock:
                self._serving += 1
                self._waiters -= 1

    def pause(self, stop: threading.Event) -> None:
        """Return once no request ran for a moment, ``stop`` is set, a request waits for the
        walk, or the walk has waited its share."""
        started = time.monotonic()
        if self._resumed_at is not None:
            self._worked += started - self._resumed_at
        allowed = self._most_wait_s + self._wait_share * self._worked - self._waited
        deadline = started + min(self._most_wait_s, max(0.0, allowed))
        with self._lock:
            while not stop.is_set() and self._waiters == 0:
                now = time.monotonic()
                quiet_at = self._last_end + self._quiet_s
                if (self._serving <= 0 and now >= quiet_at) or now >= deadline:
                    break
                self.yielding = True
                wait = deadline - now if self._serving > 0 else quiet_at - now
                self._quiet.wait(min(max(wait, 0.001), 0.1))
            self.yielding = False
        resumed = time.monotonic()
        self._waited += resumed - started
        self._resumed_at = resumed
