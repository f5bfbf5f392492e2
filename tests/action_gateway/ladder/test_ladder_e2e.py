"""Each rung of the decision ladder refusing in order, over the real sockets of a real gateway.

The vault and executor in the gateway process record every touch; each test proves that nothing
past the refusing rung was touched (no secret read, no executor call, no intent record).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from harness.fakes import CANARY
from harness.gateway import (
    POLICY,
    REPO,
    Gateway,
    clean_env,
    decide,
    ssh,
    wait_card,
    wait_until,
)

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.ladder"


def _secret_reads(gw: Gateway) -> list[dict[str, object]]:
    return [event for event in gw.touched() if event["event"] == "vault.secret"]


def _executor_calls(gw: Gateway) -> list[dict[str, object]]:
    return [event for event in gw.touched() if str(event["event"]).startswith("executor.ssh")]


def _denials(gw: Gateway) -> list[dict[str, Any]]:
    return [r["body"] for r in gw.journal("actions") if r["kind"] == "action.denied"]


def _nothing_touched(gw: Gateway) -> None:
    assert _secret_reads(gw) == []
    assert _executor_calls(gw) == []
    assert "action.intent" not in gw.kinds("actions")


def test_an_approved_action_runs_once_with_intent_before_outcome(
    gateway: Gateway,
) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("ok-1", service="worker"))
    card = wait_card(gateway)
    assert ["command", "systemctl status --no-pager worker"] in card["fields"]
    assert decide(gateway, card["id"])["ok"]
    reply = agent.next()
    assert reply["ok"] and reply["result"]["stdout"] == "active (running)\n"
    kinds = gateway.kinds("actions")
    assert kinds.index("action.intent") < kinds.index("action.outcome")
    assert [e["event"] for e in gateway.touched()][-2:] == ["vault.secret", "executor.ssh"]
    agent.exit()


def test_rung1_schema_invalid_is_refused_before_identity_or_policy(gateway: Gateway) -> None:
    conn = gateway.agent()
    bad = ssh("r1", service="worker")
    bad["surprise"] = True
    reply = conn.call(bad)
    assert reply["error"]["code"] == "invalid" and reply["id"] == "r1"
    conn.close()
    wait_until(lambda: "input.invalid" in gateway.kinds("actions"))
    _nothing_touched(gateway)


def test_rung2_a_peer_that_exec_d_another_program_is_refused(gateway: Gateway) -> None:
    # The process connects and is identified (its hello is answered), then execs a different
    # program that inherits the socket and asks.
    script = (
        "import os,socket,sys\n"
        "from safeport.shared.wire import send_message,recv_message\n"
        "s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1]);recv_message(s)\n"
        "os.set_inheritable(s.fileno(),True)\n"
        "send_message(s,{'v':1,'id':'h','type':'hello','versions':[1]});recv_message(s)\n"
        "os.execv(sys.executable,[sys.executable,'-m','tests.action_gateway.exec_child',"
        "str(s.fileno())])\n"
    )
    done = _run([sys.executable, "-c", script, str(gateway.agent_path)], gateway)
    assert '"code": "denied"' in done.stdout, done.stdout + done.stderr
    assert _denials(gateway)[-1]["category"] == "identity"
    _nothing_touched(gateway)


def test_rung2_a_socket_whose_connecting_process_exited_is_refused(gateway: Gateway) -> None:
    # The connecting process forks and exits; its child holds the socket and asks.
    script = (
        "import os,socket,sys,time,json\n"
        "from safeport.shared.wire import send_message,recv_message\n"
        "s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1]);recv_message(s)\n"
        "send_message(s,{'v':1,'id':'h','type':'hello','versions':[1]});recv_message(s)\n"
        "r,w=os.pipe()\n"
        "if os.fork():\n"
        "    os.close(w);os.read(r,1);os._exit(0)\n"
        "os.close(r);os.setsid();os.close(w);time.sleep(0.3)\n"
        "send_message(s,json.loads(sys.argv[2]));print(json.dumps(recv_message(s)))\n"
    )
    argv = [
        sys.executable,
        "-c",
        script,
        str(gateway.agent_path),
        json.dumps(ssh("r2", service="w")),
    ]
    proc = _run(argv, gateway)
    # The parent exits at once; its child prints the reply after it. The child is not the process
    # that connected: the sender check (or, without one, the identity re-check) refuses it.
    wait_until(lambda: any(d["category"] in ("sender", "identity") for d in _denials(gateway)))
    assert proc.returncode == 0
    _nothing_touched(gateway)


def test_rung3_caller_rules_that_admit_nobody_refuse(gateway: Gateway) -> None:
    gateway.write_policy(POLICY + "\n[callers]\nrules = []\n")
    gateway.accept_policy()
    reply = gateway.agent().call(ssh("r3", service="worker"))
    assert reply["error"]["code"] == "denied"
    assert _denials(gateway)[-1]["category"] == "caller"
    _nothing_touched(gateway)


def test_rung3_a_matching_caller_rule_admits_the_caller(gateway: Gateway) -> None:
    exe = os.path.realpath(sys.executable)
    # The caller is an interpreter: a rule by its path alone does not admit it (its script is
    # a claim), and the refusal says what would.
    gateway.write_policy(POLICY + f'\n[callers]\nrules = [{{ exe = "{exe}" }}]\n')
    gateway.accept_policy()
    reply = gateway.agent().call(ssh("r3a", command="nope"))
    assert _denials(gateway)[-1]["category"] == "caller"
    assert "interpreter" in _denials(gateway)[-1]["reason"], reply
    rule = f'{{ exe = "{exe}", interpreter = "any script" }}'
    gateway.write_policy(POLICY + f"\n[callers]\nrules = [{rule}]\n")
    gateway.accept_policy()
    reply = gateway.agent().call(ssh("r3b", command="nope"))
    assert _denials(gateway)[-1]["category"] == "unknown_action"  # got past rung 3
    assert reply["error"]["code"] == "denied"


def test_rung4_unknown_action_and_bad_args_never_touch_the_vault(gateway: Gateway) -> None:
    conn = gateway.agent()
    cases = {
        "unknown_host": {**ssh("a1", service="w"), "host_id": "prod-db"},
        "unknown_command": ssh("a2", command="reboot"),
        "unknown_service": _http("h1", service_id="billing"),
        "unknown_operation": _http("h2", operation_id="delete_everything"),
        "extra_arg": ssh("a3", service="w", extra="x"),
        "wrong_type": ssh("a4", service=5),
        "pattern": ssh("a5", service="Worker;rm"),
        "leading_dash": ssh("a6", service="-oProxyCommand=x"),
        "long": ssh("a7", service="a" * 10_000),
        "nul": ssh("a8", service="work\u0000er"),
        "int_out_of_range": ssh("a9", command="tail_log", lines=501),
        "negative_int": ssh("a10", command="tail_log", lines=-5),
    }
    for name, message in cases.items():
        reply = conn.call(message)
        assert reply["ok"] is False and reply["error"]["code"] == "denied", name
        assert "oProxy" not in reply["error"]["reason"] and "rm" not in reply["error"]["reason"]
    categories = [d["category"] for d in _denials(gateway)]
    assert categories[:4] == ["unknown_action"] * 4
    assert set(categories[4:]) == {"argument"}
    for denial in _denials(gateway):
        assert "oProxy" not in str(denial) and "aaaaaaaa" not in str(denial)
    _nothing_touched(gateway)
    assert gateway.healthy()


def _http(request_id: str, **fields: str) -> dict[str, object]:
    return {
        "v": 1,
        "id": request_id,
        "type": "propose",
        "action": "http_request",
        "service_id": "deploy-api",
        "operation_id": "deployment_status",
        "args": {"environment": "staging", "service": "worker"},
        **fields,
    }


def test_rung4_rate_cap_refuses_past_the_limit(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("l1", command="limited"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    assert agent.next()["ok"]
    assert agent.call(ssh("l2", command="limited"))["ok"]  # the session grant covers it
    third = agent.call(ssh("l3", command="limited"))
    assert third["error"]["code"] == "denied"
    assert _denials(gateway)[-1]["category"] == "rate"
    assert len(_executor_calls(gateway)) == 2
    agent.exit()


def test_rung5_locked_vault_denies_before_any_executor_is_called(gateway: Gateway) -> None:
    assert gateway.control("vault.lock")["ok"]
    reply = gateway.agent().call(ssh("k1", service="worker"))
    assert reply["error"]["code"] == "locked"
    assert _denials(gateway)[-1]["category"] == "locked"
    assert gateway.control("approvals.list")["result"]["cards"] == []  # no card was even opened
    _nothing_touched(gateway)


def test_rung6_no_approver_times_out_and_a_no_is_denied(gateway: Gateway) -> None:
    conn = gateway.agent()
    assert conn.call(ssh("t1", service="worker"))["error"]["code"] == "timeout"
    conn.close()  # this test process is about to approve: it must not be a connected agent
    agent = gateway.spawn_agent()
    agent.send(ssh("t2", service="worker"))
    assert decide(gateway, wait_card(gateway)["id"], approve=False)["ok"]
    assert agent.next()["error"]["code"] == "denied"
    categories = [d["category"] for d in _denials(gateway)]
    assert categories == ["approval_timeout", "approval_denied"]
    _nothing_touched(gateway)
    agent.exit()


def test_rung7_an_intent_that_cannot_be_written_means_nothing_runs(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("j1", service="worker"))
    card = wait_card(gateway)
    journal = gateway.home / "audit" / "actions.jsonl"
    if journal.exists():
        journal.rename(journal.with_name("actions.moved"))
    journal.mkdir()  # the writer re-opens by path and cannot: the intent is not durable
    assert decide(gateway, card["id"])["ok"]
    reply = agent.next()
    assert reply["error"]["code"] == "unavailable"
    assert _secret_reads(gateway) == [] and _executor_calls(gateway) == []
    journal.rmdir()
    agent.exit()


def test_rung8_an_upstream_failure_is_reported_and_journaled(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("u1", command="fail_probe"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    reply = agent.next()
    assert reply["error"]["code"] == "upstream"
    outcome = [r["body"] for r in gateway.journal("actions") if r["kind"] == "action.outcome"]
    assert outcome[-1]["status"] == "unreachable"
    agent.exit()


def test_rung9_an_outcome_that_cannot_be_written_says_do_not_retry(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("o1", command="slow_status"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    wait_until(lambda: len(_executor_calls(gateway)) == 1)
    journal = gateway.home / "audit" / "actions.jsonl"
    journal.rename(journal.with_name("actions.moved"))
    journal.mkdir()
    reply = agent.next()
    assert reply["error"]["code"] == "unavailable"
    assert "do not retry" in reply["error"]["reason"]
    journal.rmdir()
    agent.exit()


def test_no_reply_journal_or_log_ever_holds_the_secret(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    agent.send(ssh("s1", service="worker"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    reply = agent.next()
    assert CANARY not in str(reply)
    for path in (gateway.home / "audit").iterdir():
        assert CANARY.encode() not in path.read_bytes()
    assert CANARY not in gateway.stderr_path.read_text()
    agent.exit()


def _run(argv: list[str], gw: Gateway) -> Any:
    import subprocess

    return subprocess.run(
        argv, cwd=REPO, env=clean_env(gw.home), capture_output=True, text=True, timeout=30
    )


def test_an_action_that_cannot_be_built_safely_is_refused_before_any_card(
    gateway: Gateway,
) -> None:
    """Valid by its pattern, but `..` would leave the declared path: refused while preparing,
    journaled with its category, answered with a fixed sentence that does not echo the value."""
    permissive = POLICY + (
        "\n[http.services.deploy-api.operations.lookup]\n"
        'method = "GET"\npath = "/v1/items/{item}"\nresponse_fields = ["state"]\n'
        'params.item = { pattern = "^[a-z.%2]{1,20}$" }\n'
    )
    gateway.write_policy(permissive)
    gateway.accept_policy()
    agent = gateway.agent()
    for value in ("..", "%2e%2e", ".%2e"):
        reply = agent.call(
            {"v": 1, "id": f"bad-{len(value)}", "type": "propose", "action": "http_request",
             "service_id": "deploy-api", "operation_id": "lookup", "args": {"item": value}}
        )  # fmt: skip
        assert reply["error"]["code"] == "denied", reply
        assert value not in reply["error"]["reason"]
    assert gateway.control("approvals.list")["result"]["cards"] == []
    denied = _denials(gateway)
    assert [d["rung"] for d in denied[-3:]] == [4, 4, 4]
    assert {d["category"] for d in denied[-3:]} == {"prepare_invalid_target"}
    _nothing_touched(gateway)


def test_a_requester_that_execs_another_program_while_its_card_waits_gets_nothing_run(
    gateway: Gateway, tmp_path: Any
) -> None:
    """The card showed the program that asked; approved after it became another, nothing runs."""
    gateway.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 30"))
    gateway.accept_policy()
    script = tmp_path / "asker.py"
    script.write_text(
        "import os, socket, sys\n"
        "from safeport.shared.wire import recv_message, send_message\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); recv_message(s)\n"
        f"send_message(s, {ssh('swap-1', service='worker')!r})\n"
        "sys.stdin.readline()\n"  # the test says when: after the card is shown
        "os.set_inheritable(s.fileno(), True)\n"
        "os.execv('/bin/sleep', ['sleep', '60'])\n"
    )
    # Under flock, a plain binary, as the other requesters here: the test may then approve.
    lock = str(gateway.home / "client.lock")
    asker = subprocess.Popen(
        ["flock", "-s", lock, sys.executable, str(script), str(gateway.agent_path)],
        cwd=REPO,
        env=clean_env(gateway.home),
        stdin=subprocess.PIPE,
    )
    try:
        card = wait_card(gateway, timeout=10)
        pid = card["requester"][0]["pid"]
        assert asker.stdin is not None
        asker.stdin.write(b"go\n")
        asker.stdin.flush()
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{pid}/exe") != os.path.realpath("/bin/sleep"):
            assert time.monotonic() < deadline, "the requester did not exec"
            time.sleep(0.05)
        assert decide(gateway, card["id"])["ok"]
        wait_until(lambda: any(d["request_id"] == "swap-1" for d in _denials(gateway)), 10)
    finally:
        asker.kill()
        asker.wait()
    denial = next(d for d in _denials(gateway) if d["request_id"] == "swap-1")
    assert denial["category"] == "identity_after_approval"
    _nothing_touched(gateway)
