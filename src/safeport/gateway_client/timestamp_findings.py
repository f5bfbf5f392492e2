"""What `sp doctor` and `sp status` say about the checkpoints' RFC 3161 time stamps: each
authority's fault (down, slow, garbage, another digest, another CA) and a checkpoint that has
waited for its stamp longer than the policy's bound (a quiet gateway whose heads are all
stamped is not late). The gateway keeps acting meanwhile; these say the evidence off the machine
has stopped growing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from safeport.shared.findings import Finding

_FIX = "check the authority's URL and root in [audit.timestamp] (`sp audit verify` for old ones)"


def timestamp_findings(timestamps: dict[str, Any] | None) -> Iterator[Finding]:
    """``timestamps`` as `sp status` reports them (None: no authority is configured)."""
    if timestamps is None:
        return
    for fault in timestamps["faults"]:
        yield Finding("timestamp authority", "fail", fault, _FIX)
    bound_min = timestamps["stale_after_s"] // 60
    last = timestamps["last_stamped_at"]
    if timestamps["stale"]:
        when = f"last stamp at {last}" if last else "none stamped yet"
        yield Finding(
            "timestamps",
            "fail",
            f"a checkpoint has waited for its stamp longer than {bound_min} minutes ({when})",
            _FIX,
        )
    elif not timestamps["faults"]:
        detail = f"last stamped checkpoint at {last}" if last else "none stamped yet"
        yield Finding("timestamps", "ok", detail)


def timestamp_lines(timestamps: dict[str, Any] | None) -> list[str]:
    """`sp status`'s lines: one per finding that is not ok, else the last stamp."""
    lines = []
    for finding in timestamp_findings(timestamps):
        mark = "ok" if finding.state == "ok" else "PROBLEM"
        lines.append(f"stamps    {mark} {finding.detail}")
    return lines
