"""CI runs the fresh-server benchmark in its short profile: it must run and report each figure
beside its peer (the start-up check beside one `rg` scan, reads and listings beside the
reference filesystem server). No limits here; the figures print with -s."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks" / "bench_fresh_start.py"
FS_SERVER = REPO / "node_modules" / ".bin" / "mcp-server-filesystem"

pytestmark = pytest.mark.integration


def test_the_quick_profile_reports_the_start_up_check_and_each_ratio(tmp_path: Path) -> None:
    need(FS_SERVER.exists(), "the reference filesystem server is not installed (run `npm install`)")
    need(shutil.which("rg") is not None, "ripgrep (rg) is not installed")
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--tree", str(tmp_path / "tree")],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    print(json.dumps(report, sort_keys=True))
    # The index was complete before the check: it re-reads nothing and walks nothing whole.
    assert report["startup_check_walked_everything"] is False
    assert report["startup_check_vs_rg_cpu"] >= 0 and report["rg_scan_cpu_s"] >= 0
    for tool in ("read_file", "list_directory"):
        ours, peer = report[f"{tool}_p50_ms"], report[f"{tool}_fs_server_p50_ms"]
        assert ours > 0 and peer > 0
        assert report[f"{tool}_vs_fs_server"] == pytest.approx(ours / peer, rel=0.05)
        # The first call to each folder and file, before anything of it was kept, apart.
        assert report[f"{tool}_first_of_each_p50_ms"] > 0
        assert report[f"{tool}_first_of_each_vs_fs_server"] > 0
