"""The audit benchmark's short profile runs and reports every ratio beside its peer.

No limits on the figures (they follow the machine and its disk); the full run is
``python benchmarks/bench_audit.py``.
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


def test_the_audit_benchmark_reports_verify_append_and_group_commit_ratios(
    tmp_path: Path,
) -> None:
    run = subprocess.run(
        [sys.executable, "benchmarks/bench_audit.py", "--quick", "--json", "--dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    figures = json.loads(run.stdout)
    print(json.dumps(figures, sort_keys=True))  # the figures, with -s
    verify, append, grouped = figures["verify"], figures["append"], figures["group_commit"]
    assert verify["records"] == 20_000
    assert all(_positive(verify[k]) for k in ("ours_per_s", "bare_per_s", "ratio"))
    assert all(_positive(append[k]) for k in ("ours_per_s", "bare_per_s", "ratio"))
    assert math.isclose(append["ratio"], append["bare_us"] / append["ours_us"])
    assert grouped["threads"] == 8 and _positive(grouped["ratio_to_bare_loop"])
    assert len(figures["load_average"]["before"]) == len(figures["load_average"]["after"]) == 3
    assert list(tmp_path.iterdir()) == []  # the benchmark cleans up after itself
