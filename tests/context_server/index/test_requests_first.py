"""The index's walk waits while requests are served, never for ever, and never when stopped."""

from __future__ import annotations

import threading
import time

from safeport.context_server.index.requests_first import RequestGate


def test_with_no_request_the_walk_goes_on_at_once() -> None:
    gate = RequestGate(quiet_s=0.0, most_wait_s=30.0)
    started = time.monotonic()
    gate.pause(threading.Event())
    assert time.monotonic() - started < 5.0


def test_while_a_request_is_served_the_walk_waits_up_to_its_bound() -> None:
    gate = RequestGate(quiet_s=0.0, most_wait_s=0.3)
    with gate.serving():
        started = time.monotonic()
        gate.pause(threading.Event())
        waited = time.monotonic() - started
    assert 0.3 <= waited < 10.0  # it waited, and the wait has a bound
    assert not gate.yielding


def test_the_walk_goes_on_once_the_request_ends() -> None:
    gate = RequestGate(quiet_s=0.0, most_wait_s=60.0)
    done = threading.Event()

    def walk() -> None:
        gate.pause(threading.Event())
        done.set()

    with gate.serving():
        worker = threading.Thread(target=walk)
        worker.start()
    assert done.wait(10.0)  # long before the 60 s bound
    worker.join(10.0)


def test_a_stopped_walk_never_waits_for_requests() -> None:
    gate = RequestGate(quiet_s=0.0, most_wait_s=60.0)
    stop = threading.Event()
    stop.set()
    with gate.serving():
        started = time.monotonic()
        gate.pause(stop)
        assert time.monotonic() - started < 10.0


def test_a_request_waiting_for_the_walk_does_not_hold_it_up() -> None:
    gate = RequestGate(quiet_s=0.0, most_wait_s=60.0)
    with gate.serving(), gate.waiting():
        started = time.monotonic()
        gate.pause(threading.Event())
        assert time.monotonic() - started < 10.0


def test_requests_that_never_pause_slow_the_walk_to_its_share_never_stop_it() -> None:
    # Every piece of the walk takes 10 ms of work; a request is always being served. With no
    # share the walk would wait 0.3 s before each of its 40 pieces (12 s); with its share of a
    # wait four times its work, it waits its first 0.3 s and then about 40 ms a piece.
    gate = RequestGate(quiet_s=0.0, most_wait_s=0.3, wait_share=4.0)
    stop = threading.Event()
    with gate.serving():
        started = time.monotonic()
        for _ in range(40):
            gate.pause(stop)
            time.sleep(0.01)
        elapsed = time.monotonic() - started
    assert elapsed < 8.0  # far under the 12 s of fixed waits, with room for a loaded machine


def test_a_request_waiting_for_the_walk_ends_its_wait_at_once_despite_others() -> None:
    gate = RequestGate(quiet_s=0.0, most_wait_s=60.0)
    done = threading.Event()
    release = threading.Event()

    def other_request() -> None:
        with gate.serving():
            release.wait(30.0)

    busy = threading.Thread(target=other_request)
    busy.start()
    try:
        with gate.serving(), gate.waiting():
            started = time.monotonic()
            gate.pause(threading.Event())
            done.set()
            assert time.monotonic() - started < 10.0  # not the 60 s bound
    finally:
        release.set()
        busy.join(10.0)
    assert done.is_set()
