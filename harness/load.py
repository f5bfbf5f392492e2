"""Load under a junk flood: legitimate requesters on session grants while hostile connections
hit agent.sock and control.sock.

    python -m harness.load client HOME COUNT      (one requester process)
    python -m harness.load junk HOME IDLE         (the flood, until killed)

:func:`run_load` drives a real gateway (the test harness: in-memory vault, stub executor) with
``clients`` requester processes, each approved once for a session and then sending
``per_client`` proposals back to back, while one flood process keeps ``idle`` silent sockets
open (split between the two sockets, reopened as the gateway times them out) and sends, in a
loop: garbage frames, length prefixes of 4 GiB, slowloris headers one byte at a time, and
connect/close churn. Meanwhile the human side asks ``status`` every 100 ms on a new
connection, in turn sending at once (the control op `sp` sends) and through the CLI's own client
(which first checks who is listening); at the end, with the flood still running, it locks the
vault (``vault.lock``, as `sp vault lock` sends it). Every legitimate proposal must be answered
``ok`` and the lock must answer; the probes' errors and slowest replies are reported (on a
starved CPU a flood can still cost a human connection: see docs/security/guarantees.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness.gateway import PASSPHRASE, POLICY, REPO, Gateway, clean_env
from safeport.gateway_client.control_socket import GatewayClient
from safeport.shared.paths import locate
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.results import StatusResult
from safeport.shared.wire import recv_message, send_message

PROPOSAL = {
    "v": 1,
    "type": "propose",
    "action": "ssh_exec",
    "host_id": "session-host",
    "command_id": "uptime",
    "args": {},
}
LOAD_POLICY = POLICY.replace("[gateway]\n", "[gateway]\nmax_connections = 1024\n", 1)
CONTROL_BUDGET_S = 1.0


def client_main(home: Path, count: int) -> None:
    """One requester: wait for its session grant, then ``count`` proposals, timed."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(home / "run" / "agent.sock"))
    recv_message(sock)  # the welcome
    while True:
        send_message(sock, {**PROPOSAL, "id": "warm"})
        first = recv_message(sock)  # blocks until the driver approves this client's card
        if first["ok"]:
            break
        # Only so many cards may wait at once: ask again once the human has decided some.
        assert "too many approvals" in first["error"]["reason"], first
        time.sleep(0.2)
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    samples, failures = [], []
    started = time.perf_counter()
    for index in range(count):
        t0 = time.perf_counter()
        send_message(sock, {**PROPOSAL, "id": f"r{index}"})
        reply = recv_message(sock)
        samples.append(time.perf_counter() - t0)
        if not reply.get("ok") or reply.get("id") != f"r{index}":
            failures.append(reply)
    elapsed = time.perf_counter() - started
    print(json.dumps({"samples": samples, "elapsed": elapsed, "failures": failures}), flush=True)


def junk_main(home: Path, idle: int) -> None:
    """The flood, until killed."""
    paths = [home / "run" / "agent.sock", home / "run" / "control.sock"]
    rng = random.Random(13)
    held: list[socket.socket] = []
    sent = {"garbage": 0, "oversized": 0, "slowloris": 0, "churn": 0, "idle_opened": 0}

    def connect(path: Path) -> socket.socket | None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(str(path))
        except OSError:
            sock.close()
            return None
        return sock

    def top_up() -> None:
        alive = []
        for sock in held:
            try:
                if sock.recv(65536, socket.MSG_DONTWAIT) == b"":
                    sock.close()  # timed out or evicted by the gateway
                    continue
            except BlockingIOError:
                pass
            except OSError:
                sock.close()
                continue
            alive.append(sock)
        held[:] = alive
        while len(held) < idle:
            # Four in five on agent.sock (its budget), the rest where the human's `sp` connects.
            opened = connect(paths[0] if len(held) % 5 else paths[1])
            if opened is None:
                break
            held.append(opened)
            sent["idle_opened"] += 1

    def burst(path: Path, data: bytes, kind: str) -> None:
        sock = connect(path)
        if sock is None:
            return
        try:
            sock.setblocking(True)
            sock.settimeout(0.5)
            sock.sendall(data)
            sent[kind] += 1
        except OSError:
            pass
        finally:
            sock.close()

    slow: list[socket.socket] = []
    last_report = time.monotonic()
    while True:
        top_up()
        path = rng.choice(paths)
        burst(path, struct.pack(">I", 40) + os.urandom(40), "garbage")
        burst(path, b"\xff\xff\xff\xff" + b"x" * 64, "oversized")
        burst(path, b"", "churn")
        if len(slow) < 20 and (sock := connect(path)) is not None:
            slow.append(sock)
        for sock in list(slow):
            try:
                sock.send(b"\x00")  # one byte of a header every pass: never a whole frame
                sent["slowloris"] += 1
            except OSError:
                slow.remove(sock)
                sock.close()
        if time.monotonic() - last_report > 1:
            print(json.dumps({"held": len(held), **sent}), flush=True)
            last_report = time.monotonic()
        time.sleep(0.01)


def human_call(home: Path) -> StatusResult:
    """One `status` request as `sp` sends it: a new connection through the CLI's own client
    (which waits out a full listen queue), the reply's result or the gateway's error raised."""
    with GatewayClient(locate(env=clean_env(home)), timeout=10) as client:
        return client.call(ops.STATUS)


def _max_ms(samples: list[float]) -> float | None:
    return round(max(samples) * 1000, 1) if samples else None


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _spawn(home: Path, *args: str) -> subprocess.Popen[str]:
    module = [sys.executable, "-m", "harness.load", *args]
    return subprocess.Popen(
        ["flock", "-s", str(home / "client.lock"), *module],
        cwd=REPO,
        env=clean_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def run_load(home: Path, *, clients: int, per_client: int, idle: int) -> dict[str, Any]:
    gw = Gateway(home)
    gw.write_policy(LOAD_POLICY)
    gw.start("--workers", str(max(64, clients + 8)))
    procs: list[subprocess.Popen[str]] = []
    junk: subprocess.Popen[str] | None = None
    try:
        gw.unlock()
        gw.accept_policy()
        procs = [_spawn(home, "client", str(home), str(per_client)) for _ in range(clients)]
        approved: set[str] = set()
        deadline = time.monotonic() + 120
        while len(approved) < clients and time.monotonic() < deadline:
            for card in gw.control("approvals.list")["result"]["cards"]:
                if card["id"] not in approved:
                    reply = gw.control(
                        "approvals.decide", id=card["id"], approve=True, passphrase=PASSPHRASE
                    )
                    assert reply["ok"], reply
                    approved.add(card["id"])
            time.sleep(0.05)
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"

        junk = _spawn(home, "junk", str(home), str(idle))
        assert junk.stdout is not None
        flood_report: dict[str, Any] = {}

        def read_junk() -> None:
            assert junk is not None and junk.stdout is not None
            for line in junk.stdout:
                flood_report.update(json.loads(line))

        threading.Thread(target=read_junk, daemon=True).start()
        # Let the flood fill its sockets before the load starts.
        fill_deadline = time.monotonic() + 30
        while flood_report.get("held", 0) < idle * 0.9 and time.monotonic() < fill_deadline:
            time.sleep(0.1)
        held_at_start = flood_report.get("held", 0)

        # Two humans: one speaks as soon as it is connected (the control op itself), one goes
        # through the CLI's own client, which first checks who is listening.
        probes: dict[str, list[float]] = {"raw": [], "cli": []}
        probe_errors: dict[str, list[str]] = {"raw": [], "cli": []}
        stop = threading.Event()

        def probe() -> None:
            turn = 0
            while not stop.is_set():
                kind = "raw" if turn % 2 == 0 else "cli"
                turn += 1
                t0 = time.perf_counter()
                try:
                    if kind == "raw":
                        reply = gw.control("status")
                        if not reply.get("ok"):
                            raise RuntimeError(str(reply.get("error")))
                    else:
                        human_call(home)
                except Exception as exc:  # counted and reported: the human did not get through
                    probe_errors[kind].append(f"{type(exc).__name__}: {exc}"[:200])
                probes[kind].append(time.perf_counter() - t0)
                stop.wait(0.1)

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        started = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            assert proc.stdout is not None
            results.append(json.loads(proc.stdout.readline()))
        wall = time.perf_counter() - started
        stop.set()
        prober.join(5)
        t0 = time.perf_counter()
        locked = gw.control("vault.lock")
        lock_s = time.perf_counter() - t0
        assert locked["ok"], locked
        assert gw.healthy()
    finally:
        for proc in procs:
            _kill(proc)
        if junk is not None:
            _kill(junk)
        rc = gw.stop()
    assert rc == 0, gw.stderr_path.read_text()[-2000:]
    refused = [r for r in gw.journal("actions") if r["kind"] == "input.refused"]
    samples = [s for result in results for s in result["samples"]]
    failures = [f for result in results for f in result["failures"]]
    return {
        "clients": clients,
        "per_client": per_client,
        "answered": len(samples),
        "failures": len(failures),
        "first_failures": failures[:3],
        "p50_ms": round(statistics.median(samples) * 1000, 2),
        "p99_ms": round(_quantile(samples, 0.99) * 1000, 2),
        "throughput_per_s": round(len(samples) / wall, 1),
        "wall_s": round(wall, 2),
        "control_probes": len(probes["raw"]),
        "control_probe_errors": len(probe_errors["raw"]),
        "control_max_ms": _max_ms(probes["raw"]),
        "first_probe_errors": probe_errors["raw"][:3],
        "cli_probes": len(probes["cli"]),
        "cli_probe_errors": len(probe_errors["cli"]),
        "cli_max_ms": _max_ms(probes["cli"]),
        "first_cli_errors": probe_errors["cli"][:3],
        "lock_ms": round(lock_s * 1000, 1),
        "idle_held_at_start": held_at_start,
        "input_refused_records": len(refused),
        "flood": flood_report,
    }


if __name__ == "__main__":
    role, home_arg, number = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    if role == "client":
        client_main(home_arg, number)
    else:
        junk_main(home_arg, number)
