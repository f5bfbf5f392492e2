"""Search index build and refresh, side by side with one ripgrep scan of the same tree.

    python benchmarks/bench_index.py [--files 20000] [--mb 200] [--touch 10] [--rounds 5]
                                     [--profile] [--dir DIR]

On one generated workspace (the tree of bench_context.py), in one run:
  1. cold build (`sp context index` on an empty cache) vs one `rg -F -i -n` scan (p50);
     goal <= 30x;
  2. the first refresh of a server that opens the built index (one walk of everything, no
     file changed; it starts watching every folder) vs one rg scan;
  3. a refresh after touching --touch files (appending a line to each) vs one rg scan, p50 of
     --rounds rounds, each touching other files; goal <= 1x. It must not walk everything.
With --profile, where the time of an in-process cold build goes (cProfile, by function).
Ratios are ours / rg (lower is better). Prints one JSON object, with the load average.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_context import generate, timed  # noqa: E402
from safeport.context_server.index.search_index import SearchIndex  # noqa: E402
from safeport.context_server.policy.read_policy import ReadPolicy  # noqa: E402
from safeport.context_server.workspace.gate import Workspace  # noqa: E402
from safeport.context_server.workspace.model import ServedRoot  # noqa: E402


def rg_scan(root: Path, queries: list[str]) -> list[float]:
    return [timed(["rg", "-F", "-i", "-n", q, str(root)]) for q in queries]


def run(
    root: Path, home: Path, *, files: int, mb: int, touch: int = 10, rounds: int = 5
) -> dict[str, Any]:
    """Generate the tree under ``root`` and measure; the figures as one dict."""
    needles = generate(root, files, mb)
    queries = needles[: max(3, rounds)]
    rg = rg_scan(root, queries)
    env = {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}
    build = timed([sys.executable, "-m", "safeport", "context", "index", "--root", str(root)], env)
    rg += rg_scan(root, queries)
    index_file = next((home / "cache" / "context").glob("index-*.sqlite"))
    workspace = Workspace([ServedRoot(root.name, root)], ReadPolicy())
    index = SearchIndex(index_file, workspace)
    try:
        started = time.perf_counter()
        first = index.refresh()
        full_refresh = time.perf_counter() - started
        candidates = sorted(p for p in root.rglob("*.py"))
        incremental: list[float] = []
        walked_everything = False
        for number in range(rounds):
            for path in candidates[number * touch : (number + 1) * touch]:
                with path.open("a") as out:
                    out.write(f"# touched in round {number}\n")
            started = time.perf_counter()
            stats = index.refresh()
            incremental.append(time.perf_counter() - started)
            walked_everything |= stats.walked_everything
            assert stats.updated == touch, stats
            rg += rg_scan(root, queries[:1])
    finally:
        index.close()
        workspace.close()
    one_rg = statistics.median(rg)
    refresh = statistics.median(incremental)
    return {
        "files": files,
        "indexed_files": first.files,
        "rg_scan_p50_s": round(one_rg, 4),
        "index_build_s": round(build, 2),
        "index_build_vs_one_rg_scan": round(build / one_rg, 1),
        "full_refresh_s": round(full_refresh, 3),
        "full_refresh_vs_one_rg_scan": round(full_refresh / one_rg, 2),
        "touched_files": touch,
        "incremental_refresh_p50_s": round(refresh, 4),
        "incremental_refresh_vs_one_rg_scan": round(refresh / one_rg, 2),
        "incremental_walked_everything": walked_everything,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def profile_cold_build(root: Path, cache: Path, top: int = 12) -> dict[str, Any]:
    """Where an in-process cold build spends its time: wall and CPU time, the walk's thread
    apart from the shard writers', and the walk's functions (cProfile sees only its own
    thread; the writers spend theirs inside SQLite's statements)."""
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    workspace = Workspace([ServedRoot(root.name, root)], ReadPolicy())
    index = SearchIndex(cache / "profiled.sqlite", workspace, watch=False)
    profiler = cProfile.Profile()
    wall, cpu, walk_cpu = time.perf_counter(), time.process_time(), time.thread_time()
    try:
        profiler.runcall(index.refresh)
    finally:
        workspace.close()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    walk_cpu = time.thread_time() - walk_cpu
    stats = pstats.Stats(profiler)
    # typeshed leaves out Stats.stats, the table print_stats itself reads.
    table = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in table.values())
    rows = sorted(table.items(), key=lambda kv: -kv[1][2])
    functions = [
        {"function": f"{Path(file).name}:{line}({name})", "own_s": round(own, 3),
         "share": round(own / total, 3)}
        for (file, line, name), (_cc, _nc, own, _cum, _callers) in rows[:top]
    ]  # fmt: skip
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "walk_thread_cpu_s": round(walk_cpu, 2),
        "writer_threads_cpu_s": round(cpu - walk_cpu, 2),
        "walk_thread_functions": functions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--touch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="profile an in-process build")
    parser.add_argument("--dir", type=Path, default=None, help="where to build the workspace")
    args = parser.parse_args()
    if shutil.which("rg") is None:
        sys.exit("ripgrep (rg) is required")
    base = Path(tempfile.mkdtemp(prefix="bench-index-", dir=args.dir))
    try:
        root, home = base / "ws", base / "home"
        root.mkdir()
        home.mkdir(mode=0o700)
        report = run(root, home, files=args.files, mb=args.mb, touch=args.touch, rounds=args.rounds)
        if args.profile:
            report["cold_build_profile"] = profile_cold_build(root, base / "profile")
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
