"""The context server's work bounds on hostile shapes, each beside a baseline in the same run.

    python benchmarks/bench_context_bounds.py [--depth 2000] [--wide 200000] [--dir DIR]

Shapes a cloned repository can hold: a folder chain `depth` deep (one file at the bottom)
against a flat folder of as many subfolders; one folder of `wide` entries against one of 50;
a 60 MiB single-line file and a 60 MiB file of newlines against small reads. Everything runs
in-process through the same operations the tools call (`WorkspaceService`); the wide folder's
memory is measured in a real server process over stdio (MCP SDK client). Ratios are
hostile / baseline (lower is better).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from safeport.context_server import ServeOptions, build_server  # noqa: E402
from safeport.context_server.operations.service import WorkspaceService  # noqa: E402


def timed(fn: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def cpu(fn: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def service_for(root: Path, home: Path) -> WorkspaceService:
    os.environ["SAFEPORT_HOME"] = str(home)
    _, service = build_server(ServeOptions(roots=[str(root)]))
    return service


def deep_and_flat(base: Path, depth: int) -> dict[str, Any]:
    deep, flat = base / "deep", base / "flat"
    deep.mkdir()
    flat.mkdir()
    fd = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(os.open("bottom.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)
    for i in range(depth):
        (flat / f"d{i:05d}").mkdir()
    (flat / "bottom.py").write_bytes(b"")
    out: dict[str, Any] = {}
    for name, root in (("deep", deep), ("flat", flat)):
        service = service_for(root, base / f"home-{name}")
        out[f"{name}_index_s"] = timed(service.index.refresh, rounds=1)
        out[f"{name}_search_files_s"] = timed(partial(service.search_files, "*.py", ".", 10))
        out[f"{name}_search_project_s"] = timed(
            partial(service.search_project, "zz", ".", 20, None)
        )
        service.journal.close()
    for key in ("index_s", "search_files_s", "search_project_s"):
        out[f"ratio_{key}"] = out[f"deep_{key}"] / out[f"flat_{key}"]
    return out


def wide_folder(base: Path, wide: int) -> dict[str, Any]:
    root = base / "wide-ws"
    (root / "wide").mkdir(parents=True)
    (root / "narrow").mkdir()
    for i in range(50):
        (root / "narrow" / f"f{i:06d}.py").write_bytes(b"")
    fd = os.open(root / "wide", os.O_RDONLY | os.O_DIRECTORY)
    for i in range(wide):
        os.close(os.open(f"f{i:06d}.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)
    service = service_for(root, base / "home-wide")
    out: dict[str, Any] = {
        "first_page_s": timed(lambda: service.list_directory("wide", 50, None), rounds=1),
        "later_page_s": timed(lambda: service.list_directory("wide", 50, "o1.0.150000"), 5),
        "page_of_1000_s": timed(lambda: service.list_directory("wide", 1000, "o1.0.100000"), 5),
        "small_folder_page_s": timed(lambda: service.list_directory("narrow", 50, None), 5),
    }
    out["ratio_later_vs_small"] = out["later_page_s"] / out["small_folder_page_s"]
    service.journal.close()
    out.update(anyio.run(_server_rss, root, base / "home-wide-server"))
    return out


async def _server_rss(root: Path, home: Path) -> dict[str, Any]:
    home.mkdir(mode=0o700)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "safeport.context_server", "--root", str(root)],
        env={"SAFEPORT_HOME": str(home), "PATH": os.environ.get("PATH", "")},
    )
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
            await client.call_tool("list_directory", {"path": "narrow"})
            server = next(
                p
                for p in psutil.Process().children(recursive=True)
                if "context_server" in " ".join(p.cmdline())
            )
            baseline = server.memory_info().rss
            for cursor in (None, "o1.0.100000", "o1.0.199000"):
                await client.call_tool(
                    "list_directory", {"path": "wide", "limit": 1000, "cursor": cursor}
                )
            await client.call_tool("directory_tree", {"path": ".", "max_entries": 5000})
            after = server.memory_info().rss
            # The background index of 200,000 files, built at start, is its own peak.
            for _ in range(600):
                health = await client.call_tool("get_health", {})
                if health.structured_content["index_state"] == "ready":
                    break
                await anyio.sleep(0.5)
            indexed = server.memory_info().rss
    mib = 1024 * 1024
    return {
        "server_rss_small_listing_mib": baseline / mib,
        "server_rss_after_wide_pages_mib": after / mib,
        "server_rss_after_index_mib": indexed / mib,
    }


def excerpts(base: Path) -> dict[str, Any]:
    root = base / "excerpt-ws"
    root.mkdir()
    with (root / "one_line.txt").open("wb") as f:
        f.write(b"y" * (60 << 20) + b"\nend\n")
    with (root / "newlines.txt").open("wb") as f:
        f.write(b"\n" * (60 << 20))
    service = service_for(root, base / "home-excerpt")
    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    for _ in range(40):  # the round-1 attack: 40 calls far into one 60 MiB line
        service.read_file_excerpt("one_line.txt", 1, 5, 59 << 20)
    rss40 = proc.memory_info().rss
    out = {
        "excerpt_start_column_cpu_s": cpu(
            lambda: service.read_file_excerpt("one_line.txt", 1, 5, 10**9)
        ),
        "excerpt_start_line_cpu_s": cpu(
            lambda: service.read_file_excerpt("newlines.txt", 10**9, 5, 1)
        ),
        "excerpt_first_lines_cpu_s": cpu(
            lambda: service.read_file_excerpt("one_line.txt", 1, 5, 1)
        ),
        "rss_growth_40_far_column_calls_mib": (rss40 - rss0) / (1024 * 1024),
    }
    calls, excerpt = 1, service.read_file_excerpt("one_line.txt", 1, 5, (60 << 20) - 10)
    while not excerpt.lines and excerpt.next_cursor:
        excerpt = service.read_file_excerpt(
            "one_line.txt", 1, 5, excerpt.next_column or 1, excerpt.next_cursor
        )
        calls += 1
    out["calls_to_reach_column_60Mi"] = calls
    service.journal.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=2000)
    parser.add_argument("--wide", type=int, default=200_000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(dir=args.dir, prefix="bench-bounds-"))
    try:
        report = {
            "depth": deep_and_flat(base, args.depth),
            "wide": wide_folder(base, args.wide),
            "excerpts": excerpts(base),
        }
    finally:
        _remove(base)
    print(json.dumps(report, indent=2))


def _remove(base: Path) -> None:
    deep = base / "deep"
    while (deep / "d").exists():  # one level at a time: recursive removers overflow
        for entry in (deep / "d").iterdir():
            if entry.name != "d":
                entry.unlink()
        if (deep / "d" / "d").exists():
            (deep / "d" / "d").rename(deep / "next")
        (deep / "d").rmdir()
        if (deep / "next").exists():
            (deep / "next").rename(deep / "d")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
