"""Whether a token's client still stands: the gateway's ``oauth_check``, reused only while
nothing can have changed its answer.

Asking on every request costs a round trip to another process, about a third of a small read's
time. The gateway therefore keeps a *revocation notice* in its socket folder (see
``action_gateway/remote_clients/revocation_notice.py``): a random value it replaces before it
answers anything that ends a standing token -- `sp context clients revoke`, a token family
ended, a lock, a start. A "stands" is reused for a request only if

* the notice holds the value read *before* that answer was asked for (a revocation that raced
  the question replaced it, so the next request asks again),
* it is younger than :data:`MAX_AGE_S` (which also keeps the client's "last used" current), and
* the token has not reached its expiry, and
* the connection to the gateway that gave the answer is still open (a gateway killed without a
  word leaves its notice behind, unchanged; its death closes the connection).

So a revocation that has returned is seen by the next request, as when every request asked. A
notice that is missing, unreadable, not a regular file, not the gateway's, or writable by
others is no notice: every request asks. "Does not stand" is never reused.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from safeport.shared.schemas.oauth_wire import AccessClaims, OAuthCheckResult

MAX_AGE_S = 2.0
MAX_REMEMBERED = 4096
NOTICE_MAX_BYTES = 64

Ask = Callable[[str, str], Awaitable[OAuthCheckResult]]
Clock = Callable[[], float]
Connection = Callable[[], object]  # the gateway connection open now; None if none


class StandingChecks:
    def __init__(
        self,
        ask: Ask,
        notice: Path,
        gateway_uid: int,
        *,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
        max_age_s: float = MAX_AGE_S,
        connection: Connection = lambda: 0,
    ) -> None:
        self._ask = ask
        self._notice = notice
        self._uid = gateway_uid
        self._clock = clock
        self._wall = wall
        self._max_age_s = max_age_s
        self._connection = connection
        # (client id, token id) -> (the notice's value when asked, good until on self._clock,
        # the connection that answered)
        self._standing: dict[tuple[str, str], tuple[bytes, float, object]] = {}

    async def check(self, claims: AccessClaims) -> OAuthCheckResult:
        key = (claims.sub, claims.jti)
        value = read_notice(self._notice, self._uid)  # before the question, never after
        remembered = self._standing.get(key)
        if (
            value is not None
            and remembered is not None
            and remembered[0] == value
            and self._clock() < remembered[1]
            and self._wall() < claims.exp
            and remembered[2] is not None
            and remembered[2] == self._connection()
        ):
            return OAuthCheckResult(active=True)
        answer = await self._ask(claims.sub, claims.jti)
        link = self._connection()  # the one that answered, if it is still open
        if answer.active and value is not None and link is not None:
            self._remember(key, value, link)
        else:
            self._standing.pop(key, None)
        return answer

    def _remember(self, key: tuple[str, str], value: bytes, link: object) -> None:
        now = self._clock()
        if key not in self._standing and len(self._standing) >= MAX_REMEMBERED:
            self._standing = {k: v for k, v in self._standing.items() if now < v[1]}
            if len(self._standing) >= MAX_REMEMBERED:
                self._standing.clear()  # many live tokens at once: they ask once more each
        self._standing[key] = (value, now + self._max_age_s, link)


def read_notice(path: Path, owner: int) -> bytes | None:
    """The notice's value, if it is a small regular file of the gateway's that only the gateway
    can write; None otherwise. Opened without following a link and without blocking (a FIFO put
    in its place must not hold the event loop)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != owner
            or info.st_mode & 0o022
            or info.st_size > NOTICE_MAX_BYTES
        ):
            return None
        data = os.read(fd, NOTICE_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if 16 <= len(data) <= NOTICE_MAX_BYTES else None
