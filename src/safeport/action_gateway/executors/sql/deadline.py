"""A query's deadline, kept from the gateway's side whatever the server does.

``statement_timeout`` is a request to the server and a cancel is another: a function that
catches ``query_canceled`` (plpgsql ``EXCEPTION WHEN query_canceled THEN NULL`` in a loop) runs
through both, and the call waiting on it would wait as long. So when ``timeout_s`` passes the
watch escalates, each step only if the one before did not end the call:

1. cancel (what a well-behaved statement stops on);
2. after a short grace, shut the connection's socket: the waiting call fails at once and the
   connection is never pooled again. PostgreSQL 14 and later notice the lost client within
   ``client_connection_check_interval`` (set on every connection, :data:`CHECK_CLIENT`);
   older servers only when the backend next writes to it;
3. terminate the backend from a second connection as the same role (a role may terminate its
   own backends, never a superuser's), which no handler in the statement can catch.

The answer is never held past :data:`ANSWER_WITHIN` seconds beyond ``timeout_s``; a terminate
still connecting then goes on alone, and the journal says the step that was seen to work.
"""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from types import TracebackType

import psycopg

from safeport.action_gateway.executors.interface import StoppedBy

Connection = psycopg.Connection[tuple[object, ...]]
# (backend pid, seconds since its socket was shut) -> whether a backend was terminated; None
# when the server could not be asked (no second connection could open).
Terminate = Callable[[int, float], bool | None]

# After the deadline: the cancel goes out at once; the socket is shut GRACE later.
_CANCEL_AFTER = 0.2
_GRACE = 0.8
ANSWER_WITHIN = 1.6  # seconds past timeout_s; the contract is timeout_s + 2 s
# A terminate that could not connect (every ordinary connection slot taken, the stuck backend's
# among them) is tried again, after the answer went, until it could ask or this long passed: a
# backend deaf to its lost client would otherwise run on until the server restarts.
TERMINATE_RETRY_S = 120.0
_RETRY_EVERY = 0.5
# Set on each new connection by a PostgreSQL 14 or later: a backend whose client is gone stops
# within a second even in a loop that never writes to it. A statement may lower it for its own
# transaction only (each query is rolled back), and step 3 does not depend on it.
CHECK_CLIENT = "SET client_connection_check_interval = '1s'"
# The backend that ran the query, and no other: a pid reused since the socket was shut belongs
# to a backend that started after it. `usename`: a pid of another role is never asked about.
_WHICH = (
    " FROM pg_stat_activity WHERE pid = %s AND usename = current_user"
    " AND backend_start < now() - make_interval(secs => %s)"
)
TERMINATE = "SELECT coalesce(bool_or(pg_terminate_backend(pid)), false)" + _WHICH
# PostgreSQL 14 and later: true only once the backend has ended, false if it did not within
# TERMINATE_WAIT_MS (a process stopped by the operating system takes the signal but does not
# end), so the journal never says "terminate" for a backend still there.
TERMINATE_WAIT_MS = 400
TERMINATE_WAITING = (
    f"SELECT coalesce(bool_or(pg_terminate_backend(pid, {TERMINATE_WAIT_MS})), false)" + _WHICH
)


class QueryWatch:
    """Watches one call on ``conn``; stops it from this side once ``timeout_s`` has passed.

    Its deadline waits in the one watcher thread every query shares (:class:`_Watcher`): a
    thread started and joined per query cost more than the query's round trip. Only a watch
    whose deadline passes gets a thread of its own, for the steps above.
    """

    def __init__(self, conn: Connection, timeout_s: float, terminate: Terminate | None) -> None:
        self._conn = conn
        self._timeout_s = timeout_s
        self._terminate = terminate
        self._pid = conn.info.backend_pid
        self._done = threading.Event()
        # The call ending and the deadline firing decide under this lock, one or the other;
        # the socket is shut only while the call still runs.
        self._lock = threading.Lock()
        self._answer_by = 0.0
        self._escalation: threading.Thread | None = None
        self.fired = False
        self.stopped_by: StoppedBy | None = None

    def __enter__(self) -> QueryWatch:
        now = time.monotonic()
        self._answer_by = now + self._timeout_s + ANSWER_WITHIN
        _WATCHER.watch(now + self._timeout_s + _CANCEL_AFTER, self)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        with self._lock:
            self._done.set()
            escalation = self._escalation
        if escalation is not None:
            # A terminate under way is waited for, but never past the answer's own deadline.
            escalation.join(max(0.0, self._answer_by - time.monotonic()))

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def deadline_passed(self) -> None:
        """The watcher's call at the deadline: fire, unless the call ended first."""
        with self._lock:
            if self._done.is_set():
                return
            self.fired = True
            self.stopped_by = "cancel"
            self._escalation = threading.Thread(
                target=self._escalate, name="sql-deadline", daemon=True
            )
            self._escalation.start()

    def _escalate(self) -> None:
        # libpq's blocking cancel, in a thread of its own: the server may never answer it, and
        # the next step does not wait for it. (cancel_safe() would open a TLS connection that
        # needs the pinned CA's file, removed once the connection opened; the classic cancel
        # request carries only the backend's cancel key, never the credential.)
        threading.Thread(target=self._cancel, name="sql-cancel", daemon=True).start()
        if self._done.wait(_GRACE):
            return
        with self._lock:
            if self._done.is_set():
                return
            if not _shut_socket(self._conn):
                return
            self.stopped_by = "close"
            closed_at = time.monotonic()
        if self._terminate is None:
            return
        give_up = closed_at + TERMINATE_RETRY_S
        while (ended := self._terminate(self._pid, time.monotonic() - closed_at)) is None:
            if time.monotonic() > give_up:
                return
            time.sleep(_RETRY_EVERY)
        if ended and time.monotonic() < self._answer_by:
            self.stopped_by = "terminate"  # (later, the answer has gone and says "close")

    def _cancel(self) -> None:
        with suppress(psycopg.Error, OSError):
            self._conn.cancel()


class _Watcher:
    """One daemon thread holding every running query's deadline, earliest first; it sleeps
    until the earliest and hands a watch whose call has not ended to its escalation. A watch
    that ended is dropped when it comes up (or when ended ones pile up), never waited on."""

    def __init__(self) -> None:
        self._wake = threading.Condition(threading.Lock())
        self._due: list[tuple[float, int, QueryWatch]] = []
        self._count = itertools.count()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def watch(self, at: float, watch: QueryWatch) -> None:
        with self._wake:
            if self._pid != os.getpid():  # a forked child has no watcher thread of its own
                self._due, self._thread, self._pid = [], None, os.getpid()
            if len(self._due) > _PRUNE_AT:
                self._due = [entry for entry in self._due if not entry[2].done]
                heapq.heapify(self._due)
            earliest = self._due[0][0] if self._due else None
            heapq.heappush(self._due, (at, next(self._count), watch))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sql-deadlines", daemon=True)
                self._thread.start()
            elif earliest is None or at < earliest:
                self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._wake.wait(self._due[0][0] - time.monotonic() if self._due else None)
                _, _, watch = heapq.heappop(self._due)
            if not watch.done:
                watch.deadline_passed()


# Ended watches are dropped in one pass past this many waiting deadlines (a busy gateway with
# long timeouts would otherwise keep every query's until its deadline came).
_PRUNE_AT = 1024
_WATCHER = _Watcher()


def _shut_socket(conn: Connection) -> bool:
    """Shut the connection's socket both ways (a copy of its descriptor, so libpq's own stays
    open for it to close): the call blocked on it fails now, whatever the server does."""
    try:
        fd = os.dup(conn.fileno())
    except (psycopg.Error, OSError):
        return False
    with socket.socket(fileno=fd) as sock, suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    return True
