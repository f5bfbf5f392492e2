"""The gateway benchmark's short profile runs and reports its ratios beside bare fsyncs.

No limits on the figures (they follow the machine and its disk); the full run is
``python benchmarks/bench_gateway.py``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def test_the_gateway_benchmark_reports_round_trip_throughput_and_rss() -> None:
    run = subprocess.run(
        [sys.executable, "benchmarks/bench_gateway.py", "--quick", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    figures = json.loads(run.stdout)
    print(json.dumps(figures, sort_keys=True))  # the figures, with -s
    trip, throughput, rss = figures["round_trip"], figures["throughput"], figures["rss_mib"]
    assert trip["requests"] >= 100
    assert all(
        _positive(trip[k]) for k in ("p50_ms", "p99_ms", "bare_two_fsyncs_p50_ms", "ratio_p50")
    )
    assert throughput["clients"] == 8 and throughput["proposals"] == 8 * 25
    assert all(
        _positive(throughput[k])
        for k in ("proposals_per_s", "bare_fsyncs_per_s", "ratio_to_bare_loop_pairs")
    )
    assert _positive(rss["idle"]) and _positive(rss["after_load"])
    assert len(figures["load_average"]["before"]) == 3
