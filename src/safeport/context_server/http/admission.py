"""Who may be served now: token buckets per approved client and one for everyone else.

Pure decision code (time is a parameter). Requests with no valid token -- the relay's pages, the
metadata documents, refused tokens -- share one bucket, so a flood of them is turned away with
429 while each approved client keeps its own budget: an unauthenticated flood cannot starve a
client whose token holds. A token request whose code or refresh token is signed for its client
(``grant_charge``) is charged to a small bucket of that grant's own, never to the client's: a
grant stays signed after it is spent, and a stranger who saw one (a code in a redirect URL left
in a log, a refresh token rotated long ago) could otherwise replay it to empty the bucket the
client's bearer requests and current grants are charged to. A client uses each grant once.
The tables are bounded; a client id reaches its table only with a token the gateway signed, a
grant its table only after a signature of the gateway's over it held.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]
MAX_CLIENTS = 1024


@dataclass(frozen=True)
class Rate:
    """``per_second`` sustained, ``burst`` at once."""

    per_second: float
    burst: float


# An approved client: an agent reading a project in parallel.
CLIENT_RATE = Rate(per_second=50.0, burst=200.0)
# Everyone without a valid token, together: a browser flow and discovery need a handful.
ANONYMOUS_RATE = Rate(per_second=20.0, burst=60.0)
# One code or refresh token: used once by its client, a few times if a try failed on the way.
GRANT_RATE = Rate(per_second=1.0, burst=4.0)


class _Bucket:
    __slots__ = ("at", "level")

    def __init__(self, level: float, at: float) -> None:
        self.level = level
        self.at = at


class Admission:
    """Token buckets: one per approved client id, one per signed grant (``admit_grant``), one
    shared by unauthenticated requests."""

    def __init__(
        self,
        clock: Clock = time.monotonic,
        client_rate: Rate = CLIENT_RATE,
        anonymous_rate: Rate = ANONYMOUS_RATE,
        grant_rate: Rate = GRANT_RATE,
    ) -> None:
        self._clock = clock
        self._client_rate = client_rate
        self._anonymous_rate = anonymous_rate
        self._grant_rate = grant_rate
        self._anonymous = _Bucket(anonymous_rate.burst, clock())
        self._clients: OrderedDict[str, _Bucket] = OrderedDict()
        self._grants: OrderedDict[str, _Bucket] = OrderedDict()

    def admit_client(self, client_id: str) -> float | None:
        """None if admitted, else the seconds until a request would be."""
        return self._take(
            self._keyed(self._clients, client_id, self._client_rate), self._client_rate
        )

    def admit_grant(self, grant: str) -> float | None:
        """A token request by the grant it carries (its random part, once its signature held)."""
        return self._take(self._keyed(self._grants, grant, self._grant_rate), self._grant_rate)

    def admit_anonymous(self) -> float | None:
        return self._take(self._anonymous, self._anonymous_rate)

    def _keyed(self, table: OrderedDict[str, _Bucket], key: str, rate: Rate) -> _Bucket:
        bucket = table.get(key)
        if bucket is None:
            bucket = _Bucket(rate.burst, self._clock())
            table[key] = bucket
            if len(table) > MAX_CLIENTS:
                table.popitem(last=False)
        else:
            table.move_to_end(key)
        return bucket

    def _take(self, bucket: _Bucket, rate: Rate) -> float | None:
        now = self._clock()
        bucket.level = min(rate.burst, bucket.level + (now - bucket.at) * rate.per_second)
        bucket.at = now
        if bucket.level >= 1.0:
            bucket.level -= 1.0
            return None
        return (1.0 - bucket.level) / rate.per_second
