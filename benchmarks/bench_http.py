"""`sp context serve --http` beside the MCP SDK's own minimal Streamable HTTP server.

    python benchmarks/bench_http.py [--rounds 300] [--clients 50] [--calls 10]
    python benchmarks/bench_http.py --quick      # 60 rounds, 10 clients: what CI runs

In one run, on one workspace, with a real gateway (the harness's, in-memory vault) as the
authorization server:
  1. authenticated `read_file` round trips (p50) through the MCP SDK client: ours (tokens the
     OAuth flow issued: signature, claims, the gateway's word -- `oauth_check` on agent.sock,
     reused while its revocation notice is unchanged --, rate bucket, journal) vs the SDK's
     minimal `MCPServer` over Streamable HTTP with a static bearer check, serving the same file;
     the calls alternate, one to each, so both see the same load; budget <= 1.3x;
  2. ``--clients`` approved clients (each went through the flow: its own card and token), all
     at once, ``--calls`` reads each; errors must be 0;
  3. the same round trips as plain JSON-RPC POSTs (no client-side output-schema validation,
     which the SDK client applies to our typed results and not to the peer's plain dict);
  4. our server's resident memory after that.
Ratios are ours / peer (lower is better). The load average before and after is in the report.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psutil
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.gateway import POLICY, Gateway  # noqa: E402
from harness.http_context import HttpServer, free_port, http_server  # noqa: E402
from harness.remote_flow import Browser, MemoryTokens, provider, read_remotely  # noqa: E402

PEER_TOKEN = "static-bench-token-0123456789abcdef"
FILE_TEXT = "".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(80))


def serve_peer(port: int, source: Path) -> None:
    """The SDK's minimal Streamable HTTP server: one `read_file` tool, a static bearer check."""
    import logging

    import uvicorn
    from mcp.server.mcpserver import MCPServer

    # As ours: no per-request log lines (the SDK would log each stateless request at INFO).
    logging.basicConfig(level=logging.WARNING, force=True)
    from starlette.types import ASGIApp, Receive, Scope, Send

    server = MCPServer(name="peer", log_level="WARNING")

    @server.tool()
    def read_file(path: str) -> dict[str, Any]:
        """Read the file."""
        text = source.read_text()
        return {"path": path, "text": text, "total_bytes": len(text)}

    app = server.streamable_http_app(stateless_http=True)

    class StaticBearer:
        def __init__(self, inner: ASGIApp) -> None:
            self.inner = inner

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                headers = dict(scope["headers"])
                if headers.get(b"authorization") != f"Bearer {PEER_TOKEN}".encode():
                    await send({"type": "http.response.start", "status": 401, "headers": []})
                    await send({"type": "http.response.body", "body": b""})
                    return
            await self.inner(scope, receive, send)

    uvicorn.run(StaticBearer(app), host="127.0.0.1", port=port, log_level="warning")


@contextlib.contextmanager
def running_peer(path: Path) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, __file__, "--peer", str(port), str(path)]
    process = subprocess.Popen(argv, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with httpx2.Client() as probe:
                    probe.get(url, timeout=1)
                break
            except httpx2.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def approve_client(gateway: Gateway, server: HttpServer, name: str) -> str:
    """One client through the whole flow (its own card); its access token.

    Fifty flows one after the other are fifty strangers to the HTTP server until each holds a
    token, and together they can outrun the strangers' bucket (20/s): the SDK's client does not
    retry a 429, so a refused flow is started again after the bucket refilled."""
    for attempt in range(3):
        browser, storage = Browser(gateway.home, harness=gateway), MemoryTokens()
        auth = provider(server.url + "/mcp", browser, storage, client_name=name)
        try:
            anyio.run(read_remotely, server.url + "/mcp", auth, "legacy")
        except Exception:
            if attempt == 2:
                raise
            time.sleep(3)
            continue
        break
    assert storage.tokens is not None
    return storage.tokens.access_token


def bearer(token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60)


async def side_by_side(
    ours: str, tokens: list[str], peer: str, rounds: int
) -> tuple[list[float], ...]:
    """Ours through a few approved clients in turn (one alone, this fast, would spend its rate
    budget of 50/s and be answered 429), the peer through one."""
    mine: list[float] = []
    theirs: list[float] = []
    async with contextlib.AsyncExitStack() as stack:
        own = [
            await stack.enter_async_context(
                Client(streamable_http_client(ours, http_client=bearer(token)), mode="legacy")
            )
            for token in tokens[:4]
        ]
        b = await stack.enter_async_context(
            Client(streamable_http_client(peer, http_client=bearer(PEER_TOKEN)), mode="legacy")
        )
        for index in range(rounds + 10):
            a = own[index % len(own)]
            for client, out in ((a, mine), (b, theirs)):
                started = time.perf_counter()
                result = await client.call_tool("read_file", {"path": "notes.md"})
                elapsed = time.perf_counter() - started
                assert not result.is_error, result.content
                if index >= 10:  # the first calls warm both up
                    out.append(elapsed)
    return mine, theirs


async def bare_side_by_side(
    ours: str, tokens: list[str], peer: str, rounds: int
) -> tuple[list[float], list[float]]:
    """The same calls as plain JSON-RPC POSTs (no client-side schema validation, no session),
    ours with the approved clients' tokens in turn: one client alone, this fast, would spend its
    rate budget (50/s) and be answered 429."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "notes.md"}},
    }
    mine: list[float] = []
    theirs: list[float] = []
    async with httpx2.AsyncClient(timeout=60) as http:
        for index in range(rounds + 10):
            token = tokens[index % len(tokens)]
            for url, secret, out in ((ours, token, mine), (peer, PEER_TOKEN, theirs)):
                headers = {
                    "authorization": f"Bearer {secret}",
                    "accept": "application/json, text/event-stream",
                    "mcp-protocol-version": "2025-11-25",
                }
                started = time.perf_counter()
                answer = await http.post(url, json=body, headers=headers)
                elapsed = time.perf_counter() - started
                assert answer.status_code == 200 and '"isError":false' in answer.text
                if index >= 10:
                    out.append(elapsed)
    return mine, theirs


async def concurrent(url: str, tokens: list[str], calls: int) -> tuple[int, int, float]:
    """Every client at once, ``calls`` reads each: (ok, errors, seconds)."""
    done = {"ok": 0, "errors": 0}

    async def one(token: str) -> None:
        try:
            async with Client(
                streamable_http_client(url, http_client=bearer(token)), mode="legacy"
            ) as client:
                for _ in range(calls):
                    result = await client.call_tool("read_file", {"path": "notes.md"})
                    done["errors" if result.is_error else "ok"] += 1
        except Exception:
            done["errors"] += 1

    started = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for token in tokens:
            tasks.start_soon(one, token)
    return done["ok"], done["errors"], time.perf_counter() - started


def server_rss_mb(server: HttpServer) -> float:
    top = psutil.Process(server.process.pid)
    for process in [top, *top.children(recursive=True)]:
        if "safeport" in " ".join(process.cmdline()) and "flock" not in process.name():
            return float(process.memory_info().rss) / 2**20
    return float("nan")


def p50(values: list[float]) -> float:
    return statistics.median(values)


def measure(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    root, home = base / "proj", base / "h"
    root.mkdir()
    home.mkdir(mode=0o700)
    (root / "notes.md").write_text(FILE_TEXT)
    gateway = Gateway(home)
    gateway.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 60"))
    gateway.start()
    gateway.unlock()
    gateway.accept_policy()
    report: dict[str, Any] = {}
    try:
        with (
            http_server(home, root, client=True) as server,
            running_peer(root / "notes.md") as peer,
        ):
            tokens = [
                approve_client(gateway, server, f"bench client {n}") for n in range(args.clients)
            ]
            mine, theirs = anyio.run(side_by_side, server.url + "/mcp", tokens, peer, args.rounds)
            bare = anyio.run(bare_side_by_side, server.url + "/mcp", tokens, peer, args.rounds)
            ok, errors, seconds = anyio.run(concurrent, server.url + "/mcp", tokens, args.calls)
            ms = 1000.0
            report["read_file_p50_ms"] = round(p50(mine) * ms, 3)
            report["sdk_minimal_server_read_file_p50_ms"] = round(p50(theirs) * ms, 3)
            report["read_file_vs_sdk_minimal_server"] = round(p50(mine) / p50(theirs), 2)
            report["bare_read_file_p50_ms"] = round(p50(bare[0]) * ms, 3)
            report["bare_sdk_minimal_server_read_file_p50_ms"] = round(p50(bare[1]) * ms, 3)
            report["bare_read_file_vs_sdk_minimal_server"] = round(p50(bare[0]) / p50(bare[1]), 2)
            report["concurrent_clients"] = args.clients
            report["concurrent_calls_ok"] = ok
            report["concurrent_errors"] = errors
            report["concurrent_seconds"] = round(seconds, 2)
            report["server_rss_mb"] = round(server_rss_mb(server), 1)
    finally:
        gateway.stop()
    return report


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--peer":
        serve_peer(int(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="default 300 (quick: 60)")
    parser.add_argument("--clients", type=int, default=None, help="default 50 (quick: 10)")
    parser.add_argument("--calls", type=int, default=10, help="reads per concurrent client")
    parser.add_argument("--quick", action="store_true", help="the short profile CI runs")
    parser.add_argument("--json", action="store_true", help="one JSON object (always so)")
    args = parser.parse_args()
    for name, full, quick in (("rounds", 300, 60), ("clients", 50, 10)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    base = Path(tempfile.mkdtemp(prefix="bench-http-"))
    try:
        report: dict[str, Any] = {
            "rounds": args.rounds,
            "cpus": os.cpu_count(),
            "loadavg_before": os.getloadavg(),
        }
        report.update(measure(args, base))
        report["loadavg_after"] = os.getloadavg()
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
