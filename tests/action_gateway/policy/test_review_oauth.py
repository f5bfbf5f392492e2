"""`sp policy check` and `accept` on an oauth credential: a grant not connected yet is no
problem (it is connected once its policy is served), one the vault holds as another kind is."""

from __future__ import annotations

from safeport.action_gateway.policy.review import review
from safeport.shared.schemas.config import parse_gateway_policy

POLICY = """
[credentials.tracker]
kind = "oauth"

[credentials.tracker.oauth]
issuer = "https://idp.example"
client_id = "abc123"

[credentials.api]
kind = "token"
"""


def _problems(vault_kinds: dict[str, str]) -> list[str]:
    policy = parse_gateway_policy(POLICY)[0]
    return [problem.text() for problem in review(policy, POLICY, vault_kinds)]


def test_a_grant_not_yet_connected_does_not_stop_the_policy_being_accepted() -> None:
    assert _problems({"api": "token"}) == []
    assert _problems({"api": "token", "tracker": "oauth"}) == []


def test_a_missing_token_and_a_grant_held_as_another_kind_are_still_problems() -> None:
    assert _problems({}) == [
        "line 9: credential 'api' is not in the vault (an agent's request would fail)"
    ]
    found = _problems({"api": "token", "tracker": "token"})
    assert found == ["line 2: credential 'tracker' is declared oauth but the vault holds a token"]
