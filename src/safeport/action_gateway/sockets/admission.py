"""Who holds a place on one socket: each connection and its peer's uid, under the server's
connection budget and each admitted uid's share of it (:mod:`shares`), so one human's flood
never takes another's place.

When the budget or the uid's share is used up, a new connection is refused ``unavailable``
(saying which limit), unless the server makes room (control.sock): then the connection idle
longest is closed for it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from safeport.action_gateway.policy.shares import Verdict, at_share, one_more
from safeport.action_gateway.sockets.peer_socket import PeerSocket, peer_closed, queued_bytes
from safeport.errors import ErrorCode
from safeport.shared.schemas.replies import error_reply, wire_form
from safeport.shared.wire import encode_frame


class ConnectionBudget:
    def __init__(
        self,
        name: str,
        *,
        max_connections: Callable[[], int],
        humans: int,
        on_refused: Callable[[str], None],
        make_room: bool,
        evict_after_idle_s: float,
    ) -> None:
        self.channels: dict[PeerSocket, int] = {}  # each connection and its peer's uid
        self._name = name
        self._max_connections = max_connections
        self._humans = humans
        self._on_refused = on_refused
        self._make_room = make_room
        self._evict_after_idle_s = evict_after_idle_s

    def admit(self, channel: PeerSocket, uid: int) -> bool:
        """Whether a new connection of ``uid`` fits: under the server's budget and under the
        uid's share of it (:mod:`shares`), so one human's flood never takes another's place.
        A refused connection is told which limit it met and counted, never journaled alone."""
        held = Counter(self.channels.values())
        verdict = one_more(
            held_by_uid=held[uid],
            held_by_all=len(self.channels),
            ceiling=self._max_connections(),
            humans=self._humans,
        )
        if verdict.fits or self._evict_one(uid, verdict, held):
            return True
        category = "too_many_connections" if verdict.whose == "all" else f"connection_share:{uid}"
        self._on_refused(category)
        reason = verdict.reason(f"connections to {self._name}.sock")
        channel.send_nowait(refusal_frame("unavailable", f"too many connections: {reason}"))
        channel.close()
        return False

    def _evict_one(self, uid: int, verdict: Verdict, held: Counter[int]) -> bool:
        """control.sock: close the connection idle longest (not a subscribed approver, not one
        with an operation in progress, not one that just arrived, and silent ones before any with
        unread bytes) to serve a new `sp` command. A uid at its share makes room among its own
        connections; a uid under its share, from those of the uids at theirs."""
        if not self._make_room:
            return False
        if verdict.whose == "user":
            owners = {uid}
        else:
            owners = at_share(dict(held), self._max_connections(), self._humans)
        now = time.monotonic()
        grace = self._evict_after_idle_s
        idle = [
            ch
            for ch, owner in self.channels.items()
            if owner in owners and ch.evictable(now, grace)
        ]
        if not idle:
            return False
        # A connection whose peer wrote bytes not read yet is not idle: under a flood, the
        # human's request can sit queued while its connection waits for an identity worker.
        # Truly silent connections go first; only when none is left is a queued one closed.
        oldest = min(
            idle,
            key=lambda ch: (not peer_closed(ch.sock), queued_bytes(ch.sock) > 0, ch.last_active),
        )
        self._on_refused("evicted_idle")
        oldest.close()
        if oldest.busy and oldest.task is not None:
            oldest.task.cancel()  # it was waiting its turn; the read loop is not listening
        self.channels.pop(oldest, None)
        return True


def refusal_frame(code: ErrorCode, reason: str) -> bytes:
    """The one frame sent to a connection refused before it is served (no id was read)."""
    return encode_frame(wire_form(error_reply(None, code, reason)))
