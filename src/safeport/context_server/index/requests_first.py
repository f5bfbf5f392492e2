"""Requests first: the index's walk waits while the agent's requests are being served.

The walk and the requests share one interpreter (and, on a small machine, the same cores): a
walk that ran beside a read would take the interpreter lock from it every few milliseconds.
So each request is counted in and out here, and the walk, between pieces of work, waits until
no request has run for a moment (an agent's calls come in bursts; the gap between two calls of
one burst is not idle time). A wait is bounded, so a walk is slowed by requests, never starved
for ever by a client that never stops.
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


class RequestGate:
    """Counts the requests being served; the walk's :meth:`pause` waits for quiet."""

    def __init__(self, quiet_s: float = QUIET_S, most_wait_s: float = MOST_WAIT_S) -> None:
        self._quiet_s = quiet_s
        self._most_wait_s = most_wait_s
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)
        self._serving = 0
        self._last_end = 0.0
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
            self._quiet.notify_all()
        try:
            yield
        finally:
            with self._lock:
                self._serving += 1

    def pause(self, stop: threading.Event) -> None:
        """Return once no request ran for a moment, ``stop`` is set, or the wait is long."""
        deadline = time.monotonic() + self._most_wait_s
        with self._lock:
            while not stop.is_set():
                now = time.monotonic()
                quiet_at = self._last_end + self._quiet_s
                if (self._serving <= 0 and now >= quiet_at) or now >= deadline:
                    break
                self.yielding = True
                wait = deadline - now if self._serving > 0 else quiet_at - now
                self._quiet.wait(min(max(wait, 0.001), 0.1))
            self.yielding = False
