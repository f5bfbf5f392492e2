"""control.sock's approver operations: register, list and decide cards, watch for them, and the
sessions they open.

Deciding a card is refused from inside any connected agent's process tree; with
several humans served, a connection that has not proved the passphrase sees only its own uid's
cards and sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from safeport.action_gateway.approvals.approver_rules import ApproverRefused
from safeport.action_gateway.handlers.control_context import ControlContext
from safeport.action_gateway.sockets.connection import Connection
from safeport.shared.schemas.control import (
    ApprovalsDecideRequest,
    ApprovalsListRequest,
    ApprovalsWatchRequest,
    ApproverRegisterRequest,
    SessionsListRequest,
    SessionsRevokeRequest,
)
from safeport.shared.schemas.replies import ok_reply


async def approver_register(
    ctx: ControlContext, conn: Connection, request: ApproverRegisterRequest
) -> dict[str, Any]:
    await ctx.prove(conn, request.op, request.params.passphrase)
    ctx.make_approver(conn)
    await ctx.in_thread(lambda: ctx.core.approver_started(conn.peer))
    return {"approver": True}


async def approvals_list(
    ctx: ControlContext, conn: Connection, request: ApprovalsListRequest
) -> dict[str, Any]:
    cards = ctx.core.card_views()
    if ctx.sees_only_its_own(conn):
        # A card holds the requester's process chain, scripts and injected variables: facts
        # about another human's processes that only a proven approver is shown.
        cards = [card for card in cards if _card_uid(card) == conn.peer.uid]
    return {"cards": cards}


async def approvals_decide(
    ctx: ControlContext, conn: Connection, request: ApprovalsDecideRequest
) -> dict[str, Any]:
    params = request.params
    if not ctx.is_approver(conn):
        await ctx.prove(conn, request.op, params.passphrase)
    card = await ctx.in_thread(lambda: ctx.core.decide_card(params.id, params.approve, conn.peer))
    return {"id": card.id, "approved": params.approve}


async def approvals_watch(
    ctx: ControlContext, conn: Connection, request: ApprovalsWatchRequest
) -> dict[str, Any]:
    if not ctx.is_approver(conn):
        raise ApproverRefused("register as an approver first (prove the passphrase)")
    loop = asyncio.get_running_loop()
    watch_id = request.id

    def listener(event: str, data: dict[str, object]) -> None:
        # Its own id: an event sent before the watch reply must not be taken for it.
        message = ok_reply(f"{watch_id}:event", {"event": event, **data})
        with contextlib.suppress(RuntimeError):  # the loop is closing
            loop.call_soon_threadsafe(conn.spawn_send, message)

    ctx.watch(conn, listener)
    conn.subscribe()  # stays open while it waits for cards
    return {"event": "watching", "cards": ctx.core.card_views()}


async def sessions_list(
    ctx: ControlContext, conn: Connection, request: SessionsListRequest
) -> dict[str, Any]:
    only = conn.peer.uid if ctx.sees_only_its_own(conn) else None
    return {"sessions": ctx.core.session_views(of_uid=only)}


async def sessions_revoke(
    ctx: ControlContext, conn: Connection, request: SessionsRevokeRequest
) -> dict[str, Any]:
    params = request.params
    if ctx.core.session_owner(params.id) != conn.peer.uid:
        # Another human's session, or none.
        await ctx.for_everyone(conn, request.op, params.passphrase)
    revoked = await ctx.in_thread(
        lambda: ctx.core.revoke_session(params.id, by=f"pid {conn.peer.pid}")
    )
    return {"revoked": revoked}


def _card_uid(card: dict[str, Any]) -> object:
    user = card.get("user")
    return user.get("uid") if isinstance(user, dict) else None
