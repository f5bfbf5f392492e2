"""The redaction-cost benchmark's short profile reports each ratio, and its "off" is really off.

No limits on the figures (they follow the machine's load); the full run is
``python benchmarks/bench_secret_cost.py``.
"""

from __future__ import annotations

import secrets
import string
from pathlib import Path

from benchmarks.bench_secret_cost import off_for
from safeport.context_server.index.change_feed import ChangeFeed
from safeport.context_server.index.search_index import SearchIndex
from safeport.context_server.operations.reads_journal import ReadsJournal
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.policy.read_policy import ReadPolicy
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import ServedRoot
from tests.benchmarks.profile_run import positive, run_quick_profile


def test_the_redaction_cost_benchmark_reports_read_index_and_detector_figures(
    tmp_path: Path,
) -> None:
    figures = run_quick_profile("bench_secret_cost.py", "--dir", str(tmp_path))
    reads = figures["read_file"]
    assert reads["file_bytes"] == 1_000_000
    for case in (
        "read_file_1mb_whole",
        "read_file_1mb_whole_first_read",
        "read_file_1mb_default_cap",
        "read_file_1mb_default_cap_first_read",
        "read_file_1mb_default_cap_over_stdio",
        "read_file_1mb_default_cap_over_stdio_first_read",
    ):
        assert all(positive(reads[case][k]) for k in ("on_p50_ms", "off_p50_ms", "ratio"))
    assert reads["read_file_1mb_whole"]["served_bytes"] == 1_000_000
    build = figures["index_cold_build"]
    assert build["indexed_files"] == build["files"] == 300 and positive(build["ratio"])
    assert positive(figures["detector"]["mb_per_s_one_core"])
    assert len(figures["load_average_before"]) == len(figures["load_average_after"]) == 3
    assert list(tmp_path.iterdir()) == []  # the benchmark cleans up after itself


def test_the_off_switch_the_benchmark_turns_serves_and_indexes_the_secret_and_on_withholds_it(
    tmp_path: Path,
) -> None:
    alphabet = string.ascii_letters + string.digits
    token = "ghp_" + "".join(secrets.choice(alphabet) for _ in range(36))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "settings.py").write_text(f"GITHUB = '{token}'\nDEBUG = True\n")
    workspaces = {
        True: Workspace([ServedRoot("ws", root)], ReadPolicy()),
        False: Workspace([ServedRoot("ws", root)], ReadPolicy(), off_for(root)),
    }
    journal = ReadsJournal(tmp_path / "audit", "test", [str(root)])
    try:
        served: dict[bool, str] = {}
        stored: dict[bool, bytes] = {}
        indexed: dict[bool, list[str]] = {}
        for redact in (True, False):
            path = tmp_path / f"cache-{redact}" / "index.sqlite"
            workspace = workspaces[redact]
            index = SearchIndex(path, workspace, watch=False)
            index.refresh()
            indexed[redact] = [c.rel for c in index.candidates(token, "ws", "", None)]
            index.close()
            stored[redact] = b"".join(p.read_bytes() for p in path.parent.iterdir())
            service = WorkspaceService(workspace, index, ChangeFeed(workspace), journal)
            served[redact] = service.read_file("settings.py").text
        assert token not in served[True] and "[REDACTED:github-token]" in served[True]
        assert served[False] == f"GITHUB = '{token}'\nDEBUG = True\n"
        # Off, the index holds the token as written (a query for it finds the file); on, it
        # holds neither its text nor anything a query for it finds.
        assert indexed == {True: [], False: ["settings.py"]}
        assert token.encode() not in stored[True]
    finally:
        journal.close()
        for workspace in workspaces.values():
            workspace.close()
