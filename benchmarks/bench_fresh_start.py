"""A fresh context server on a large workspace whose index was complete before it started.

    python benchmarks/bench_fresh_start.py [--files 200000] [--rounds 200] [--tree DIR]
    python benchmarks/bench_fresh_start.py --quick    # 500 files, 20 rounds: what CI runs

Each MCP session starts a server process of its own, so what a process does at start is paid
by every session. On a tree of real files copied from the installed packages (2,000 folders;
generated once and kept in ``--tree``, default /tmp/sp-tree-200k, with its prebuilt index):
  1. start-up work on the unchanged tree (CPU seconds of the start-up check, in a process of
     its own) vs one `rg` scan of the tree (CPU seconds, user + system, of rg and its threads);
     goal <= 2x;
  2. `read_file` and `list_directory` round trips (p50) through the MCP SDK client, timed from
     the first request of a fresh server, vs @modelcontextprotocol/server-filesystem started
     beside it; calls alternate, one to each; goal <= 1.3x. They cycle over 20 files and 20
     folders; ``*_first_of_each_*`` is the first round alone, before anything of a folder or a
     file was kept. Then the same calls again once the start-up check has ended (``idle_*``):
     the difference is what the check costs the calls.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]
FS_SERVER = REPO / "node_modules" / ".bin" / "mcp-server-filesystem"
FOLDERS = 2_000
# Where the copied files come from: installed packages, read-only, whatever is there.
SOURCES = [Path(sysconfig.get_paths()["purelib"]), Path("/usr/lib/python3"), Path("/usr/share")]
SOURCES += sorted(Path("/usr/lib").glob("python3.*"))
_LARGEST = 256 * 1024
# Source and text files, as a project holds (the read policy refuses some other kinds by type).
_KINDS = {".py", ".pyi", ".md", ".rst", ".txt", ".js", ".ts", ".json", ".c", ".h", ".html"}

Call = tuple[str, dict[str, Any]]


def cached_tree(base: Path, files: int) -> Path:
    """The workspace under ``base``: made once (it takes minutes at 200,000 files), then reused
    while its marker says it holds ``files`` files."""
    root, marker = base / "ws", base / f"complete-{files}"
    if marker.exists():
        return root
    shutil.rmtree(base, ignore_errors=True)
    root.mkdir(parents=True)
    pool = _source_files(files)
    folders = min(FOLDERS, max(1, files // 100))
    for i in range(files):
        source = pool[i % len(pool)]
        folder = root / f"pkg{(i % folders) // 100:02d}" / f"mod{(i % folders) % 100:02d}"
        if i < folders:
            folder.mkdir(parents=True, exist_ok=True)
        # A line of its own in every copy: no two files of the tree are the same.
        body = source.read_bytes() + f"\n# copy {i}\n".encode()
        (folder / f"f{i:06d}_{source.name}").write_bytes(body)
    marker.write_text(f"{files}\n")
    return root


def _source_files(enough: int) -> list[Path]:
    """Text files of the installed packages (at most ``enough``; each is copied once per
    turn, so with fewer than ``files`` of them, every one is copied several times)."""
    found: list[Path] = []
    for top in SOURCES:
        for dirpath, _dirs, names in os.walk(top):
            if len(found) >= enough:
                break
            for name in names:
                path = Path(dirpath, name)
                if path.suffix not in _KINDS:
                    continue
                with contextlib.suppress(OSError):
                    st = path.lstat()
                    if path.is_file() and not path.is_symlink() and 512 <= st.st_size <= _LARGEST:
                        with path.open("rb") as f:
                            if b"\0" not in f.read(4096):
                                found.append(path)
    found.sort()
    return found


# -- 1. start-up work vs one rg scan ----------------------------------------------------------

# The start-up refresh of a server process, alone in a process of its own: CPU seconds of
# every thread, and what it did.
STARTUP = """
import json, sys, time
from safeport.context_server.server import ServeOptions, build_server
_, service = build_server(ServeOptions(roots=[sys.argv[1]]))
cpu, wall = time.process_time(), time.perf_counter()
stats = service.index.refresh()
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
service.close()
print(json.dumps({"cpu_s": cpu, "wall_s": wall, "walked_everything": stats.walked_everything,
                  "reread": stats.added + stats.updated, "files": stats.files}))
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rg_scan_cpu(root: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one `rg` scan of the tree for a word no file holds; the
    second of two runs, so both sides read from the page cache."""
    result = (0.0, 0.0)
    for _ in range(2):
        cpu, wall = children_cpu(), time.perf_counter()
        subprocess.run(["rg", "-F", "-i", "-n", "zq-not-there-31", str(root)], capture_output=True)
        result = (children_cpu() - cpu, time.perf_counter() - wall)
    return result


def startup_work(root: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", STARTUP, str(root)], capture_output=True, env=env, check=True
    )
    return dict(json.loads(done.stdout.decode().strip().splitlines()[-1]))


# -- 2. reads and listings from the first request of a fresh server ---------------------------


async def timed_call(client: Client, call: Call) -> float:
    start = time.perf_counter()
    with anyio.fail_after(60):
        result = await client.call_tool(call[0], call[1])
    if result.is_error:
        raise RuntimeError(f"{call[0]} failed: {result.content}")
    return time.perf_counter() - start


async def fresh_side_by_side(root: Path, env: dict[str, str], rounds: int) -> dict[str, Any]:
    """Both servers started now, no warm-up: every call from the first is counted."""
    folders = sorted(p for p in (root / "pkg00").iterdir())[:20]
    files = sorted(str(p.relative_to(root)) for p in folders[0].iterdir() if p.suffix in _KINDS)[
        :20
    ]
    ours_calls: dict[str, list[Call]] = {
        "read_file": [("read_file", {"path": f}) for f in files],
        "list_directory": [
            ("list_directory", {"path": str(d.relative_to(root)), "limit": 100}) for d in folders
        ],
    }
    peer_calls: dict[str, list[Call]] = {
        "read_file": [("read_text_file", {"path": str(root / f)}) for f in files],
        "list_directory": [("list_directory", {"path": str(d)}) for d in folders],
    }
    ours_params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "safeport.context_server", "--root", str(root), "--origin", "bench"],
        env=env,
    )
    peer_params = StdioServerParameters(
        command=str(FS_SERVER), args=[str(root)], env={"PATH": os.environ["PATH"]}
    )
    report: dict[str, Any] = {}
    with open(os.devnull, "w") as errlog:
        async with contextlib.AsyncExitStack() as stack:
            ours = await stack.enter_async_context(
                Client(stdio_client(ours_params, errlog=errlog), read_timeout_seconds=60)
            )
            peer = await stack.enter_async_context(
                Client(stdio_client(peer_params, errlog=errlog), read_timeout_seconds=60)
            )
            for tool in ("read_file", "list_directory"):
                report.update(await alternate(tool, "", ours, peer, ours_calls, peer_calls, rounds))
            health = (await ours.call_tool("get_health", {})).structured_content or {}
            report["index_walk_after_calls"] = health.get("index_walk")
            report["index_state_after_calls"] = health.get("index_state")
            # The same calls once the start-up check has ended: what a call costs without it.
            with anyio.fail_after(600):
                while health.get("index_walk") != "idle" or health.get("index_state") != "ready":
                    await anyio.sleep(0.5)
                    health = (await ours.call_tool("get_health", {})).structured_content or {}
            for tool in ("read_file", "list_directory"):
                report.update(
                    await alternate(tool, "idle_", ours, peer, ours_calls, peer_calls, rounds)
                )
    return report


async def alternate(
    tool: str,
    label: str,
    ours: Client,
    peer: Client,
    ours_calls: dict[str, list[Call]],
    peer_calls: dict[str, list[Call]],
    rounds: int,
) -> dict[str, Any]:
    """One call to each server in turn, so both see the same moment of the machine's load."""
    mine: list[float] = []
    theirs: list[float] = []
    for i in range(rounds):
        mine.append(await timed_call(ours, ours_calls[tool][i % len(ours_calls[tool])]))
        theirs.append(await timed_call(peer, peer_calls[tool][i % len(peer_calls[tool])]))
    ms = 1000.0
    # The calls cycle over a few folders (files): the first round reaches each one for the
    # first time, before anything of it was kept (a listing's page, a file's verdict).
    distinct = min(rounds, len(ours_calls[tool]))
    first_mine, first_theirs = mine[:distinct], theirs[:distinct]
    return {
        f"{label}{tool}_p50_ms": round(statistics.median(mine) * ms, 3),
        f"{label}{tool}_fs_server_p50_ms": round(statistics.median(theirs) * ms, 3),
        f"{label}{tool}_vs_fs_server": round(
            statistics.median(mine) / statistics.median(theirs), 2
        ),
        f"{label}{tool}_first_call_ms": round(mine[0] * ms, 1),
        f"{label}{tool}_first_of_each_p50_ms": round(statistics.median(first_mine) * ms, 3),
        f"{label}{tool}_first_of_each_vs_fs_server": round(
            statistics.median(first_mine) / statistics.median(first_theirs), 2
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=None, help="default 200,000 (quick: 500)")
    parser.add_argument("--rounds", type=int, default=None, help="default 200 (quick: 20)")
    parser.add_argument("--tree", type=Path, default=None, help="default /tmp/sp-tree-<files>")
    parser.add_argument("--quick", action="store_true", help="the short profile CI runs")
    args = parser.parse_args()
    files = args.files or (500 if args.quick else 200_000)
    rounds = args.rounds or (20 if args.quick else 200)
    base = args.tree or Path(f"/tmp/sp-tree-{files // 1000}k")
    if shutil.which("rg") is None or not FS_SERVER.exists():
        sys.exit("ripgrep (rg) and node_modules' mcp-server-filesystem are required")
    started = time.perf_counter()
    root = cached_tree(base, files)
    home = base / "home"
    home.mkdir(mode=0o700, exist_ok=True)
    env = {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}
    # The index complete before any server starts (a check only, once it was built).
    subprocess.run(
        [sys.executable, "-m", "safeport", "context", "index", "--root", str(root)],
        capture_output=True,
        env=env,
        check=True,
    )
    report: dict[str, Any] = {
        "files": files,
        "tree_and_index_ready_s": round(time.perf_counter() - started, 1),
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "loadavg_before": os.getloadavg(),
    }
    rg_cpu, rg_wall = rg_scan_cpu(root)
    startup = startup_work(root, env)
    report["rg_scan_cpu_s"] = round(rg_cpu, 2)
    report["rg_scan_wall_s"] = round(rg_wall, 2)
    report["startup_check_cpu_s"] = round(startup["cpu_s"], 2)
    report["startup_check_wall_s"] = round(startup["wall_s"], 2)
    report["startup_check_walked_everything"] = startup["walked_everything"]
    report["startup_check_vs_rg_cpu"] = round(startup["cpu_s"] / rg_cpu, 2)
    report.update(anyio.run(fresh_side_by_side, root, env, rounds))
    report["loadavg_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
