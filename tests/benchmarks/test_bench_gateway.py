"""The gateway benchmark's short profile runs and reports its ratios beside bare fsyncs.

No limits on the figures (they follow the machine and its disk); the full run is
``python benchmarks/bench_gateway.py``.
"""

from __future__ import annotations

from tests.benchmarks.profile_run import positive, run_quick_profile


def test_the_gateway_benchmark_reports_round_trip_throughput_and_rss() -> None:
    figures = run_quick_profile("bench_gateway.py")
    trip, throughput, rss = figures["round_trip"], figures["throughput"], figures["rss_mib"]
    assert trip["requests"] >= 100
    assert all(
        positive(trip[k])
        for k in (
            "p50_ms",
            "p99_ms",
            "bare_two_fsyncs_p50_ms",
            "ratio_p50",
            "gateway_cpu_ms_per_proposal",
        )
    )
    assert throughput["clients"] == 8 and throughput["proposals"] == 8 * 25
    assert all(
        positive(throughput[k])
        for k in ("proposals_per_s", "bare_fsyncs_per_s", "ratio_to_bare_loop_pairs")
    )
    assert positive(rss["idle"]) and positive(rss["after_load"])
    assert len(figures["load_average"]["before"]) == 3
