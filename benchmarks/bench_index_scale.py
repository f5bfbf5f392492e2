"""The search index as a workspace grows: the same figures at each size, read as a curve.

    python benchmarks/bench_index_scale.py [--sizes 20000,200000] [--queries 20] [--tree DIR]
    python benchmarks/bench_index_scale.py --quick    # 300 and 1,200 files: what CI runs

For each size, on a tree of real files copied from the installed packages (the tree of
``bench_fresh_start.py``, 2,000 folders at most; made once per size and kept under ``--tree``,
default /tmp/sp-index-scale), in one run:
  1. searches during a build: a server started on an empty cache builds its index in the
     background; ``search_project`` is called at once, --queries times, each answered by a scan
     while the build goes on (slower is fine, waiting for the build is not); p50 and how many
     answered before the index was ready;
  2. the cold build alone (``sp context index`` on an empty cache) vs one ``rg -F -i -n`` scan
     (p50 of the same queries), and the build's peak resident memory;
  3. a server on the built index, once ready: ``search_project`` round trip p50 (bare JSON-RPC
     client over stdio) vs rg for the same queries; the server's resident memory and peak;
  4. a refresh after 1 % of the files changed (a line appended to each), in process, vs one
     rg scan; it must not walk everything.
The queries are identifiers taken from the tree's own files (seeded, so each run asks the same).
Budgets (issue 36): build <= 20x rg, search p50 <= 20 ms, refresh <= 2x rg; at 200,000 files
resident memory <= 250 MB. Prints one JSON object, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_context import BareClient, timed, wait_until_indexed  # noqa: E402
from benchmarks.bench_fresh_start import cached_tree  # noqa: E402
from safeport.context_server.index.search_index import SearchIndex  # noqa: E402
from safeport.context_server.policy.read_policy import ReadPolicy  # noqa: E402
from safeport.context_server.workspace.gate import Workspace  # noqa: E402
from safeport.context_server.workspace.model import ServedRoot  # noqa: E402

IDENTIFIER = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]{9,30}\b")
CHANGED_SHARE = 0.01


def queries_from(root: Path, count: int, seed: int = 11) -> list[str]:
    """``count`` distinct identifiers, each from another file of the tree."""
    rng = random.Random(seed)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    found: list[str] = []
    for path in rng.sample(files, min(len(files), count * 4)):
        words = sorted(set(IDENTIFIER.findall(path.read_bytes())))
        if words:
            word = rng.choice(words).decode("ascii")
            if word not in found:
                found.append(word)
        if len(found) == count:
            break
    return found


def rg_times(root: Path, queries: list[str]) -> list[float]:
    return [timed(["rg", "-F", "-i", "-n", query, str(root)]) for query in queries]


def fresh_home(base: Path, name: str) -> dict[str, str]:
    home = base / name
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(mode=0o700, parents=True)
    return {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}


def serve(root: Path, env: dict[str, str]) -> BareClient:
    argv = [sys.executable, "-m", "safeport", "context", "serve", "--root", str(root)]
    return BareClient(argv, env)


def searches_during_build(root: Path, base: Path, queries: list[str]) -> dict[str, Any]:
    """1. A server on an empty cache, asked at once: every search answers while it builds."""
    client = serve(root, fresh_home(base, "home-during"))
    times: list[float] = []
    building = 0
    try:
        for query in queries:
            started = time.perf_counter()
            reply = client.request(
                "tools/call", {"name": "search_project", "arguments": {"query": query}}
            )
            times.append(time.perf_counter() - started)
            result = reply["structuredContent"]
            building += result["index_state"] != "ready" and result["method"] == "scan"
    finally:
        client.proc.kill()  # the build it started is not what is measured here
        client.proc.wait(30)
    return {
        "search_during_build_p50_ms": round(statistics.median(times) * 1000, 1),
        "search_during_build_max_ms": round(max(times) * 1000, 1),
        "searches_answered_during_build": building,
        "searches_asked_during_build": len(queries),
    }


def cold_build(root: Path, env: dict[str, str]) -> tuple[float, float]:
    """2. ``sp context index`` on an empty cache: (wall seconds, peak resident MB)."""
    argv = [sys.executable, "-m", "safeport", "context", "index", "--root", str(root)]
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"the index build failed ({process.returncode})")
    return wall, usage.ru_maxrss / 1024  # kilobytes on Linux


def served_searches(root: Path, env: dict[str, str], queries: list[str]) -> dict[str, Any]:
    """3. A server on the built index, once ready: search round trips and its memory."""
    client = serve(root, env)
    try:
        wait_until_indexed(client)
        for query in queries[:3]:  # the first calls (imports, caches) are not the steady state
            client.timed_call(("search_project", {"query": query}))
        times = [client.timed_call(("search_project", {"query": q})) for q in queries]
        status = Path(f"/proc/{client.proc.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    finally:
        client.close()
    return {
        "search_p50_ms": round(statistics.median(times) * 1000, 2),
        "server_rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 1),
        "server_peak_rss_mb": round(int(fields["VmHWM"].split()[0]) / 1024, 1),
    }


def refresh_after_change(root: Path, env: dict[str, str], seed: int = 5) -> dict[str, Any]:
    """4. In process, on the built index: a line appended to 1 % of the files, one refresh."""
    index_file = next((Path(env["SAFEPORT_HOME"]) / "cache" / "context").glob("index-*.sqlite"))
    workspace = Workspace([ServedRoot(root.name, root)], ReadPolicy())
    index = SearchIndex(index_file, workspace)
    try:
        index.refresh()  # the start-up check, which also starts watching every folder
        files = sorted(p for p in root.rglob("*") if p.is_file())
        changed = random.Random(seed).sample(files, max(1, int(len(files) * CHANGED_SHARE)))
        mark = f"\n# changed {time.time_ns()}\n"
        for path in changed:
            with path.open("a") as out:
                out.write(mark)
        started = time.perf_counter()
        stats = index.refresh()
        wall = time.perf_counter() - started
    finally:
        index.close()
        workspace.close()
    return {
        "changed_files": len(changed),
        "refresh_s": round(wall, 3),
        "refresh_reread": stats.added + stats.updated,
        "refresh_walked_everything": stats.walked_everything,
    }


def one_size(files: int, tree_base: Path, work: Path, query_count: int) -> dict[str, Any]:
    root = cached_tree(tree_base / f"tree-{files}", files)
    queries = queries_from(root, query_count)
    rg = rg_times(root, queries)  # also brings the tree into the page cache for both sides
    report: dict[str, Any] = {"files": files, "queries": len(queries)}
    report.update(searches_during_build(root, work, queries))
    env = fresh_home(work, "home")
    build_s, build_peak = cold_build(root, env)
    rg += rg_times(root, queries)
    one_rg = statistics.median(rg)
    report.update(served_searches(root, env, queries))
    refresh = refresh_after_change(root, env)
    report.update(
        {
            "rg_scan_p50_s": round(one_rg, 4),
            "index_build_s": round(build_s, 2),
            "index_build_vs_one_rg_scan": round(build_s / one_rg, 1),
            "index_build_peak_rss_mb": round(build_peak, 1),
            "rg_same_query_p50_ms": round(one_rg * 1000, 1),
            "search_vs_rg": round(report["search_p50_ms"] / (one_rg * 1000), 3),
            **refresh,
            "refresh_vs_one_rg_scan": round(refresh["refresh_s"] / one_rg, 2),
        }
    )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,200000", help="file counts, comma-separated")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--tree", type=Path, default=Path(tempfile.gettempdir()) / "sp-index-scale")
    parser.add_argument("--quick", action="store_true", help="a short profile: what CI runs")
    parser.add_argument("--json", action="store_true", help="(the report is always JSON)")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.queries = "300,1200", 5
    sizes = [int(size) for size in args.sizes.split(",")]
    report: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    work = Path(tempfile.mkdtemp(prefix="bench-index-scale-"))
    try:
        report["sizes"] = [one_size(files, args.tree, work, args.queries) for files in sizes]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    report["cpus"] = os.cpu_count()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
