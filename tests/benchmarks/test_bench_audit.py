"""The audit benchmark's short profile runs and reports every ratio beside its peer.

No limits on the figures (they follow the machine and its disk); the full run is
``python benchmarks/bench_audit.py``.
"""

from __future__ import annotations

import math
from pathlib import Path

from tests.benchmarks.profile_run import positive, run_quick_profile


def test_the_audit_benchmark_reports_verify_append_and_group_commit_ratios(
    tmp_path: Path,
) -> None:
    figures = run_quick_profile("bench_audit.py", "--dir", str(tmp_path))
    verify, append, grouped = figures["verify"], figures["append"], figures["group_commit"]
    assert verify["records"] == 20_000
    assert all(positive(verify[k]) for k in ("ours_per_s", "bare_per_s", "ratio"))
    assert all(positive(append[k]) for k in ("ours_per_s", "bare_per_s", "ratio", "noise_ratio"))
    assert math.isclose(append["ratio"], append["bare_us"] / append["ours_us"])
    assert grouped["threads"] == 8 and positive(grouped["ratio_to_bare_loop"])
    assert len(figures["load_average"]["before"]) == len(figures["load_average"]["after"]) == 3
    assert list(tmp_path.iterdir()) == []  # the benchmark cleans up after itself
