"""A policy's review and OAuth grants: a grant is connected after its policy is accepted (the
connect reads the [oauth] table from the accepted policy), so a grant not yet in the vault does
not hold acceptance up; every other credential missing from the vault still does, and a vault
entry of another kind under a grant's name is still a problem."""

from __future__ import annotations

from harness.gateway import POLICY
from safeport.action_gateway.policy.review import review
from safeport.shared.schemas.config import parse_gateway_policy
from tests.action_gateway.handlers.test_grant_ops_e2e import OAUTH_POLICY

HELD = {"build-key": "ssh-key", "session-key": "ssh-key", "limited-key": "ssh-key"}


def _problems(text: str, held: dict[str, str]) -> list[str]:
    policy, _ = parse_gateway_policy(text)
    return [problem.message for problem in review(policy, text, held)]


def test_a_grant_not_yet_connected_does_not_hold_acceptance_up() -> None:
    held = {**HELD, "deploy-token": "token"}
    assert not [m for m in _problems(OAUTH_POLICY, held) if "tracker" in m]
    assert _problems(OAUTH_POLICY, held) == _problems(POLICY, held)


def test_another_credential_missing_from_the_vault_still_does() -> None:
    assert any("'deploy-token' is not in the vault" in m for m in _problems(OAUTH_POLICY, HELD))


def test_an_entry_of_another_kind_under_a_grants_name_is_a_problem() -> None:
    held = {**HELD, "deploy-token": "token", "tracker": "token"}
    assert any("'tracker' is declared oauth" in m for m in _problems(OAUTH_POLICY, held))
