"""The state `sp status` and `sp doctor` exit with, decided from what they gathered (pure):
a problem outranks a part that is down, and down outranks ok."""

from __future__ import annotations

from typing import Any

import pytest

from safeport.gateway_client.status_overview import EXIT_CODES, Overview
from safeport.shared.findings import Diagnosis, Finding

RUNNING = {"running": True, "vault": "unlocked", "alarms": [], "journal_space": {"low": False}}
POLICY: dict[str, Any] = {"file_exists": True, "file_error": None, "problems": []}


def view(**parts: Any) -> Overview:
    fields: dict[str, Any] = {"home": {}, "gateway": RUNNING, "vault": {"exists": True},
                              "policy": POLICY}  # fmt: skip
    return Overview(**{**fields, **parts})


def test_a_running_unlocked_gateway_with_nothing_broken_is_ok() -> None:
    assert view().state == "ok" and EXIT_CODES["ok"] == 0


@pytest.mark.parametrize(
    "gateway",
    [{"running": False}, {**RUNNING, "vault": "locked"}, {**RUNNING, "vault": "missing"}],
)
def test_a_stopped_gateway_or_a_locked_vault_is_down(gateway: dict[str, Any]) -> None:
    assert view(gateway=gateway).state == "down" and EXIT_CODES["down"] == 2


@pytest.mark.parametrize(
    "parts",
    [
        {"journals": [{"journal": "actions", "ok": False}]},
        {"gateway": {**RUNNING, "alarms": [{"kind": "vault.rollback"}]}},
        {"gateway": {**RUNNING, "journal_space": {"low": True}}},
        {"vault": {"exists": True, "problem": "not a vault"}},
        {"policy": {**POLICY, "file_error": "bad key"}},
        {"policy": {**POLICY, "problems": ["credential x is not in the vault"]}},
        {"clients": [{"client": "cursor", "ok": False}]},
        {"secrets": [{"check": "redaction", "state": "fail"}]},
        # an OAuth grant its provider refused: its actions fail until it is reconnected
        {"gateway": {**RUNNING, "dead_grants": [{"name": "tracker", "reason": "revoked"}]}},
        # a problem outranks a gateway that is down
        {"gateway": {"running": False}, "journals": [{"journal": "sessions", "ok": False}]},
    ],
)
def test_anything_broken_is_a_problem(parts: dict[str, Any]) -> None:
    assert view(**parts).state == "problem" and EXIT_CODES["problem"] == 1


def test_a_missing_policy_file_or_a_warning_is_not_a_problem() -> None:
    missing = {"file_exists": False, "file_error": "does not exist", "problems": ["x"]}
    assert view(policy=missing).state == "ok"
    assert view(secrets=[{"check": "redaction", "state": "warn"}]).state == "ok"


def test_doctor_fails_outrank_a_gateway_that_is_down() -> None:
    down = Finding("gateway", "warn", "no gateway is listening")
    failed = Finding("folder /x", "fail", "has mode 0755")
    assert Diagnosis((down, failed)).exit_code == 1
    assert Diagnosis((down,)).exit_code == 2
    assert Diagnosis((Finding("vault unlocked", "warn", "locked"),)).exit_code == 2
    assert Diagnosis((Finding("keyring", "warn", "slow"),)).exit_code == 0
    assert Diagnosis((Finding("gateway", "ok", "running"),)).verdict == "ok"
