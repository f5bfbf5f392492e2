"""Flat memory: the gateway's and the context server's RSS over 10,000 requests each.

    python benchmarks/bench_memory.py [--requests 10000] [--files 2000]

1. Gateway (test harness: in-memory vault, stub executor, sealed journals): one requester
   process on a session grant sends proposals in blocks of a thousand; the gateway's VmRSS is
   read after each block.
2. Context server (over stdio, a bare JSON-RPC client): read_file, list_directory and
   search_project in turn on a generated workspace; the server's VmRSS after each block.

The verdict is the slope between the end of the 2nd and the end of the last block, relative to
the 2nd: flat means within 5 %. Prints one JSON object; quote the load average beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_context import generate  # noqa: E402
from harness.gateway import POLICY, Gateway, clean_env, decide, wait_card  # noqa: E402
from harness.mcp_raw import RawMcp  # noqa: E402
from safeport.shared.wire import recv_message, send_message  # noqa: E402

BLOCK = 1000
FLAT = 0.05
PROPOSAL = {
    "v": 1,
    "type": "propose",
    "action": "ssh_exec",
    "host_id": "session-host",
    "command_id": "uptime",
    "args": {},
}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def slope(samples: list[int]) -> float:
    """Growth from the end of the 2nd block to the end of the last, relative to the 2nd."""
    return (samples[-1] - samples[1]) / samples[1]


def client_main(home: Path) -> None:
    """A requester: one session grant, then a block of proposals per line read from stdin."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(home / "run" / "agent.sock"))
    recv_message(sock)
    send_message(sock, {**PROPOSAL, "id": "warm"})
    assert recv_message(sock)["ok"]
    print("ready", flush=True)
    number = 0
    for line in sys.stdin:
        for _ in range(int(line)):
            number += 1
            send_message(sock, {**PROPOSAL, "id": f"r{number}"})
            reply = recv_message(sock)
            assert reply["ok"], reply
        print("done", flush=True)


def gateway_rss(requests: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sp-mem-") as tmp:
        home = Path(tmp) / "h"
        home.mkdir(mode=0o700)
        gw = Gateway(home)
        gw.write_policy(POLICY)
        gw.start("--seal")
        client = None
        try:
            gw.unlock()
            gw.accept_policy()
            requester = [sys.executable, __file__, "--client", str(home)]
            client = subprocess.Popen(
                ["flock", "-s", str(home / "client.lock"), *requester],
                cwd=REPO,
                env=clean_env(home),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert decide(gw, wait_card(gw, 30)["id"])["ok"]
            assert client.stdout is not None and client.stdin is not None
            assert client.stdout.readline().strip() == "ready"
            assert gw.proc is not None
            samples = []
            started = time.perf_counter()
            for _ in range(requests // BLOCK):
                client.stdin.write(f"{BLOCK}\n")
                client.stdin.flush()
                assert client.stdout.readline().strip() == "done"
                samples.append(rss_kib(gw.proc.pid))
            elapsed = time.perf_counter() - started
        finally:
            if client is not None:
                client.kill()
                client.wait(10)
            rc = gw.stop()
        assert rc == 0
    return {"rss_kib": samples, "slope": round(slope(samples), 4), "seconds": round(elapsed, 1)}


def context_rss(requests: int, files: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sp-mem-ctx-") as tmp:
        root, home = Path(tmp) / "ws", Path(tmp) / "home"
        root.mkdir()
        home.mkdir(mode=0o700)
        needles = generate(root, files, max(1, files // 100))
        rels = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        dirs = sorted({str(Path(r).parent) for r in rels})
        server = RawMcp(root, home)
        try:
            server.wait_ready()
            samples = []
            started = time.perf_counter()
            for block in range(requests // BLOCK):
                for i in range(BLOCK):
                    n = block * BLOCK + i
                    if n % 3 == 0:
                        server.call("read_file", {"path": rels[n % len(rels)]})
                    elif n % 3 == 1:
                        server.call("list_directory", {"path": dirs[n % len(dirs)]})
                    else:
                        server.call("search_project", {"query": needles[n % len(needles)]})
                samples.append(rss_kib(server.proc.pid))
            elapsed = time.perf_counter() - started
        finally:
            server.close()
    return {"rss_kib": samples, "slope": round(slope(samples), 4), "seconds": round(elapsed, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--client", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client is not None:
        client_main(args.client)
        return
    report = {
        "requests": args.requests,
        "gateway": gateway_rss(args.requests),
        "context_server": context_rss(args.requests, args.files),
        "flat_within": FLAT,
    }
    report["flat"] = all(abs(report[k]["slope"]) <= FLAT for k in ("gateway", "context_server"))
    report["load_average"] = os.getloadavg()
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
