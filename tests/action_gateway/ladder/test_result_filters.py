"""What the ladder hands back of an action's result: only the declared response fields, output
cut to the cap and flagged, and every secret in either replaced by its marker (pure: the real
sshd and TLS server are in ``executors/test_result_redaction.py``)."""

from __future__ import annotations

import secrets
import string

from safeport.action_gateway.ladder.result_filters import filter_http, filter_ssh, result_summary
from safeport.shared.schemas.wire import HttpResult, SshExecResult

ALPHABET = string.ascii_letters + string.digits


def github_token() -> str:
    return "ghp_" + "".join(secrets.choice(ALPHABET) for _ in range(36))


def ssh_result(stdout: str, stderr: str = "") -> SshExecResult:
    return SshExecResult(
        exit_status=0,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=False,
        stderr_truncated=False,
        duration_ms=1,
    )


def test_http_results_carry_only_declared_response_fields() -> None:
    result = HttpResult(status=200, fields={"state": "ok", "token": "s3cr3t", "revision": 7})
    assert filter_http(result, ["state", "revision"]).model_dump() == {
        "status": 200,
        "fields": {"state": "ok", "revision": 7},
        "redacted": 0,
        "redactions": [],
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
    filtered = filter_ssh(result, 11).model_dump()
    assert filtered["stdout"] == "é" * 5 and filtered["stdout_truncated"] is True
    assert filtered["stderr_truncated"] is False


def test_a_token_in_ssh_output_is_replaced_and_named_by_stream_and_line() -> None:
    token = github_token()
    filtered = filter_ssh(ssh_result("ok\n", f"warning\nGITHUB={token}\n"), 1 << 20).model_dump()
    assert filtered["stdout"] == "ok\n"
    assert filtered["stderr"] == "warning\nGITHUB=[REDACTED:github-token]\n"
    assert filtered["redacted"] == 1
    assert filtered["redactions"] == [
        {"field": "stderr", "kind": "github-token", "line": 2, "end_line": 2}
    ]


def test_a_secret_straddling_the_output_cap_is_withheld_whole() -> None:
    token = github_token()
    filtered = filter_ssh(ssh_result("x" * 10 + token), 20).model_dump()
    assert token[:6] not in str(filtered["stdout"])
    assert filtered["stdout_truncated"] is True and filtered["redacted"] == 1


def test_a_stream_the_executor_cut_loses_its_partial_last_word_a_possible_secret_prefix() -> None:
    token = github_token()
    cut = SshExecResult(
        exit_status=None,
        stdout=f"line one\nexport TOKEN={token[:20]}",
        stderr="",
        stdout_truncated=True,
        stderr_truncated=False,
        duration_ms=1,
    )
    filtered = filter_ssh(cut, 1 << 20).model_dump()
    assert filtered["stdout"] == "line one\nexport " and filtered["stdout_truncated"] is True


def test_secrets_nested_in_a_declared_field_and_in_its_keys_are_redacted_by_path() -> None:
    token, other = github_token(), github_token()
    result = HttpResult(
        status=200,
        fields={"config": {"items": ["plain", f"t={token}"], other: 1}, "state": "ok"},
    )
    filtered = filter_http(result, ["config", "state"]).model_dump()
    assert token not in repr(filtered) and other not in repr(filtered)
    assert filtered["fields"] == {
        "config": {"items": ["plain", "t=[REDACTED:github-token]"], "[REDACTED:github-token]": 1},
        "state": "ok",
    }
    redactions = filtered["redactions"]
    assert isinstance(redactions, list)
    assert [(r["field"], r["kind"]) for r in redactions] == [
        ("config.items.1", "github-token"),
        ("config (key)", "github-token"),
    ]


def test_hashes_uuids_and_ordinary_text_come_back_unchanged() -> None:
    text = (
        "commit 3b18e512dba79e4c8300dd08aeb37f8e728b8dad\n"
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
        "request 3f2504e0-4f89-11d3-9a0c-0305e82c3301 done\n"
        "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kx"
        "vUdBeoGlODJ6+SfaPg==\n"
    )
    filtered = filter_ssh(ssh_result(text), 1 << 20).model_dump()
    assert filtered["stdout"] == text and filtered["redacted"] == 0
    http = filter_http(HttpResult(status=200, fields={"state": text}), ["state"]).model_dump()
    assert http["fields"] == {"state": text} and http["redactions"] == []


def test_the_journal_summary_names_redactions_and_never_the_value() -> None:
    token = github_token()
    summary = result_summary(filter_ssh(ssh_result(f"{token}\n"), 1 << 20))
    assert summary["redacted"] == [
        {"field": "stdout", "kind": "github-token", "line": 1, "end_line": 1}
    ]
    assert token not in repr(summary)
    assert "redacted" not in result_summary(filter_ssh(ssh_result("fine\n"), 1 << 20))
