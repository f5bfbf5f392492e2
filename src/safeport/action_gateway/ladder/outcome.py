"""What the ladder answers for one proposal: the action ran and this is its filtered result, or
it was refused on a rung with this wire code and fixed sentence.

The ladder returns one of these; the agent socket renders it into the wire reply once, at the
edge (``handlers/agent_sock.py``). The result is already the wire model the agent's client
parses (:mod:`safeport.shared.schemas.wire`), built by rung 9's filters, so nothing between
the filters and the socket re-reads or re-shapes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from safeport.action_gateway.ladder.refusal import Refusal, Rung
from safeport.errors import ErrorCode
from safeport.shared.schemas.wire import HttpResult, SqlResult, SshExecResult

# Rung 9's filtered result, one model per action kind.
ActionResult = SshExecResult | HttpResult | SqlResult


@dataclass(frozen=True)
class Executed:
    """The action ran; ``result`` is what rung 9 let through (declared parts, secrets redacted),
    its outcome already journaled."""

    result: ActionResult


@dataclass(frozen=True)
class Refused:
    """The proposal stopped on ``rung``, its refusal already journaled (or counted): ``code`` and
    ``reason`` go on the wire, ``category`` into the journal and the log."""

    code: ErrorCode
    rung: Rung
    category: str
    reason: str

    @classmethod
    def of(cls, refusal: Refusal) -> Refused:
        return cls(refusal.code, refusal.rung, refusal.category, refusal.message)


ProposalOutcome = Executed | Refused

__all__ = ["ActionResult", "Executed", "ProposalOutcome", "Refused"]
