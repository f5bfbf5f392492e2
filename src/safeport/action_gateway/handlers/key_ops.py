"""control.sock's security-key operations: list, challenge, enrol and remove keys, and the key
half of a card's yes and of a policy that turns the key off.

The first key is enrolled with the passphrase, proved from outside every agent's process tree
as any approver's; once one is enrolled, enrolling, removing and turning the factor off need a
touch of an enrolled key: an agent that learnt the passphrase cannot add its own key, remove
the human's, or accept a policy that lets the passphrase approve again.
"""

from __future__ import annotations

from typing import TypeVar

from safeport.action_gateway.handlers.control_context import ControlContext
from safeport.action_gateway.policy.approval_factor import loosens_factor
from safeport.action_gateway.sockets.connection import Connection
from safeport.errors import ConfigError, Denied
from safeport.shared.known_secrets import shorten
from safeport.shared.schemas.config import parse_gateway_policy, policy_digest
from safeport.shared.schemas.control import (
    ApproverEnrollRequest,
    ApproverKeyChallengeRequest,
    ApproverKeysRequest,
    ApproverRemoveRequest,
    KeyProof,
    PolicyAcceptParams,
)
from safeport.shared.schemas.key_wire import (
    ApproverKeysResult,
    KeyAssertion,
    KeyChallengeResult,
    KeyEnrolledResult,
    KeyRemovedResult,
)
from safeport.shared.schemas.results import CardView

Card = TypeVar("Card", bound=CardView)  # a card as listed, or as pushed to a watcher


async def approver_keys(
    ctx: ControlContext, conn: Connection, request: ApproverKeysRequest
) -> ApproverKeysResult:
    keys = ctx.core.keys
    ring = await ctx.in_thread(keys.ring)
    return ApproverKeysResult(
        rp_id=ring.rp_id if ring else None,
        keys=[key.view() for key in (ring.keys if ring else ())],
        factor_in_use=keys.factor_in_use(),
    )


async def approver_key_challenge(
    ctx: ControlContext, conn: Connection, request: ApproverKeyChallengeRequest
) -> KeyChallengeResult:
    ctx.core.approvals.check_approver(conn.peer)
    params = request.params
    return await ctx.in_thread(lambda: ctx.core.keys.challenge(params.purpose, params.subject))


async def approver_enroll(
    ctx: ControlContext, conn: Connection, request: ApproverEnrollRequest
) -> KeyEnrolledResult:
    params = request.params
    await _changes_keys(ctx, conn, request.op, "enroll", params.name, params)
    key = await ctx.in_thread(lambda: ctx.core.keys.enroll(params.name, params.registration))
    return KeyEnrolledResult(id=key.id, name=key.name)


async def approver_remove(
    ctx: ControlContext, conn: Connection, request: ApproverRemoveRequest
) -> KeyRemovedResult:
    params = request.params
    await _changes_keys(ctx, conn, request.op, "remove", params.id, params)
    await ctx.in_thread(lambda: ctx.core.keys.remove(params.id))
    return KeyRemovedResult(id=params.id)


async def check_yes(
    ctx: ControlContext, conn: Connection, card_id: str, assertion: KeyAssertion | None
) -> None:
    """A yes to a card whose credential needs a key: refused without an enrolled key's touch
    over exactly that card (its id, action, requester and expiry). A refusal is journaled
    (within the uid's budget): a key answer that does not hold is evidence of an attempt."""
    card = next((c for c in ctx.core.approvals.card_views() if c.id == card_id), None)
    if card is None or not ctx.core.keys.factor_in_use(card.credential):
        return  # no such card is the broker's to say; no factor: the passphrase approves
    try:
        await ctx.in_thread(lambda: ctx.core.keys.check_card(card, assertion))
    except Denied as exc:
        body: dict[str, object] = {
            "card": card_id,
            "reason": shorten(exc.message, 300),
            "approver": conn.peer.as_record(),
        }
        uid = conn.peer.uid
        await ctx.in_thread(lambda: ctx.core.record_session_by(uid, "approval.key_refused", body))
        raise


async def check_policy(ctx: ControlContext, params: PolicyAcceptParams) -> None:
    """Accepting a policy that turns the key off needs an enrolled key's touch over its digest."""
    snapshot = ctx.core.policy_snapshot()
    text = params.text if params.text is not None else snapshot.file_text
    if not isinstance(text, str) or policy_digest(text) != params.digest:
        # Refused here, not left to the acceptance: it reads gateway.toml again, and a file
        # swapped back in between would be accepted without this check having judged it.
        raise Denied("gateway.toml changed after it was shown", hint="run `sp policy accept` again")
    try:
        new, _ = parse_gateway_policy(text)
    except ConfigError:
        return  # and one that does not parse
    keys = ctx.core.keys
    served = keys.served_policy()
    if loosens_factor(served, new) and await ctx.in_thread(keys.needs_key):
        await ctx.in_thread(lambda: keys.prove("policy", params.digest, params.assertion))


def with_key_requests(ctx: ControlContext, cards: list[Card]) -> list[Card]:
    """Each card with what a key must sign for its yes, when its credential needs one."""
    return [with_key_request(ctx, card) for card in cards]


def with_key_request(ctx: ControlContext, card: Card) -> Card:
    request = ctx.core.keys.card_request(card)
    return card.model_copy(update={"key": request}) if request is not None else card


async def _changes_keys(
    ctx: ControlContext, conn: Connection, op: str, purpose: str, subject: str, proof: KeyProof
) -> None:
    keys = ctx.core.keys
    if await ctx.in_thread(keys.needs_key):
        ctx.core.approvals.check_approver(conn.peer)
        await ctx.in_thread(lambda: keys.prove(purpose, subject, proof.assertion))
        return
    # The first key: the passphrase, proved by a human's process (never an agent's tree).
    await ctx.prove(conn, op, proof.passphrase)
