"""Context server speed and memory, side by side with ripgrep and the reference filesystem server.

    python benchmarks/bench_context.py [--files 20000] [--mb 200] [--rounds 200] [--dir DIR]
    python benchmarks/bench_context.py --quick     # 1,000 files, 40 rounds: what CI runs

On one generated workspace, in one run:
  1. index build (`sp context index`, cold) vs one `rg` scan of the same tree;
  2. `search_project` round trip through the MCP SDK client (p50) vs `rg -F -i -n` for the same
     query (p50); target: p50 <= 20 ms and <= 0.2x rg;
  3. `read_file` and `list_directory` (100 entries) round trips (p50) vs
     @modelcontextprotocol/server-filesystem on the same tree, through the MCP SDK client and
     through a bare JSON-RPC client; both servers are open at once and the calls alternate, one
     to each, so both see the same load; goals: bare <= 1.0x, SDK client <= 1.3x;
  4. the context server's resident memory after all of that (target <= 150 MB).
Ratios are ours / peer (lower is better). The load average before and after is in the report.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]
FS_SERVER = REPO / "node_modules" / ".bin" / "mcp-server-filesystem"
WORDS = [
    "def",
    "class",
    "return",
    "import",
    "from",
    "self",
    "value",
    "items",
    "result",
    "config",
    "parse",
    "render",
    "request",
    "response",
    "handler",
    "error",
    "index",
    "table",
    "query",
    "cursor",
    "buffer",
    "stream",
    "token",
    "policy",
    "journal",
    "record",
    "path",
    "folder",
    "file",
    "read",
    "write",
    "open",
    "close",
    "status",
    "update",
    "create",
    "delete",
    "list",
    "count",
    "limit",
    "offset",
    "batch",
    "window",
    "session",
    "client",
    "server",
    "module",
    "package",
    "test",
    "assert",
    "expect",
]


def generate(root: Path, files: int, total_mb: int, seed: int = 7) -> list[str]:
    """A tree of code-like text files; returns the rare needles planted in a few files each."""
    rng = random.Random(seed)
    avg = total_mb * 1024 * 1024 // files
    needles = [f"needle_{i:03d}_{rng.randrange(16**6):06x}" for i in range(40)]
    per_dir = 100
    for i in range(files):
        folder = root / f"pkg{i // (per_dir * 20):02d}" / f"mod{(i // per_dir) % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        size = max(512, int(rng.gauss(avg, avg / 3)))
        lines = []
        length = 0
        while length < size:
            words = rng.choices(WORDS, k=rng.randrange(3, 12))
            line = "    " * rng.randrange(0, 3) + " ".join(words)
            lines.append(line)
            length += len(line) + 1
        if i % 500 == 0:
            lines.insert(rng.randrange(len(lines)), f"    marker = '{needles[(i // 500) % 40]}'")
        ext = (".py", ".ts", ".go", ".md")[i % 4]
        (folder / f"file_{i:05d}{ext}").write_text("\n".join(lines) + "\n")
    return needles


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=False, env=env)
    return time.perf_counter() - start


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


Call = tuple[str, dict[str, Any]]


class BareClient:
    """A bare JSON-RPC client over stdio: what the *server* costs.

    The SDK client also validates structured output against the tool's output schema with
    jsonschema; the reference server returns plain text, so it never pays that. This client
    validates nothing, so both servers are measured alike.
    """

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin, self.proc.stdout
        self._id = 0
        client = {"name": "bench", "version": "0"}
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        self.request("initialize", hello)
        self._send({"method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        self._in.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self._in.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send({"id": self._id, "method": method, "params": params})
        while True:
            line = self._out.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            message = json.loads(line)
            if message.get("id") == self._id:
                if "error" in message or message.get("result", {}).get("isError"):
                    raise RuntimeError(f"{method} failed: {message}")
                return dict(message["result"])

    def timed_call(self, call: Call) -> float:
        start = time.perf_counter()
        self.request("tools/call", {"name": call[0], "arguments": call[1]})
        return time.perf_counter() - start

    def close(self) -> None:
        self._in.close()
        self.proc.wait(30)


def side_by_side(
    ours: Callable[[int], float], peer: Callable[[int], float], rounds: int
) -> tuple[list[float], list[float]]:
    """Alternate one call to each server, so both see the same moment of the machine's load."""
    mine, theirs = [], []
    for i in range(rounds):
        mine.append(ours(i))
        theirs.append(peer(i))
    return mine, theirs


def bare_side_by_side(
    ours_argv: list[str],
    env: dict[str, str],
    peer_argv: list[str] | None,
    calls: list[Call],
    peer_calls: list[Call],
    rounds: int,
) -> tuple[list[float], list[float] | None]:
    ours = BareClient(ours_argv, env)
    peer = BareClient(peer_argv, {"PATH": os.environ["PATH"]}) if peer_argv else None
    try:
        wait_until_indexed(ours)
        warm = min(rounds, 20)  # the first calls (imports, roots, caches) are not the steady state
        for i in range(warm):
            ours.timed_call(calls[i % len(calls)])
            if peer:
                peer.timed_call(peer_calls[i % len(peer_calls)])
        if peer is None:
            return [ours.timed_call(calls[i % len(calls)]) for i in range(rounds)], None
        return side_by_side(
            lambda i: ours.timed_call(calls[i % len(calls)]),
            lambda i: peer.timed_call(peer_calls[i % len(peer_calls)]),
            rounds,
        )
    finally:
        ours.close()
        if peer:
            peer.close()


def wait_until_indexed(client: BareClient) -> None:
    """Our server refreshes its index in the background at start: time nothing until idle."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        health = client.request("tools/call", {"name": "get_health", "arguments": {}})
        if health["structuredContent"]["index_state"] == "ready":
            return
        time.sleep(0.2)
    raise RuntimeError("the index never became ready")


def server_rss_mb(marker: str) -> tuple[float, float]:
    for child in psutil.Process().children(recursive=True):
        try:
            if marker in " ".join(child.cmdline()):
                status = Path(f"/proc/{child.pid}/status").read_text()
                fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
                rss = int(fields["VmRSS"].split()[0]) / 1024
                hwm = int(fields["VmHWM"].split()[0]) / 1024
                return rss, hwm
        except (psutil.Error, OSError, KeyError):
            continue
    return float("nan"), float("nan")


async def sdk_call(client: Client, call: Call) -> float:
    start = time.perf_counter()
    with anyio.fail_after(60):
        result = await client.call_tool(call[0], call[1])
    elapsed = time.perf_counter() - start
    if result.is_error:
        raise RuntimeError(f"{call[0]} failed: {result.content}")
    return elapsed


async def sdk_side_by_side(
    ours: Client, peer: Client | None, calls: list[Call], peer_calls: list[Call], rounds: int
) -> tuple[list[float], list[float] | None]:
    for i in range(min(rounds, 20)):  # warm-up, as for the bare client
        await sdk_call(ours, calls[i % len(calls)])
        if peer is not None:
            await sdk_call(peer, peer_calls[i % len(peer_calls)])
    mine: list[float] = []
    theirs: list[float] = []
    for i in range(rounds):
        mine.append(await sdk_call(ours, calls[i % len(calls)]))
        if peer is not None:
            theirs.append(await sdk_call(peer, peer_calls[i % len(peer_calls)]))
    return mine, theirs if peer is not None else None


async def measure(
    args: argparse.Namespace, root: Path, home: Path, needles: list[str]
) -> dict[str, Any]:
    env = {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}
    report: dict[str, Any] = {}

    # 1. Index build (cold) vs one rg scan.
    build = timed([sys.executable, "-m", "safeport", "context", "index", "--root", str(root)], env)
    # 2. search_project vs rg for the same queries (rg scans the whole tree every time).
    queries = needles[: min(len(needles), args.rounds)]
    rg_times = [timed(["rg", "-F", "-i", "-n", q, str(root)]) for q in queries]
    report["index_build_s"] = round(build, 2)
    report["rg_scan_p50_s"] = round(p50(rg_times), 3)
    report["index_build_vs_one_rg_scan"] = round(build / p50(rg_times), 1)

    rels = sorted(str(p.relative_to(root)) for p in (root / "pkg00" / "mod00").iterdir())[:20]
    dirs = sorted(str(p.relative_to(root)) for p in (root / "pkg00").iterdir())[:20]
    read_calls: list[Call] = [("read_file", {"path": r}) for r in rels]
    list_calls: list[Call] = [("list_directory", {"path": d}) for d in dirs]
    peer_reads: list[Call] = [("read_text_file", {"path": str(root / r)}) for r in rels]
    peer_lists: list[Call] = [("list_directory", {"path": str(root / d)}) for d in dirs]
    ours_argv = [sys.executable, "-m", "safeport.context_server", "--root", str(root)]
    peer_argv = [str(FS_SERVER), str(root)] if FS_SERVER.exists() else None

    # 3. Through the MCP SDK client: both servers open at once, calls alternating.
    ours_params = StdioServerParameters(
        command=sys.executable, args=[*ours_argv[1:], "--origin", "bench"], env=env
    )
    peer_params = StdioServerParameters(
        command=str(FS_SERVER), args=[str(root)], env={"PATH": os.environ["PATH"]}
    )
    with open(os.devnull, "w") as errlog:
        async with contextlib.AsyncExitStack() as stack:
            ours = await stack.enter_async_context(
                Client(stdio_client(ours_params, errlog=errlog), read_timeout_seconds=60)
            )
            peer = None
            if peer_argv:
                peer = await stack.enter_async_context(
                    Client(stdio_client(peer_params, errlog=errlog), read_timeout_seconds=60)
                )
            with anyio.fail_after(300):
                while True:  # the start-up refresh of a prebuilt index
                    health = await ours.call_tool("get_health", {})
                    if health.structured_content["index_state"] == "ready":
                        break
                    await anyio.sleep(0.2)
            search = [await sdk_call(ours, ("search_project", {"query": q})) for q in queries * 2]
            first = await ours.call_tool("search_project", {"query": queries[0]})
            assert first.structured_content["hits"], "the benchmark query found nothing"
            sdk_read = await sdk_side_by_side(ours, peer, read_calls, peer_reads, args.rounds)
            sdk_list = await sdk_side_by_side(ours, peer, list_calls, peer_lists, args.rounds)
            rss, hwm = server_rss_mb("safeport.context_server")

    # 4. The same calls with a bare JSON-RPC client (no client-side output validation).
    bare_read = bare_side_by_side(ours_argv, env, peer_argv, read_calls, peer_reads, args.rounds)
    bare_list = bare_side_by_side(ours_argv, env, peer_argv, list_calls, peer_lists, args.rounds)

    ms = 1000.0
    report["search_project_p50_ms"] = round(p50(search) * ms, 2)
    report["rg_same_query_p50_ms"] = round(p50(rg_times) * ms, 1)
    report["search_vs_rg"] = round(p50(search) / p50(rg_times), 3)
    for label, (mine, theirs) in (
        ("sdk_read_file", sdk_read),
        ("sdk_list_directory", sdk_list),
        ("bare_read_file", bare_read),
        ("bare_list_directory", bare_list),
    ):
        report[f"{label}_p50_ms"] = round(p50(mine) * ms, 3)
        if theirs is not None:
            report[f"{label}_fs_server_p50_ms"] = round(p50(theirs) * ms, 3)
            report[f"{label}_vs_fs_server"] = round(p50(mine) / p50(theirs), 2)
    report["server_rss_mb"] = round(rss, 1)
    report["server_peak_rss_mb"] = round(hwm, 1)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=None, help="default 20,000 (quick: 1,000)")
    parser.add_argument("--mb", type=int, default=None, help="default 200 (quick: 10)")
    parser.add_argument("--rounds", type=int, default=None, help="default 200 (quick: 40)")
    parser.add_argument("--dir", type=Path, default=None, help="where to build the workspace")
    parser.add_argument("--quick", action="store_true", help="the short profile CI runs")
    args = parser.parse_args()
    full = {"files": 20_000, "mb": 200, "rounds": 200}
    quick = {"files": 1_000, "mb": 10, "rounds": 40}
    for name, value in (quick if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if shutil.which("rg") is None:
        sys.exit("ripgrep (rg) is required")
    base = Path(tempfile.mkdtemp(prefix="bench-context-", dir=args.dir))
    try:
        root, home = base / "ws", base / "home"
        root.mkdir()
        home.mkdir(mode=0o700)
        started = time.perf_counter()
        needles = generate(root, args.files, args.mb)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        report: dict[str, Any] = {
            "files": args.files,
            "workspace_mb": round(size / 2**20, 1),
            "generate_s": round(time.perf_counter() - started, 1),
            "rounds": args.rounds,
            "cpus": os.cpu_count(),
            "loadavg_before": os.getloadavg(),
        }
        report.update(anyio.run(measure, args, root, home, needles))
        report["loadavg_after"] = os.getloadavg()
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
