"""The OAuth benchmark's short profile runs against the real authorization server: the first
action, a burst after the access token fell due and an action the service answered 401 each cost
one token request, the timed rounds none, and both sides' latencies are reported.

No limit on the ratio here (it follows the machine and its load); the full run is
``python benchmarks/bench_oauth.py`` and its figures are quoted in docs/guides/oauth.md.
"""

from __future__ import annotations

from harness.real_oidc import missing
from tests.benchmarks.profile_run import positive, run_quick_profile
from tests.conftest import need


def test_the_oauth_benchmark_counts_one_token_request_per_refresh_and_none_when_cached() -> None:
    reason = missing()
    need(reason is None, reason or "")
    figures = run_quick_profile("bench_oauth.py")
    assert figures["rounds"] == 60 and figures["budget"] == 1.1
    assert figures["token_requests_first_action"] == 1
    assert figures["token_requests_burst_after_expiry"] == 1
    assert figures["token_requests_after_401"] == 1
    assert figures["token_requests_timed_rounds"] == 0
    for key in ("grant_p50_ms", "token_p50_ms", "grant_p99_ms", "token_p99_ms", "ratio_p50"):
        assert positive(figures[key]), key
