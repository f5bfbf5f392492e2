"""The one way a proposal stops on the decision ladder, and the record that says so.

Every rung, and the resolution that rung 4 runs, raises a :class:`Refusal`; the ladder journals
it with :func:`refusal_record` and answers with its ``Refused`` outcome (:mod:`.outcome`),
which the agent socket turns into the wire reply.
"""

from __future__ import annotations

from enum import IntEnum

from safeport.action_gateway.identity.model import PeerIdentity
from safeport.errors import Error, ErrorCode
from safeport.shared.audit import JournalBody


class Rung(IntEnum):
    """The rungs of the ladder, in the order a proposal climbs them (see :mod:`.rungs`)."""

    INTAKE = 1  # frame, JSON and schema (the server); room on the journals' disk
    IDENTITY = 2  # the peer is still the process that connected
    CALLER = 3  # caller rules of the accepted policy
    ACTION = 4  # action in the accepted policy, arguments valid, rate cap
    VAULT = 5  # vault unlocked
    APPROVAL = 6  # a session grant or a card
    INTENT = 7  # durable intent record
    EXECUTE = 8  # execute with the credential injected
    OUTCOME = 9  # filtered result; durable outcome record


class Refusal(Error):
    """A proposal stopped on a rung; ``code`` goes on the wire, ``category`` into the journal."""

    exit_code = 1
    wire_code = "denied"

    def __init__(self, code: ErrorCode, rung: Rung, category: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.rung = rung
        self.category = category

    def answered(self, code: ErrorCode) -> Refusal:
        """The same refusal answered with another wire code; the raised one is left as it is."""
        return Refusal(code, self.rung, self.category, self.message)


def refusal_record(
    request_id: str | None, refusal: Refusal, requester: PeerIdentity
) -> JournalBody:
    """The body every ``action.denied`` record starts with; callers add what they know more
    (the request and policy, the other senders). The rung is written as a plain number."""
    return {
        "request_id": request_id,
        "rung": int(refusal.rung),
        "code": refusal.code,
        "category": refusal.category,
        "reason": refusal.message,
        "requester": requester.as_record(),
    }
