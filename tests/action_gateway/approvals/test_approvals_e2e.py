"""Approvals over the real sockets: session and per-call grants, voiding, approver trees."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from harness.gateway import (
    PASSPHRASE,
    POLICY,
    REPO,
    Gateway,
    clean_env,
    copy_as_client,
    decide,
    ssh,
    wait_card,
    wait_until,
)

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.approvals"


def _executions(gw: Gateway) -> int:
    return sum(1 for event in gw.touched() if event["event"] == "executor.ssh")


def _approver_argv(card_id: str) -> list[str]:
    params = json.dumps({"id": card_id, "approve": True, "passphrase": PASSPHRASE})
    return [sys.executable, "-m", "tests.action_gateway.control_client", "approvals.decide", params]


def test_a_session_grant_covers_its_process_and_ends_when_that_process_exits(
    gateway: Gateway,
) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("s1", command="uptime"))
    card = wait_card(gateway)
    assert card["scope"] == "session" and card["requester"][0]["pid"] == agent.pid
    assert decide(gateway, card["id"])["ok"]
    assert agent.next()["ok"]
    # Further calls need no card while the process lives.
    assert agent.call(ssh("s2", command="uptime"))["ok"]
    sessions = gateway.control("sessions.list")["result"]["sessions"]
    assert [s["requester_pid"] for s in sessions] == [agent.pid]
    agent.exit()
    wait_until(lambda: gateway.control("sessions.list")["result"]["sessions"] == [])
    # The grant leaves the table before its end is journaled: wait for the record itself.
    wait_until(lambda: "session.ended" in gateway.kinds("sessions"))
    ended = [r["body"] for r in gateway.journal("sessions") if r["kind"] == "session.ended"]
    assert ended[-1]["reason"] == "process exited"
    # A new process of the same program is a new requester: it needs its own approval.
    fresh = gateway.spawn_agent()
    assert fresh.call(ssh("s3", command="uptime"))["error"]["code"] == "timeout"
    assert _executions(gateway) == 2
    fresh.exit()


def test_a_per_call_grant_cannot_be_replayed(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("p1", service="worker"))
    card = wait_card(gateway)
    assert decide(gateway, card["id"])["ok"]
    assert agent.next()["ok"]
    # Approving the same card again finds nothing to approve.
    again = decide(gateway, card["id"])
    assert again["ok"] is False and "no pending card" in again["error"]["reason"]
    # The identical request (same id, then a new id) asks again and, unanswered, times out.
    assert agent.call(ssh("p1", service="worker"))["error"]["code"] == "timeout"
    assert agent.call(ssh("p2", service="worker"))["error"]["code"] == "timeout"
    assert _executions(gateway) == 1
    agent.exit()


def test_a_pending_card_is_voided_by_a_lock_and_cannot_be_approved_after_unlock(
    gateway: Gateway,
) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("v1", service="worker"))
    card = wait_card(gateway)
    assert gateway.control("vault.lock")["ok"]
    reply = agent.next()
    assert reply["error"]["code"] == "locked"
    gateway.unlock()
    assert decide(gateway, card["id"])["ok"] is False
    assert _executions(gateway) == 0
    agent.exit()


def test_a_session_grant_does_not_survive_a_lock_and_unlock(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("w1", command="uptime"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    assert agent.next()["ok"]
    assert gateway.control("vault.lock")["ok"]
    gateway.unlock()
    assert gateway.control("sessions.list")["result"]["sessions"] == []
    assert agent.call(ssh("w2", command="uptime"))["error"]["code"] == "timeout"
    assert _executions(gateway) == 1
    agent.exit()


def test_an_approver_inside_the_requesting_process_is_refused(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("a1", service="worker"))
    card = wait_card(gateway)
    child = agent.spawn(_approver_argv(card["id"]))  # the approver is the requester's child
    reply = json.loads(child["out"])
    assert reply["ok"] is False and "inside the requesting process" in reply["error"]["reason"]
    # The card still waits for a legitimate approver, who can approve it.
    assert decide(gateway, card["id"])["ok"]
    assert agent.next()["ok"]
    agent.exit()


def _client_tree(gw: Gateway, tmp: Path) -> subprocess.Popen[str]:
    """An "IDE" (a non-interpreter program) that runs the requester, then an approver."""
    client = copy_as_client(tmp)
    script = (
        "import subprocess,sys,json,time\n"
        "req=subprocess.Popen([sys.argv[1],'-m','harness.agent_client'],"
        "stdin=subprocess.PIPE,stdout=subprocess.PIPE,text=True)\n"
        "req.stdout.readline()\n"
        "req.stdin.write(json.dumps(json.loads(sys.argv[2]))+'\\n');req.stdin.flush()\n"
        "cards=[]\n"
        "for _ in range(200):\n"
        "    out=subprocess.run([sys.argv[1],'-m','tests.action_gateway.control_client',"
        "'approvals.list','{}'],capture_output=True,text=True).stdout\n"
        "    cards=json.loads(out)['result']['cards']\n"
        "    if cards: break\n"
        "    time.sleep(0.05)\n"
        "card=cards[0]['id']\n"
        "p=json.dumps({'id':card,'approve':True,'passphrase':sys.argv[3]})\n"
        "out=subprocess.run([sys.argv[1],'-m','tests.action_gateway.control_client',"
        "'approvals.decide',p],capture_output=True,text=True).stdout\n"
        "print(out.strip());sys.stdout.flush()\n"
        "print(req.stdout.readline().strip());req.stdin.close();req.wait()\n"
    )
    return subprocess.Popen(
        [
            str(client),
            "-c",
            script,
            sys.executable,
            json.dumps(ssh("i1", service="worker")),
            PASSPHRASE,
        ],
        cwd=REPO,
        env=clean_env(gw.home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_an_approver_inside_the_requesters_client_is_refused(
    gateway: Gateway, tmp_path: Path
) -> None:
    proc = _client_tree(gateway, tmp_path)
    out, err = proc.communicate(timeout=30)
    decided, proposal = (json.loads(line) for line in out.splitlines()[:2])
    assert decided["ok"] is False, err
    assert "inside the requester's client" in decided["error"]["reason"]
    assert proposal["error"]["code"] == "timeout"
    assert _executions(gateway) == 0


def test_allow_approver_in_client_admits_an_approver_in_the_client(
    gateway: Gateway, tmp_path: Path
) -> None:
    gateway.write_policy(
        POLICY.replace("[gateway]\n", "[gateway]\nallow_approver_in_client = true\n")
    )
    gateway.accept_policy()
    proc = _client_tree(gateway, tmp_path)
    out, err = proc.communicate(timeout=30)
    decided, proposal = (json.loads(line) for line in out.splitlines()[:2])
    assert decided["ok"] is True, err
    assert proposal["ok"] is True
    assert _executions(gateway) == 1


def test_cancel_withdraws_a_pending_card_and_nothing_runs(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("c1", service="worker"))
    card = wait_card(gateway)
    agent.send({"v": 1, "id": "c2", "type": "cancel", "target": "c1"})
    replies = {reply["id"]: reply for reply in (agent.next(), agent.next())}
    assert replies["c2"]["result"]["cancelled"] is True
    assert replies["c1"]["error"]["code"] == "denied"
    assert decide(gateway, card["id"])["ok"] is False
    assert gateway.control("approvals.list")["result"]["cards"] == []
    assert _executions(gateway) == 0
    agent.exit()


def test_one_pending_card_per_requester(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("o1", service="worker"))
    wait_card(gateway)
    second = agent.call(ssh("o2", service="other"))
    assert second["error"]["code"] == "denied" and "already waiting" in second["error"]["reason"]
    assert len(gateway.control("approvals.list")["result"]["cards"]) == 1
    agent.exit()


def test_a_revoked_session_needs_a_new_approval(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("r1", command="uptime"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    assert agent.next()["ok"]
    session = gateway.control("sessions.list")["result"]["sessions"][0]["id"]
    assert gateway.control("sessions.revoke", id=session)["ok"]
    assert agent.call(ssh("r2", command="uptime"))["error"]["code"] == "timeout"
    assert "session.revoked" in gateway.kinds("sessions")
    agent.exit()


def test_a_watching_approver_sees_cards_and_decides_them(gateway: Gateway) -> None:
    watcher = gateway.control_conn()
    reg = watcher.call(
        {
            "v": 1,
            "id": "r",
            "type": "control",
            "op": "approver.register",
            "params": {"passphrase": PASSPHRASE},
        }
    )
    assert reg["ok"], reg
    assert watcher.call({"v": 1, "id": "w", "type": "control", "op": "approvals.watch"})["ok"]
    agent = gateway.spawn_agent()
    agent.send(ssh("x1", service="worker"))
    event = watcher.recv()
    assert event["result"]["event"] == "card"
    card_id = event["result"]["id"]
    decided = watcher.call(
        {
            "v": 1,
            "id": "d",
            "type": "control",
            "op": "approvals.decide",
            "params": {"id": card_id, "approve": True},
        }
    )
    while decided.get("id") != "d":  # a card.closed event may arrive first
        decided = watcher.recv()
    assert decided["ok"], decided
    assert agent.next()["ok"]
    watcher.close()
    agent.exit()


def test_a_wrong_passphrase_approves_nothing(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("n1", service="worker"))
    card = wait_card(gateway)
    reply = gateway.control("approvals.decide", id=card["id"], approve=True, passphrase="guess")
    assert reply["ok"] is False and reply["error"]["code"] == "denied"
    time.sleep(0.1)
    assert gateway.control("approvals.list")["result"]["cards"][0]["id"] == card["id"]
    agent.exit()


def test_a_passphrase_from_inside_the_agents_tree_is_refused(gateway: Gateway) -> None:
    assert gateway.control("vault.lock")["ok"]
    agent = gateway.spawn_agent()
    params = json.dumps({"passphrase": PASSPHRASE})
    argv = [sys.executable, "-m", "tests.action_gateway.control_client", "vault.unlock", params]
    child = agent.spawn(argv)
    reply = json.loads(child["out"])
    assert reply["ok"] is False and "inside the requesting process" in reply["error"]["reason"]
    assert gateway.control("status")["result"]["vault"] == "locked"
    agent.exit()
    gateway.unlock()  # the same request from outside the agent's tree is accepted


def test_proposals_waiting_on_cards_never_starve_the_approver(gateway_home: Path) -> None:
    # Two workers, three requesters waiting: every worker is blocked on a card, yet the
    # approver's requests run (on their own pool) and release them one by one.
    gw = Gateway(gateway_home)
    gw.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 30"))
    gw.start("--workers", "2")
    try:
        gw.unlock()
        gw.accept_policy()
        agents = [gw.spawn_agent() for _ in range(3)]
        for index, agent in enumerate(agents):
            agent.send(ssh(f"q{index}", service="worker"))
        for _ in agents:
            reply = decide(gw, wait_card(gw, timeout=10)["id"])
            assert reply["ok"], reply
        for agent in agents:
            assert agent.next(15)["ok"]
            agent.exit()
    finally:
        assert gw.stop() == 0
