"""CI runs the index's growth benchmark in its short profile: it must run and report, at each
size, the build beside one `rg` scan, searches during and after it, memory, and a refresh after
1 % of the files changed. No limits here (the machine's load is not ours)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.benchmarks.profile_run import positive, run_quick_profile
from tests.conftest import need


def test_the_quick_profile_reports_each_size_beside_rg(tmp_path: Path) -> None:
    need(shutil.which("rg") is not None, "ripgrep (rg) is not installed")
    figures = run_quick_profile("bench_index_scale.py", "--tree", str(tmp_path / "trees"))
    sizes = figures["sizes"]
    assert [size["files"] for size in sizes] == [300, 1200]
    for size in sizes:
        for name in (
            "index_build_vs_one_rg_scan",
            "index_build_peak_rss_mb",
            "search_p50_ms",
            "search_vs_rg",
            "server_peak_rss_mb",
            "search_during_build_p50_ms",
            "refresh_vs_one_rg_scan",
        ):
            assert positive(size[name]), name
        # Asked at once on an empty cache, searches answer by a scan while the index builds.
        assert size["searches_answered_during_build"] >= 1
        # A refresh after 1 % changed re-reads those of them the index holds (the read policy
        # refuses some files by name or type), without walking everything.
        assert size["changed_files"] == size["files"] // 100
        assert 0 < size["refresh_reread"] <= size["changed_files"]
        assert size["refresh_walked_everything"] is False
