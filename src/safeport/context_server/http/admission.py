"""Who may be served now: token buckets per approved client and one for everyone else.

Pure decision code (time is a parameter). Requests with no valid token -- the relay's pages, the
metadata documents, refused tokens -- share one bucket, so a flood of them is turned away with
429 while each approved client keeps its own budget: an unauthenticated flood cannot starve a
client whose token holds. A token request is charged to its client when its code or refresh
token is signed for that client (``grant_charge``). The per-client table is bounded; a client id
only reaches it after a signature of the gateway's over it held, so only the gateway can grow it.
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


class _Bucket:
    __slots__ = ("at", "level")

    def __init__(self, level: float, at: float) -> None:
        self.level = level
        self.at = at


class Admission:
    """Token buckets: one per approved client id, one shared by unauthenticated requests."""

    def __init__(
        self,
        clock: Clock = time.monotonic,
        client_rate: Rate = CLIENT_RATE,
        anonymous_rate: Rate = ANONYMOUS_RATE,
    ) -> None:
        self._clock = clock
        self._client_rate = client_rate
        self._anonymous_rate = anonymous_rate
        self._anonymous = _Bucket(anonymous_rate.burst, clock())
        self._clients: OrderedDict[str, _Bucket] = OrderedDict()

    def admit_client(self, client_id: str) -> float | None:
        """None if admitted, else the seconds until a request would be."""
        bucket = self._clients.get(client_id)
        if bucket is None:
            bucket = _Bucket(self._client_rate.burst, self._clock())
            self._clients[client_id] = bucket
            if len(self._clients) > MAX_CLIENTS:
                self._clients.popitem(last=False)
        else:
            self._clients.move_to_end(client_id)
        return self._take(bucket, self._client_rate)

    def admit_anonymous(self) -> float | None:
        return self._take(self._anonymous, self._anonymous_rate)

    def _take(self, bucket: _Bucket, rate: Rate) -> float | None:
        now = self._clock()
        bucket.level = min(rate.burst, bucket.level + (now - bucket.at) * rate.per_second)
        bucket.at = now
        if bucket.level >= 1.0:
            bucket.level -= 1.0
            return None
        return (1.0 - bucket.level) / rate.per_second
