"""What the ladder hands back of an action's result: only the declared response fields, and
output cut to the cap and flagged."""

from __future__ import annotations

from safeport.action_gateway.ladder.result_filters import filter_http, filter_ssh
from safeport.shared.schemas.wire import HttpResult, SshExecResult


def test_http_results_carry_only_declared_response_fields() -> None:
    result = HttpResult(status=200, fields={"state": "ok", "token": "s3cr3t", "revision": 7})
    assert filter_http(result, ["state", "revision"]) == {
        "status": 200,
        "fields": {"state": "ok", "revision": 7},
    }


def test_ssh_output_over_the_cap_is_truncated_and_flagged() -> None:
    result = SshExecResult(
        exit_status=0,
        stdout="é" * 100,
        stderr="",
        stdout_truncated=False,
        stderr_truncated=False,
        duration_ms=1,
    )
    filtered = filter_ssh(result, 11)
    assert filtered["stdout"] == "é" * 5 and filtered["stdout_truncated"] is True
    assert filtered["stderr_truncated"] is False
