"""Hostile and broken input on the real sockets: each refused with its category, journaled,
and the gateway still healthy afterwards."""

from __future__ import annotations

import json
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import (
    POLICY,
    Gateway,
    ssh,
    wait_until,
)
from safeport.errors import WireError
from safeport.shared.wire import recv_message
from tests.conftest import need

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.sockets"

HELLO = {"v": 1, "id": "h", "type": "hello", "versions": [1]}


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def _invalid_records(gw: Gateway) -> list[dict[str, int]]:
    return [r["body"]["counts"] for r in gw.journal("actions") if r["kind"] == "input.invalid"]


def test_an_oversized_frame_is_refused_unread_and_the_connection_closed(gateway: Gateway) -> None:
    conn = gateway.agent()
    conn.send_raw(struct.pack(">I", 100_000) + b"{" * 1000)
    reply = conn.recv()
    assert reply == {
        "v": 1,
        "id": None,
        "ok": False,
        "error": {"code": "invalid", "reason": "the request is over the 64 KiB limit"},
    }
    with pytest.raises((OSError, WireError)):
        conn.recv()
    wait_until(lambda: any(c.get("oversized") for c in _invalid_records(gateway)))
    assert gateway.healthy()


def test_a_truncated_frame_times_out_and_is_journaled(gateway: Gateway) -> None:
    conn = gateway.agent()
    conn.send_raw(struct.pack(">I", 100) + b'{"v":1')
    with pytest.raises((OSError, WireError)):
        conn.recv()  # closed after the partial-frame timeout
    wait_until(lambda: any(c.get("partial_frame") for c in _invalid_records(gateway)))
    assert gateway.healthy()


def test_bad_utf8_bad_json_and_a_frame_cut_short_are_each_counted_as_their_own_junk(
    gateway: Gateway,
) -> None:
    conn = gateway.agent()
    conn.send_raw(_frame(b"\xff\xfe"))
    assert conn.recv()["error"] == {"code": "invalid", "reason": "frame is not valid UTF-8"}
    conn.send_raw(_frame(b"{not json"))
    assert conn.recv()["error"] == {"code": "invalid", "reason": "frame is not valid JSON"}
    conn.send_raw(struct.pack(">I", 100) + b'{"v":1')
    conn.close()  # mid-frame
    wait_until(lambda: {"not_utf8": 1, "not_json": 1, "truncated": 1} in _invalid_records(gateway))
    assert gateway.healthy()


def test_a_slow_client_does_not_stall_another(gateway_home: Path) -> None:
    gw = Gateway(gateway_home)
    gw.write_policy()
    gw.start("--frame-timeout", "20")
    try:
        slow = gw.agent()
        slow.send_raw(struct.pack(">I", 200) + b'{"v":1,')  # and then nothing, for a while
        fast = gw.agent()
        started = time.monotonic()
        assert fast.call(HELLO)["ok"]
        assert time.monotonic() - started < 5  # far below the slow frame's 20 s timeout
        slow.close()
        fast.close()
    finally:
        assert gw.stop() == 0


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xff\xfe\x00garbage", "not valid UTF-8"),
        (b"{not json", "not valid JSON"),
        (b"[1, 2, 3]", "not a JSON object"),
        (json.dumps({**HELLO, "v": 2}).encode(), "unsupported protocol version"),
        (
            json.dumps({"v": 1, "id": "s1", "type": "propose", "action": "ssh_exec"}).encode(),
            "does not match the schema",
        ),
        (
            json.dumps({"v": 1, "id": "s2", "type": "teleport"}).encode(),
            "does not match the schema",
        ),
    ],
)
def test_malformed_messages_are_invalid_and_the_connection_stays_usable(
    gateway: Gateway, payload: bytes, reason: str
) -> None:
    conn = gateway.agent()
    conn.send_raw(_frame(payload))
    reply = conn.recv()
    assert reply["ok"] is False and reply["error"]["code"] == "invalid"
    assert reason in reply["error"]["reason"]
    assert conn.call(HELLO)["ok"]  # still usable
    conn.close()
    wait_until(lambda: len(_invalid_records(gateway)) == 1)


def test_a_hostile_id_is_never_echoed(gateway: Gateway) -> None:
    conn = gateway.agent()
    evil = "\x1b[31mred\u202e"
    reply = conn.call({**ssh("x", service="w"), "id": evil, "extra": 1})
    assert reply["id"] is None and "\x1b" not in json.dumps(reply, ensure_ascii=False)


def test_repeated_junk_is_journaled_once_with_a_count(gateway: Gateway) -> None:
    conn = gateway.agent()
    for _ in range(50):
        conn.send_raw(_frame(b"junk"))
        assert conn.recv()["error"]["code"] == "invalid"
    conn.close()
    wait_until(lambda: len(_invalid_records(gateway)) == 1)
    time.sleep(0.3)
    assert _invalid_records(gateway) == [{"not_json": 50}]


def test_a_client_that_sends_nothing_is_closed_and_journaled(gateway_home: Path) -> None:
    gw = Gateway(gateway_home)
    gw.write_policy()
    gw.start("--idle-timeout", "0.5")
    try:
        conn = gw.agent()
        started = time.monotonic()
        with pytest.raises((OSError, WireError)):
            conn.recv()
        assert time.monotonic() - started < 5
        wait_until(lambda: any(c.get("idle") for c in _invalid_records(gw)))
        assert gw.healthy()
    finally:
        assert gw.stop() == 0


def test_five_hundred_connections_at_once_leave_the_gateway_serving(gateway: Gateway) -> None:
    socks = []
    for _ in range(500):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + 10
        while True:
            try:
                sock.connect(str(gateway.agent_path))
                break
            except BlockingIOError:  # the listen backlog is full for a moment
                assert time.monotonic() < deadline
                time.sleep(0.005)
        socks.append(sock)
    refused = 0
    for sock in socks:
        sock.settimeout(0.05)
        try:
            reply = recv_message(sock)
        except (TimeoutError, OSError):
            continue  # a connection being served: it waits for a request
        if reply.get("type") == "welcome":
            continue  # served, and greeted
        assert reply["error"]["code"] == "unavailable"
        refused += 1
    assert refused >= 500 - 32
    for sock in socks:
        sock.close()
    wait_until(
        lambda: any(
            r["kind"] == "input.refused" and r["body"]["counts"].get("too_many_connections")
            for r in gateway.journal("actions")
        )
    )
    conn = gateway.agent()
    assert conn.call(HELLO)["ok"]
    assert gateway.healthy()


def _as_nobody(gw: Gateway, code: str) -> subprocess.CompletedProcess[str]:
    need(Path("/usr/bin/setpriv").exists(), "setpriv (util-linux) is not installed")
    return subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            code,
            str(gw.agent_path),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )


_NOBODY_CLIENT = (
    "import json,socket,struct,sys\n"
    "s=socket.socket(socket.AF_UNIX)\n"
    "try:\n    s.connect(sys.argv[1])\n"
    "except OSError as e:\n    print('connect:'+type(e).__name__);sys.exit(0)\n"
    "m=json.dumps({'v':1,'id':'n','type':'hello','versions':[1]}).encode()\n"
    # A refused uid is answered and closed at once, so the send may find the socket closed.
    "try:\n    s.sendall(struct.pack('>I',len(m))+m)\n"
    "except OSError:\n    pass\n"
    "n=struct.unpack('>I',s.recv(4))[0];print(s.recv(n).decode())\n"
)


@pytest.fixture
def reachable_gateway() -> Iterator[Gateway]:
    """A gateway whose folders another user can traverse (pytest's own tmp folders are 0700)."""
    base = Path(tempfile.mkdtemp(prefix="spu-", dir="/tmp"))
    base.chmod(0o711)
    home = base / "h"
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.write_policy()
    gw.start()
    try:
        yield gw
    finally:
        assert gw.stop() == 0
        shutil.rmtree(base)


def test_a_client_of_another_uid_is_refused_by_folder_socket_and_peer_check(
    reachable_gateway: Gateway,
) -> None:
    gateway = reachable_gateway
    gateway.home.chmod(0o711)
    # Layer 1: the run folder the gateway made 0700.
    done = _as_nobody(gateway, _NOBODY_CLIENT)
    assert done.stdout.strip() == "connect:PermissionError", done.stderr
    # Layer 2: the socket the gateway made 0600.
    (gateway.home / "run").chmod(0o711)
    done = _as_nobody(gateway, _NOBODY_CLIENT)
    assert done.stdout.strip() == "connect:PermissionError", done.stderr
    # Layer 3: loosen everything, as a careless admin might; the peer check still refuses.
    gateway.agent_path.chmod(0o666)
    done = _as_nobody(gateway, _NOBODY_CLIENT)
    reply = json.loads(done.stdout)
    assert reply["ok"] is False and reply["error"]["code"] == "denied", done.stderr
    assert "does not serve your user" in reply["error"]["reason"]
    wait_until(
        lambda: any(
            r["kind"] == "input.refused" and r["body"]["counts"].get("other_uid:65534")
            for r in gateway.journal("actions")
        )
    )
    assert gateway.healthy()


def test_an_edited_policy_changes_nothing_until_accepted(gateway: Gateway) -> None:
    edited = POLICY + (
        '\n[ssh.hosts.build-staging.commands.wipe_disk]\nargv = ["dd", "if=/dev/zero"]\n'
    )
    gateway.write_policy(edited)
    status = gateway.control("gateway.reload")["result"]
    assert status["pending"] is True
    conn = gateway.agent()
    reply = conn.call(ssh("e1", command="wipe_disk"))
    assert reply["error"]["code"] == "denied"
    denial = [r["body"] for r in gateway.journal("actions") if r["kind"] == "action.denied"][-1]
    assert denial["category"] == "unknown_action"
    conn.close()
    # Accepting names the digest that was shown; a swap after the diff is refused.
    shown = gateway.control("policy.status")["result"]["file"]
    gateway.write_policy(edited + "\n# swapped after review\n")
    swapped = gateway.control(
        "policy.accept", passphrase="correct horse battery staple", digest=shown
    )
    assert swapped["ok"] is False and "changed after it was shown" in swapped["error"]["reason"]


def test_unknown_control_operations_and_bad_control_messages_are_invalid(gateway: Gateway) -> None:
    conn = gateway.control_conn()
    reply = conn.call({"v": 1, "id": "u", "type": "control", "op": "vault.dump"})
    assert reply["error"] == {"code": "invalid", "reason": "unknown control operation"}
    reply = conn.call({"v": 1, "id": "u2", "type": "control", "op": "Bad Op!"})
    assert reply["error"]["code"] == "invalid"
    assert gateway.healthy()


def test_control_params_outside_an_operations_model_are_invalid_and_change_nothing(
    gateway: Gateway,
) -> None:
    canary = "CANARY-NOT-THE-PASSPHRASE"
    refused: list[tuple[str, dict[str, object]]] = [
        ("status", {"surprise": 1}),  # an operation that takes nothing
        ("vault.lock", {"passphrase": 7}),
        ("approvals.decide", {"id": "c1", "approve": "yes", "passphrase": canary}),
        ("vault.remove", {"name": "build-key"}),  # no passphrase
        ("vault.remove", {"name": "build-key", "passphrase": canary, "force": True}),
    ]
    for n, (op, params) in enumerate(refused):
        reply = gateway.control(op, **params)
        assert reply["ok"] is False and reply["error"]["code"] == "invalid", (op, reply)
        assert "schema" in reply["error"]["reason"] and canary not in json.dumps(reply), n
    # Nothing was acted on: the vault is still unlocked, and no proof was even tried.
    assert gateway.control("vault.status")["result"] == {"vault": "unlocked"}
    assert "passphrase.rejected" not in gateway.kinds("sessions")
    assert canary not in gateway.stderr_path.read_text()
    # The same operations with their own params are served.
    assert gateway.control("status")["ok"] is True
    assert gateway.control("vault.lock")["result"] == {"vault": "locked", "changed": True}


# Each a JSON document the strict decoder refuses (``outside_json``), under the 64 KiB bound.
HOSTILE_JSON = {
    "60,000 [": b"[" * 60_000,
    "nested keys": b'{"v":' * 10_000 + b"1" + b"}" * 10_000,
    "repeated key": b'{"v":1,"id":"d","type":"hello","versions":[1],"type":"propose"}',
    "NaN": b'{"v":1,"id":"n","type":"hello","versions":[NaN]}',
    "1e999999": b'{"v":1e999999,"id":"e","type":"hello","versions":[1]}',
    "60,000-digit version": b'{"v":1,"id":"i","type":"hello","versions":[' + b"9" * 60_000 + b"]}",
    "lone surrogate": b'{"v":1,"id":"\\ud800","type":"hello","versions":[1]}',
    "unterminated escaped quotes": b'{"v":1,"id":"' + b'\\"' * 32_000,
}
GOOD = {
    "agent": HELLO,
    "control": {"v": 1, "id": "s", "type": "control", "op": "status", "params": {}},
}


@pytest.mark.parametrize("which", ["agent", "control"])
def test_hostile_json_frames_are_invalid_and_the_same_connection_is_served_next(
    gateway: Gateway, which: str
) -> None:
    conn = gateway.agent() if which == "agent" else gateway.control_conn()
    # Every reply is awaited at most 10 s (the connection's timeout): a hung handler fails.
    for name, payload in HOSTILE_JSON.items():
        conn.send_raw(_frame(payload))
        reply = conn.recv()
        assert reply["ok"] is False, name
        assert reply["error"] == {"code": "invalid", "reason": "frame is not valid JSON"}, name
        assert conn.call(GOOD[which])["ok"], name  # the same connection, still served
    conn.close()
    wait_until(lambda: any(c.get("not_json") for c in _invalid_records(gateway)))
    assert gateway.healthy()


@pytest.mark.parametrize("which", ["agent", "control"])
def test_a_version_that_only_compares_equal_to_one_is_refused(gateway: Gateway, which: str) -> None:
    conn = gateway.agent() if which == "agent" else gateway.control_conn()
    for version in (True, 1.0, "1", [1], None):
        reply = conn.call({**GOOD[which], "v": version})
        assert reply["ok"] is False, version
        assert reply["error"]["reason"] == "unsupported protocol version; use 1", version
    assert conn.call(GOOD[which])["ok"]
    conn.close()
