"""A proposal's call runs in a worker and its answer comes back on the loop: the result, or the
exception it raised; and a call still queued when its awaiting task is cancelled (the
connection closed) never runs."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from safeport.action_gateway.sockets.worker_call import in_worker

BOUND_S = 20.0  # every wait is bounded; none measures how fast anything was


def test_the_result_and_the_exception_come_back_to_the_awaiting_task() -> None:
    async def scenario() -> None:
        with ThreadPoolExecutor(max_workers=2) as pool:
            here = threading.get_ident()
            ran_in = await in_worker(pool, threading.get_ident)
            assert ran_in != here

            def fails() -> None:
                raise LookupError("from the worker")

            with pytest.raises(LookupError, match="from the worker"):
                await in_worker(pool, fails)

    asyncio.run(asyncio.wait_for(scenario(), BOUND_S))


def test_a_call_still_queued_when_its_task_is_cancelled_never_runs() -> None:
    ran: list[str] = []
    release = threading.Event()
    busy = threading.Event()

    def block() -> None:
        busy.set()
        release.wait(BOUND_S)

    async def scenario() -> None:
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = asyncio.ensure_future(in_worker(pool, block))
            assert await asyncio.to_thread(busy.wait, BOUND_S)
            queued = asyncio.ensure_future(in_worker(pool, lambda: ran.append("queued")))
            await asyncio.sleep(0)
            queued.cancel()
            await asyncio.sleep(0)
            release.set()
            await first
            with pytest.raises(asyncio.CancelledError):
                await queued
        # The pool has drained (the with block waited): the cancelled call never ran.
        assert ran == []

    asyncio.run(asyncio.wait_for(scenario(), BOUND_S))


def test_a_call_whose_task_was_cancelled_while_it_ran_is_answered_to_no_one() -> None:
    started = threading.Event()
    release = threading.Event()

    def slow() -> str:
        started.set()
        release.wait(BOUND_S)
        return "late"

    async def scenario() -> None:
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = in_worker(pool, slow)
            assert await asyncio.to_thread(started.wait, BOUND_S)
            future.cancel()
            release.set()
        # The worker's late answer finds the future cancelled and leaves it so.
        await asyncio.sleep(0)
        assert future.cancelled()

    asyncio.run(asyncio.wait_for(scenario(), BOUND_S))
