"""The one way a proposal stops on the decision ladder.

Every rung, and the resolution that rung 4 runs, raises a :class:`Refusal`; the ladder journals
it and the agent side turns it into the wire reply.
"""

from __future__ import annotations

from safeport.errors import Error
from safeport.shared.schemas.wire import ErrorCode


class Refusal(Error):
    """A proposal stopped on a rung; ``code`` goes on the wire, ``category`` into the journal."""

    exit_code = 1

    def __init__(self, code: ErrorCode, rung: int, category: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.rung = rung
        self.category = category
