"""What of an executed action leaves the gateway (rung 9): to the agent and to the journal.

The agent gets only what the policy declares (output capped per command, declared response
fields per operation); the journal gets sizes and statuses, never served content.
"""

from __future__ import annotations

from safeport.shared.schemas.wire import HttpResult, SshExecResult


def filter_ssh(result: SshExecResult, cap: int) -> dict[str, object]:
    data = result.model_dump()
    for stream in ("stdout", "stderr"):
        text = data[stream]
        assert isinstance(text, str)
        if len(text.encode("utf-8")) > cap:
            data[stream] = text.encode("utf-8")[:cap].decode("utf-8", "ignore")
            data[f"{stream}_truncated"] = True
    return data


def filter_http(result: HttpResult, response_fields: list[str]) -> dict[str, object]:
    allowed = set(response_fields)
    return {
        "status": result.status,
        "fields": {name: value for name, value in result.fields.items() if name in allowed},
    }


def result_summary(result: dict[str, object]) -> dict[str, object]:
    """Sizes and statuses only: served content never goes into a journal."""
    if "exit_status" in result:
        return {
            "exit_status": result["exit_status"],
            "stdout_chars": len(str(result.get("stdout", ""))),
            "stderr_chars": len(str(result.get("stderr", ""))),
        }
    if "status" in result:
        fields = result.get("fields")
        return {
            "http_status": result["status"],
            "fields": sorted(fields) if isinstance(fields, dict) else [],
        }
    return {}
