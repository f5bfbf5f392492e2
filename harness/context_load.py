"""Context servers under load while the workspace changes underneath.

:func:`run_context_load` generates a workspace, builds its index once (`sp context index`),
then starts ``clients`` MCP clients, each with its own context server over stdio (as each IDE
runs its own), all on the same workspace and index. Every client mixes read_file,
list_directory and search_project without pause for ``seconds``, while a writer rewrites,
creates and deletes files in ``churn/`` every 20 ms. Readers read only files that stay; listings
and searches cover the churn too. Any JSON-RPC error, tool error or server exit is an error.
Reported: calls, errors, p50/p99, and each server's RSS after the warm-up and at the end.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness.mcp_raw import RawMcp, ServerError

WORDS = ["alpha", "bravo", "cursor", "stream", "render", "parse", "table", "query", "index"]


def generate(root: Path, files: int, seed: int = 5) -> list[str]:
    """``files`` small source files in folders of 100, and a few needles to search for."""
    rng = random.Random(seed)
    needles = [f"needle_{i:02d}_{rng.randrange(16**6):06x}" for i in range(20)]
    for i in range(files):
        folder = root / f"pkg{i // 2000:02d}" / f"mod{(i // 100) % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rng.choices(WORDS, k=8)) for _ in range(rng.randrange(5, 40))]
        if i % 250 == 0:
            lines.append(f"marker = '{needles[(i // 250) % len(needles)]}'")
        (folder / f"file_{i:05d}.py").write_text("\n".join(lines) + "\n")
    (root / "churn").mkdir()
    return needles


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def run_context_load(
    workspace: Path, home: Path, *, files: int, clients: int, seconds: float
) -> dict[str, Any]:
    needles = generate(workspace, files)
    env = {"SAFEPORT_HOME": str(home), "PATH": "/usr/bin:/bin"}
    index = [sys.executable, "-m", "safeport", "context", "index", "--root", str(workspace)]
    built = time.perf_counter()
    subprocess.run(index, env=env, check=True, capture_output=True, timeout=600)
    index_s = time.perf_counter() - built
    stable = sorted(str(p.relative_to(workspace)) for p in (workspace / "pkg00").rglob("*.py"))[
        :500
    ]
    folders = [*sorted({str(Path(rel).parent) for rel in stable}), "churn", "pkg00", "."]

    servers = [RawMcp(workspace, home) for _ in range(clients)]
    for server in servers:
        server.wait_ready()
    stop = threading.Event()
    samples: list[list[float]] = [[] for _ in servers]
    errors: list[str] = []
    changes = {"written": 0, "deleted": 0}

    def churn() -> None:
        rng = random.Random(11)
        while not stop.is_set():
            path = workspace / "churn" / f"c{rng.randrange(200):03d}.py"
            if path.exists() and rng.random() < 0.3:
                path.unlink()
                changes["deleted"] += 1
            else:
                path.write_text(" ".join(rng.choices([*WORDS, needles[0]], k=50)) + "\n")
                changes["written"] += 1
            stop.wait(0.02)

    def client(index: int) -> None:
        server, rng = servers[index], random.Random(index)
        while not stop.is_set():
            kind = rng.randrange(3)
            t0 = time.perf_counter()
            try:
                if kind == 0:
                    server.call("read_file", {"path": rng.choice(stable)})
                elif kind == 1:
                    server.call("list_directory", {"path": rng.choice(folders)})
                else:
                    server.call("search_project", {"query": rng.choice(needles)})
            except (ServerError, OSError, ValueError) as exc:
                errors.append(f"client {index}: {exc}"[:300])
                return
            samples[index].append(time.perf_counter() - t0)

    writer = threading.Thread(target=churn, daemon=True)
    workers = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    writer.start()
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    time.sleep(min(5.0, seconds / 4))
    rss_warm = [_rss_kib(server.proc.pid) for server in servers]
    time.sleep(max(0.0, seconds - (time.perf_counter() - started)))
    rss_end = [_rss_kib(server.proc.pid) for server in servers]
    stop.set()
    for worker in workers:
        worker.join(60)
    writer.join(10)
    wall = time.perf_counter() - started
    alive = [server.proc.poll() is None for server in servers]
    for server in servers:
        server.close()
    flat = [s for per in samples for s in per]
    ordered = sorted(flat)
    return {
        "files": files,
        "clients": clients,
        "seconds": round(wall, 1),
        "index_build_s": round(index_s, 1),
        "calls": len(flat),
        "errors": len(errors),
        "first_errors": errors[:3],
        "servers_alive": all(alive),
        "p50_ms": round(statistics.median(flat) * 1000, 2) if flat else None,
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))] * 1000, 2) if flat else None,
        "calls_per_s": round(len(flat) / wall, 1),
        "changes": changes,
        "rss_warm_kib": rss_warm,
        "rss_end_kib": rss_end,
        "rss_growth_max": round(max(e / w - 1 for w, e in zip(rss_warm, rss_end, strict=True)), 4),
    }
