"""Failed passphrase proofs on control.sock: journaled with the peer, answered after a delay that
doubles per failure in a row of the peer's uid (1 s, 2 s, 4 s … 30 s), reset by a success.

Against a real gateway process over real sockets; the journal is read back with the project's
audit reader.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from harness.gateway import PASSPHRASE, REPO, AgentSocket, Gateway, clean_env
from safeport.action_gateway.handlers.passphrase_attempts import failure_delay
from safeport.shared.wire import PeerClosed

WRONG = "not the passphrase at all"

# Upper bounds are generous for two busy cores: the delays themselves are lower bounds and
# journal fields, which load cannot make pass or fail.
SLACK_S = 4.0


def _timed(gw: Gateway, op: str, **params: Any) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    reply = gw.control(op, **params)
    return reply, time.monotonic() - started


def _rejections(gw: Gateway) -> list[dict[str, Any]]:
    return [r["body"] for r in gw.journal("sessions") if r["kind"] == "passphrase.rejected"]


def test_the_delay_doubles_per_failure_in_a_row_up_to_thirty_seconds() -> None:
    assert [failure_delay(n) for n in range(0, 8)] == [0, 1, 2, 4, 8, 16, 30, 30]
    assert failure_delay(10_000) == 30


def test_three_wrong_passphrases_are_journaled_and_delayed_more_each_time(
    gateway: Gateway,
) -> None:
    timings = []
    for op, params in [
        ("vault.unlock", {}),
        ("policy.accept", {"digest": "0" * 64}),
        ("approver.register", {}),
    ]:
        reply, took = _timed(gateway, op, passphrase=WRONG, **params)
        assert reply["ok"] is False and reply["error"]["code"] == "denied", reply
        assert "passphrase" in reply["error"]["reason"]
        timings.append(took)
    print("wrong passphrase answer times (s):", [round(t, 2) for t in timings])
    # Each waits at least its delay (behaviour, whatever the load); the delay itself is the
    # journal's, asserted exactly below. The upper bound only says it was not held for longer.
    for took, expected in zip(timings, (1, 2, 4), strict=True):
        assert expected - 0.05 <= took < expected + SLACK_S
    records = _rejections(gateway)
    assert [r["failures_in_a_row"] for r in records] == [1, 2, 3]
    assert [r["op"] for r in records] == ["vault.unlock", "policy.accept", "approver.register"]
    assert [r["delay_s"] for r in records] == [1, 2, 4]
    chain = records[0]["peer"]["chain"]
    assert chain[0]["exe"] == _real(sys.executable) and chain[0]["pid"] > 0
    raw = (gateway.home / "audit" / "sessions.jsonl").read_bytes()
    assert WRONG.encode() not in raw and PASSPHRASE.encode() not in raw

    # The right passphrase is answered at once and resets the count.
    reply, took = _timed(gateway, "vault.unlock", passphrase=PASSPHRASE)
    assert reply["ok"], reply
    assert took < 8 - 0.05  # not the 8 s a fourth failure waits
    reply, took = _timed(gateway, "vault.unlock", passphrase=WRONG)
    assert reply["ok"] is False and 0.95 <= took < 1 + SLACK_S
    assert _rejections(gateway)[-1]["failures_in_a_row"] == 1


def test_a_new_process_does_not_reset_the_count_and_other_connections_are_not_held_up(
    gateway: Gateway,
) -> None:
    for _ in range(3):
        assert gateway.control("vault.unlock", passphrase=WRONG)["ok"] is False
    # The fourth guess comes from another process (same uid): it still waits 8 s.
    started = time.monotonic()
    guesser = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.action_gateway.control_client",
            "vault.unlock",
            f'{{"passphrase": "{WRONG}"}}',
        ],
        cwd=REPO,
        env=clean_env(gateway.home),
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)
    # Meanwhile the human's other requests are answered at once.
    for op in ("status", "vault.lock"):
        reply, took = _timed(gateway, op)
        # Answered while the guess still waits, not held behind its 8 s.
        assert reply["ok"] and guesser.poll() is None and took < SLACK_S, (op, took)
    out, _ = guesser.communicate(timeout=30)
    assert '"denied"' in out
    assert time.monotonic() - started >= 8.0
    assert _rejections(gateway)[-1]["failures_in_a_row"] == 4


def test_concurrent_guesses_wait_their_turn(gateway: Gateway) -> None:
    # Three guesses at once gain little from concurrency: one failed proof per second per uid,
    # and each guess is answered after its own delay (1, 2, 4 s) from its turn.
    done: list[float] = []
    started = time.monotonic()

    def guess() -> None:
        reply = gateway.control("vault.unlock", passphrase=WRONG)
        assert reply["ok"] is False
        done.append(time.monotonic() - started)

    threads = [threading.Thread(target=guess) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(40)
    done.sort()
    print("concurrent guesses answered after (s):", [round(t, 2) for t in done])
    for took, expected in zip(done, (1, 3, 6), strict=True):  # turns at 0, 1, 2 s
        assert took >= expected - 0.05
    assert [r["failures_in_a_row"] for r in _rejections(gateway)] == [1, 2, 3]


def _real(path: str) -> str:
    return os.path.realpath(path)


def test_the_right_passphrase_is_not_held_behind_an_agents_waiting_guesses(
    gateway: Gateway,
) -> None:
    """Each guess waits out its own delay; the human's proof waits only for the guesses' turns
    (one a second), not for their 8, 16, 30 s delays."""
    for _ in range(3):
        assert gateway.control("vault.unlock", passphrase=WRONG)["ok"] is False

    sockets = [gateway.control_conn() for _ in range(3)]

    def guess(conn: AgentSocket) -> None:
        # Its own answer comes after 8 s or more; the test hangs up before then.
        with contextlib.suppress(OSError, PeerClosed):
            conn.call({"v": 1, "id": "g", "type": "control", "op": "vault.unlock",
                       "params": {"passphrase": WRONG}})  # fmt: skip

    guesses = [threading.Thread(target=guess, args=(conn,)) for conn in sockets]
    for thread in guesses:
        thread.start()
    time.sleep(0.2)  # the guesses are queued first
    reply, took = _timed(gateway, "vault.unlock", passphrase=PASSPHRASE)
    assert reply["ok"], reply
    assert took < 20, took  # three turns of a second, not 8 + 16 + 30 s of delays
    # The guesses' answers are not what this test is about: hang up instead of waiting them out.
    for conn in sockets:
        conn.sock.shutdown(socket.SHUT_RDWR)
    for thread in guesses:
        thread.join(60)
    for conn in sockets:
        conn.sock.close()
