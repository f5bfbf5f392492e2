"""`approver.register` unlocks a real gateway's vault only when it names the gateway's current
run: a registration naming none (an older client, a one-shot command) or an earlier run (a
process left running across a restart) leaves it locked and tells nothing about the passphrase;
with the vault unlocked by a human it registers as before. A card's answer proved with the
passphrase never unlocks."""

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

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.handlers"

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


# What a leftover approver (or anything else local) could send: none may unlock. The run an
# approver started against is named as ``unlock_run``; without it, or with another run's, a
# locked vault stays locked.
def _may_not_unlock(earlier_run: str) -> list[tuple[dict[str, Any], str]]:
    return [
        # A client that knows nothing of the field (an older watch, `sp approvals list`).
        ({"passphrase": PASSPHRASE}, "locked"),
        ({"passphrase": "a wrong guess"}, "locked"),
        # A process left running from an earlier run holds that run's id.
        ({"passphrase": PASSPHRASE, "unlock_run": earlier_run}, "locked"),
        ({"passphrase": PASSPHRASE, "unlock_run": "x" * 64}, "locked"),
        # The old boolean is no field any more: refused whole, never read as "unlock".
        ({"passphrase": PASSPHRASE, "unlock": True}, "invalid"),
        ({"passphrase": PASSPHRASE, "unlock_run": True}, "invalid"),
        ({"passphrase": PASSPHRASE, "unlock_run": ""}, "invalid"),
        ({"passphrase": PASSPHRASE, "unlock_run": [earlier_run]}, "invalid"),
    ]


def _run(home: Path) -> str:
    run: str = _status(home)["run"]
    return run


def test_after_a_restart_no_registration_but_one_naming_the_new_run_unlocks(home: Path) -> None:
    with running_gateway(home, unlock=False):
        earlier = _run(home)
    with running_gateway(home, unlock=False):
        assert _run(home) != earlier  # each run is named anew
        reasons = set()
        for params, code in _may_not_unlock(earlier):
            reply = _raw_register(home, params)
            assert reply["error"]["code"] == code, params
            if code == "locked":
                reasons.add(reply["error"]["reason"])
            assert _status(home)["vault"] == "locked", params
        # The same answer for a right and a wrong passphrase: no KDF ran, no failure counted.
        assert len(reasons) == 1 and "sp vault unlock" in reasons.pop()
        kinds = _kinds(home)
        assert "vault.unlocked" not in kinds and "approver.started" not in kinds
        assert "passphrase.rejected" not in kinds
        # The typed client, as a watch left from the earlier run registers, is refused alike.
        client = GatewayClient(locate(env=clean_env(home)), timeout=10)
        with client, pytest.raises(GatewayRefused) as refused:
            client.call_with_passphrase(ops.APPROVER_REGISTER, RIGHT.copy(), unlock_run=earlier)
        assert refused.value.code == "locked"
        # A one-shot command with the passphrase file (scripted, or left over) does not unlock.
        listed = sp(home, "approvals", "list", "--passphrase-file", str(home / "pw"))
        assert listed.returncode != 0 and "sp vault unlock" in listed.stderr, listed.stderr
        assert _status(home)["vault"] == "locked"

        # Legitimate: a registration naming this run (a watch started now) unlocks it.
        reply = _raw_register(home, {"passphrase": PASSPHRASE, "unlock_run": _run(home)})
        assert reply["ok"] is True, reply
        assert _status(home)["vault"] == "unlocked"


def test_naming_this_run_with_a_wrong_passphrase_is_a_counted_failure(home: Path) -> None:
    with running_gateway(home, unlock=False):
        reply = _raw_register(home, {"passphrase": "a wrong guess", "unlock_run": _run(home)})
        assert reply["error"]["code"] != "locked", reply
        assert _status(home)["vault"] == "locked"
        assert "passphrase.rejected" in _kinds(home)


def test_once_a_human_unlocked_a_registration_naming_no_run_makes_an_approver(
    home: Path,
) -> None:
    with running_gateway(home, unlock=True):
        with GatewayClient(locate(env=clean_env(home)), timeout=10) as client:
            done = client.call_with_passphrase(ops.APPROVER_REGISTER, RIGHT.copy())
            assert done.approver is True
        assert "approver.started" in _kinds(home)
        listed = sp(home, "approvals", "list", "--passphrase-file", str(home / "pw"))
        assert listed.returncode == 0, listed.stderr


def test_answering_a_card_with_the_passphrase_never_unlocks(home: Path) -> None:
    # The passphrase is authority for the answer only: a scripted or left-over `deny` of a
    # card after a restart proves it without unlocking the new run's vault.
    with running_gateway(home, unlock=False):
        with GatewayClient(locate(env=clean_env(home)), timeout=10) as client:
            sock = client.connection
            send_message(sock, {"v": 1, "id": "d", "type": "control", "op": "approvals.decide",
                                "params": {"id": "c-none", "approve": False,
                                           "passphrase": PASSPHRASE}})  # fmt: skip
            reply: dict[str, Any] = recv_message(sock)
        assert reply["ok"] is False, reply
        assert _status(home)["vault"] == "locked"
        assert "vault.unlocked" not in _kinds(home)
        assert "passphrase.rejected" not in _kinds(home)  # the proof itself passed


def test_a_registration_unlocks_only_the_lock_it_found_not_a_later_one(home: Path) -> None:
    # Without a restart: a watch that unlocked at its start, whose connection drops after a
    # human ran `sp vault lock`, registers again naming what it found then; the vault stays
    # locked. A watch started now (it reads `run` anew) may unlock, as documented.
    with running_gateway(home, unlock=False):
        found = _run(home)
        assert _raw_register(home, {"passphrase": PASSPHRASE, "unlock_run": found})["ok"]
        assert _status(home)["vault"] == "unlocked"
        assert sp(home, "vault", "lock").returncode == 0
        reply = _raw_register(home, {"passphrase": PASSPHRASE, "unlock_run": found})
        assert reply["error"]["code"] == "locked", reply
        assert _status(home)["vault"] == "locked"
        # Found while unlocked, then locked by a human: still not this lock.
        unlocked = sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
        assert unlocked.returncode == 0, unlocked.stderr
        while_open = _run(home)
        assert sp(home, "vault", "lock").returncode == 0
        reply = _raw_register(home, {"passphrase": PASSPHRASE, "unlock_run": while_open})
        assert reply["error"]["code"] == "locked", reply
        assert _status(home)["vault"] == "locked"
        fresh = _raw_register(home, {"passphrase": PASSPHRASE, "unlock_run": _run(home)})
        assert fresh["ok"] is True, fresh
        assert _status(home)["vault"] == "unlocked"
