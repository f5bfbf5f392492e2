"""`approver.register` with ``unlock`` false never unlocks a real gateway's vault, whatever it
carries, and tells nothing about the passphrase; with the vault unlocked by a human it registers
as before, and the one-shot registration (no ``unlock``) still unlocks as documented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.gateway import clean_env
from safeport.gateway_client.control_socket import GatewayClient, GatewayRefused
from safeport.shared.paths import locate
from safeport.shared.schemas import operations as ops
from safeport.shared.wire import recv_message, send_message
from safeport.vault.secrets import SecretBytes
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import PASSPHRASE, home, sp

__all__ = ["home"]  # the fixture: a real vault holding an ssh key, and gateway.toml

RIGHT = SecretBytes(PASSPHRASE.encode())


def _status(home: Path) -> dict[str, Any]:
    with GatewayClient(locate(env=clean_env(home)), timeout=10) as client:
        return client.call(ops.STATUS).model_dump()


def _kinds(home: Path) -> list[str]:
    path = home / "audit" / "sessions.jsonl"
    return [json.loads(line)["kind"] for line in path.read_text().splitlines()]


def _raw_register(home: Path, params: dict[str, Any]) -> dict[str, Any]:
    """approver.register as any local program could send it (after the listener check)."""
    with GatewayClient(locate(env=clean_env(home)), timeout=10) as client:
        sock = client.connection
        send_message(sock, {"v": 1, "id": "r", "type": "control", "op": "approver.register",
                            "params": params})  # fmt: skip
        reply: dict[str, Any] = recv_message(sock)
        return reply


# What a leftover approver (or anything else local) could send: none may unlock.
MAY_NOT_UNLOCK: list[tuple[dict[str, Any], str]] = [
    ({"passphrase": PASSPHRASE, "unlock": False}, "locked"),
    ({"passphrase": "a wrong guess", "unlock": False}, "locked"),
    # Anything but a JSON boolean is refused whole, never read as "unlock".
    ({"passphrase": PASSPHRASE, "unlock": "false"}, "invalid"),
    ({"passphrase": PASSPHRASE, "unlock": 0}, "invalid"),
    ({"passphrase": PASSPHRASE, "unlock": None}, "invalid"),
]


def test_a_registration_that_may_not_unlock_leaves_a_locked_vault_locked(home: Path) -> None:
    with running_gateway(home, unlock=False):
        reasons = set()
        for params, code in MAY_NOT_UNLOCK:
            reply = _raw_register(home, params)
            assert reply["error"]["code"] == code, params
            if code == "locked":
                reasons.add(reply["error"]["reason"])
            assert _status(home)["vault"] == "locked"
        # The same answer for a right and a wrong passphrase: no KDF ran, no failure counted.
        assert len(reasons) == 1 and "sp vault unlock" in reasons.pop()
        kinds = _kinds(home)
        assert "vault.unlocked" not in kinds and "approver.started" not in kinds
        assert "passphrase.rejected" not in kinds
        # The typed client, as `sp approvals watch` registers again, is refused alike.
        client = GatewayClient(locate(env=clean_env(home)), timeout=10)
        with client, pytest.raises(GatewayRefused) as refused:
            client.call_with_passphrase(ops.APPROVER_REGISTER, RIGHT.copy(), unlock=False)
        assert refused.value.code == "locked"
        assert _status(home)["vault"] == "locked"


def test_once_a_human_unlocked_a_registration_without_unlock_makes_an_approver(
    home: Path,
) -> None:
    with running_gateway(home, unlock=True):
        with GatewayClient(locate(env=clean_env(home)), timeout=10) as client:
            done = client.call_with_passphrase(ops.APPROVER_REGISTER, RIGHT.copy(), unlock=False)
            assert done.approver is True
        assert "approver.started" in _kinds(home)


def test_a_one_shot_registration_still_unlocks_a_locked_vault(home: Path) -> None:
    # `sp approvals list --passphrase-file`: a human's command, run now, for this run.
    with running_gateway(home, unlock=False):
        listed = sp(home, "approvals", "list", "--passphrase-file", str(home / "pw"))
        assert listed.returncode == 0, listed.stderr
        assert _status(home)["vault"] == "unlocked"
