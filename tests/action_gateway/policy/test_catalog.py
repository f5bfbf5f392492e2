"""The catalog built from a policy: the largest reply the gateway may send follows the policy's
declared output limits."""

from __future__ import annotations

from harness.gateway import POLICY
from safeport.action_gateway.policy.catalog import reply_cap
from safeport.shared.schemas.config import parse_gateway_policy


def test_the_reply_cap_follows_the_policys_output_limits() -> None:
    policy, _ = parse_gateway_policy(POLICY)
    # The largest declared output: the HTTP service's default 1 MiB response, escaped.
    assert reply_cap(policy) == 6 * 1024 * 1024 + 64 * 1024
    empty, _ = parse_gateway_policy("")
    assert reply_cap(empty) == 64 * 1024
