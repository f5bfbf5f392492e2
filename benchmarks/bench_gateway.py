"""Gateway costs with a stub executor, beside two bare fsyncs measured in the same run.

    python benchmarks/bench_gateway.py [--requests 400] [--clients 8] [--per-client 250]

Starts a real gateway process (the test harness: in-memory vault, an executor stub that returns
at once; journal bodies sealed to the vault's audit key as in real use), approves one session
card per client, then measures:

1. the added latency of the ladder: a proposal's round trip over agent.sock (identity re-check,
   policy, argument validation, session grant lookup, two fsynced journal records), p50/p99,
   beside two bare write+fsync of the same size in the same folder;
2. proposals per second with ``--clients`` concurrent client processes (group commit);
3. the gateway's RSS idle and right after the load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.gateway import POLICY, Gateway, clean_env  # noqa: E402
from safeport.shared.wire import recv_message, send_message  # noqa: E402

PROPOSAL = {
    "v": 1,
    "type": "propose",
    "action": "ssh_exec",
    "host_id": "session-host",
    "command_id": "uptime",
    "args": {},
}


def client_main(home: Path, count: int) -> None:
    """One requester process: hello, wait for its session grant, then ``count`` proposals."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(home / "run" / "agent.sock"))
    assert recv_message(sock)["type"] == "welcome"  # the gateway speaks first
    send_message(sock, {**PROPOSAL, "id": "warm"})
    first = recv_message(sock)  # blocks until the benchmark approves this client's card
    assert first["ok"], first
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    samples = []
    started = time.perf_counter()
    for index in range(count):
        t0 = time.perf_counter()
        send_message(sock, {**PROPOSAL, "id": f"r{index}"})
        reply = recv_message(sock)
        samples.append(time.perf_counter() - t0)
        assert reply["ok"], reply
    elapsed = time.perf_counter() - started
    print(json.dumps({"samples": samples, "elapsed": elapsed}), flush=True)


def bare_fsyncs(folder: Path, rounds: int) -> list[float]:
    """Two appends of a record-sized line, each fsynced: the floor under two durable records."""
    path = folder / "bare.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    line = b"x" * 700 + b"\n"
    samples = []
    try:
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(2):
                os.write(fd, line)
                os.fsync(fd)
            samples.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
    return samples


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_clients(gw: Gateway, count: int, per_client: int) -> list[subprocess.Popen[str]]:
    clients = []
    for _ in range(count):
        clients.append(
            subprocess.Popen(
                [
                    "flock",
                    "-s",
                    str(gw.home / "client.lock"),
                    sys.executable,
                    __file__,
                    "--client",
                    str(gw.home),
                    str(per_client),
                ],
                cwd=REPO,
                env=clean_env(gw.home),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    approved = 0
    deadline = time.monotonic() + 60
    while approved < count and time.monotonic() < deadline:
        for card in gw.control("approvals.list")["result"]["cards"]:
            reply = gw.control(
                "approvals.decide",
                id=card["id"],
                approve=True,
                passphrase="correct horse battery staple",
            )
            approved += bool(reply["ok"])
        time.sleep(0.01)
    for client in clients:
        assert client.stdout is not None
        assert client.stdout.readline().strip() == "ready"
    return clients


def run_clients(clients: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    for client in clients:
        assert client.stdin is not None
        client.stdin.write("go\n")
        client.stdin.flush()
    results = []
    for client in clients:
        assert client.stdout is not None
        results.append(json.loads(client.stdout.readline()))
        client.wait(60)
    return results


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--per-client", type=int, default=250)
    parser.add_argument("--client", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client_main(Path(args.client[0]), int(args.client[1]))
        return
    base = Path(tempfile.mkdtemp(prefix="spbench-"))
    home = base / "h"
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.record_path = Path(os.devnull)
    gw.write_policy(POLICY)
    gw.start("--seal")
    try:
        gw.unlock()
        gw.accept_policy()
        assert gw.proc is not None
        idle_rss = rss_mib(gw.proc.pid)

        [latency] = run_clients(start_clients(gw, 1, args.requests))
        bare = bare_fsyncs(home / "audit", args.requests)
        lat = latency["samples"][10:]  # the first requests include one-off digests and caches
        print(
            f"ladder round trip (stub executor, 2 fsynced records): p50 {pct(lat, 0.5):.2f} ms, "
            f"p99 {pct(lat, 0.99):.2f} ms over {len(lat)} requests"
        )
        print(
            f"two bare write+fsync, same folder:                     p50 {pct(bare, 0.5):.2f} ms, "
            f"p99 {pct(bare, 0.99):.2f} ms"
        )
        print(
            f"ratio ladder/bare: p50 {pct(lat, 0.5) / pct(bare, 0.5):.2f}x, "
            f"p99 {pct(lat, 0.99) / pct(bare, 0.99):.2f}x"
        )

        clients = start_clients(gw, args.clients, args.per_client)
        started = time.perf_counter()
        results = run_clients(clients)
        wall = time.perf_counter() - started
        total = sum(len(r["samples"]) for r in results)
        every = [s for r in results for s in r["samples"]]
        load_rss = rss_mib(gw.proc.pid)
        print(
            f"throughput, {args.clients} concurrent clients: {total / wall:.0f} proposals/s "
            f"({total} in {wall:.2f} s; per-request p50 {pct(every, 0.5):.2f} ms, "
            f"p99 {pct(every, 0.99):.2f} ms)"
        )
        print(f"gateway RSS: idle {idle_rss:.1f} MiB, after load {load_rss:.1f} MiB")
        print(
            f"mean single-client round trip {statistics.fmean(lat) * 1000:.2f} ms; "
            f"{os.cpu_count()} CPUs"
        )
    finally:
        gw.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
