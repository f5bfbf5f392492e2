"""Approvals: cards waiting for a human, session grants and per-call grants.

Thread-safe: proposals wait here in worker threads while the control server (event loop thread)
decides cards. Nothing is persisted; a gateway restart forgets every grant.

- A session grant is bound to {requester instance, credential, policy digest}; it ends when that
  process exits, at ``session_max_minutes``, on revoke, on vault lock, on gateway stop.
- A per-call grant is bound to the exact request (action, target, args digest, policy digest),
  is used once, expires after a minute, and is void once the vault is locked or unlocked again.
- One pending card per requester, and per uid its share of the cards that may wait; an approver
  in the requester's tree, or its client's (unless allowed), is refused.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from safeport.action_gateway.approvals import cards as card_kinds
from safeport.action_gateway.approvals.approver_rules import ApproverRefused, check_approver
from safeport.action_gateway.approvals.cards import ActionRequest, ApprovalCard, ClientAuthorization
from safeport.action_gateway.approvals.grants import Grant, SessionGrant, grant_binding, let_go
from safeport.action_gateway.approvals.session_table import Journal, LivenessProbe, SessionTable
from safeport.action_gateway.identity.model import PeerIdentity
from safeport.action_gateway.policy.shares import one_more
from safeport.errors import Denied, Error
from safeport.shared.schemas.results import ApprovalEvent, CardClosed, CardOpened, CardView

PER_CALL_GRANT_S = 60.0
MAX_PENDING_CARDS = 32  # one per requester; a flood of requesters cannot queue without bound

CardOutcome = Literal["approved", "denied", "timeout", "cancelled", "voided", "unshowable"]
Listener = Callable[[ApprovalEvent], None]


class ApprovalRefused(Denied):
    """A human said no, the card was withdrawn, or it could not be shown."""

    def __init__(self, message: str, *, outcome: CardOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


class ApprovalTimedOut(Denied):
    """No approver answered before ``approval_timeout_s``."""


class NoSuchCard(Error):
    exit_code = 1
    wire_code = "denied"


@dataclass
class _Pending:
    card: ApprovalCard
    done: threading.Event
    outcome: CardOutcome | None = None
    reason: str = ""


class Approvals:
    def __init__(
        self,
        journal: Journal,
        probe: LivenessProbe,
        *,
        clock: Callable[[], float] = time.monotonic,
        humans: int = 1,
    ) -> None:
        """``humans``: how many uids are served, each with its share of the waiting cards."""
        self._humans = humans
        self._journal = journal
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._by_requester: dict[tuple[object, ...], str] = {}
        self._sessions = SessionTable(self._lock, journal, probe, clock)
        self._per_call: dict[str, Grant] = {}
        self._listeners: list[Listener] = []
        self._card_openers: list[Callable[[ApprovalCard], None]] = []

    # -- the ladder's side ------------------------------------------------------------------

    def obtain(
        self,
        requester: PeerIdentity,
        request: ActionRequest,
        *,
        vault_epoch: int,
        timeout_s: float,
        session_max_s: float,
    ) -> Grant:
        """Return a grant for this request, asking a human when needed; blocks until decided."""
        if request.scope == "session":
            found = self._sessions.live(requester, request, vault_epoch)
            if found is not None:
                binding = grant_binding(request, requester)
                return Grant(found.id, "session", vault_epoch, found.expires_at, binding)
            self.reap()  # none is live: the ones that ended are journaled before a new card
        card_id = self._approved_card(requester, request, timeout_s, session_max_s)
        now = self._clock()
        if request.scope == "session":
            grant = self._sessions.open(
                _new_id("s"),
                requester,
                request,
                card_id=card_id,
                now=now,
                session_max_s=session_max_s,
                vault_epoch=vault_epoch,
            )
            return Grant(
                grant.id,
                "session",
                vault_epoch,
                grant.expires_at,
                grant_binding(request, requester),
                card=card_id,
            )
        per_call = Grant(
            card_id,
            "per-call",
            vault_epoch,
            now + PER_CALL_GRANT_S,
            grant_binding(request, requester),
            card=card_id,
        )
        with self._lock:
            self._per_call[per_call.id] = per_call
        return per_call

    def consume(
        self, grant: Grant, requester: PeerIdentity, request: ActionRequest, vault_epoch: int
    ) -> None:
        """Check a grant right before execution; a per-call grant is spent by this call."""
        now = self._clock()
        if grant.vault_epoch != vault_epoch:
            raise ApprovalRefused("the vault was locked since the approval", outcome="voided")
        if grant.binding != grant_binding(request, requester):
            raise ApprovalRefused("the grant does not cover this request", outcome="voided")
        with self._lock:
            if grant.scope == "per-call":
                stored = self._per_call.pop(grant.id, None)
                if stored is None:
                    raise ApprovalRefused(
                        "the approval was already used or voided", outcome="voided"
                    )
            elif not self._sessions.holds_locked(grant.id):
                raise ApprovalRefused("the session grant has ended", outcome="voided")
        if now > grant.expires_at:
            raise ApprovalRefused("the approval expired before use", outcome="voided")

    def withdraw(self, requester: PeerIdentity, request_id: str) -> bool:
        """The agent cancelled: a pending card for that request is withdrawn (nothing runs)."""
        with self._lock:
            card_id = self._by_requester.get(requester.instance)
            pending = self._pending.get(card_id) if card_id else None
            if pending is None or pending.card.request.request_id != request_id:
                return False
            self._settle(pending, "cancelled", "the request was cancelled")
            return True

    # -- the approver's side ------------------------------------------------------------------

    def cards(self) -> list[ApprovalCard]:
        with self._lock:  # one answered, not yet taken by its waiter, no longer waits
            return [pending.card for pending in self._pending.values() if pending.outcome is None]

    def card_views(self) -> list[CardView]:
        """The pending cards as approvers see them, with the time left counted now."""
        now = self._clock()
        return [card.view(now) for card in self.cards()]

    def decide(
        self,
        card_id: str,
        approve: bool,
        approver: PeerIdentity,
        *,
        allow_in_client: bool,
    ) -> ApprovalCard:
        with self._lock:
            pending = self._pending.get(card_id)
            if pending is None or pending.outcome is not None:
                raise NoSuchCard(f"no pending card {card_id}", hint="it may have been decided")
            card = pending.card
            check_approver(approver, card.requester, allow_in_client=allow_in_client)
            if approve and not card.showable:
                raise ApproverRefused("this card cannot be shown whole, so it cannot be approved")
            self._settle(pending, "approved" if approve else "denied", "the approver denied it")
        self._journal.record(
            "approval.decided",
            {
                "card": card.id,
                "approved": approve,
                "approver": approver.as_record(),
                "request": card.request.shape(),
            },
        )
        return card

    def on_card_opened(self, callback: Callable[[ApprovalCard], None]) -> None:
        """Call ``callback`` with each new card (the agent side uses it to tell its requester)."""
        self._card_openers.append(callback)

    def subscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    # -- sessions -----------------------------------------------------------------------------

    def sessions(self) -> list[SessionGrant]:
        return self._sessions.listing()

    def revoke(self, session_id: str, *, by: str) -> SessionGrant:
        grant = self._sessions.take(session_id)
        if grant is None:
            raise NoSuchCard(f"no session {session_id}", hint="`sp sessions list` shows them")
        let_go(grant)
        self._journal.record("session.revoked", {"session": grant.id, "by": by})
        return grant

    def reap(self) -> list[SessionGrant]:
        """End sessions whose process exited or whose time is up; journal each end."""
        return self._sessions.reap()

    def void_all(self, reason: str) -> int:
        """Vault lock/unlock or stop: every pending card, session and per-call grant ends."""
        with self._lock:
            for pending in list(self._pending.values()):
                self._settle(pending, "voided", reason)
            sessions = self._sessions.take_all_locked()
            self._per_call.clear()
        for grant in sessions:
            self._sessions.end(grant, reason)
        return len(sessions)

    # -- internals ----------------------------------------------------------------------------

    def ask(self, requester: PeerIdentity, request: ClientAuthorization, timeout_s: float) -> str:
        """A remote client's authorization on a card; blocks until answered: the outcome."""
        times = {"now": self._clock(), "timeout_s": timeout_s, "wall_now": time.time()}
        card = card_kinds.build_client_card(_new_id("c"), requester, request, **times)
        return self._open_card(card).outcome or "timeout"

    def _approved_card(
        self,
        requester: PeerIdentity,
        request: ActionRequest,
        timeout_s: float,
        session_max_s: float,
    ) -> str:
        """Show the request's card and wait: the card's id once approved; raises otherwise."""
        # wall_now: the expiry a key signs must mean something outside this process.
        times = {"now": self._clock(), "timeout_s": timeout_s, "session_max_s": session_max_s}
        card = card_kinds.build_card(
            _new_id("c"), requester, request, **times, wall_now=time.time()
        )
        pending = self._open_card(card)
        if pending.outcome == "timeout":
            raise ApprovalTimedOut("no approver answered in time")
        if pending.outcome != "approved":
            assert pending.outcome is not None
            raise ApprovalRefused(
                pending.reason or "the approver denied it", outcome=pending.outcome
            )
        return pending.card.id

    def _open_card(self, card: ApprovalCard) -> _Pending:
        """Show ``card`` and wait for its answer (or its expiry)."""
        requester = card.requester
        if not card.showable:
            raise ApprovalRefused(
                "the request cannot be shown whole on a card", outcome="unshowable"
            )
        with self._lock:
            if _slot(card) in self._by_requester:
                raise ApprovalRefused(
                    "another approval for this requester is already waiting", outcome="denied"
                )
            mine = sum(p.card.requester.uid == requester.uid for p in self._pending.values())
            verdict = one_more(
                held_by_uid=mine,
                held_by_all=len(self._pending),
                ceiling=MAX_PENDING_CARDS,
                humans=self._humans,
            )
            if not verdict.fits:  # each human's share: one's agent cannot fill every place
                reason = verdict.reason("waiting approvals")
                raise ApprovalRefused(f"too many approvals are waiting: {reason}", outcome="denied")
            pending = _Pending(card=card, done=threading.Event())
            self._pending[card.id] = pending
            self._by_requester[_slot(card)] = card.id
        self.notify(CardOpened(**dict(card.view(self._clock())), event="card"))
        for opened in list(self._card_openers):
            opened(card)  # the requester's own side learns which card it waits on
        finished = pending.done.wait(card.expires_at - card.created_at)
        with self._lock:
            self._forget_card(pending.card)
            if not finished and pending.outcome is None:
                pending.outcome = "timeout"
        self.notify(CardClosed(event="card.closed", id=pending.card.id, outcome=pending.outcome))
        return pending

    def _settle(self, pending: _Pending, outcome: CardOutcome, reason: str) -> None:
        if pending.outcome is None:
            pending.outcome = outcome
            pending.reason = reason
            pending.done.set()

    def _forget_card(self, card: ApprovalCard) -> None:
        """Caller holds the lock (as for ``_settle``)."""
        self._pending.pop(card.id, None)
        if self._by_requester.get(_slot(card)) == card.id:
            del self._by_requester[_slot(card)]

    def notify(self, event: ApprovalEvent) -> None:
        """Tell every watching approver (a card, its closing, what its action did)."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(event)


def _slot(card: ApprovalCard) -> tuple[object, ...]:
    """One waiting card per requester; each authorization request has its own slot (a client
    id is public: a stranger's request must not deny the human's; the card's code tells)."""
    if isinstance(card.request, ClientAuthorization):
        return (*card.requester.instance, card.request.client_id, card.request.request_id)
    return card.requester.instance


def _new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"


__all__ = ["ApprovalRefused", "ApprovalTimedOut", "Approvals", "NoSuchCard"]
