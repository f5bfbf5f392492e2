"""control.sock's approver operations: register, list and decide cards, watch for them, and the
sessions they open.

Deciding a card is refused from inside any connected agent's process tree; with
several humans served, a connection that has not proved the passphrase sees only its own uid's
cards and sessions.
"""

from __future__ import annotations

import asyncio
import contextlib

from safeport.action_gateway.approvals.approver_rules import ApproverRefused
from safeport.action_gateway.core.vault_state import unlock_name
from safeport.action_gateway.handlers.control_context import ControlContext
from safeport.action_gateway.handlers.key_ops import (
    check_yes,
    with_key_request,
    with_key_requests,
)
from safeport.action_gateway.sockets.connection import Connection
from safeport.errors import Error
from safeport.shared.schemas.control import (
    ApprovalsDecideRequest,
    ApprovalsListRequest,
    ApprovalsWatchRequest,
    ApproverRegisterRequest,
    ClientsListRequest,
    ClientsRevokeRequest,
    SessionsListRequest,
    SessionsRevokeRequest,
)
from safeport.shared.schemas.replies import ok_reply
from safeport.shared.schemas.results import (
    ApprovalEvent,
    ApproverResult,
    CardOpened,
    CardsResult,
    DecidedResult,
    RemoteClientsResult,
    RevokedResult,
    SessionsResult,
    WatchingResult,
)
from safeport.vault import VaultLocked


class ApproverWaitsForUnlock(VaultLocked):
    """A lock an approver's registration may not undo: answered ``locked`` like any other."""

    def __init__(self) -> None:
        Error.__init__(
            self,
            "the vault is locked, and registering as an approver unlocks it only for the "
            "gateway run it names",
            hint="a human unlocks it with `sp vault unlock`",
        )


async def approver_register(
    ctx: ControlContext, conn: Connection, request: ApproverRegisterRequest
) -> ApproverResult:
    # Read once: the epoch moves at each lock and unlock, and the unlock below happens only if
    # it has not moved since (a human's `sp vault lock` meanwhile is not undone).
    epoch = ctx.core.vault_epoch()
    names_this_lock = request.params.unlock_run == unlock_name(ctx.core.run_id, epoch)
    locked = not ctx.core.vault_unlocked
    if locked and not names_this_lock:
        # Fails closed: only a registration naming this run's current lock may unlock (a
        # watch's first, made against the lock it found when it started). A process left
        # running from an earlier run, or across a human's `sp vault lock`, or one that names
        # nothing, holds a passphrase given for another state; a human who stopped the gateway
        # or locked the vault expects it to stay locked until a human unlocks it. Refused
        # before any proof (no KDF, no failure counted), so it can ask again once a human has
        # unlocked the vault.
        raise ApproverWaitsForUnlock()
    # Any other registration proves without unlocking.
    unlock = locked and names_this_lock
    await ctx.prove(conn, request.op, request.params.passphrase, unlock=unlock, at_epoch=epoch)
    ctx.make_approver(conn)
    await ctx.in_thread(lambda: ctx.core.approver_started(conn.peer))
    return ApproverResult(approver=True)


async def approvals_list(
    ctx: ControlContext, conn: Connection, request: ApprovalsListRequest
) -> CardsResult:
    cards = await ctx.in_thread(lambda: with_key_requests(ctx, ctx.core.approvals.card_views()))
    if ctx.sees_only_its_own(conn):
        # A card holds the requester's process chain, scripts and injected variables: facts
        # about another human's processes that only a proven approver is shown.
        cards = [card for card in cards if card.user.uid == conn.peer.uid]
    return CardsResult(cards=cards)


async def approvals_decide(
    ctx: ControlContext, conn: Connection, request: ApprovalsDecideRequest
) -> DecidedResult:
    params = request.params
    if not ctx.is_approver(conn):
        # Authority for this answer only: a locked vault stays locked.
        await ctx.prove(conn, request.op, params.passphrase, unlock=False)
    if params.approve:
        await check_yes(ctx, conn, params.id, params.assertion)
    card = await ctx.in_thread(
        lambda: ctx.core.approvals.decide_card(params.id, params.approve, conn.peer)
    )
    return DecidedResult(id=card.id, approved=params.approve)


async def approvals_watch(
    ctx: ControlContext, conn: Connection, request: ApprovalsWatchRequest
) -> WatchingResult:
    if not ctx.is_approver(conn):
        raise ApproverRefused("register as an approver first (prove the passphrase)")
    loop = asyncio.get_running_loop()
    watch_id = request.id

    def listener(event: ApprovalEvent) -> None:
        if isinstance(event, CardOpened):  # what a key must sign for a yes, when one is needed
            event = with_key_request(ctx, event)
        # Its own id: an event sent before the watch reply must not be taken for it.
        message = ok_reply(f"{watch_id}:event", event)
        with contextlib.suppress(RuntimeError):  # the loop is closing
            loop.call_soon_threadsafe(conn.spawn_send, message)

    ctx.watch(conn, listener)
    conn.subscribe()  # stays open while it waits for cards
    views = await ctx.in_thread(lambda: with_key_requests(ctx, ctx.core.approvals.card_views()))
    return WatchingResult(event="watching", cards=views)


async def sessions_list(
    ctx: ControlContext, conn: Connection, request: SessionsListRequest
) -> SessionsResult:
    only = conn.peer.uid if ctx.sees_only_its_own(conn) else None
    return SessionsResult(sessions=ctx.core.approvals.session_views(of_uid=only))


async def sessions_revoke(
    ctx: ControlContext, conn: Connection, request: SessionsRevokeRequest
) -> RevokedResult:
    params = request.params
    if ctx.core.approvals.session_owner(params.id) != conn.peer.uid:
        # Another human's session, or none.
        await ctx.for_everyone(conn, request.op, params.passphrase)
    revoked = await ctx.in_thread(
        lambda: ctx.core.approvals.revoke_session(params.id, by=f"pid {conn.peer.pid}")
    )
    return RevokedResult(revoked=revoked)


async def clients_list(
    ctx: ControlContext, conn: Connection, request: ClientsListRequest
) -> RemoteClientsResult:
    return RemoteClientsResult(clients=await ctx.in_thread(ctx.core.remote.client_views))


async def clients_revoke(
    ctx: ControlContext, conn: Connection, request: ClientsRevokeRequest
) -> RevokedResult:
    """A remote client stops at its next request: its tokens fail the gateway's check."""
    params = request.params
    await ctx.for_everyone(conn, request.op, params.passphrase)
    revoked = await ctx.in_thread(
        lambda: ctx.core.remote.revoke_client(params.id, by=f"pid {conn.peer.pid}")
    )
    return RevokedResult(revoked=revoked)
