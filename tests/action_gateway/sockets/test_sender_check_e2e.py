"""The per-message sender check on agent.sock (Linux, SO_PASSCRED), against a real gateway.

Every frame must have been written, every byte of it, by the process that connected and was
identified. Each attack below runs in real processes on the real socket; each is refused
``denied``, journaled with the category ``sender`` and never reaches the ladder (no card, no
secret read, no executor call). The legitimate requester keeps working beside them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from harness.gateway import (
    REPO,
    Gateway,
    clean_env,
    decide,
    wait_card,
    wait_until,
)

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.sockets"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="per-message credentials are Linux's"
)

# Helpers every attacker script starts with: connect, speak, print JSON lines.
PRELUDE = """
import json, os, socket, struct, sys, time
from safeport.shared.wire import encode_frame, recv_message, send_message
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    assert recv_message(s)["type"] == "welcome"  # the gateway speaks first
    return s
def propose(request_id, host="build-staging", command="read_service_status"):
    args = {"service": "worker"} if command == "read_service_status" else {}
    return {"v": 1, "id": request_id, "type": "propose", "action": "ssh_exec",
            "host_id": host, "command_id": command, "args": args}
def reply(s):
    try:
        return recv_message(s)
    except Exception as exc:
        return {"closed": type(exc).__name__}
"""


def _start(gw: Gateway, body: str) -> subprocess.Popen[str]:
    """A requester under a plain client (``flock``), so this test process may approve."""
    requester = [sys.executable, "-c", PRELUDE + body, str(gw.agent_path)]
    return subprocess.Popen(
        ["flock", "-s", str(gw.home / "client.lock"), *requester],
        cwd=REPO,
        env=clean_env(gw.home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _lines(proc: subprocess.Popen[str], timeout: float = 20) -> list[dict[str, Any]]:
    out, err = proc.communicate(None if proc.stdin is None or proc.stdin.closed else "", timeout)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert lines, err
    return lines


def _sender_denials(gw: Gateway) -> list[dict[str, Any]]:
    return [
        r["body"]
        for r in gw.journal("actions")
        if r["kind"] == "action.denied" and r["body"]["category"] == "sender"
    ]


def _nothing_reached_the_ladder(gw: Gateway) -> None:
    assert [e for e in gw.touched() if e["event"] in ("vault.secret", "executor.ssh")] == []
    assert "action.intent" not in gw.kinds("actions")
    assert gw.control("approvals.list")["result"]["cards"] == []


def test_a_forked_child_asking_while_its_parent_execs_a_genuine_requester_is_refused(
    gateway: Gateway,
) -> None:
    # The attack: connect, fork, the parent execs a genuine program (the card would show
    # it), and the child asks on the inherited socket.
    body = """
s = connect()
os.set_inheritable(s.fileno(), True)
r, w = os.pipe()
if os.fork() == 0:
    os.close(w)
    os.read(r, 1)  # the parent is about to exec
    time.sleep(0.3)
    send_message(s, propose("child-1"))
    out({"child": os.getpid(), "reply": reply(s)})
    os._exit(0)
os.close(r)
out({"parent": os.getpid()})
os.close(w)
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3)"])
"""
    proc = _start(gateway, body)
    lines = _lines(proc)
    parent = next(line["parent"] for line in lines if "parent" in line)
    child = next(line for line in lines if "child" in line)
    assert child["reply"]["ok"] is False
    assert child["reply"]["error"]["code"] == "denied"
    assert child["reply"]["id"] == "child-1"
    wait_until(lambda: bool(_sender_denials(gateway)))
    denial = _sender_denials(gateway)[-1]
    assert denial["senders"] == [child["child"]]
    assert denial["requester"]["chain"][0]["pid"] == parent
    assert denial["request_id"] == "child-1"
    _nothing_reached_the_ladder(gateway)
    assert gateway.healthy()


def test_a_forked_child_cannot_use_its_parents_session_grant(gateway: Gateway) -> None:
    body = """
s = connect()
send_message(s, propose("grant", host="session-host", command="uptime"))
out({"first": reply(s)})
sys.stdin.readline()  # the test has seen the grant work
pid = os.fork()
if pid == 0:
    send_message(s, propose("child", host="session-host", command="uptime"))
    out({"child": reply(s)})
    os._exit(0)
os.waitpid(pid, 0)
"""
    proc = _start(gateway, body)
    card = wait_card(gateway)
    assert decide(gateway, card["id"])["ok"]
    assert proc.stdout is not None and proc.stdin is not None
    first = json.loads(proc.stdout.readline())["first"]
    assert first["ok"], first
    sessions = gateway.control("sessions.list")["result"]["sessions"]
    assert len(sessions) == 1
    runs_before = _ssh_runs(gateway)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    child = _lines(proc)[-1]["child"]
    assert child["ok"] is False and child["error"]["code"] == "denied"
    wait_until(lambda: bool(_sender_denials(gateway)))
    assert _ssh_runs(gateway) == runs_before  # the grant ran nothing for the child
    assert gateway.control("approvals.list")["result"]["cards"] == []


def test_the_legitimate_requester_keeps_its_session_grant_and_may_ask_from_threads(
    gateway: Gateway,
) -> None:
    # Threads share their process's pid: a requester that writes from several threads is fine.
    body = """
import threading
s = connect()
send_message(s, propose("grant", host="session-host", command="uptime"))
out({"first": reply(s)})
lock = threading.Lock()
def ask(n):
    with lock:
        send_message(s, propose(f"t{n}", host="session-host", command="uptime"))
threads = [threading.Thread(target=ask, args=(n,)) for n in range(3)]
[t.start() for t in threads]; [t.join() for t in threads]
out({"more": [reply(s) for _ in range(3)]})
"""
    proc = _start(gateway, body)
    card = wait_card(gateway)
    assert decide(gateway, card["id"])["ok"]
    lines = _lines(proc)
    assert lines[0]["first"]["ok"], lines
    more = lines[1]["more"]
    assert all(item["ok"] for item in more), more
    assert sorted(item["id"] for item in more) == ["t0", "t1", "t2"]
    assert _sender_denials(gateway) == []


def test_half_a_frame_from_a_child_and_the_rest_from_the_parent_is_refused(
    gateway: Gateway,
) -> None:
    body = """
s = connect()
send_message(s, {"v": 1, "id": "h", "type": "hello", "versions": [1]})
out({"hello": reply(s)})
frame = encode_frame(propose("split"))
pid = os.fork()
if pid == 0:
    s.sendall(frame[:10])
    os._exit(0)
os.waitpid(pid, 0)
s.sendall(frame[10:])
out({"parent": os.getpid(), "reply": reply(s), "after": reply(s)})
"""
    lines = _lines(_start(gateway, body))
    assert lines[0]["hello"]["ok"]  # the parent itself is served
    last = lines[-1]
    assert last["reply"]["error"]["code"] == "denied" and last["reply"]["id"] == "split"
    assert "closed" in last["after"]  # the connection is closed after the refusal
    wait_until(lambda: bool(_sender_denials(gateway)))
    assert last["parent"] not in _sender_denials(gateway)[-1]["senders"]
    _nothing_reached_the_ladder(gateway)


def test_a_socket_passed_to_another_process_with_scm_rights_is_refused(gateway: Gateway) -> None:
    # The requester connects and is identified, then hands its socket to an unrelated process
    # (not a child) over a Unix socket pair; that process asks.
    body = """
import subprocess
s = connect()
send_message(s, {"v": 1, "id": "h", "type": "hello", "versions": [1]})
out({"hello": reply(s)})
ours, theirs = socket.socketpair()
receiver = (
    "import json,socket,sys\\n"
    "from safeport.shared.wire import recv_message,send_message\\n"
    "p=socket.socket(fileno=int(sys.argv[1]))\\n"
    "msg,fds,_,_=socket.recv_fds(p,16,1)\\n"
    "g=socket.socket(fileno=fds[0])\\n"
    "send_message(g,json.loads(sys.argv[2]))\\n"
    "import os\\n"
    "try:\\n    r=recv_message(g)\\nexcept Exception as e:\\n    r={'closed':type(e).__name__}\\n"
    "print(json.dumps({'receiver':os.getpid(),'reply':r}))\\n"
)
child = subprocess.Popen([sys.executable, "-c", receiver, str(theirs.fileno()),
                          json.dumps(propose("passed"))], pass_fds=[theirs.fileno()],
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
socket.send_fds(ours, [b"x"], [s.fileno()])
print(child.communicate(timeout=20)[0], end="")
"""
    lines = _lines(_start(gateway, body))
    passed = next(line for line in lines if "receiver" in line)
    assert passed["reply"]["error"]["code"] == "denied" and passed["reply"]["id"] == "passed"
    wait_until(lambda: bool(_sender_denials(gateway)))
    assert _sender_denials(gateway)[-1]["senders"] == [passed["receiver"]]
    _nothing_reached_the_ladder(gateway)


def test_descriptors_sent_to_the_gateway_are_closed_and_the_frame_still_checked(
    gateway: Gateway,
) -> None:
    # A requester that attaches descriptors to its own frame: the gateway takes none of them.
    body = """
s = connect()
r, w = os.pipe()
frame = encode_frame({"v": 1, "id": "h", "type": "hello", "versions": [1]})
socket.send_fds(s, [frame], [r, w])
out({"hello": reply(s)})
os.close(r)
out({"eof_seen_by_writer": True})
"""
    before = _open_fds(gateway)
    lines = _lines(_start(gateway, body))
    assert lines[0]["hello"]["ok"], lines
    time.sleep(0.2)
    assert _open_fds(gateway) <= before + 2  # nothing piled up in the gateway
    assert gateway.healthy()


def _open_fds(gw: Gateway) -> int:
    assert gw.proc is not None
    return len(os.listdir(f"/proc/{gw.proc.pid}/fd"))


def _ssh_runs(gw: Gateway) -> int:
    return sum(1 for event in gw.touched() if event["event"] == "executor.ssh")


def test_a_request_written_before_the_gateway_identified_its_sender_is_refused(
    gateway: Gateway,
) -> None:
    """Connect, write a proposal at once, exec a genuine program: the pid is the same, so only
    the order tells. The gateway speaks first once it has read the peer; bytes already queued
    then were written by whatever the process was before, and nothing of them is served."""
    requester = _start(
        gateway,
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "s.connect(sys.argv[1])\n"
        "send_message(s, propose('early'))\n"
        "os.set_inheritable(s.fileno(), True)\n"
        "os.execv('/bin/sleep', ['sleep', '30'])\n",
    )
    try:
        wait_until(
            lambda: any(
                r["kind"] == "input.invalid" and r["body"]["counts"].get("before_welcome")
                for r in gateway.journal("actions")
            ),
            10,
        )
        assert gateway.control("approvals.list")["result"]["cards"] == []
        assert not any(str(e["event"]).startswith("executor") for e in gateway.touched())
    finally:
        requester.kill()
        requester.wait()


def test_a_client_that_waits_for_the_welcome_is_served(gateway: Gateway) -> None:
    requester = _start(
        gateway,
        "s = connect()\n"
        "send_message(s, {'v': 1, 'id': 'h', 'type': 'hello', 'versions': [1]})\n"
        "out(reply(s))\n",
    )
    assert requester.stdout is not None
    line = requester.stdout.readline()
    requester.wait(10)
    assert json.loads(line)["ok"] is True


def test_a_peer_in_its_own_pid_namespace_is_refused(gateway: Gateway) -> None:
    """Whoever owns a pid namespace (unshare -Ur --pid, no privilege needed) may write any pid
    of it into SCM_CREDENTIALS: the sender check could be lied to, so such a peer is refused."""
    script = (
        "import json, socket, sys\n"
        "from safeport.shared.wire import recv_message\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "s.connect(sys.argv[1])\n"
        "print(json.dumps(recv_message(s)))\n"
    )
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--pid", "--fork",
         sys.executable, "-c", script, str(gateway.agent_path)],
        cwd=REPO, env=clean_env(gateway.home), capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["error"]["code"] == "denied"
    assert "another pid namespace" in reply["error"]["reason"]
