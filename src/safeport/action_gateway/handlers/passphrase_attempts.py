"""Failed passphrase proofs on control.sock, counted per peer uid (docs/security/gateway.md).

The n-th failure in a row is answered after ``min(2 ** (n - 1), 30)`` seconds; a success resets
the count. It is keyed by the peer's uid, not its connection or process: an agent with a shell
can reconnect from a new process at will, but not change its uid. Proofs of one uid are taken one
at a time and a failed one holds that turn for at least a second (``passphrase_proof.TURN_S``), so
guesses sent at once get through at most one a second; the growing delay is waited out by the
guessing connection alone, after its turn, so the next proof of the uid (perhaps the human's,
with the right passphrase) is never queued behind it. The waiting happens on the event loop; no
worker thread is held meanwhile.
"""

from __future__ import annotations

import asyncio

FIRST_DELAY_S = 1.0
MAX_DELAY_S = 30.0


def failure_delay(
    failures: int, *, first: float = FIRST_DELAY_S, cap: float = MAX_DELAY_S
) -> float:
    """Seconds before the answer to the ``failures``-th failure in a row (1 s, 2 s, 4 s … 30 s)."""
    if failures <= 0:
        return 0.0
    return float(min(cap, first * 2.0 ** min(failures - 1, 32)))


class PassphraseAttempts:
    """Failures in a row per uid, and one proof at a time per uid."""

    def __init__(self, *, first_delay_s: float = FIRST_DELAY_S, max_delay_s: float = MAX_DELAY_S):
        self._first = first_delay_s
        self._cap = max_delay_s
        self._failures: dict[int, int] = {}
        self._turns: dict[int, asyncio.Lock] = {}

    def failures(self, uid: int) -> int:
        return self._failures.get(uid, 0)

    def failed(self, uid: int) -> tuple[int, float]:
        """Count a failure; return how many in a row and the delay before answering it."""
        count = self._failures.get(uid, 0) + 1
        self._failures[uid] = count
        return count, failure_delay(count, first=self._first, cap=self._cap)

    def succeeded(self, uid: int) -> None:
        self._failures.pop(uid, None)

    async def acquire(self, uid: int) -> None:
        """Wait for the uid's turn: one proof at a time, each failure's delay served inside it."""
        await self._turns.setdefault(uid, asyncio.Lock()).acquire()

    def release(self, uid: int) -> None:
        self._turns[uid].release()
