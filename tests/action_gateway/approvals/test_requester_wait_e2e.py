"""A proposal's ``wait_s`` (how long its MCP client can wait) shortens its card, never lengthens
it, and a value outside the protocol opens no card at all."""

from __future__ import annotations

from typing import Any

import pytest

from harness.gateway import POLICY, Gateway, decide, ssh, wait_card

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.approvals"


def _with_wait(request_id: str, wait: Any) -> dict[str, Any]:
    return {**ssh(request_id, service="worker"), "wait_s": wait}


@pytest.mark.parametrize("wait", [4, 5, 60, 3600])
def test_a_longer_wait_than_the_policy_is_not_granted(gateway: Gateway, wait: int) -> None:
    agent = gateway.spawn_agent()
    agent.send(_with_wait("long", wait))
    card = wait_card(gateway)
    assert card["timeout_s"] == 3  # the test policy's approval_timeout_s
    decide(gateway, card["id"])
    assert agent.next()["ok"]
    agent.exit()


def test_a_shorter_wait_shortens_the_card_and_an_answer_in_time_still_runs(
    gateway: Gateway,
) -> None:
    gateway.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 120"))
    gateway.accept_policy()
    agent = gateway.spawn_agent()
    agent.send(_with_wait("short", 50))
    card = wait_card(gateway)
    assert card["timeout_s"] == 50
    decide(gateway, card["id"])
    assert agent.next()["ok"]
    agent.send(ssh("plain", service="worker"))  # without it, the policy's wait
    card = wait_card(gateway)
    assert card["timeout_s"] == 120
    decide(gateway, card["id"])
    assert agent.next()["ok"]
    agent.exit()


@pytest.mark.parametrize("wait", [0, -1, 3601, "50", 1.5, True, None, [50], {"s": 50}])
def test_a_wait_outside_the_protocol_opens_no_card(gateway: Gateway, wait: Any) -> None:
    agent = gateway.agent()
    answer = agent.call(_with_wait("bad", wait))
    if wait is None:  # absent and null are the same: the policy's wait
        assert answer.get("ok") or answer["error"]["code"] == "timeout", answer
        return
    assert not answer.get("ok") and answer["error"]["code"] != "timeout", answer
    assert gateway.control("approvals.list")["result"]["cards"] == []
