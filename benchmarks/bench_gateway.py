"""Gateway costs with a stub executor, beside bare fsyncs measured in the same run.

    python benchmarks/bench_gateway.py [--requests 400] [--clients 8] [--per-client 250]
    python benchmarks/bench_gateway.py --quick --json     # the short profile CI runs

Starts a real gateway process (the test harness: in-memory vault, an executor stub that returns
at once; journal bodies sealed to the vault's audit key as in real use), approves one session
card per client, then measures:

1. a proposal's round trip over agent.sock (identity re-check, policy, argument validation,
   session grant lookup, two sealed fsynced journal records), p50/p99, beside two bare
   write+fsync of the same size in the same folder; the two alternate in chunks, so the disk's
   changing pace hits both alike;
2. proposals per second with ``--clients`` concurrent client processes (group commit), beside
   a bare write+fsync loop's rate in the same folder right before and after;
3. the gateway's RSS idle and right after the load, its CPU time per proposal (which follows
   the code more than the disk does), and the load average before and after.
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


def client_main(home: Path) -> None:
    """One requester process: hello, wait for its session grant, then proposals on command.

    Each ``go N`` line on stdin runs N proposals back to back and prints their round trips."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(home / "run" / "agent.sock"))
    assert recv_message(sock)["type"] == "welcome"  # the gateway speaks first
    send_message(sock, {**PROPOSAL, "id": "warm"})
    first = recv_message(sock)  # blocks until the benchmark approves this client's card
    assert first["ok"], first
    print("ready", flush=True)
    sent = 0
    for command in sys.stdin:
        if not command.startswith("go "):
            break
        samples = []
        started = time.perf_counter()
        for _ in range(int(command.split()[1])):
            sent += 1
            t0 = time.perf_counter()
            send_message(sock, {**PROPOSAL, "id": f"r{sent}"})
            reply = recv_message(sock)
            samples.append(time.perf_counter() - t0)
            assert reply["ok"], reply
        elapsed = time.perf_counter() - started
        print(json.dumps({"samples": samples, "elapsed": elapsed}), flush=True)


def bare_fsyncs(folder: Path, rounds: int, per_round: int = 2) -> list[float]:
    """``per_round`` appends of a record-sized line, each fsynced, timed together: two are
    the floor under a proposal's two durable records."""
    path = folder / "bare.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    line = b"x" * 700 + b"\n"
    samples = []
    try:
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(per_round):
                os.write(fd, line)
                os.fsync(fd)
            samples.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
    return samples


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used (from /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_clients(gw: Gateway, count: int) -> list[subprocess.Popen[str]]:
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


def run_clients(clients: list[subprocess.Popen[str]], count: int) -> list[dict[str, Any]]:
    """Every client runs ``count`` proposals, all starting together."""
    for client in clients:
        assert client.stdin is not None
        client.stdin.write(f"go {count}\n")
        client.stdin.flush()
    results = []
    for client in clients:
        assert client.stdout is not None
        results.append(json.loads(client.stdout.readline()))
    return results


def stop_clients(clients: list[subprocess.Popen[str]]) -> None:
    for client in clients:
        assert client.stdin is not None
        client.stdin.close()
        client.wait(60)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def load_average() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def measure(args: argparse.Namespace, gw: Gateway) -> dict[str, Any]:
    assert gw.proc is not None
    audit = gw.home / "audit"
    idle_rss = rss_mib(gw.proc.pid)

    # 1. One client, alternating chunks of proposals and of bare fsync pairs.
    [client] = start_clients(gw, 1)
    run_clients([client], 10)  # the first requests include one-off digests and caches
    latency: list[float] = []
    bare: list[float] = []
    chunk = max(1, min(50, args.requests // 4))
    cpu = 0.0
    while len(latency) < args.requests:
        before = cpu_seconds(gw.proc.pid)
        [result] = run_clients([client], chunk)
        cpu += cpu_seconds(gw.proc.pid) - before
        latency += result["samples"]
        bare += bare_fsyncs(audit, chunk)
    stop_clients([client])

    # 2. Concurrent clients, beside a bare loop's rate right before and after.
    clients = start_clients(gw, args.clients)
    loop_before = bare_fsyncs(audit, 1, per_round=args.bare_loop)[0]
    started = time.perf_counter()
    results = run_clients(clients, args.per_client)
    wall = time.perf_counter() - started
    loop_after = bare_fsyncs(audit, 1, per_round=args.bare_loop)[0]
    stop_clients(clients)
    load_rss = rss_mib(gw.proc.pid)
    total = sum(len(r["samples"]) for r in results)
    every = [s for r in results for s in r["samples"]]
    fsyncs_per_s = 2 * args.bare_loop / (loop_before + loop_after)
    return {
        "round_trip": {
            "requests": len(latency),
            "p50_ms": pct(latency, 0.5),
            "p99_ms": pct(latency, 0.99),
            "mean_ms": statistics.fmean(latency) * 1000,
            "bare_two_fsyncs_p50_ms": pct(bare, 0.5),
            "bare_two_fsyncs_p99_ms": pct(bare, 0.99),
            "ratio_p50": pct(latency, 0.5) / pct(bare, 0.5),
            "ratio_p99": pct(latency, 0.99) / pct(bare, 0.99),
            # Follows the code more than the disk does: what the gateway process spent.
            "gateway_cpu_ms_per_proposal": cpu / len(latency) * 1000,
        },
        "throughput": {
            "clients": args.clients,
            "proposals": total,
            "proposals_per_s": total / wall,
            "p50_ms": pct(every, 0.5),
            "p99_ms": pct(every, 0.99),
            "bare_fsyncs_per_s": fsyncs_per_s,
            # A proposal needs two durable records: a serial loop of fsyncs would answer half
            # as many proposals as it does fsyncs; above 1, group commit shares them.
            "ratio_to_bare_loop_pairs": total / wall / (fsyncs_per_s / 2),
        },
        "rss_mib": {"idle": idle_rss, "after_load": load_rss},
        "cpus": os.cpu_count(),
    }


def render(figures: dict[str, Any]) -> None:
    rt, tp, rss = figures["round_trip"], figures["throughput"], figures["rss_mib"]
    print(
        f"proposal round trip (stub executor, 2 sealed fsynced records): p50 {rt['p50_ms']:.2f} "
        f"ms, p99 {rt['p99_ms']:.2f} ms over {rt['requests']} requests"
    )
    print(
        f"two bare write+fsync, same folder, alternating chunks: p50 "
        f"{rt['bare_two_fsyncs_p50_ms']:.2f} ms, p99 {rt['bare_two_fsyncs_p99_ms']:.2f} ms"
    )
    print(f"ratio round trip/bare: p50 {rt['ratio_p50']:.2f}x, p99 {rt['ratio_p99']:.2f}x")
    print(f"gateway CPU (user + system) per proposal: {rt['gateway_cpu_ms_per_proposal']:.2f} ms")
    print(
        f"throughput, {tp['clients']} concurrent clients: {tp['proposals_per_s']:.0f} "
        f"proposals/s ({tp['proposals']} proposals; per-request p50 {tp['p50_ms']:.2f} ms, "
        f"p99 {tp['p99_ms']:.2f} ms)"
    )
    print(
        f"bare write+fsync loop, same folder: {tp['bare_fsyncs_per_s']:.0f} fsyncs/s "
        f"= {tp['bare_fsyncs_per_s'] / 2:.0f} pairs/s; proposals/s over pairs/s "
        f"{tp['ratio_to_bare_loop_pairs']:.2f}"
    )
    print(f"gateway RSS: idle {rss['idle']:.1f} MiB, after load {rss['after_load']:.1f} MiB")
    load = figures["load_average"]
    print(
        f"mean single-client round trip {rt['mean_ms']:.2f} ms; {figures['cpus']} CPUs; "
        f"load average before {' '.join(load['before'])}, after {' '.join(load['after'])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--per-client", type=int, default=250)
    parser.add_argument("--bare-loop", type=int, default=500, help="fsyncs in each bare loop")
    parser.add_argument("--quick", action="store_true", help="a short profile (for CI)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    parser.add_argument("--client", nargs=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client_main(Path(args.client[0]))
        return
    if args.quick:
        args.requests, args.per_client, args.bare_loop = 100, 25, 100
    load_before = load_average()
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
        figures = measure(args, gw)
    finally:
        gw.stop()
        shutil.rmtree(base, ignore_errors=True)
    figures["load_average"] = {"before": load_before, "after": load_average()}
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        render(figures)


if __name__ == "__main__":
    main()
