"""The HTTP benchmark's short profile runs: approved clients read over HTTP beside the MCP SDK's
minimal server, and the concurrent clients see no error.

No limits on the timings here (they follow the machine and its load); the full run is
``python benchmarks/bench_http.py`` and its figures are quoted in docs/guides/remote-clients.md.
"""

from __future__ import annotations

from tests.benchmarks.profile_run import positive, run_quick_profile


def test_the_http_benchmark_reads_beside_the_sdk_server_and_its_clients_see_no_error() -> None:
    figures = run_quick_profile("bench_http.py")
    assert figures["rounds"] == 60 and figures["concurrent_clients"] == 10
    assert figures["concurrent_errors"] == 0
    assert figures["concurrent_calls_ok"] == 10 * 10
    for key in (
        "read_file_p50_ms",
        "sdk_minimal_server_read_file_p50_ms",
        "read_file_vs_sdk_minimal_server",
        "bare_read_file_vs_sdk_minimal_server",
        "server_rss_mb",
    ):
        assert positive(figures[key]), key
