"""The per-credential rate cap: a sliding minute, and no cap when none is declared."""

from __future__ import annotations

import pytest

from safeport.action_gateway.policy.rate_limits import RateLimiter
from safeport.errors import Denied


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_rate_cap_is_a_sliding_minute_per_credential() -> None:
    clock = Clock()
    rates = RateLimiter(clock)
    rates.take("a", 2)
    rates.take("a", 2)
    rates.take("b", 2)
    with pytest.raises(Denied, match="over its cap"):
        rates.take("a", 2)
    clock.now = 60.0
    rates.take("a", 2)
    rates.take("a", None)  # no cap declared
