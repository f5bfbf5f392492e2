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
