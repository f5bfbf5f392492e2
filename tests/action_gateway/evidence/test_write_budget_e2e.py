"""What any admitted uid can make the gateway write without the passphrase, on the real gateway:
control.sock's reloads, failed passphrase proofs and checkpoint requests, and refusal records
whose requester pads its identity, each bounded per uid beside the legitimate use it keeps."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import REPO, Gateway, clean_env, ssh, wait_until

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.evidence"

pytestmark = pytest.mark.integration


def _reload(conn_call: object, n: int) -> dict[str, object]:
    assert callable(conn_call)
    reply: dict[str, object] = conn_call(
        {"v": 1, "id": f"r{n}", "type": "control", "op": "gateway.reload", "params": {}}
    )
    return reply


def test_a_flood_of_reloads_from_one_uid_makes_a_bounded_number_of_records(
    gateway: Gateway,
) -> None:
    before = len(gateway.journal("sessions"))
    conn = gateway.control_conn()
    flood = 300
    for n in range(flood):
        assert _reload(conn.call, n)["ok"]
    conn.close()
    assert gateway.stop() == 0  # the counts still held are journaled at stop
    records = gateway.journal("sessions")[before:]
    whole = [r for r in records if r["kind"] == "gateway.reloaded"]
    many = [r["body"] for r in records if r["kind"] == "gateway.reloaded_many"]
    assert len(whole) == 20
    assert len(records) < 40, [r["kind"] for r in records]
    assert sum(int(body["count"]) for body in many) == flood - len(whole)
    assert {body["uid"] for body in many} == {os.getuid()}
    gateway.start()  # the fixture stops it again


def test_a_few_reloads_are_each_journaled_whole(gateway: Gateway) -> None:
    before = len(gateway.journal("sessions"))
    for _ in range(3):
        assert gateway.control("gateway.reload")["ok"]
    kinds = [r["kind"] for r in gateway.journal("sessions")[before:]]
    assert kinds.count("gateway.reloaded") == 3 and "gateway.reloaded_many" not in kinds


def test_failed_passphrase_proofs_past_the_uid_budget_are_counted_not_journaled_one_by_one(
    gateway_home: Path,
) -> None:
    gw = Gateway(gateway_home)
    gw.write_policy()
    gw.start("--refusals-per-window", "3", "--refusal-window", "600")
    try:
        before = len(gw.journal("sessions"))
        guesses = 7

        def guess() -> None:
            # The later guesses wait out delays longer than the harness's socket timeout; their
            # answer does not matter here, only what the gateway journals.
            with contextlib.suppress(TimeoutError):
                gw.control("vault.unlock", passphrase="wrong")

        threads = [threading.Thread(target=guess) for _ in range(guesses)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # The human's own proof still works past the guesses (its uid's delay aside).
        gw.unlock()
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()
    records = gw.journal("sessions")[before:]
    whole = [r for r in records if r["kind"] == "passphrase.rejected"]
    many = [r["body"] for r in records if r["kind"] == "passphrase.rejected_many"]
    assert len(whole) == 3  # the first ones, the ones worth reading, with the peer's chain
    assert sum(int(body["count"]) for body in many) == guesses - len(whole)
    assert "vault.unlocked" in [r["kind"] for r in records]


@pytest.fixture
def syslog_socket(tmp_path: Path) -> Iterator[tuple[Path, socket.socket]]:
    path = tmp_path / "log.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(0.2)
    try:
        yield path, sock
    finally:
        sock.close()


def _drain(sock: socket.socket) -> int:
    count = 0
    while True:
        try:
            sock.recv(65536)
        except TimeoutError:
            return count
        count += 1


def test_checkpoint_requests_with_nothing_new_to_sign_send_nothing_more(
    gateway_home: Path, syslog_socket: tuple[Path, socket.socket]
) -> None:
    path, sock = syslog_socket
    gw = Gateway(gateway_home)
    gw.write_policy()
    gw.start("--syslog-socket", str(path))
    try:
        gw.unlock()
        gw.accept_policy()
        assert gw.control("audit.checkpoint")["ok"]
        _drain(sock)
        # Nothing was journaled since: the heads are signed already, and a flood of requests
        # does not turn into a flood of syslog messages and checkpoint file writes.
        for _ in range(50):
            reply = gw.control("audit.checkpoint")
            assert reply["ok"] and reply["result"]["checkpoints"], reply
        assert _drain(sock) == 0
        # The legitimate use: something new is journaled, the next request signs and sends it.
        agent = gw.agent()
        assert agent.call(ssh("x1", command="no_such_command"))["ok"] is False
        agent.close()
        wait_until(lambda: "action.denied" in gw.kinds("actions"))
        head = gw.journal("actions")[-1]["seq"]
        signed = gw.control("audit.checkpoint")["result"]["checkpoints"]
        assert {"journal": "actions", "seq": head}.items() <= next(
            cp for cp in signed if cp["journal"] == "actions"
        ).items()
        assert _drain(sock) == 1
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


# A requester whose environment is padded with code-injecting names (each PYTHON* counts), so
# every refusal record carries a long list of them.
_PADDED = (
    "import json,socket,struct,sys\n"
    "s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1])\n"
    "n=struct.unpack('>I',s.recv(4))[0];s.recv(n)\n"
    "for i in range(int(sys.argv[2])):\n"
    "    m=json.dumps({'v':1,'id':f'p{i}','type':'propose','action':'ssh_exec',"
    "'host_id':'build-staging','command_id':'no_such_command','args':{}}).encode()\n"
    "    s.sendall(struct.pack('>I',len(m))+m)\n"
    "    n=struct.unpack('>I',s.recv(4))[0];r=b''\n"
    "    while len(r)<n: r+=s.recv(n-len(r))\n"
    "print('done',flush=True)\n"
)


def test_refusal_records_of_a_uid_are_bounded_in_bytes_not_only_in_number(
    gateway: Gateway,
) -> None:
    journal = gateway.home / "audit" / "actions.jsonl"
    before = journal.stat().st_size
    env = clean_env(gateway.home)
    env.update({f"PYTHONPAD{i:04d}": "x" * 200 for i in range(3500)})
    done = subprocess.run(
        [sys.executable, "-c", _PADDED, str(gateway.agent_path), "40"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.stdout.strip() == "done", done.stderr
    grown = journal.stat().st_size - before
    # Each of these records would carry ~800 KB of variable names and values; the uid's
    # budget is counted in bytes too, so what one requester makes the gateway write per
    # window stays small whatever it puts in its own environment.
    assert grown < 600 * 1024, grown
    # The refusals are all still proven: whole, or counted at stop.
    assert gateway.stop() == 0
    records = gateway.journal("actions")
    whole = [r for r in records if r["kind"] == "action.denied"]
    counted = sum(int(r["body"]["count"]) for r in records if r["kind"] == "action.denied_many")
    assert len(whole) + counted >= 40
    gateway.start()
