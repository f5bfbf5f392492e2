"""The SQL benchmark's short profile runs and reports its ratios beside a warm psycopg.

No limits on the figures here (they follow the machine and its load); the full run is
``python benchmarks/bench_sql.py`` and its figures are quoted in docs/guides/sql.md.
"""

from __future__ import annotations

from harness.real_postgres import INITDB
from tests.benchmarks.profile_run import positive, run_quick_profile
from tests.conftest import need


def test_the_sql_benchmark_reports_the_gateway_and_the_executor_beside_psycopg() -> None:
    need(INITDB is not None, "PostgreSQL is not installed (apt install postgresql)")
    figures = run_quick_profile("bench_sql.py")
    assert figures["runs"] == 30
    assert figures["budget_gateway"] == 2.5 and figures["budget_executor"] == 3.0
    for key in (
        "psycopg_warm_p50_ms",
        "bare_two_fsyncs_p50_ms",
        "executor_p50_ms",
        "gateway_p50_ms",
        "ratio_executor",
        "ratio_gateway",
        "ratio_gateway_to_floor",
    ):
        assert positive(figures[key]), key
