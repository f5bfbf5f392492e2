"""What an approval leaves behind: a session grant, or the grant the ladder holds until it runs.

A session grant is bound to {requester instance, credential, policy digest}; a per-call grant to
the exact request, down to the digest of the prepared action the card showed. Grants hold their
own pidfd of the requester, so the session outlives the connection that asked for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from typing import Literal

from safeport.action_gateway.approvals.cards import ActionRequest
from safeport.action_gateway.identity.model import PeerIdentity
from safeport.shared.schemas.results import SessionView


@dataclass(frozen=True)
class SessionGrant:
    id: str
    requester: PeerIdentity
    credential: str
    policy_digest: str
    opened_at: float
    expires_at: float
    vault_epoch: int

    def view(self, now: float) -> SessionView:
        return SessionView(
            id=self.id,
            credential=self.credential,
            requester_pid=self.requester.pid,
            requester_exe=self.requester.process.exe,
            policy=self.policy_digest,
            age_s=round(now - self.opened_at),
            expires_in_s=max(0, round(self.expires_at - now)),
        )


@dataclass(frozen=True)
class Grant:
    """What the ladder holds between approval and execution."""

    id: str
    scope: Literal["session", "per-call"]
    vault_epoch: int
    expires_at: float
    binding: tuple[object, ...]
    card: str | None = None  # the card a human answered for this call (none: a session reused)


def held_requester(requester: PeerIdentity) -> PeerIdentity:
    """The requester with a pidfd of the session's own. The connection's pidfd is closed when
    that connection ends, and an agent's client connects anew for each call: a session holding
    the connection's descriptor would find it closed (poll says "gone") or, worse, reused by
    another descriptor, and end after its first call."""
    if requester.pidfd is None:
        return requester
    try:
        return dataclasses.replace(requester, pidfd=os.dup(requester.pidfd))
    except OSError:
        return dataclasses.replace(requester, pidfd=None)  # start time still tells it apart


def let_go(grant: SessionGrant) -> None:
    if grant.requester.pidfd is not None:
        with contextlib.suppress(OSError):
            os.close(grant.requester.pidfd)


def grant_binding(request: ActionRequest, requester: PeerIdentity) -> tuple[object, ...]:
    if request.scope == "session":
        return (requester.instance, request.credential, request.policy_digest)
    return (
        requester.instance,
        request.kind,
        request.target_id,
        request.operation_id,
        request.args_digest,
        request.prepared.digest(),  # the exact bytes the human saw are the bytes that run
        request.policy_digest,
    )
