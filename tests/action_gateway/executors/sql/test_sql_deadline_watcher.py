"""Every query's deadline waits in one shared watcher thread: a short deadline registered after
a long one still fires on time, a call that ended is never cancelled, and a watch fires at most
once. Pure logic over a stand-in connection (the real server's side is test_sql_deadline.py)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, cast

from safeport.action_gateway.executors.sql import deadline
from safeport.action_gateway.executors.sql.deadline import QueryWatch

BOUND_S = 20.0  # every wait here is bounded; none measures how fast anything was


@dataclass
class _Info:
    backend_pid: int = 4242


@dataclass
class _Conn:
    """What QueryWatch touches of a psycopg connection: its backend's pid and cancel()."""

    info: _Info = field(default_factory=_Info)
    cancels: int = 0
    cancelled: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        self.cancels += 1
        self.cancelled.set()


def _watch(conn: _Conn, timeout_s: float) -> QueryWatch:
    return QueryWatch(cast(Any, conn), timeout_s, None)


def test_a_short_deadline_registered_after_a_long_one_still_fires() -> None:
    slow, quick = _Conn(), _Conn()
    with _watch(slow, 3600.0) as long_watch:
        # Give the watcher time to fall asleep toward the hour (it passes without this pause
        # too; the pause only lets the test see a watcher that missed the earlier deadline).
        time.sleep(0.3)
        with _watch(quick, 0.01) as short_watch:
            # The watcher sleeps toward the hour-long deadline; the short one must wake it.
            assert quick.cancelled.wait(BOUND_S), "the short deadline never fired"
        assert short_watch.fired and short_watch.stopped_by == "cancel"
    assert not long_watch.fired and slow.cancels == 0


def test_a_call_that_ended_before_its_deadline_is_never_cancelled() -> None:
    ended, later = _Conn(), _Conn()
    with _watch(ended, 0.05) as first:
        pass  # the call ended at once
    # A later deadline fires; by then the ended watch's deadline has passed too.
    with _watch(later, 0.1) as second:
        assert later.cancelled.wait(BOUND_S)
    assert second.fired
    assert not first.fired and ended.cancels == 0 and first.stopped_by is None


def test_many_ended_watches_are_dropped_and_the_next_deadline_still_fires() -> None:
    for _ in range(deadline._PRUNE_AT + 10):
        with _watch(_Conn(), 3600.0):
            pass
    conn = _Conn()
    with _watch(conn, 0.01) as watch:
        assert conn.cancelled.wait(BOUND_S)
    assert watch.fired and conn.cancels == 1
