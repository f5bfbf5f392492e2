"""Waiting for a human without holding the request open (MCP 2026-07-28 ``input_required``).

The gateway withdraws a proposal when its connection closes, so a proposal whose card waits
keeps running here, in a background task, while the tool answers ``input_required`` at once:
what the human does (``sp approvals``, the card, its short code) and a ``requestState`` naming
the task's handle. The client retries with that state; the retry re-attaches to the task.

- The state is sealed by the SDK's request-state boundary under a key made when the server
  starts, and bound to the authenticated principal, the tool and its arguments: a client cannot
  read it, change it, or replay it as another client or for another call.
- The table is bounded: at most :data:`MAX_HELD_PER_CLIENT` handles per client and
  :data:`MAX_HELD` in all, each living until :data:`COLLECT_GRACE_S` after its proposal ended
  (decided, refused, or its card timed out), and never past the card's timeout plus that. A
  client that never retries leaves a task that ends with the card (journaled as any proposal)
  and a handle that is swept.
- A handle is also checked against the principal that made it (the seal already binds it): an
  unknown, expired or foreign handle is an error that never carries another client's result.
- Over HTTP, each held proposal also has a page (``/approval/<page id>``, a random id apart from
  the handle) that a client which opens URLs (URL-mode elicitation) shows the human: the card's
  id, how to answer it, and whether it still waits. It shows nothing else and decides nothing:
  approving needs the passphrase or a key on the human's own machine, never a web page.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.mcpserver import Context, RequestStateSecurity
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    InputRequests,
    InputRequiredResult,
)
from mcp_types.version import is_version_at_least

from safeport.context_server.operations.reads_journal import CALL_RECORDED, REMOTE_CLIENT
from safeport.shared.schemas.wire import PendingBody

R = TypeVar("R")

INPUT_REQUIRED_VERSION = "2026-07-28"
MAX_HELD_PER_CLIENT = 4
MAX_HELD = 64
COLLECT_GRACE_S = 60.0
RETRY_HOLD_S = 10.0  # a retry waits this long for the decision before asking again
STATE_PREFIX = "held:"
META_KEY = "io.safeport/approval"
LOCAL = "local"  # the principal of a stdio client: the one process that started us


_STATE_KEY = os.urandom(32)  # made when the server starts; a restart forgets every handle too


def request_state_security() -> RequestStateSecurity:
    """The seal for ``requestState``: one key for every server of this process (held only
    here), principal-bound by the SDK's default."""
    # One round's state lives until the retry; a longer card is re-sealed on every round.
    return RequestStateSecurity(keys=[_STATE_KEY], ttl=600.0)


def waits_by_input_required(ctx: Context | None) -> bool:
    """True when this call's client speaks 2026-07-28 (or later), over HTTP or stdio."""
    version = ctx.protocol_version if ctx is not None else None
    return version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION)


def principal() -> str:
    client = REMOTE_CLIENT.get()
    return f"remote:{client.client_id}" if client is not None else LOCAL


@dataclass
class _Held:
    principal: str
    task: asyncio.Task[Any]
    card: PendingBody | None
    deadline: float
    page: str


@dataclass(frozen=True)
class ApprovalView:
    """What a held proposal's page shows: the card, how to answer it, and whether it waits."""

    card: str
    approve_with: str
    waiting: bool


class CardSignal:
    """Stands in for progress reporting while held: notes the card the gateway opened."""

    wait_s: int | None = None  # the client retries: the policy's full wait applies

    def __init__(self) -> None:
        self.card: PendingBody | None = None
        self.opened = asyncio.Event()

    async def card_opened(self, pending: PendingBody) -> None:
        self.card = pending
        self.opened.set()

    async def around(self, call: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        return await call


class HeldProposals:
    """The bounded table of proposals waiting for a human, keyed by random handles."""

    def __init__(
        self,
        per_client: int = MAX_HELD_PER_CLIENT,
        total: int = MAX_HELD,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._per_client = per_client
        self._total = total
        self._clock = clock
        self._held: dict[str, _Held] = {}
        self._pages_at: str | None = None

    def pages_at(self, base: str) -> None:
        """Serve held proposals' pages under ``base`` (the HTTP server's public URL +
        ``/approval/``); without it (stdio), no page and no URL is given."""
        self._pages_at = base

    def view(self, page: str) -> ApprovalView | None:
        """The page of a held proposal whose card was opened, or None."""
        self._sweep()
        # At most MAX_HELD entries, and a page is looked at rarely (rate-limited): a scan.
        held = next((h for h in self._held.values() if h.page == page), None)
        if held is None or held.card is None:
            return None
        return ApprovalView(held.card.card, held.card.approve_with, not held.task.done())

    async def start(
        self, ctx: Context, run: Callable[[CardSignal], Awaitable[R]]
    ) -> R | InputRequiredResult:
        """Run a new proposal; its result if it needs no human, else ``input_required``."""
        who = principal()
        self._sweep()
        mine = sum(held.principal == who for held in self._held.values())
        if mine >= self._per_client or len(self._held) >= self._total:
            raise ToolError(
                "busy: too many proposals of this client wait for a human "
                f"(at most {self._per_client}); retry those first or let their cards expire"
            )
        signal = CardSignal()
        task: asyncio.Task[R] = asyncio.create_task(_ran(run, signal))
        handle, page = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        # Entered before the first await, so concurrent calls count it; no deadline until a
        # card names one (an action that needs no human may run long).
        self._held[handle] = _Held(who, task, None, float("inf"), page)
        # Once it ends, its outcome waits a minute at most (also when this request was cancelled
        # before the client learnt the handle: nothing is held for ever).
        task.add_done_callback(lambda _: self._ended(handle))
        await _first_of(task, signal.opened.wait())
        if task.done():
            self._held.pop(handle, None)
            return task.result()
        assert signal.card is not None
        held = self._held[handle]
        held.card = signal.card
        held.deadline = self._clock() + signal.card.expires_in_s + COLLECT_GRACE_S
        return _input_required(ctx, handle, signal.card, self._page_url(held))

    async def resume(self, ctx: Context, state: str) -> Any:
        """A retry: the result when decided, ``input_required`` again while the card waits."""
        self._sweep()
        handle = state.removeprefix(STATE_PREFIX)
        held = self._held.get(handle) if state.startswith(STATE_PREFIX) else None
        if held is None or held.principal != principal():
            raise ToolError(
                "expired: this approval is unknown or no longer held (its card timed out or "
                "its result was already returned); propose the action again"
            )
        await _first_of(held.task, asyncio.sleep(RETRY_HOLD_S))
        if not held.task.done():
            assert held.card is not None
            return _input_required(ctx, handle, held.card, self._page_url(held))
        self._held.pop(handle, None)
        marker = CALL_RECORDED.get()
        if marker is not None:
            marker.append(True)  # the proposal journaled itself when it ended: one record
        if held.task.cancelled():
            raise ToolError("expired: the approval's card timed out; propose the action again")
        return held.task.result()

    def _page_url(self, held: _Held) -> tuple[str, str] | None:
        return None if self._pages_at is None else (held.page, self._pages_at + held.page)

    def _ended(self, handle: str) -> None:
        held = self._held.get(handle)
        if held is not None:
            held.deadline = min(held.deadline, self._clock() + COLLECT_GRACE_S)

    def _sweep(self) -> None:
        now = self._clock()
        for handle, held in list(self._held.items()):
            if held.deadline <= now:
                del self._held[handle]
                held.task.cancel()  # past the card's own timeout: the gateway ended it already
                if held.task.done() and not held.task.cancelled():
                    held.task.exception()  # a refusal nobody fetched: already journaled


async def _ran(run: Callable[[CardSignal], Awaitable[R]], signal: CardSignal) -> R:
    return await run(signal)


async def _first_of(task: asyncio.Task[Any], other: Awaitable[Any]) -> None:
    waiter = asyncio.ensure_future(other)
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter


def instructions(card: PendingBody) -> str:
    return (
        f"A human must approve this action: card {card.card}, waiting up to "
        f"{card.expires_in_s} s. On the desktop running the safeport gateway, they answer it "
        f"with `{card.approve_with}` (or `sp approvals`), comparing the card's id and short "
        "code if it shows one. Then retry this same call with the requestState given."
    )


def _input_required(
    ctx: Context, handle: str, card: PendingBody, page: tuple[str, str] | None
) -> InputRequiredResult:
    """Instructions for the human, and the state naming the handle (sealed by the boundary).

    Over HTTP, a client that opens URLs (URL-mode elicitation) is given the proposal's page
    (``page``: its id and URL) to show the human. Otherwise a client that declared elicitation
    shows the instructions in a form with nothing to fill (accepting it only says "retry now").
    Any client finds them, and the page's URL, in ``_meta``."""
    requests: InputRequests | None = None
    elicitation = ctx.client_capabilities.elicitation if ctx.client_capabilities else None
    if elicitation is not None and elicitation.url is not None and page is not None:
        link = ElicitRequestURLParams(
            mode="url", message=instructions(card), url=page[1], elicitation_id=page[0]
        )
        requests = {"approval": ElicitRequest(params=link)}
    elif elicitation is not None and (elicitation.form is not None or elicitation.url is None):
        # Form mode only to a client that shows forms (``{}`` is form, as before URL mode);
        # a URL-only client with no page to open finds the instructions in ``_meta``.
        form = ElicitRequestFormParams(
            message=instructions(card), requested_schema={"type": "object", "properties": {}}
        )
        requests = {"approval": ElicitRequest(params=form)}
    told: dict[str, Any] = {
        "card": card.card,
        "expires_in_s": card.expires_in_s,
        "approve_with": card.approve_with,
        "instructions": instructions(card),
    }
    if page is not None:
        told["url"] = page[1]
    meta = {META_KEY: told}
    return InputRequiredResult.model_validate(
        {
            "inputRequests": requests,
            "requestState": STATE_PREFIX + handle,
            "_meta": meta,
        }
    )
