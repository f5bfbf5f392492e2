"""CI runs the context server's benchmark in its short profile: it must run and report every
ratio beside its peer. No limits here (the machine's load is not ours); the figures print with -s.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks" / "bench_context.py"
FS_SERVER = REPO / "node_modules" / ".bin" / "mcp-server-filesystem"

pytestmark = pytest.mark.integration


def test_the_quick_profile_reports_each_ratio_with_its_peer(tmp_path: Path) -> None:
    need(FS_SERVER.exists(), "the reference filesystem server is not installed (run `npm install`)")
    need(shutil.which("rg") is not None, "ripgrep (rg) is not installed")
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    print(json.dumps(report, sort_keys=True))
    for client in ("sdk", "bare"):
        for tool in ("read_file", "list_directory"):
            ours = report[f"{client}_{tool}_p50_ms"]
            peer = report[f"{client}_{tool}_fs_server_p50_ms"]
            assert ours > 0 and peer > 0
            assert report[f"{client}_{tool}_vs_fs_server"] == pytest.approx(ours / peer, rel=0.05)
    assert report["search_vs_rg"] > 0 and report["index_build_vs_one_rg_scan"] > 0
    assert report["server_rss_mb"] > 0
    assert len(report["loadavg_before"]) == len(report["loadavg_after"]) == 3
    assert not list(tmp_path.iterdir())  # the generated workspace is removed
