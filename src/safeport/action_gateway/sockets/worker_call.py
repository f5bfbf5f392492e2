"""A blocking call run in a worker pool, its answer handed straight back to the event loop.

``loop.run_in_executor`` chains a ``concurrent.futures.Future`` to an asyncio one through a
callback on each side and copies the state across; a proposal paid that hop's bookkeeping on
every round trip. :func:`in_worker` sets the loop's future from the worker with one
``call_soon_threadsafe``. A call still queued when its awaiting task is cancelled (the
connection closed) is cancelled in the pool and never runs, as with ``run_in_executor``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

Result = TypeVar("Result")


def in_worker(pool: Executor, call: Callable[[], Result]) -> asyncio.Future[Result]:
    """``call()`` in ``pool``; the future to await on the running loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Result] = loop.create_future()

    def work() -> None:
        try:
            result = call()
        except BaseException as exc:  # handed to the awaiting task, which raises it
            _answer(loop, future, None, exc)
        else:
            _answer(loop, future, result, None)

    queued = pool.submit(work)
    future.add_done_callback(lambda done: queued.cancel() if done.cancelled() else None)
    return future


def _answer(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Result],
    result: Result | None,
    exc: BaseException | None,
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop has closed: no one awaits it any more
        loop.call_soon_threadsafe(_settle, future, result, exc)


def _settle(
    future: asyncio.Future[Result], result: Result | None, exc: BaseException | None
) -> None:
    if future.done():  # cancelled while the call ran
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)  # type: ignore[arg-type]
