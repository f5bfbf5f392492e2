"""Pure pieces of the ladder: result filtering, rate caps."""

from __future__ import annotations

import pytest

from safeport.action_gateway.ladder.result_filters import filter_http, filter_ssh
from safeport.action_gateway.policy.rate_limits import RateLimiter
from safeport.errors import Denied
from safeport.shared.schemas.wire import HttpResult, SshExecResult


def test_http_results_carry_only_declared_response_fields() -> None:
    result = HttpResult(status=200, fields={"state": "ok", "token": "s3cr3t", "revision": 7})
    assert filter_http(result, ["state", "revision"]) == {
        "status": 200,
        "fields": {"state": "ok", "revision": 7},
    }


def test_ssh_output_over_the_cap_is_truncated_and_flagged() -> None:
    result = SshExecResult(
        exit_status=0,
        stdout="é" * 100,
        stderr="",
        stdout_truncated=False,
        stderr_truncated=False,
        duration_ms=1,
    )
    filtered = filter_ssh(result, 11)
    assert filtered["stdout"] == "é" * 5 and filtered["stdout_truncated"] is True
    assert filtered["stderr_truncated"] is False


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


def test_the_reply_cap_follows_the_policys_output_limits() -> None:
    from harness.gateway import POLICY
    from safeport.action_gateway.policy.catalog import reply_cap
    from safeport.shared.schemas.config import parse_gateway_policy

    policy, _ = parse_gateway_policy(POLICY)
    # The largest declared output: the HTTP service's default 1 MiB response, escaped.
    assert reply_cap(policy) == 6 * 1024 * 1024 + 64 * 1024
    empty, _ = parse_gateway_policy("")
    assert reply_cap(empty) == 64 * 1024
