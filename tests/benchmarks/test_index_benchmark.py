"""A short profile of benchmarks/bench_index.py: it runs, and reports its ratios beside rg.

No absolute limit: the figures depend on the machine and its load. What is checked is that the
benchmark measures what it says (a cold build, then refreshes by folder events that did not
walk everything) and reports each ratio with its peer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks.bench_index import profile_cold_build, run
from tests.conftest import need


def test_the_index_benchmark_reports_build_and_refresh_beside_one_rg_scan(tmp_path: Path) -> None:
    need(shutil.which("rg") is not None, "ripgrep (rg) is not installed")
    root, home = tmp_path / "ws", tmp_path / "home"
    root.mkdir()
    home.mkdir(mode=0o700)
    report = run(root, home, files=600, mb=6, touch=10, rounds=2)
    print(json.dumps(report, sort_keys=True))  # the figures, with -s
    assert report["indexed_files"] == 600
    assert report["rg_scan_p50_s"] > 0
    for ratio in (
        "index_build_vs_one_rg_scan",
        "full_refresh_vs_one_rg_scan",
        "incremental_refresh_vs_one_rg_scan",
    ):
        assert report[ratio] > 0, ratio
    assert report["incremental_walked_everything"] is False
    assert len(report["load_average"]) == 3
    profile = profile_cold_build(root, tmp_path / "profile", top=5)
    functions = profile["walk_thread_functions"]
    assert len(functions) == 5 and all(0 <= row["share"] <= 1 for row in functions)
    assert profile["writer_threads_cpu_s"] > 0  # the shards were written on their own threads
