"""What withholding secrets costs: each operation with the detector on and off, in one run.

    python benchmarks/bench_secret_cost.py [--files 20000] [--mb 40] [--rounds 200]
                                           [--index-rounds 2] [--real-mb 10] [--dir DIR]
    python benchmarks/bench_secret_cost.py --quick     # 300 files, 10 rounds: what CI runs

In one process, on one machine state, alternating on and off so both see the same load:
  1. ``read_file`` of a clean 1 MB source file (installed packages' ``.py`` files, joined, with
     nothing the detector finds), in process, p50 of --rounds calls each; the read cap is raised
     to 2 MiB so the whole megabyte is served and judged (the default cap serves 128 KiB); the
     same with the default cap beside it. Budget: on <= 1.2x off.
  2. a cold build of the search index over --files generated files (the tree of
     ``bench_context.py``, whose words include ``token``, so the detector's word checks run
     too), in process, --index-rounds builds each, in the order on, off, off, on, ...
     Budget: on <= 1.25x off.
  3. the detector alone (``find_secrets``) on --real-mb of installed packages' files, CPU time
     on one core. Budget: >= 50 MB/s.
"off" is the product's own per-root switch (``[secrets] redaction_off`` in context.toml, or the
``ContentSecrets`` it builds, in process), so the benchmark measures what a user turning it off
gets. Ratios are on / off (lower is better). Prints one JSON object, with the load
average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_context import BareClient, generate, wait_until_indexed  # noqa: E402
from benchmarks.secret_corpus.corpus import real_code_files  # noqa: E402
from safeport.context_server.index.change_feed import ChangeFeed  # noqa: E402
from safeport.context_server.index.search_index import SearchIndex  # noqa: E402
from safeport.context_server.operations.reads_journal import ReadsJournal  # noqa: E402
from safeport.context_server.operations.service import WorkspaceService  # noqa: E402
from safeport.context_server.policy.content_secrets import ContentSecrets  # noqa: E402
from safeport.context_server.policy.read_policy import ReadPolicy  # noqa: E402
from safeport.context_server.workspace.gate import Workspace  # noqa: E402
from safeport.context_server.workspace.model import ServedRoot  # noqa: E402
from safeport.shared.paths import locate  # noqa: E402
from safeport.shared.secret_scan import find_secrets  # noqa: E402

MB = 1_000_000


def off_for(root: Path) -> ContentSecrets:
    """The rules ``[secrets] redaction_off = [root]`` builds: nothing withheld under ``root``."""
    return ContentSecrets(unredacted_roots=frozenset({root.resolve()}))


def clean_source(size: int = MB) -> str:
    """``size`` bytes of real Python source in which the detector finds nothing."""
    parts: list[str] = []
    total = 0
    for path in real_code_files(50):
        if path.suffix != ".py":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if not text.isascii() or find_secrets(text):
            continue
        parts.append(text)
        total += len(text)
        if total >= size:
            break
    return "".join(parts)[:size]


ROUND_MARK = "# round {:08d}\n"


def write_round(path: Path, source: str, number: int) -> None:
    """The file as round ``number`` finds it: the same megabyte under a new first line, so the
    detector cannot have seen these bytes before (each round is a first read)."""
    mark = ROUND_MARK.format(number)
    path.write_text(mark + source[len(mark) :], encoding="ascii")


def read_file_costs(base: Path, rounds: int) -> dict[str, Any]:
    """Each case twice: the same bytes read again and again (the detector remembers a large
    text's answer by digest), and a file that changes every round (every read a first read)."""
    root = base / "read"
    root.mkdir()
    source = clean_source()
    target = root / "big_module.py"
    write_round(target, source, 0)
    report: dict[str, Any] = {"file_bytes": target.stat().st_size}
    for label, policy, fresh in (
        ("read_file_1mb_whole", ReadPolicy(max_read_bytes=2 * 1024 * 1024), False),
        ("read_file_1mb_whole_first_read", ReadPolicy(max_read_bytes=2 * 1024 * 1024), True),
        ("read_file_1mb_default_cap", ReadPolicy(), False),
        ("read_file_1mb_default_cap_first_read", ReadPolicy(), True),
    ):
        workspace = Workspace([ServedRoot("ws", root)], policy)
        unredacted = Workspace([ServedRoot("ws", root)], policy, off_for(root))
        index = SearchIndex(base / f"cache-{label}" / "index.sqlite", workspace, watch=False)
        journal = ReadsJournal(base / f"audit-{label}", "bench", [str(root)])
        on = WorkspaceService(workspace, index, ChangeFeed(workspace), journal)
        off = WorkspaceService(unredacted, index, ChangeFeed(unredacted), journal)
        times: dict[str, list[float]] = {"on": [], "off": []}
        try:
            for number in range(rounds):
                if fresh:
                    write_round(target, source, number + 1)
                order = (("on", on), ("off", off)) if number % 2 else (("off", off), ("on", on))
                for name, service in order:
                    started = time.perf_counter()
                    served = service.read_file("big_module.py")
                    times[name].append(time.perf_counter() - started)
                    assert served.redacted == 0, "the clean file held a finding"
        finally:
            index.close()
            journal.close()
            workspace.close()
            unredacted.close()
        p50_on, p50_off = statistics.median(times["on"]), statistics.median(times["off"])
        report[label] = {
            "served_bytes": served.served_bytes,
            "on_p50_ms": round(p50_on * 1000, 2),
            "off_p50_ms": round(p50_off * 1000, 2),
            "ratio": round(p50_on / p50_off, 3),
        }
    report["read_file_1mb_default_cap_over_stdio"] = read_file_over_stdio(base, root, rounds)
    report["read_file_1mb_default_cap_over_stdio_first_read"] = read_file_over_stdio(
        base, root, rounds, source
    )
    return report


def read_file_over_stdio(
    base: Path, root: Path, rounds: int, changing: str | None = None
) -> dict[str, Any]:
    """The call as an agent makes it: JSON-RPC over stdio to a server process (its direct path
    for bounded tools), one server with redaction and one without, calls alternating; with
    ``changing``, the file is rewritten before each round (every read a first read)."""
    base = Path(tempfile.mkdtemp(dir=base))
    clients: dict[str, BareClient] = {}
    for name in ("on", "off"):
        home = base / f"home-{name}"
        home.mkdir(mode=0o700)
        env = {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}
        if name == "off":
            config = locate(env).context_config
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(f"[secrets]\nredaction_off = [{json.dumps(str(root))}]\n")
        serve = [sys.executable, "-m", "safeport", "context", "serve", "--root", str(root)]
        clients[name] = BareClient(serve, env)
    call = ("read_file", {"path": "big_module.py"})
    times: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for client in clients.values():
            wait_until_indexed(client)
            for _ in range(10):  # the first calls (roots, caches) are not the steady state
                client.timed_call(call)
        for number in range(rounds):
            if changing is not None:
                write_round(root / "big_module.py", changing, 1_000_000 + number)
            for name in ("on", "off") if number % 2 else ("off", "on"):
                times[name].append(clients[name].timed_call(call))
    finally:
        for client in clients.values():
            client.close()
    p50_on, p50_off = statistics.median(times["on"]), statistics.median(times["off"])
    return {
        "on_p50_ms": round(p50_on * 1000, 2),
        "off_p50_ms": round(p50_off * 1000, 2),
        "ratio": round(p50_on / p50_off, 3),
    }


def index_costs(base: Path, files: int, mb: int, rounds: int) -> dict[str, Any]:
    root = base / "ws"
    root.mkdir()
    generate(root, files, mb)
    workspaces = {
        "on": Workspace([ServedRoot("ws", root)], ReadPolicy()),
        "off": Workspace([ServedRoot("ws", root)], ReadPolicy(), off_for(root)),
    }
    times: dict[str, list[float]] = {"on": [], "off": []}
    indexed = 0
    try:
        for number in range(rounds):
            order = ("on", "off") if number % 2 == 0 else ("off", "on")
            for name in order:
                path = base / f"index-{name}-{number}" / "index.sqlite"
                index = SearchIndex(path, workspaces[name], watch=False)
                try:
                    started = time.perf_counter()
                    indexed = index.refresh().files
                    times[name].append(time.perf_counter() - started)
                finally:
                    index.close()
                shutil.rmtree(path.parent)
    finally:
        for workspace in workspaces.values():
            workspace.close()
    on, off = sum(times["on"]), sum(times["off"])
    return {
        "files": files,
        "indexed_files": indexed,
        "tree_mb": mb,
        "on_s": [round(t, 2) for t in times["on"]],
        "off_s": [round(t, 2) for t in times["off"]],
        "ratio": round(on / off, 3),
    }


def detector_throughput(real_mb: float) -> dict[str, Any]:
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in real_code_files(real_mb)]
    size = sum(len(t.encode("utf-8", "surrogateescape")) for t in texts)
    started = time.process_time()
    for text in texts:
        find_secrets(text)
    seconds = time.process_time() - started
    return {"real_mb": round(size / MB, 1), "mb_per_s_one_core": round(size / MB / seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--index-rounds", type=int, default=2)
    parser.add_argument("--real-mb", type=float, default=10.0)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the workspaces")
    parser.add_argument("--quick", action="store_true", help="a short profile: what CI runs")
    parser.add_argument("--json", action="store_true", help="(the report is always JSON)")
    args = parser.parse_args()
    if args.quick:
        args.files, args.mb, args.rounds, args.index_rounds, args.real_mb = 300, 1, 10, 2, 1.0
    report: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    base = Path(tempfile.mkdtemp(prefix="bench-secret-cost-", dir=args.dir))
    try:
        report["read_file"] = read_file_costs(base, args.rounds)
        report["index_cold_build"] = index_costs(base, args.files, args.mb, args.index_rounds)
        report["detector"] = detector_throughput(args.real_mb)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    report["cpus"] = os.cpu_count()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
