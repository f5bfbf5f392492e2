"""Context server speed and memory, side by side with ripgrep and the reference filesystem server.

    python benchmarks/bench_context.py [--files 20000] [--mb 200] [--rounds 50] [--dir DIR]

On one generated workspace, in one run:
  1. index build (`sp context index`, cold) vs one `rg` scan of the same tree;
  2. `search_project` round trip through the MCP SDK client (p50) vs `rg -F -i -n` for the same
     query (p50); target: p50 <= 20 ms and <= 0.2x rg;
  3. `read_file` and `list_directory` round trips (p50) vs @modelcontextprotocol/server-filesystem
     on the same tree, same client; goal <= 1.0x;
  4. the context server's resident memory after all of that (target <= 150 MB).
Ratios are ours / peer (lower is better).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
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


async def round_trips(
    client: Client, calls: list[tuple[str, dict[str, Any]]], rounds: int
) -> list[float]:
    out = []
    for i in range(rounds):
        name, args = calls[i % len(calls)]
        start = time.perf_counter()
        with anyio.fail_after(60):
            result = await client.call_tool(name, args)
        out.append(time.perf_counter() - start)
        if result.is_error:
            raise RuntimeError(f"{name} failed: {result.content}")
    return out


def raw_round_trips(
    argv: list[str],
    env: dict[str, str],
    calls: list[tuple[str, dict[str, Any]]],
    rounds: int,
    *,
    wait_for_index: bool = False,
) -> list[float]:
    """Round trips with a bare JSON-RPC client over stdio: what the *server* costs.

    The SDK client also validates structured output against the tool's output schema with
    jsonschema; the reference server returns plain text, so it never pays that. This client
    validates nothing, so both servers are measured alike.
    """
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def send(message: dict[str, Any]) -> None:
        stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        stdin.flush()

    def reply(request_id: int) -> dict[str, Any]:
        while True:
            line = stdout.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            message = json.loads(line)
            if message.get("id") == request_id:
                return dict(message)

    try:
        client = {"name": "bench", "version": "0"}
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        send({"id": 0, "method": "initialize", "params": hello})
        reply(0)
        send({"method": "notifications/initialized"})
        next_id = 1
        # Our server refreshes its index in the background at start: time nothing until it is
        # idle, as the SDK-client measurement does.
        while wait_for_index:
            send({"id": next_id, "method": "tools/call", "params": {"name": "get_health"}})
            state = reply(next_id)["result"]["structuredContent"]["index_state"]
            next_id += 1
            if state == "ready":
                break
            time.sleep(0.2)
        out = []
        for i in range(rounds):
            name, arguments = calls[i % len(calls)]
            start = time.perf_counter()
            send(
                {
                    "id": next_id + i,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
            )
            answer = reply(next_id + i)
            out.append(time.perf_counter() - start)
            if "error" in answer or answer.get("result", {}).get("isError"):
                raise RuntimeError(f"{name} failed: {answer}")
        return out
    finally:
        stdin.close()
        proc.wait(30)


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


async def with_client(
    params: StdioServerParameters, body: Callable[[Client], Awaitable[Any]]
) -> Any:
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
            return await body(client)


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
    ours = StdioServerParameters(
        command=sys.executable,
        args=["-m", "safeport.context_server", "--root", str(root), "--origin", "bench"],
        env=env,
    )

    async def ours_body(client: Client) -> dict[str, Any]:
        with anyio.fail_after(300):
            while True:  # the start-up refresh of a prebuilt index
                health = await client.call_tool("get_health", {})
                if health.structured_content["index_state"] == "ready":
                    break
                await anyio.sleep(0.2)
        search = await round_trips(
            client, [("search_project", {"query": q}) for q in queries], len(queries) * 2
        )
        first = await client.call_tool("search_project", {"query": queries[0]})
        assert first.structured_content["hits"], "the benchmark query found nothing"
        reads = await round_trips(client, read_calls, args.rounds)
        lists = await round_trips(client, list_calls, args.rounds)
        rss, hwm = server_rss_mb("safeport.context_server")
        return {"search": search, "read": reads, "list": lists, "rss": rss, "hwm": hwm}

    rels = sorted(str(p.relative_to(root)) for p in (root / "pkg00" / "mod00").iterdir())[:20]
    dirs = sorted(str(p.relative_to(root)) for p in (root / "pkg00").iterdir())[:20]
    read_calls = [("read_file", {"path": r}) for r in rels]
    list_calls = [("list_directory", {"path": d}) for d in dirs]
    mine = await with_client(ours, ours_body)

    fs = StdioServerParameters(
        command=str(FS_SERVER), args=[str(root)], env={"PATH": os.environ["PATH"]}
    )

    async def fs_body(client: Client) -> dict[str, Any]:
        reads = await round_trips(
            client, [("read_text_file", {"path": str(root / r)}) for r in rels], args.rounds
        )
        lists = await round_trips(
            client, [("list_directory", {"path": str(root / d)}) for d in dirs], args.rounds
        )
        return {"read": reads, "list": lists}

    peer = await with_client(fs, fs_body) if FS_SERVER.exists() else None

    # The same calls with a bare JSON-RPC client (no client-side output validation).
    ours_argv = [sys.executable, "-m", "safeport.context_server", "--root", str(root)]
    raw_ours = {
        "read": raw_round_trips(ours_argv, env, read_calls, args.rounds, wait_for_index=True),
        "list": raw_round_trips(ours_argv, env, list_calls, args.rounds, wait_for_index=True),
    }
    raw_peer = None
    if FS_SERVER.exists():
        fs_argv = [str(FS_SERVER), str(root)]
        fs_env = {"PATH": os.environ["PATH"]}
        raw_peer = {
            "read": raw_round_trips(
                fs_argv, fs_env, [("read_text_file", {"path": str(root / r)}) for r in rels],
                args.rounds,
            ),
            "list": raw_round_trips(
                fs_argv, fs_env, [("list_directory", {"path": str(root / d)}) for d in dirs],
                args.rounds,
            ),
        }  # fmt: skip

    ms = 1000.0
    report["search_project_p50_ms"] = round(p50(mine["search"]) * ms, 2)
    report["rg_same_query_p50_ms"] = round(p50(rg_times) * ms, 1)
    report["search_vs_rg"] = round(p50(mine["search"]) / p50(rg_times), 3)
    report["read_file_p50_ms"] = round(p50(mine["read"]) * ms, 2)
    report["list_directory_p50_ms"] = round(p50(mine["list"]) * ms, 2)
    if peer is not None:
        report["fs_server_read_p50_ms"] = round(p50(peer["read"]) * ms, 2)
        report["fs_server_list_p50_ms"] = round(p50(peer["list"]) * ms, 2)
        report["read_file_vs_fs_server"] = round(p50(mine["read"]) / p50(peer["read"]), 2)
        report["list_directory_vs_fs_server"] = round(p50(mine["list"]) / p50(peer["list"]), 2)
    report["raw_read_file_p50_ms"] = round(p50(raw_ours["read"]) * ms, 2)
    report["raw_list_directory_p50_ms"] = round(p50(raw_ours["list"]) * ms, 2)
    if raw_peer is not None:
        report["raw_fs_server_read_p50_ms"] = round(p50(raw_peer["read"]) * ms, 2)
        report["raw_fs_server_list_p50_ms"] = round(p50(raw_peer["list"]) * ms, 2)
        report["raw_read_file_vs_fs_server"] = round(
            p50(raw_ours["read"]) / p50(raw_peer["read"]), 2
        )
        report["raw_list_directory_vs_fs_server"] = round(
            p50(raw_ours["list"]) / p50(raw_peer["list"]), 2
        )
    report["server_rss_mb"] = round(mine["rss"], 1)
    report["server_peak_rss_mb"] = round(mine["hwm"], 1)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the workspace")
    args = parser.parse_args()
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
            "cpus": os.cpu_count(),
        }
        report.update(anyio.run(measure, args, root, home, needles))
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
