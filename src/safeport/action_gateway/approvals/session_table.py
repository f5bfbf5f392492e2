"""The open session grants: found again for a matching request, opened on approval, ended on
revoke, on expiry, when the requester's process exits, or when everything is voided.

The table shares the broker's lock, so a vault lock settles every waiting card, takes every
session and drops every per-call grant while holding that one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from safeport.action_gateway.approvals.cards import ActionRequest
from safeport.action_gateway.approvals.grants import SessionGrant, held_requester, let_go
from safeport.action_gateway.identity.model import PeerIdentity
from safeport.shared.audit import JournalBody


class Journal(Protocol):
    def record(self, kind: str, body: JournalBody) -> object: ...


class LivenessProbe(Protocol):
    def alive(self, identity: PeerIdentity) -> bool: ...


class SessionTable:
    def __init__(
        self,
        lock: threading.Lock,
        journal: Journal,
        probe: LivenessProbe,
        clock: Callable[[], float],
    ) -> None:
        self._lock = lock
        self._journal = journal
        self._probe = probe
        self._clock = clock
        self._sessions: dict[str, SessionGrant] = {}

    def live(
        self, requester: PeerIdentity, request: ActionRequest, vault_epoch: int
    ) -> SessionGrant | None:
        """A session of this requester for this credential and policy, still good to use."""
        now = self._clock()
        with self._lock:
            candidates = [
                grant
                for grant in self._sessions.values()
                if grant.requester.instance == requester.instance
                and grant.credential == request.credential
                and grant.policy_digest == request.policy_digest
            ]
        for grant in candidates:
            if (
                grant.vault_epoch == vault_epoch
                and now <= grant.expires_at
                and self._probe.alive(grant.requester)
            ):
                return grant
        return None

    def open(
        self,
        session_id: str,
        requester: PeerIdentity,
        request: ActionRequest,
        *,
        card_id: str,
        now: float,
        session_max_s: float,
        vault_epoch: int,
    ) -> SessionGrant:
        """A human approved a session card: journal the session, then hold it."""
        grant = SessionGrant(
            id=session_id,
            requester=held_requester(requester),
            credential=request.credential,
            policy_digest=request.policy_digest,
            opened_at=now,
            expires_at=now + session_max_s,
            vault_epoch=vault_epoch,
        )
        self._journal.record(
            "session.opened",
            {
                "session": grant.id,
                "credential": grant.credential,
                "card": card_id,
                "requester": requester.as_record(),
                "policy": grant.policy_digest,
            },
        )
        with self._lock:
            self._sessions[grant.id] = grant
        return grant

    def holds_locked(self, session_id: str) -> bool:
        """Caller holds the lock."""
        return session_id in self._sessions

    def listing(self) -> list[SessionGrant]:
        with self._lock:
            return list(self._sessions.values())

    def take(self, session_id: str) -> SessionGrant | None:
        with self._lock:
            return self._sessions.pop(session_id, None)

    def take_all_locked(self) -> list[SessionGrant]:
        """Caller holds the lock: every session leaves the table (``end`` each afterwards)."""
        sessions = list(self._sessions.values())
        self._sessions.clear()
        return sessions

    def reap(self) -> list[SessionGrant]:
        """End sessions whose process exited or whose time is up; journal each end."""
        now = self._clock()
        ended: list[tuple[SessionGrant, str]] = []
        with self._lock:
            grants = list(self._sessions.values())
        for grant in grants:
            if now > grant.expires_at:
                ended.append((grant, "expired"))
            elif not self._probe.alive(grant.requester):
                ended.append((grant, "process exited"))
        for grant, why in ended:
            with self._lock:
                if self._sessions.pop(grant.id, None) is None:
                    continue
            self.end(grant, why)
        return [grant for grant, _ in ended]

    def end(self, grant: SessionGrant, reason: str) -> None:
        """A session that left the table lets go of its requester, and the journal says why."""
        let_go(grant)
        self._journal.record("session.ended", {"session": grant.id, "reason": reason})
