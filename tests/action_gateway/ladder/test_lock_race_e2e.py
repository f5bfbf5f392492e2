"""A lock that lands after the approval was consumed and before the secret is read reaches the
agent as ``locked`` (the one locked error), never as ``internal``, and nothing runs."""

from __future__ import annotations

from harness.gateway import (
    HOST_KEY,
    POLICY,
    Gateway,
    decide,
    wait_card,
    wait_until,
)

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.ladder"

RACE = f"""
[credentials.race-key]
kind = "ssh-key"
approval = "per-call"

[ssh.hosts.race-host]
address = "203.0.113.10"
user = "deploy"
host_keys = ["{HOST_KEY}"]
credential = "race-key"

[ssh.hosts.race-host.commands.uptime]
argv = ["uptime"]
"""


def _proposal(request_id: str) -> dict[str, object]:
    return {
        "v": 1,
        "id": request_id,
        "type": "propose",
        "action": "ssh_exec",
        "host_id": "race-host",
        "command_id": "uptime",
        "args": {},
    }


def test_a_lock_between_the_consumed_approval_and_the_secret_answers_locked(
    gateway: Gateway,
) -> None:
    gateway.write_policy(POLICY + RACE)
    gateway.accept_policy()
    agent = gateway.spawn_agent()
    agent.send(_proposal("r1"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    # The ladder has consumed the approval and is reading the credential: lock now.
    wait_until(lambda: any(e["event"] == "vault.secret_waiting" for e in gateway.touched()))
    assert gateway.control("vault.lock")["result"]["changed"] is True
    reply = agent.next()
    assert reply["error"]["code"] == "locked", reply
    assert "locked" in reply["error"]["reason"]
    assert not [e for e in gateway.touched() if e["event"] == "executor.ssh"]
    # The intent is closed by an outcome that says why nothing ran.
    outcomes = [r for r in gateway.journal("actions") if r["kind"] == "action.outcome"]
    assert outcomes[-1]["body"]["status"] == "locked"
    agent.exit()


def test_an_approved_proposal_without_a_lock_still_runs(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(
        {**_proposal("ok1"), "host_id": "session-host"},
    )
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    assert agent.next()["ok"] is True
    assert [e for e in gateway.touched() if e["event"] == "executor.ssh"]
    agent.exit()
